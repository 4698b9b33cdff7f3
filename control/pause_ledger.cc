#include "control/pause_ledger.h"

#include <cstdint>

namespace serene::control {

PauseLedger::Totals PauseLedger::Add(uint16_t job, uint32_t rank, uint64_t ns) {
  std::lock_guard lock(mu_);
  Totals& t = totals_[{job, rank}];
  t.paused_ns += ns;
  ++t.pauses;
  return t;
}

void PauseLedger::Forget(uint16_t job) {
  std::lock_guard lock(mu_);
  using Key = std::pair<uint16_t, uint32_t>;
  totals_.erase(totals_.lower_bound(Key(job, 0)), totals_.upper_bound(Key(job, UINT32_MAX)));
}

void PauseLedger::Fill(uint16_t job, v1::JobTelemetry* t) const {
  std::lock_guard lock(mu_);
  for (v1::RankTelemetry& r : *t->mutable_ranks()) {
    auto it = totals_.find({job, r.rank()});
    if (it == totals_.end()) continue;
    r.set_paused_ns(it->second.paused_ns);
    r.set_pauses(it->second.pauses);
  }
}

}  // namespace serene::control
