#include "fake_switch.h"

#include "net/address.h"

namespace serene::testing {

void FakeSwitch::Replier::Send(const Request& to, proto::Op op, uint32_t clock, uint32_t row,
                               uint16_t flags, const std::vector<int32_t>& values) {
  proto::Header h;
  h.op = op;
  h.job = to.header.job;
  h.worker = to.header.worker;
  h.key = to.header.key;
  h.clock = clock;
  h.row = row;
  h.flags = flags;
  std::vector<uint8_t> bytes(proto::PacketSize(values.size()));
  proto::Encode(h, values, bytes.data());
  (void)sw_->socket_.SendTo(to.from, bytes);
}

void FakeSwitch::Replier::JoinAck(const Request& to, uint32_t done, uint32_t incarnation,
                                  bool waiting, uint32_t low, uint32_t high, uint32_t epoch) {
  auto i = [](uint32_t v) { return static_cast<int32_t>(v); };
  Send(to, proto::Op::kJoinAck, done, 0, waiting ? proto::flags::kWaiting : 0,
       {i(sw_->workers_), i(sw_->elements_), i(sw_->row_width_), i(done), i(low), i(high),
        i(epoch), i(sw_->rows()), 24, i(incarnation)});
}

void FakeSwitch::Replier::Release(const Request& to, uint32_t clock, uint32_t low, uint32_t high,
                                  uint32_t epoch) {
  Send(to, proto::Op::kRelease, clock, 0, 0,
       {static_cast<int32_t>(epoch), static_cast<int32_t>(low), static_cast<int32_t>(high)});
}

void FakeSwitch::Replier::Error(const Request& to, proto::ErrorCode code, proto::Op refused,
                                uint32_t clock, uint32_t row) {
  Send(to, proto::Op::kError, clock, row, 0,
       {static_cast<int32_t>(code), static_cast<int32_t>(refused)});
}

void FakeSwitch::Replier::ReadReply(const Request& to, int32_t value) {
  const uint32_t r = to.header.row;
  const uint32_t begin = r * sw_->row_width_;
  const uint32_t len = std::min(sw_->row_width_, sw_->elements_ - begin);
  Send(to, proto::Op::kReadReply, to.header.clock, r, 0, std::vector<int32_t>(len, value));
}

void FakeSwitch::Replier::JoinAckWithGroup(const Request& to, uint32_t done,
                                            uint32_t incarnation, const proto::Endpoint& group) {
  auto i = [](uint32_t v) { return static_cast<int32_t>(v); };
  const uint32_t address = net::Ipv4Of(group);
  Send(to, proto::Op::kJoinAck, done, 0, 0,
       {i(sw_->workers_), i(sw_->elements_), i(sw_->row_width_), i(done), 0, 0, 0,
        i(sw_->rows()), 24, i(incarnation), i(address), i(group.port)});
}

void FakeSwitch::Replier::GroupRow(const proto::Endpoint& group, const Request& of_job,
                                   uint32_t worker, uint32_t clock, uint32_t row, int32_t value) {
  proto::Header h;
  h.op = proto::Op::kReadReply;
  h.job = of_job.header.job;
  h.worker = static_cast<uint16_t>(worker);
  h.key = of_job.header.key;
  h.clock = clock;
  h.row = row;
  h.flags = proto::flags::kExact | proto::flags::kGroup;
  const uint32_t len = std::min(sw_->row_width_, sw_->elements_ - row * sw_->row_width_);
  const std::vector<int32_t> values(len, value);
  std::vector<uint8_t> bytes(proto::PacketSize(values.size()));
  proto::Encode(h, values, bytes.data());
  (void)sw_->socket_.SendTo(group, bytes);
}

FakeSwitch::FakeSwitch(uint32_t workers, uint32_t elements, uint32_t row_width, Handler handler)
    : workers_(workers),
      elements_(elements),
      row_width_(row_width),
      handler_(std::move(handler)),
      counts_(proto::kMaxOp + 1, 0) {
  net::UdpSocketOptions o;
  o.address = "127.0.0.1";
  auto s = net::UdpSocket::Open(o);
  if (s.ok()) socket_ = std::move(*s);
  replier_.sw_ = this;
  thread_ = std::thread([this] { Loop(); });
}

FakeSwitch::~FakeSwitch() {
  stop_ = true;
  thread_.join();
}

std::string FakeSwitch::address() const { return net::FormatEndpoint(socket_.local()); }

size_t FakeSwitch::Count(proto::Op op) const {
  std::lock_guard lock(mu_);
  return counts_[static_cast<size_t>(op)];
}

void FakeSwitch::Loop() {
  net::RecvBatch batch(32);
  while (!stop_) {
    auto n = socket_.Recv(&batch, std::chrono::milliseconds(20));
    if (!n.ok()) continue;
    for (size_t i = 0; i < *n; ++i) {
      auto data = batch.data(i);
      proto::PacketView v;
      if (proto::Decode(data.data(), data.size(), &v) != proto::ParseError::kOk) continue;
      Request req{v.header, {}, batch.source(i)};
      for (size_t k = 0; k < v.header.count; ++k) req.values.push_back(v.Value(k));
      {
        std::lock_guard lock(mu_);
        ++counts_[static_cast<size_t>(v.header.op)];
      }
      handler_(req, replier_);
    }
  }
}

}  // namespace serene::testing
