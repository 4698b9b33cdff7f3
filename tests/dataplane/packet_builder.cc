#include "packet_builder.h"

#include <algorithm>
#include <stdexcept>

namespace serene::testing {

std::vector<uint8_t> PacketBuilder::Build() const {
  std::vector<uint8_t> buf(proto::PacketSize(values_.size()));
  proto::Encode(h_, values_, buf.data());
  return buf;
}

proto::Endpoint WorkerAddr(uint32_t rank, uint16_t port_base) {
  proto::Endpoint e;
  e.family = proto::Endpoint::Family::kIPv4;
  e.addr = {127, 0, 0, 1};
  e.port = static_cast<uint16_t>(port_base + rank);
  return e;
}

proto::Endpoint SwitchAddr(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  proto::Endpoint e;
  e.family = proto::Endpoint::Family::kIPv4;
  e.addr = {a, b, c, d};
  e.port = 7000;
  return e;
}

dataplane::JobConfig TestJob(uint32_t workers, dataplane::BarrierParams p, uint64_t elements,
                             uint32_t row) {
  dataplane::JobConfig c;
  c.id = 1;
  c.workers = workers;
  c.elements = elements;
  c.row_width = row;
  c.policy = p;
  return c;
}

void Harness::CreateJob(dataplane::JobConfig c) {
  if (c.key == 0) c.key = key_;
  key_ = c.key;
  job_ = c.id;
  config_ = c;
  Status s = pipeline_.CreateJob(c);
  if (!s.ok()) throw std::runtime_error(s.message());
}

std::vector<Emitted> Harness::SendRaw(std::span<const uint8_t> datagram,
                                      const proto::Endpoint& src,
                                      dataplane::ProcessResult* result) {
  return SendRaw(datagram, src, proto::Endpoint{}, result);
}

std::vector<Emitted> Harness::SendRaw(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                                      const proto::Endpoint& local,
                                      dataplane::ProcessResult* result) {
  out_.Clear();
  dataplane::ProcessResult r = pipeline_.Process(datagram, src, local, now, &out_);
  if (result != nullptr) *result = r;
  return Decoded(out_);
}

std::vector<Emitted> Harness::Decoded(const dataplane::Output& out) {
  std::vector<Emitted> emitted;
  for (size_t i = 0; i < out.size(); ++i) {
    auto bytes = out.bytes(i);
    proto::PacketView v;
    if (proto::Decode(bytes.data(), bytes.size(), &v) != proto::ParseError::kOk) {
      throw std::runtime_error("pipeline emitted a malformed packet");
    }
    Emitted e{out.packet(i).dst, v.header, {}, out.packet(i).src};
    for (size_t k = 0; k < v.header.count; ++k) e.values.push_back(v.Value(k));
    emitted.push_back(std::move(e));
  }
  return emitted;
}

std::vector<Emitted> Harness::JoinFrom(uint16_t w, const proto::Endpoint& src,
                                       dataplane::ProcessResult* result,
                                       const proto::Endpoint& local) {
  auto e = SendRaw(Req(proto::Op::kJoin, w).Build(), src, local, result);
  if (e.size() != 1 || e[0].header.op != proto::Op::kCookie) return e;
  return SendRaw(Req(proto::Op::kJoin, w).Clock(e[0].header.clock).Row(e[0].header.row).Build(),
                 src, local, result);
}

dataplane::ProcessResult Harness::Inc(uint16_t w, uint32_t clock, uint32_t row,
                                      std::vector<int32_t> v) {
  dataplane::ProcessResult r;
  Send(Req(proto::Op::kInc, w).Clock(clock).Row(row).Values(std::move(v)), w, &r);
  return r;
}

std::optional<Emitted> Harness::Read(uint16_t w, uint32_t clock, uint32_t row) {
  auto e = Send(Req(proto::Op::kRead, w).Clock(clock).Row(row), w);
  if (e.size() != 1) return std::nullopt;
  return e[0];
}

std::vector<int32_t> Harness::ReadAll(uint16_t w, uint32_t clock) {
  std::vector<int32_t> all;
  for (uint32_t r = 0; r < config_.rows(); ++r) {
    auto e = Read(w, clock, r);
    if (!e || e->header.op != proto::Op::kReadReply) {
      throw std::runtime_error("READ row " + std::to_string(r) + " got no READ_REPLY");
    }
    all.insert(all.end(), e->values.begin(), e->values.end());
  }
  return all;
}

std::vector<Emitted> Harness::Step(uint16_t w, uint32_t clock, const std::vector<int32_t>& v) {
  const uint32_t width = config_.row_width;
  for (uint32_t r = 0; r < config_.rows(); ++r) {
    const size_t begin = size_t{r} * width;
    const size_t end = std::min(v.size(), begin + width);
    Inc(w, clock, r, std::vector<int32_t>(v.begin() + begin, v.begin() + end));
  }
  return Clock(w, clock, config_.rows());
}

std::vector<Emitted> Harness::Seed(const std::vector<int32_t>& model) {
  std::vector<Emitted> all = Step(0, 0, model);
  for (uint16_t w = 1; w < config_.workers; ++w) {
    auto e = Clock(w, 0, 0);
    all.insert(all.end(), e.begin(), e.end());
  }
  return all;
}

dataplane::JobTelemetry Harness::Telemetry() {
  auto t = pipeline_.Telemetry(job_);
  if (!t.ok()) throw std::runtime_error(t.status().message());
  return *t;
}

std::vector<int32_t> Harness::Model() {
  auto m = pipeline_.Model(job_);
  if (!m.ok()) throw std::runtime_error(m.status().message());
  return *m;
}

std::vector<Emitted> OfOp(const std::vector<Emitted>& e, proto::Op op) {
  std::vector<Emitted> r;
  for (const auto& x : e) {
    if (x.header.op == op) r.push_back(x);
  }
  return r;
}

std::vector<uint32_t> ReleasedRanks(const std::vector<Emitted>& e) {
  std::vector<uint32_t> r;
  for (const auto& x : e) {
    if (x.header.op == proto::Op::kRelease) r.push_back(x.header.worker);
  }
  std::sort(r.begin(), r.end());
  return r;
}

}  // namespace serene::testing
