#include "bmv2/bmv2_target.h"

#include <algorithm>
#include <string>

#include "common/secure_random.h"
#include "dataplane/consts.h"
#include "dataplane/policy_banks.h"
#include "net/address.h"

namespace serene::bmv2 {
namespace {

using dataplane::BarrierParams;

const std::string kIngress = "SereneIngress.";
std::string Reg(const char* name) { return kIngress + name; }

// Per-rank registers (index slot * max_ranks + rank) and per-job ones (slot).
constexpr const char* kRankRegisters[] = {
    "rank_done", "rank_unreleased", "rank_waiting", "rank_joined", "rank_gone",
    "rank_rows", "rank_epoch",      "rank_seen",    "rank_ip",     "rank_udp",
    "rank_mac",  "rank_port",       "rank_sw_ip",   "rank_sw_udp", "rank_sw_mac"};
constexpr const char* kJobRegisters[] = {"job_live",         "job_low",       "job_high",
                                         "job_max_released", "job_saturated", "job_clamps",
                                         "job_finished",     "job_active",    "job_swap_pending",
                                         "job_swap_clock",   "job_epochs"};
constexpr const char* kBankRegisters[] = {"bank_window", "bank_quorum", "bank_lag", "bank_epoch"};

// Counter indices (p4/serene.p4, docs/p4.md "Counters").
constexpr uint32_t kJobDropsPerSlot = 32;
constexpr uint32_t kEventsPerSlot = 16;
enum JobEvent : uint32_t { kReleases = 0, kNacks, kErrors, kFolds, kSwaps, kIncs, kReads };
enum RankEvent : uint32_t {
  kRankReleases = 0,
  kRankNacks = 1,
  kRankErrors = 2,
  kRankIncs = 5,
  kRankReads = 6,
  kRankJoins = 7,
  kRankClocks = 8,
  kRankClockRetransmits = 9,
  kRankEvictions = 10,
  kRankDuplicates = 12
};

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// A slot's registers in the order Telemetry unpacks them: each job register,
// both banks of each bank register, then `ranks` entries of each rank
// register. fn(name, index).
template <typename Fn>
void ForEachRegister(uint32_t slot, uint32_t ranks, uint32_t max_ranks, Fn fn) {
  for (const char* r : kJobRegisters) fn(r, slot);
  for (const char* r : kBankRegisters) {
    for (uint32_t b = 0; b < 2; ++b) fn(r, slot * 2 + b);
  }
  for (const char* r : kRankRegisters) {
    for (uint32_t w = 0; w < ranks; ++w) fn(r, slot * max_ranks + w);
  }
}

// A slot's counters in the order Telemetry unpacks them: its drops by
// reason, packets received and events by kind, then each of `ranks` ranks'
// events. fn(name, index).
template <typename Fn>
void ForEachCounter(uint32_t slot, uint32_t ranks, uint32_t max_ranks, Fn fn) {
  for (uint32_t i = 0; i < kJobDropsPerSlot; ++i) fn("job_drops", slot * kJobDropsPerSlot + i);
  for (uint32_t i = 0; i < kEventsPerSlot; ++i) fn("job_rx", slot * kEventsPerSlot + i);
  for (uint32_t i = 0; i < kEventsPerSlot; ++i) fn("job_events", slot * kEventsPerSlot + i);
  for (uint32_t w = 0; w < ranks; ++w) {
    for (uint32_t i = 0; i < kEventsPerSlot; ++i) {
      fn("rank_events", (slot * max_ranks + w) * kEventsPerSlot + i);
    }
  }
}

}  // namespace

Bmv2Target::Bmv2Target(std::unique_ptr<CliSession> cli, std::unique_ptr<KickChannel> kicks,
                       ProgramLimits limits, std::chrono::steady_clock::time_point switch_started)
    : cli_(std::move(cli)),
      kicks_(std::move(kicks)),
      limits_(limits),
      switch_started_(switch_started),
      slot_used_(limits.job_slots, false),
      incarnations_(std::random_device{}()) {}

dataplane::Timestamp Bmv2Target::Now() const {
  // simple_switch stamps packets in µs since it started; this is the same
  // origin in ns (rank_seen * 1000 compares with it).
  return static_cast<dataplane::Timestamp>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::steady_clock::now() - switch_started_)
                                               .count());
}

std::vector<uint16_t> Bmv2Target::JobIds() const {
  std::lock_guard lock(mu_);
  std::vector<uint16_t> ids;
  for (const auto& [id, j] : jobs_) ids.push_back(id);
  return ids;
}

Result<Bmv2Target::Job> Bmv2Target::Find(uint16_t job) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return Status::NotFound("job " + std::to_string(job) + " does not exist");
  return it->second;
}

Status Bmv2Target::ClearSlot(uint32_t slot) {
  std::vector<std::string> cmds;
  const uint32_t max = limits_.max_ranks;
  ForEachRegister(slot, max, max, [&](const char* name, uint32_t i) {
    cmds.push_back("register_write " + Reg(name) + " " + std::to_string(i) + " 0");
  });
  ForEachCounter(slot, max, max, [&](const char* name, uint32_t i) {
    cmds.push_back("counter_write " + Reg(name) + " " + std::to_string(i) + " 0 0");
  });
  return cli_->RunAll(cmds);
}

Status Bmv2Target::CreateJob(const dataplane::JobConfig& config) {
  Status valid = config.Validate();
  if (!valid.ok()) return valid;
  const std::string jid = "job " + std::to_string(config.id);
  if (config.row_width > limits_.max_width) {
    return Status::InvalidArgument(
        jid + ": row=" + std::to_string(config.row_width) +
        " is wider than the P4 switch carries per packet (" + std::to_string(limits_.max_width) +
        " values); use row=" + std::to_string(limits_.max_width) + " or less");
  }
  if (config.workers > limits_.max_ranks) {
    return Status::InvalidArgument(jid + ": workers=" + std::to_string(config.workers) +
                                   ": the P4 switch holds at most " +
                                   std::to_string(limits_.max_ranks) + " ranks per job");
  }
  if (!config.allow.empty()) {
    return Status::InvalidArgument(jid +
                                   ": the P4 switch has no allow-list (docs/p4.md); "
                                   "create the job without allow=");
  }
  const uint32_t rows = config.rows();
  std::lock_guard lock(mu_);
  if (jobs_.count(config.id) != 0) return Status::AlreadyExists(jid + " already exists");
  if (!cookie_secret_set_) {
    // The JOIN cookie's key (docs/protocol.md, "Return routability"), drawn
    // anew for each simple_switch: its predecessor's cookies are not valid.
    Result<uint64_t> secret = DrawSecret64();
    if (!secret.ok()) return secret.status();
    Status s = cli_->RunAll(
        {"register_write " + Reg("cookie_secret") + " 0 " + std::to_string(*secret >> 32),
         "register_write " + Reg("cookie_secret") + " 1 " + std::to_string(*secret & 0xFFFFFFFFu)});
    if (!s.ok()) return s;
    cookie_secret_set_ = true;
  }
  if (jobs_.empty() && (next_row_ != 0 || next_tag_ != 0)) {
    // Nothing lives in the register arrays: reclaim them all.
    std::vector<std::string> cmds;
    auto reset = [&](const std::string& r) { cmds.push_back("register_reset " + r); };
    for (uint32_t i = 0; i < limits_.max_width; ++i) {
      reset(Reg("vis_") + std::to_string(i));
      reset(Reg("pen_") + std::to_string(i));
    }
    reset(Reg("row_pending_clock"));
    reset(Reg("inc_tag"));
    Status s = cli_->RunAll(cmds);
    if (!s.ok()) return s;
    next_row_ = next_tag_ = 0;
  }
  if (uint64_t{next_row_} + rows > limits_.row_slots ||
      uint64_t{next_tag_} + uint64_t{rows} * config.workers > limits_.tag_slots) {
    return Status::ResourceExhausted(jid + ": " + std::to_string(rows) + " rows x " +
                                     std::to_string(config.workers) +
                                     " ranks do not fit the P4 switch's free register space (" +
                                     std::to_string(limits_.row_slots - next_row_) + " rows, " +
                                     std::to_string(limits_.tag_slots - next_tag_) +
                                     " tags left; space is reclaimed when no job is left)");
  }
  uint32_t slot = 0;
  std::vector<bool> taken(limits_.job_slots, false);
  for (const auto& [id, j] : jobs_) taken[j.slot] = true;
  while (slot < limits_.job_slots && taken[slot]) ++slot;
  if (slot == limits_.job_slots) {
    return Status::FailedPrecondition("too many jobs: the P4 switch holds at most " +
                                      std::to_string(limits_.job_slots));
  }
  if (slot_used_[slot]) {
    Status s = ClearSlot(slot);
    if (!s.ok()) return s;
  }
  Job j;
  j.config = config;
  j.slot = slot;
  j.row_base = next_row_;
  j.tag_base = next_tag_;
  do {
    j.incarnation = static_cast<uint32_t>(incarnations_());
  } while (j.incarnation == 0);
  const uint32_t last_len = config.RowLength(rows - 1);
  // Bank 0 holds the initial policy, epoch 0, active (all zero in a fresh slot).
  const BarrierParams& p = config.policy;
  std::vector<std::string> cmds = {"register_write " + Reg("bank_window") + " " +
                                       std::to_string(slot * 2) + " " + std::to_string(p.window),
                                   "register_write " + Reg("bank_quorum") + " " +
                                       std::to_string(slot * 2) + " " + std::to_string(p.quorum),
                                   "register_write " + Reg("bank_lag") + " " +
                                       std::to_string(slot * 2) + " " + std::to_string(p.lag)};
  Status s = cli_->RunAll(cmds);
  if (!s.ok()) return s;
  auto handle = cli_->TableAdd("table_add " + Reg("jobs") + " " + Reg("set_job") + " " +
                               std::to_string(config.id) + " => " + std::to_string(slot) + " " +
                               Hex(config.key) + " " + std::to_string(config.workers) + " " +
                               std::to_string(rows) + " " + std::to_string(config.elements) + " " +
                               std::to_string(config.row_width) + " " + std::to_string(last_len) +
                               " " + std::to_string(config.scale_log2) + " " + Hex(j.incarnation) +
                               " " + std::to_string(j.row_base) + " " + std::to_string(j.tag_base));
  if (!handle.ok()) return handle.status();
  j.handle = *handle;
  slot_used_[slot] = true;
  next_row_ += rows;
  next_tag_ += rows * config.workers;
  jobs_[config.id] = j;
  return Status::Ok();
}

Status Bmv2Target::DeleteJob(uint16_t job) {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return Status::NotFound("job " + std::to_string(job) + " does not exist");
  Status s =
      cli_->RunAll({"table_delete " + Reg("jobs") + " " + std::to_string(it->second.handle)});
  if (!s.ok()) return s;
  jobs_.erase(it);
  return Status::Ok();
}

Result<KickReply> Bmv2Target::KickJob(const Job& j, uint8_t op, uint16_t worker,
                                      const std::vector<uint32_t>& values) {
  return kicks_->Kick(op, j.config.id, j.config.key, worker, values);
}

Result<control::TargetPolicyChange> Bmv2Target::SetPolicy(uint16_t job, const BarrierParams& params,
                                                          std::optional<uint32_t> effective_clock) {
  auto j = Find(job);
  if (!j.ok()) return j.status();
  const std::string jid = "job " + std::to_string(job);
  if (params.quorum == 0) return Status::InvalidArgument(jid + ": quorum must be at least 1");
  if (effective_clock.has_value()) {
    // Read before the kick: max_released only grows, so a clock within the
    // horizon now is within it when the P4 program installs it.
    auto t = Telemetry(job);
    if (!t.ok()) return t.status();
    const uint32_t earliest = t->max_released + 1;
    if (Status s = dataplane::CheckSwapHorizon(job, *effective_clock, earliest); !s.ok()) return s;
  }
  auto r = KickJob(*j, kKickPolicy, 0,
                   {params.window, params.quorum, params.lag, effective_clock.value_or(0),
                    effective_clock.has_value() ? 1u : 0u});
  if (!r.ok()) return r.status();
  switch (r->status) {
    case 0:
      return control::TargetPolicyChange{dataplane::PolicyChange{r->a, r->b}, 0};
    case 1:
      return Status::FailedPrecondition(
          jid + ": the previous policy change (from clock " + std::to_string(r->b) +
          ") has not retired yet; retry when every live rank has completed clock " +
          std::to_string(r->b));
    case 2:
      return Status::FailedPrecondition(jid + ": effective clock " +
                                        std::to_string(effective_clock.value_or(0)) +
                                        " is too early: a later clock was already released "
                                        "(omit it for as soon as possible)");
    case 3:
      return Status::InvalidArgument(jid + ": quorum must be at least 1");
    default:
      return Status::Internal(jid + ": the P4 switch refused the policy kick (status " +
                              std::to_string(r->status) + ")");
  }
}

Result<dataplane::PolicyChange> Bmv2Target::CancelPolicyChange(uint16_t job,
                                                               std::optional<uint32_t> /*epoch*/) {
  auto j = Find(job);
  if (!j.ok()) return j.status();
  return Status::Unimplemented(
      "job " + std::to_string(job) +
      ": the BMv2 target cannot cancel a policy change (serene.p4 has no kick for it); wait "
      "until it retires, or delete and re-create the job");
}

Result<control::TargetEviction> Bmv2Target::Evict(uint16_t job, uint16_t rank) {
  auto j = Find(job);
  if (!j.ok()) return j.status();
  if (rank >= j->config.workers) {
    return Status::InvalidArgument("rank " + std::to_string(rank) + ": job " + std::to_string(job) +
                                   " has ranks 0.." + std::to_string(j->config.workers - 1));
  }
  auto r = KickJob(*j, kKickEvict, rank, {0});
  if (!r.ok()) return r.status();
  if (r->status != 0) {
    return Status::Internal("job " + std::to_string(job) +
                            ": the P4 switch refused the eviction (status " +
                            std::to_string(r->status) + ")");
  }
  return control::TargetEviction{r->a != 0, 0};
}

Result<uint32_t> Bmv2Target::Finish(uint16_t job) {
  auto j = Find(job);
  if (!j.ok()) return j.status();
  auto r = KickJob(*j, kKickFinish, 0, {});
  if (!r.ok()) return r.status();
  return 0u;
}

uint32_t Bmv2Target::EvictSilent() {
  uint32_t evicted = 0;
  for (uint16_t id : JobIds()) {
    auto j = Find(id);
    if (!j.ok() || j->config.evict_after_ms == 0) continue;
    std::vector<uint32_t> idx;
    for (uint32_t w = 0; w < j->config.workers; ++w) idx.push_back(j->slot * limits_.max_ranks + w);
    auto joined = cli_->ReadRegisters(Reg("rank_joined"), idx);
    auto gone = cli_->ReadRegisters(Reg("rank_gone"), idx);
    auto seen = cli_->ReadRegisters(Reg("rank_seen"), idx);
    if (!joined.ok() || !gone.ok() || !seen.ok()) continue;
    const uint64_t now_us = Now() / 1000;
    const uint64_t after_us = uint64_t{j->config.evict_after_ms} * 1000;
    for (uint32_t w = 0; w < j->config.workers; ++w) {
      if ((*joined)[w] == 0 || (*gone)[w] != 0 || now_us < (*seen)[w] + after_us) continue;
      // The program re-checks the silence against its own clock: a rank heard
      // since the read is not evicted.
      auto r = KickJob(*j, kKickEvict, static_cast<uint16_t>(w),
                       {static_cast<uint32_t>(std::min<uint64_t>(after_us, 0xFFFFFFFFu))});
      if (r.ok() && r->status == 0) ++evicted;
    }
  }
  return evicted;
}

Result<dataplane::JobConfig> Bmv2Target::JobConfig(uint16_t job) const {
  auto j = Find(job);
  if (!j.ok()) return j.status();
  return j->config;
}

Result<dataplane::JobTelemetry> Bmv2Target::Telemetry(uint16_t job) const {
  auto j = Find(job);
  if (!j.ok()) return j.status();
  const uint32_t slot = j->slot;
  const uint32_t n = j->config.workers;
  dataplane::JobTelemetry t;
  t.config = j->config;
  t.rows = j->config.rows();
  // One batch: the slot's registers, then its counters.
  std::vector<std::string> cmds;
  ForEachRegister(slot, n, limits_.max_ranks, [&](const char* name, uint32_t i) {
    cmds.push_back("register_read " + Reg(name) + " " + std::to_string(i));
  });
  const size_t first_counter = cmds.size();
  ForEachCounter(slot, n, limits_.max_ranks, [&](const char* name, uint32_t i) {
    cmds.push_back("counter_read " + Reg(name) + " " + std::to_string(i));
  });
  auto out = cli_->Run(cmds);
  if (!out.ok()) return out.status();
  std::vector<uint64_t> v;
  v.reserve(out->size());
  for (size_t i = 0; i < out->size(); ++i) {
    auto x = i < first_counter ? ParseRegisterValue((*out)[i]) : ParseCounterPackets((*out)[i]);
    if (!x.ok()) return x.status();
    v.push_back(*x);
  }
  size_t at = 0;
  auto next = [&] { return v[at++]; };
  auto u32 = [](uint64_t x) { return static_cast<uint32_t>(x); };
  // kJobRegisters order.
  // job_live is the barrier pass's summary, 0 until the first pass; the
  // C++ pipeline counts every rank not evicted, as below.
  (void)next();
  t.low = u32(next()) - 1;  // stored plus one; 0 - 1 = kNoClock
  t.high = u32(next()) - 1;
  t.max_released = u32(next()) - 1;
  t.saturated = next() != 0;
  t.counters.saturations = next();
  t.finished = next() != 0;
  const uint32_t active = u32(next()) & 1;
  t.swap_pending = next() != 0;
  t.swap_clock = u32(next());
  (void)next();  // job_epochs
  uint64_t bank[4][2];
  for (auto& r : bank) {
    r[0] = next();
    r[1] = next();
  }
  auto params = [&](uint32_t b) {
    return BarrierParams{u32(bank[0][b]), u32(bank[1][b]), u32(bank[2][b])};
  };
  t.active = params(active);
  t.active_epoch = u32(bank[3][active]);
  if (t.swap_pending) {
    t.next = params(active ^ 1);
    t.next_epoch = u32(bank[3][active ^ 1]);
  }
  std::vector<std::vector<uint64_t>> rank(std::size(kRankRegisters), std::vector<uint64_t>(n));
  for (auto& r : rank) {
    for (uint32_t w = 0; w < n; ++w) r[w] = next();
  }
  for (uint32_t i = 0; i < kJobDropsPerSlot; ++i) {
    uint64_t c = next();
    if (i < t.counters.drops.size()) t.counters.drops[i] = c;
  }
  for (uint32_t i = 0; i < kEventsPerSlot; ++i) {
    uint64_t c = next();
    if (i < t.counters.rx_by_op.size()) t.counters.rx_by_op[i] = c;
  }
  uint64_t ev[kEventsPerSlot];
  for (auto& e : ev) e = next();
  t.counters.releases = ev[kReleases];
  t.counters.nacks = ev[kNacks];
  t.counters.errors = ev[kErrors];
  t.counters.folds = ev[kFolds];
  t.counters.swaps = ev[kSwaps];
  for (uint32_t w = 0; w < n; ++w) {
    dataplane::WorkerTelemetry wt;
    wt.rank = w;
    wt.done = u32(rank[0][w]) - 1;
    wt.waiting = rank[2][w] != 0;
    wt.joined = rank[3][w] != 0;
    wt.live = rank[4][w] == 0;
    wt.rows_this_clock = u32(rank[5][w]);
    wt.last_seen = rank[7][w] * 1000;  // µs since the switch started -> Now()'s ns
    wt.addr =
        net::Ipv4Endpoint(static_cast<uint32_t>(rank[8][w]), static_cast<uint16_t>(rank[9][w]));
    wt.local =
        net::Ipv4Endpoint(static_cast<uint32_t>(rank[12][w]), static_cast<uint16_t>(rank[13][w]));
    uint64_t re[kEventsPerSlot];
    for (auto& e : re) e = next();
    wt.counters.releases = re[kRankReleases];
    wt.counters.nacks = re[kRankNacks];
    wt.counters.errors = re[kRankErrors];
    wt.counters.incs_applied = re[kRankIncs];
    wt.counters.reads = re[kRankReads];
    wt.counters.joins = re[kRankJoins];
    wt.counters.clocks = re[kRankClocks];
    wt.counters.clock_retransmits = re[kRankClockRetransmits];
    wt.counters.evictions = re[kRankEvictions];
    wt.counters.incs_duplicate = re[kRankDuplicates];
    if (wt.live) ++t.live_workers;
    t.workers.push_back(wt);
  }
  return t;
}

Result<std::vector<std::pair<std::string, uint64_t>>> Bmv2Target::GlobalCounters() const {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {14, "packets"},          {1, "parse_truncated"}, {2, "parse_bad_magic"},
      {3, "parse_bad_version"}, {4, "parse_bad_op"},    {5, "parse_length_mismatch"},
      {8, "not_request"},       {9, "unknown_job"},     {10, "bad_key"},
      {11, "not_serene"},       {12, "bad_ip"},         {13, "no_room"},
      {15, "fanout_passes"},    {16, "kicks"}};
  std::vector<uint32_t> idx;
  for (const auto& [i, name] : kNames) idx.push_back(i);
  auto c = cli_->ReadCounters(Reg("global_drops"), idx);
  if (!c.ok()) return c.status();
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t i = 0; i < idx.size(); ++i) out.emplace_back(kNames[i].second, (*c)[i]);
  return out;
}

}  // namespace serene::bmv2
