// Test fixtures for the data plane: a PacketBuilder for hand-made requests
// and a Harness that drives a Pipeline with one address per rank and
// decodes what it emits.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dataplane/pipeline.h"
#include "proto/codec.h"
#include "proto/endpoint.h"

namespace serene::testing {

// Builds one request datagram.
class PacketBuilder {
 public:
  PacketBuilder(proto::Op op, uint16_t job, uint16_t worker, uint32_t key) {
    h_.op = op;
    h_.job = job;
    h_.worker = worker;
    h_.key = key;
  }
  PacketBuilder& Clock(uint32_t c) { h_.clock = c; return *this; }
  PacketBuilder& Row(uint32_t r) { h_.row = r; return *this; }
  PacketBuilder& Flags(uint16_t f) { h_.flags = f; return *this; }
  PacketBuilder& Values(std::vector<int32_t> v) { values_ = std::move(v); return *this; }
  std::vector<uint8_t> Build() const;

 private:
  proto::Header h_;
  std::vector<int32_t> values_;
};

// A decoded emitted packet.
struct Emitted {
  proto::Endpoint dst;
  proto::Header header;
  std::vector<int32_t> values;
  proto::Endpoint src;  // the switch address to send from (invalid: any)
};

proto::Endpoint WorkerAddr(uint32_t rank, uint16_t port_base = 40000);
// A switch address: `a.b.c.d` on port 7000.
proto::Endpoint SwitchAddr(uint8_t a, uint8_t b, uint8_t c, uint8_t d);

// Job 1 with `workers` ranks, `elements` values in rows of `row`, and policy `p`.
dataplane::JobConfig TestJob(uint32_t workers, dataplane::BarrierParams p, uint64_t elements,
                             uint32_t row);

// Drives a pipeline with per-rank addresses and a manual clock.
class Harness {
 public:
  explicit Harness(uint32_t key = 0xC0FFEE) : key_(key) {}

  dataplane::Pipeline& pipeline() { return pipeline_; }
  uint32_t key() const { return key_; }
  dataplane::Timestamp now = 1'000'000;

  void CreateJob(dataplane::JobConfig c);

  // Sends a raw datagram from `src` (to the switch address `local`, invalid:
  // unknown); returns what was emitted.
  std::vector<Emitted> SendRaw(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                               dataplane::ProcessResult* result = nullptr);
  std::vector<Emitted> SendRaw(std::span<const uint8_t> datagram, const proto::Endpoint& src,
                               const proto::Endpoint& local,
                               dataplane::ProcessResult* result = nullptr);
  // Decodes what `out` holds (e.g. the output of a control operation).
  static std::vector<Emitted> Decoded(const dataplane::Output& out);
  std::vector<Emitted> Send(const PacketBuilder& b, uint32_t from_rank,
                            dataplane::ProcessResult* result = nullptr) {
    auto d = b.Build();
    return SendRaw(d, WorkerAddr(from_rank), result);
  }

  PacketBuilder Req(proto::Op op, uint16_t worker) const {
    return PacketBuilder(op, job_, worker, key_);
  }

  // JOIN of rank w from `src` as a worker sends it: a COOKIE answering it is
  // echoed in a second JOIN (docs/protocol.md, "Return routability").
  // Returns what the last JOIN emitted.
  std::vector<Emitted> JoinFrom(uint16_t w, const proto::Endpoint& src,
                                dataplane::ProcessResult* result = nullptr,
                                const proto::Endpoint& local = {});
  std::vector<Emitted> Join(uint16_t w) { return JoinFrom(w, WorkerAddr(w)); }
  void JoinAll(uint32_t n) { for (uint32_t w = 0; w < n; ++w) Join(static_cast<uint16_t>(w)); }
  dataplane::ProcessResult Inc(uint16_t w, uint32_t clock, uint32_t row, std::vector<int32_t> v);
  std::vector<Emitted> Clock(uint16_t w, uint32_t clock, uint32_t rows,
                             dataplane::ProcessResult* result = nullptr) {
    return Send(Req(proto::Op::kClock, w).Clock(clock).Row(rows), w, result);
  }
  // READ of one row; returns the reply (nullopt if none).
  std::optional<Emitted> Read(uint16_t w, uint32_t clock, uint32_t row);
  // READ of every row; concatenated values.
  std::vector<int32_t> ReadAll(uint16_t w, uint32_t clock);

  // Seeds clock 0: rank 0 INCs `model`, every rank CLOCKs 0. Returns RELEASEs.
  std::vector<Emitted> Seed(const std::vector<int32_t>& model);
  // INCs `v` (all rows) for rank w at clock c, then CLOCK(c). Returns emitted.
  std::vector<Emitted> Step(uint16_t w, uint32_t clock, const std::vector<int32_t>& v);

  dataplane::JobTelemetry Telemetry();
  std::vector<int32_t> Model();

 private:
  dataplane::Pipeline pipeline_;
  dataplane::Output out_ = dataplane::Output::ForBatch(1);
  uint32_t key_;
  uint16_t job_ = 1;
  dataplane::JobConfig config_;
};

// Filters emitted packets.
std::vector<Emitted> OfOp(const std::vector<Emitted>& e, proto::Op op);
// Ranks that received a RELEASE in `e`.
std::vector<uint32_t> ReleasedRanks(const std::vector<Emitted>& e);

}  // namespace serene::testing
