#include "net/fault_injector.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/key_value.h"

namespace serene::net {
namespace {

constexpr std::string_view kSpecSyntax =
    "expected drop=P,burst=N,burst_gap=D,dup=P,reorder=P,delay=D[..D],hold=D,seed=N,"
    "dir=rx|tx|both with P a probability (0.05 or 5%) and D a duration (0, 250us, 2ms, 1s)";

Status Bad(std::string_view spec, const std::string& why) {
  return Status::InvalidArgument("bad fault spec '" + std::string(spec) + "': " + why + " (" +
                                 std::string(kSpecSyntax) + ")");
}

bool ParseProbability(std::string_view s, double* out) {
  double scale = 1.0;
  if (!s.empty() && s.back() == '%') {
    s.remove_suffix(1);
    scale = 0.01;
  }
  double v = 0;
  if (!ParseDouble(s, &v)) return false;
  v *= scale;
  if (v < 0.0 || v > 1.0) return false;
  *out = v;
  return true;
}

// SplitMix64: turns (seed, stream) into well-spread generator seeds.
uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Heap order: the earliest (due, seq) on top.
bool Later(const FaultInjector::Datagram& a, const FaultInjector::Datagram& b) {
  return a.due != b.due ? a.due > b.due : a.seq > b.seq;
}

}  // namespace

Result<FaultSpec> FaultSpec::Parse(std::string_view text) {
  FaultSpec spec;
  if (text.empty() || text == "none" || text == "off") return spec;
  Status s = ForEachKeyValue(text, [&](std::string_view key, std::string_view val) {
    const std::string field = std::string(key) + "=" + std::string(val);
    if (key == "drop" || key == "dup" || key == "duplicate" || key == "reorder") {
      double p = 0;
      if (!ParseProbability(val, &p))
        return Status::InvalidArgument(field + " is not a probability 0..1");
      (key == "drop" ? spec.drop : key == "reorder" ? spec.reorder : spec.duplicate) = p;
    } else if (key == "delay") {
      const size_t dots = val.find("..");
      Nanos lo = 0, hi = 0;
      if (dots == std::string_view::npos) {
        if (!ParseDuration(val, &lo)) return Status::InvalidArgument(field + " is not a duration");
        hi = lo;
      } else if (!ParseDuration(val.substr(0, dots), &lo) ||
                 !ParseDuration(val.substr(dots + 2), &hi) || hi < lo) {
        return Status::InvalidArgument(field +
                                       " is not a range MIN..MAX of durations with MIN <= MAX");
      }
      spec.delay_min = lo;
      spec.delay_max = hi;
    } else if (key == "hold") {
      if (!ParseDuration(val, &spec.hold) || spec.hold == 0) {
        return Status::InvalidArgument(field + " is not a positive duration");
      }
    } else if (key == "burst_gap") {
      if (!ParseDuration(val, &spec.burst_gap) || spec.burst_gap == 0) {
        return Status::InvalidArgument(field + " is not a positive duration");
      }
    } else if (key == "burst") {
      uint32_t n = 0;
      auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), n);
      if (val.empty() || ec != std::errc() || ptr != val.data() + val.size() || n < 1 || n > 1024) {
        return Status::InvalidArgument(field + " is not a number of datagrams 1..1024");
      }
      spec.burst = n;
    } else if (key == "seed") {
      auto [ptr, ec] = std::from_chars(val.data(), val.data() + val.size(), spec.seed);
      if (val.empty() || ec != std::errc() || ptr != val.data() + val.size()) {
        return Status::InvalidArgument(field + " is not an unsigned 64-bit integer");
      }
    } else if (key == "dir" || key == "direction") {
      if (val == "rx") {
        spec.direction = FaultDirection::kRx;
      } else if (val == "tx") {
        spec.direction = FaultDirection::kTx;
      } else if (val == "both") {
        spec.direction = FaultDirection::kBoth;
      } else {
        return Status::InvalidArgument(field + ": direction must be rx, tx or both");
      }
    } else {
      return Status::InvalidArgument("unknown field '" + std::string(key) + "'");
    }
    return Status::Ok();
  });
  if (!s.ok()) return Bad(text, std::string(s.message()));
  return spec;
}

std::string FaultSpec::ToString() const {
  if (!enabled()) return "none";
  std::string delay = FormatDuration(delay_min);
  if (delay_max != delay_min) delay += ".." + FormatDuration(delay_max);
  const char* dir = direction == FaultDirection::kRx   ? "rx"
                    : direction == FaultDirection::kTx ? "tx"
                                                       : "both";
  auto prob = [](double p) {
    char buf[32];
    auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), p);
    return std::string(buf, ec == std::errc() ? ptr : buf);
  };
  return "drop=" + prob(drop) +
         (burst > 1 ? ",burst=" + std::to_string(burst) + ",burst_gap=" + FormatDuration(burst_gap)
                    : "") +
         ",dup=" + prob(duplicate) + ",reorder=" + prob(reorder) + ",delay=" + delay +
         ",hold=" + FormatDuration(hold) + ",seed=" + std::to_string(seed) + ",dir=" + dir;
}

FaultCounters& FaultCounters::operator+=(const FaultCounters& o) {
  offered += o.offered;
  delivered += o.delivered;
  dropped += o.dropped;
  duplicated += o.duplicated;
  reordered += o.reordered;
  held_expired += o.held_expired;
  delayed += o.delayed;
  return *this;
}

FaultInjector::FaultInjector(const FaultSpec& spec, uint64_t stream)
    : spec_(spec), rng_(Mix(spec.seed ^ Mix(stream))) {}

double FaultInjector::Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

Nanos FaultInjector::SampleDelay() {
  if (spec_.delay_max <= spec_.delay_min) return spec_.delay_min;
  const uint64_t span = spec_.delay_max - spec_.delay_min;  // <= an hour, so span + 1 > 0
  // The modulo bias is below 1e-6 for spans under an hour of nanoseconds.
  const uint64_t offset = rng_() % (span + 1);
  return spec_.delay_min + offset;
}

FaultInjector::Datagram FaultInjector::MakeDatagram(const proto::Endpoint& peer,
                                                    std::span<const uint8_t> data, Nanos due) {
  Datagram d;
  if (!free_.empty()) {
    d.bytes = std::move(free_.back());
    free_.pop_back();
  }
  d.bytes.assign(data.begin(), data.end());
  d.peer = peer;
  d.due = due;
  return d;
}

void FaultInjector::Enqueue(Datagram d, int copies) {
  if (copies > 1) {
    Datagram copy = MakeDatagram(d.peer, d.bytes, d.due);
    copy.seq = next_seq_++;
    d.seq = next_seq_++;
    queue_.push_back(std::move(d));
    std::push_heap(queue_.begin(), queue_.end(), Later);
    queue_.push_back(std::move(copy));
  } else {
    d.seq = next_seq_++;
    queue_.push_back(std::move(d));
  }
  std::push_heap(queue_.begin(), queue_.end(), Later);
}

void FaultInjector::Push(const proto::Endpoint& peer, std::span<const uint8_t> data, Nanos now) {
  ++counters_.offered;
  // A quiet port ends a burst (the header).
  if (burst_left_ > 0 && now > last_offered_ && now - last_offered_ > spec_.burst_gap) {
    burst_left_ = 0;
  }
  last_offered_ = now;
  if (burst_left_ > 0) {
    --burst_left_;
    ++counters_.dropped;
    return;
  }
  if (Uniform() < spec_.drop) {
    burst_left_ = spec_.burst - 1;
    ++counters_.dropped;
    return;
  }
  const int copies = Uniform() < spec_.duplicate ? 2 : 1;
  if (copies == 2) ++counters_.duplicated;
  const bool reorder = Uniform() < spec_.reorder;
  const Nanos delay = SampleDelay();
  if (delay > 0) ++counters_.delayed;
  Datagram d = MakeDatagram(peer, data, now + delay);

  ExpireHeld(now);
  if (held_) {
    // This datagram is the successor the held one waited for: deliver the
    // held one right after it (never before, whatever their delays).
    const Nanos successor_due = d.due;
    Enqueue(std::move(d), copies);
    Held h = std::move(*held_);
    held_.reset();
    h.datagram.due = std::max(h.datagram.due, successor_due);
    Enqueue(std::move(h.datagram), h.copies);
    ++counters_.reordered;
    return;
  }
  if (reorder) {
    held_ = Held{std::move(d), copies, now + spec_.hold};
    return;
  }
  Enqueue(std::move(d), copies);
}

void FaultInjector::ExpireHeld(Nanos now) {
  if (!held_ || now < held_->deadline) return;
  Held h = std::move(*held_);
  held_.reset();
  h.datagram.due = std::max(h.datagram.due, h.deadline);
  Enqueue(std::move(h.datagram), h.copies);
  ++counters_.held_expired;
}

bool FaultInjector::Pop(Nanos now, Datagram* out) {
  ExpireHeld(now);
  if (queue_.empty() || queue_.front().due > now) return false;
  std::pop_heap(queue_.begin(), queue_.end(), Later);
  Datagram& top = queue_.back();
  out->peer = top.peer;
  out->due = top.due;
  out->seq = top.seq;
  std::swap(out->bytes, top.bytes);
  free_.push_back(std::move(top.bytes));  // the caller's previous buffer, for reuse
  queue_.pop_back();
  ++counters_.delivered;
  return true;
}

std::optional<Nanos> FaultInjector::NextDue() const {
  std::optional<Nanos> next;
  if (!queue_.empty()) next = queue_.front().due;
  if (held_ && (!next || held_->deadline < *next)) next = held_->deadline;
  return next;
}

}  // namespace serene::net
