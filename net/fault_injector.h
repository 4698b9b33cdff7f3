// FaultInjector: seeded packet loss, duplication, reordering and delay at a
// port, the data plane's equivalent of SwitchML's drop simulator (this kernel
// has no netem, and tests need faults they can reproduce).
//
// It is pure logic over a queue of datagrams: Push() offers a datagram that
// arrived (or is about to leave) at time `now`; the injector decides its fate
// with its own random generator and queues what survives; Pop() hands back
// the datagrams due by `now`, in delivery order. Time is an argument, never
// read from a clock, so the same spec, seed and inputs give the same outcome
// on every run and in unit tests without sockets.
//
// Fates, drawn per datagram in this order (each from the generator):
//   drop      with probability `drop` the datagram is lost — and with
//             burst=N so are the N-1 datagrams after it, with no draws (a
//             lost GSO train, or a burst on a congested link) — unless the
//             port goes quiet first: a datagram that arrives more than
//             `burst_gap` after the previous one ends the burst and is drawn
//             afresh (a burst is a congestion episode; on a quiet port N
//             datagrams could take seconds, a partition, which is another
//             fault);
//   duplicate with probability `duplicate` it is delivered twice;
//   reorder   with probability `reorder` it is held and delivered right after
//             the next datagram (a swap of neighbours); if none comes within
//             `hold`, it is delivered at the end of the hold anyway;
//   delay     uniform in [delay_min, delay_max] (equal bounds: a fixed delay).
//
// The spec string, e.g. "drop=0.05,dup=0.02,reorder=0.05,delay=2ms,seed=42,dir=both",
// is documented in docs/switch.md. One injector models one direction of one
// port; build each from the same spec with a different `stream` so they draw
// independent sequences.
//
// Thread safety: none; one injector per thread and direction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/status.h"
#include "proto/endpoint.h"

namespace serene::net {

// Nanoseconds on a monotonic clock (the same unit as dataplane::Timestamp).
using Nanos = uint64_t;

enum class FaultDirection : uint8_t { kRx = 1, kTx = 2, kBoth = 3 };

struct FaultSpec {
  double drop = 0.0;        // probability, 0..1
  double duplicate = 0.0;   // probability, 0..1
  double reorder = 0.0;     // probability, 0..1
  Nanos delay_min = 0;      // ns
  Nanos delay_max = 0;      // ns, >= delay_min
  Nanos hold = 10'000'000;  // ns a reordered datagram waits for a successor (10 ms)
  uint32_t burst = 1;       // datagrams one drop loses, 1..1024
  Nanos burst_gap = 10'000'000;  // ns of quiet that ends a burst (10 ms)
  uint64_t seed = 1;
  FaultDirection direction = FaultDirection::kRx;

  // True if any fault is configured (an all-zero spec is a no-op and the
  // daemon bypasses the injector entirely).
  bool enabled() const { return drop > 0 || duplicate > 0 || reorder > 0 || delay_max > 0; }
  bool applies_to_rx() const { return enabled() && (static_cast<int>(direction) & 1) != 0; }
  bool applies_to_tx() const { return enabled() && (static_cast<int>(direction) & 2) != 0; }

  // Parses "drop=P,burst=N,burst_gap=D,dup=P,reorder=P,delay=D[..D],hold=D,seed=N,dir=rx|tx|both".
  // P is a probability (0.05 or 5%), D a duration with a unit (0, 250us, 2ms,
  // 1s). Every field is optional; "" and "none" give the disabled spec.
  static Result<FaultSpec> Parse(std::string_view text);
  std::string ToString() const;
};

// What an injector did. offered = delivered + dropped - duplicated + pending.
struct FaultCounters {
  uint64_t offered = 0;    // datagrams pushed
  uint64_t delivered = 0;  // datagrams popped (duplicates count twice)
  uint64_t dropped = 0;
  uint64_t duplicated = 0;    // extra copies made
  uint64_t reordered = 0;     // held datagrams delivered after their successor
  uint64_t held_expired = 0;  // held datagrams delivered at the end of the hold
  uint64_t delayed = 0;       // datagrams given a non-zero delay

  FaultCounters& operator+=(const FaultCounters& o);
};

class FaultInjector {
 public:
  // A queued datagram. Pop() swaps its bytes with the caller's, so the caller
  // keeps one Datagram and buffers are recycled without allocation.
  struct Datagram {
    proto::Endpoint peer;
    std::vector<uint8_t> bytes;
    Nanos due = 0;
    uint64_t seq = 0;  // tie-break: equal due times pop in push order
  };

  // `stream` selects an independent random sequence for the same seed
  // (e.g. port index * 2 + direction).
  explicit FaultInjector(const FaultSpec& spec, uint64_t stream = 0);

  // Offers a datagram from/to `peer` at time `now` (copied).
  void Push(const proto::Endpoint& peer, std::span<const uint8_t> data, Nanos now);

  // Takes the next datagram due at or before `now` into *out. False if none.
  bool Pop(Nanos now, Datagram* out);

  // When the next datagram becomes due (to bound a poll timeout), if any.
  std::optional<Nanos> NextDue() const;
  // Datagrams queued or held.
  size_t pending() const {
    return queue_.size() + (held_ ? static_cast<size_t>(held_->copies) : 0);
  }

  const FaultSpec& spec() const { return spec_; }
  const FaultCounters& counters() const { return counters_; }

 private:
  struct Held {
    Datagram datagram;
    int copies = 1;
    Nanos deadline = 0;
  };

  double Uniform();  // [0, 1) from the generator's 53 high bits
  Nanos SampleDelay();
  Datagram MakeDatagram(const proto::Endpoint& peer, std::span<const uint8_t> data, Nanos due);
  void Enqueue(Datagram d, int copies);
  void ExpireHeld(Nanos now);

  FaultSpec spec_;
  std::mt19937_64 rng_;
  std::vector<Datagram> queue_;  // min-heap on (due, seq)
  std::optional<Held> held_;
  std::vector<std::vector<uint8_t>> free_;  // recycled buffers
  uint64_t next_seq_ = 0;
  uint32_t burst_left_ = 0;  // datagrams the current burst still drops
  Nanos last_offered_ = 0;   // when the previous datagram was pushed
  FaultCounters counters_;
};

// Durations in specs: "0", "250ns", "250us", "2ms", "1.5s" (common/duration.h).
using serene::FormatDuration;
using serene::ParseDuration;

}  // namespace serene::net
