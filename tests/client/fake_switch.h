// FakeSwitch: a scripted switch for client tests — a real UDP socket on
// loopback and a thread that decodes every request and hands it to the
// test's handler, which answers with whatever a real switch might send (or
// never would: stale replies, lost state, endless NACKs). Tests reproduce the
// client's hard cases with it, deterministically.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/udp_socket.h"
#include "proto/codec.h"

namespace serene::testing {

class FakeSwitch {
 public:
  // One request as the fake switch saw it.
  struct Request {
    proto::Header header;
    std::vector<int32_t> values;
    proto::Endpoint from;
  };

  // Answers requests; thread-safe (the handler runs on the switch's thread).
  class Replier {
   public:
    // A reply echoing the request's job, worker and key.
    void Send(const Request& to, proto::Op op, uint32_t clock, uint32_t row, uint16_t flags,
              const std::vector<int32_t>& values);
    void JoinAck(const Request& to, uint32_t done, uint32_t incarnation, bool waiting = false,
                 uint32_t low = 0, uint32_t high = 0, uint32_t epoch = 0);
    void Release(const Request& to, uint32_t clock, uint32_t low, uint32_t high,
                 uint32_t epoch = 0);
    void Error(const Request& to, proto::ErrorCode code, proto::Op refused, uint32_t clock,
               uint32_t row = 0);
    // The row's values, all `value`.
    void ReadReply(const Request& to, int32_t value);
    // A JOIN_ACK that advertises the reply group `group`.
    void JoinAckWithGroup(const Request& to, uint32_t done, uint32_t incarnation,
                          const proto::Endpoint& group);
    // An exact READ_REPLY of `row` at `clock` answering rank `worker`, all
    // `value`, sent to `group` (flags EXACT | GROUP).
    void GroupRow(const proto::Endpoint& group, const Request& of_job, uint32_t worker,
                  uint32_t clock, uint32_t row, int32_t value);

   private:
    friend class FakeSwitch;
    FakeSwitch* sw_ = nullptr;
  };

  using Handler = std::function<void(const Request&, Replier&)>;

  // A job of `workers` ranks, `elements` values in rows of `row_width`.
  FakeSwitch(uint32_t workers, uint32_t elements, uint32_t row_width, Handler handler);
  ~FakeSwitch();

  std::string address() const;
  uint32_t workers() const { return workers_; }
  uint32_t elements() const { return elements_; }
  uint32_t row_width() const { return row_width_; }
  uint32_t rows() const { return (elements_ + row_width_ - 1) / row_width_; }
  // Every request received so far, of op `op`.
  size_t Count(proto::Op op) const;

 private:
  void Loop();

  const uint32_t workers_, elements_, row_width_;
  Handler handler_;
  net::UdpSocket socket_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<size_t> counts_;  // by op, guarded by mu_
  Replier replier_;
  std::thread thread_;
};

}  // namespace serene::testing
