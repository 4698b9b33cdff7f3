#include "dataplane/reply.h"

namespace serene::dataplane {

uint16_t JobFlags(const JobState& job) {
  uint16_t f = 0;
  if (job.saturated) f |= proto::flags::kSaturated;
  if (job.finished) f |= proto::flags::kFinished;
  return f;
}

uint8_t* EmitReplyRaw(const JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
                      proto::Op op, uint32_t worker, uint32_t clock, uint32_t row,
                      uint16_t extra_flags, uint16_t count, Output* out) {
  uint8_t* p = out->Append(dst, src, proto::PacketSize(count));
  if (p == nullptr) return nullptr;
  proto::Header h;
  h.op = op;
  h.job = job.config.id;
  h.worker = static_cast<uint16_t>(worker);
  h.key = job.config.key;
  h.clock = clock;
  h.row = row;
  h.count = count;
  h.flags = static_cast<uint16_t>(JobFlags(job) | extra_flags);
  proto::EncodeHeader(h, p);
  return p + proto::kHeaderSize;
}

uint8_t* EmitReply(const JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
                   proto::Op op, uint32_t worker, uint32_t clock, uint32_t row,
                   uint16_t extra_flags, std::span<const int32_t> values, Output* out) {
  uint8_t* v = EmitReplyRaw(job, dst, src, op, worker, clock, row, extra_flags,
                            static_cast<uint16_t>(values.size()), out);
  if (v == nullptr) return nullptr;
  for (size_t i = 0; i < values.size(); ++i) proto::StoreI32(v + i * proto::kValueSize, values[i]);
  return v;
}

void EmitCookie(const JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
                const proto::Header& req, Timestamp now, Output* out) {
  uint8_t* p = out->Append(dst, src, proto::kHeaderSize);
  if (p == nullptr) return;
  const uint64_t cookie = JoinCookieAt(job.cookie_secret, dst, job.config.id, req.worker, now);
  proto::Header h;
  h.op = proto::Op::kCookie;
  h.job = job.config.id;
  h.worker = req.worker;
  h.key = job.config.key;
  h.clock = proto::cookie::High(cookie);
  h.row = proto::cookie::Low(cookie);
  h.count = 0;
  h.flags = proto::cookie::FlagsFor(req.op);
  proto::EncodeHeader(h, p);
}

void EmitError(JobState& job, const proto::Endpoint& dst, const proto::Endpoint& src,
               const proto::Header& req, proto::ErrorCode code, Output* out) {
  const int32_t values[proto::error_reply::kCount] = {static_cast<int32_t>(code),
                                                      static_cast<int32_t>(req.op)};
  uint16_t extra = 0;
  if (code == proto::ErrorCode::kEvicted) extra |= proto::flags::kEvicted;
  EmitReply(job, dst, src, proto::Op::kError, req.worker, req.clock, req.row, extra, values, out);
  ++job.counters.errors;
  if (req.worker < job.workers.size()) ++job.workers[req.worker].counters.errors;
}

}  // namespace serene::dataplane
