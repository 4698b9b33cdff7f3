#include "train/straggler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

namespace serene::train {
namespace {

constexpr uint64_t kStragglerStream = 0x736c6f77;  // "slow"
constexpr char kForms[] =
    "expected none, slow_worker[:p[:min[:max]]], failure[:p[:duration_s]] or "
    "heterogeneous:factor[:from[:until]]";

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    const size_t pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

Status ParseNumber(std::string_view text, std::string_view spec, const char* field, double* out) {
  // std::from_chars for double is in libstdc++ 11+.
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(*out)) {
    return Status::InvalidArgument("straggler pattern '" + std::string(spec) + "': " + field +
                                   " '" + std::string(text) + "' is not a number");
  }
  return Status::Ok();
}

std::string Format(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

std::string StragglerSpec::ToString() const {
  switch (kind) {
    case StragglerKind::kNone:
      return "none";
    case StragglerKind::kSlowWorker:
      return "slow_worker:" + Format(probability) + ":" + Format(min_factor) + ":" +
             Format(max_factor);
    case StragglerKind::kFailure:
      return "failure:" + Format(probability) + ":" + Format(duration_s);
    case StragglerKind::kHeterogeneous:
      return "heterogeneous:" + Format(factor) +
             (from_iteration > 0 || until_iteration > 0 ? ":" + std::to_string(from_iteration)
                                                        : "") +
             (until_iteration > 0 ? ":" + std::to_string(until_iteration) : "");
  }
  return "none";
}

Result<StragglerSpec> ParseStragglerSpec(std::string_view text) {
  const std::vector<std::string_view> parts = Split(text, ':');
  const std::string_view name = parts[0];
  StragglerSpec spec;
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("straggler pattern '" + std::string(text) + "': " + why);
  };
  auto field = [&](size_t i, const char* what, double* out) -> Status {
    if (i >= parts.size()) return Status::Ok();
    return ParseNumber(parts[i], text, what, out);
  };
  Status s;
  if (name == "none" || name.empty()) {
    if (parts.size() > 1) return bad("'none' takes no fields");
    return spec;
  }
  if (name == "slow_worker") {
    spec.kind = StragglerKind::kSlowWorker;
    if (parts.size() > 4) return bad("too many fields; " + std::string(kForms));
    if (!(s = field(1, "probability", &spec.probability)).ok()) return s;
    if (!(s = field(2, "min", &spec.min_factor)).ok()) return s;
    if (!(s = field(3, "max", &spec.max_factor)).ok()) return s;
    if (spec.min_factor < 0 || spec.max_factor < spec.min_factor) {
      return bad("need 0 <= min <= max");
    }
  } else if (name == "failure") {
    spec.kind = StragglerKind::kFailure;
    spec.probability = 0.01;
    if (parts.size() > 3) return bad("too many fields; " + std::string(kForms));
    if (!(s = field(1, "probability", &spec.probability)).ok()) return s;
    if (!(s = field(2, "duration_s", &spec.duration_s)).ok()) return s;
    if (spec.duration_s < 0) return bad("duration must be >= 0 seconds");
  } else if (name == "heterogeneous") {
    spec.kind = StragglerKind::kHeterogeneous;
    if (parts.size() < 2 || parts.size() > 4) {
      return bad(
          "heterogeneous needs the factor and, optionally, the first slowed iteration and the "
          "first at full speed again");
    }
    if (!(s = field(1, "factor", &spec.factor)).ok()) return s;
    if (spec.factor < 1) return bad("factor must be >= 1 (1 = no slowdown)");
    double from = 0;
    if (!(s = field(2, "from", &from)).ok()) return s;
    if (from < 0 || from != std::floor(from) || from > 1e15) {
      return bad("from must be a whole number of iterations >= 0");
    }
    spec.from_iteration = static_cast<int64_t>(from);
    double until = 0;
    if (!(s = field(3, "until", &until)).ok()) return s;
    if (parts.size() == 4 && (until <= from || until != std::floor(until) || until > 1e15)) {
      return bad("until must be a whole number of iterations > from");
    }
    spec.until_iteration = static_cast<int64_t>(until);
  } else {
    return bad(std::string("unknown pattern; ") + kForms);
  }
  if (spec.probability < 0 || spec.probability > 1) return bad("probability must be in [0, 1]");
  return spec;
}

Result<std::vector<int>> ParseRankList(std::string_view text, int world_size) {
  std::vector<int> ranks;
  if (text.empty() || text == "none") return ranks;
  if (text == "all") {
    for (int r = 0; r < world_size; ++r) ranks.push_back(r);
    return ranks;
  }
  for (std::string_view part : Split(text, ',')) {
    int r = -1;
    const char* end = part.data() + part.size();
    auto [ptr, ec] = std::from_chars(part.data(), end, r);
    if (part.empty() || ec != std::errc() || ptr != end) {
      return Status::InvalidArgument("rank list '" + std::string(text) + "': '" +
                                     std::string(part) + "' is not a rank");
    }
    if (r < 0 || r >= world_size) {
      return Status::InvalidArgument("rank list '" + std::string(text) + "': rank " +
                                     std::to_string(r) + " is not in [0, " +
                                     std::to_string(world_size) + ")");
    }
    if (std::find(ranks.begin(), ranks.end(), r) != ranks.end()) {
      return Status::InvalidArgument("rank list '" + std::string(text) + "': rank " +
                                     std::to_string(r) + " appears twice");
    }
    ranks.push_back(r);
  }
  return ranks;
}

uint64_t StragglerSeed(uint64_t seed, int rank) {
  return DeriveSeed(seed, kStragglerStream, static_cast<uint64_t>(rank));
}

StragglerInjector::StragglerInjector(const StragglerSpec& spec, uint64_t seed)
    : spec_(spec), rng_(seed) {}

double StragglerInjector::NextDelay(double compute_s) {
  compute_s = std::max(compute_s, 0.0);
  ++iterations_;
  mean_compute_s_ += (compute_s - mean_compute_s_) / static_cast<double>(iterations_);
  bool hit = false;
  double delay = 0;
  switch (spec_.kind) {
    case StragglerKind::kNone:
      break;
    case StragglerKind::kSlowWorker:
      if (rng_.Uniform() < spec_.probability) {
        hit = true;
        delay = rng_.Uniform(spec_.min_factor, spec_.max_factor) * mean_compute_s_;
      }
      break;
    case StragglerKind::kFailure:
      // One draw per iteration until the failure happens, none afterwards.
      if (!failed_ && rng_.Uniform() < spec_.probability) {
        hit = failed_ = true;
        delay = spec_.duration_s;
      }
      break;
    case StragglerKind::kHeterogeneous:
      // iterations_ counts this one: it is iteration iterations_ - 1.
      if (iterations_ > spec_.from_iteration &&
          (spec_.until_iteration == 0 || iterations_ <= spec_.until_iteration)) {
        hit = spec_.factor > 1.0;
        delay = (spec_.factor - 1.0) * compute_s;
      }
      break;
  }
  if (hit) ++delayed_iterations_;
  total_delay_s_ += delay;
  return delay;
}

}  // namespace serene::train
