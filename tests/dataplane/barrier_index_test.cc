// The barrier's incremental path (ReleaseAfterClock, O(1) per CLOCK unless
// the slowest or the quorum clock moves) against the full evaluation
// (ReleaseEligible, every waiting rank judged afresh): two copies of one
// job, driven by the same random schedule of CLOCKs, evictions, rejoins,
// policy changes and finishes, must release the same ranks at every step
// and agree on every register the barrier keeps.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dataplane/barrier.h"
#include "dataplane/job_state.h"
#include "dataplane/membership.h"
#include "dataplane/policy_banks.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::JobState;
using dataplane::Output;

const BarrierParams kPolicies[] = {
    BarrierParams::Sync(),      BarrierParams::Ssp(1),       BarrierParams::Ssp(3),
    BarrierParams::Async(),     BarrierParams::Quorum(2, 1), BarrierParams::Quorum(3, 4),
    BarrierParams{2, 3, 5},     BarrierParams{0, 1, BarrierParams::kUnbounded},
};

// What the barrier decided, for comparison.
std::string Registers(const JobState& j) {
  std::string s = "low=" + std::to_string(j.low_all) + " high=" + std::to_string(j.high) +
                  " live=" + std::to_string(j.live_count) +
                  " max_released=" + std::to_string(j.max_released) +
                  " active=" + std::to_string(j.active) + " swap=" + std::to_string(j.swap_pending);
  for (uint32_t i = 0; i < j.workers.size(); ++i) {
    const auto& w = j.workers[i];
    s += " | " + std::to_string(i) + ":" + std::to_string(w.done) + (w.released ? "r" : "w") +
         (w.live ? "" : "x") + "e" + std::to_string(w.release_epoch) +
         (j.waiting.test(i) ? "q" : "");
  }
  return s;
}

class Twin {
 public:
  Twin(uint32_t workers, BarrierParams policy) {
    dataplane::JobConfig c = TestJob(workers, policy, 8, 4);
    c.key = 1;
    fast_ = std::make_unique<JobState>(c, 7);
    full_ = std::make_unique<JobState>(c, 7);
    for (uint32_t w = 0; w < workers; ++w) Both([&](JobState& j, Output* o) {
      dataplane::Join(j, w, WorkerAddr(w), {}, now_, o);
    });
  }

  // Rank w completes its next clock, if it may (joined, live, released).
  void Clock(uint32_t w) {
    if (!fast_->workers[w].live || !fast_->workers[w].released) return;
    ++now_;
    const uint32_t next = fast_->workers[w].done + 1;
    Output a = Output::ForBatch(4), b = Output::ForBatch(4);
    const uint32_t prev = fast_->workers[w].done;
    dataplane::CompleteClock(*fast_, w, next, now_);
    const uint32_t ra = dataplane::ReleaseAfterClock(*fast_, w, prev, now_, &a);
    dataplane::CompleteClock(*full_, w, next, now_);
    const uint32_t rb = dataplane::ReleaseEligible(*full_, now_, &b);
    Expect(a, b, "CLOCK " + std::to_string(next) + " of rank " + std::to_string(w));
    EXPECT_EQ(ra, rb);
  }
  void Evict(uint32_t w) {
    Both([&](JobState& j, Output* o) { dataplane::RemoveFromBarrier(j, w, now_, o); });
  }
  void Rejoin(uint32_t w) {
    Both([&](JobState& j, Output* o) { dataplane::Join(j, w, WorkerAddr(w), {}, now_, o); });
  }
  void SetPolicy(const BarrierParams& p) {
    Both([&](JobState& j, Output* o) {
      if (dataplane::InstallPolicy(j, p, std::nullopt).ok()) dataplane::ReleaseEligible(j, now_, o);
    });
  }
  void Finish() {
    Both([&](JobState& j, Output* o) {
      j.finished = true;
      dataplane::ReleaseEligible(j, now_, o);
    });
  }
  bool fast_path_valid() const { return fast_->index.valid; }
  const JobState& job() const { return *fast_; }

 private:
  template <typename F>
  void Both(F f) {
    ++now_;
    Output a = Output::ForBatch(4), b = Output::ForBatch(4);
    f(*fast_, &a);
    f(*full_, &b);
    Expect(a, b, "control");
  }
  void Expect(const Output& a, const Output& b, const std::string& what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(ReleasedRanks(Harness::Decoded(a)), ReleasedRanks(Harness::Decoded(b)));
    ASSERT_EQ(Registers(*fast_), Registers(*full_));
  }

  std::unique_ptr<JobState> fast_, full_;
  dataplane::Timestamp now_ = 1000;
};

TEST(BarrierIndex, AgreesWithTheFullEvaluationUnderRandomSchedules) {
  uint64_t fast_steps = 0, steps = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    std::mt19937 rng(seed);
    const uint32_t workers = 2 + rng() % 7;
    const BarrierParams& start = kPolicies[rng() % std::size(kPolicies)];
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(workers) + " ranks, " +
                 start.ToString());
    Twin t(workers, start);
    for (int step = 0; step < 600 && !::testing::Test::HasFatalFailure(); ++step) {
      const uint32_t w = rng() % workers;
      const uint32_t roll = rng() % 1000;
      ++steps;
      if (t.fast_path_valid()) ++fast_steps;
      if (roll < 940) {
        // Slow ranks (low numbers) clock less often: the ranks spread out.
        if (rng() % workers <= w) t.Clock(w);
      } else if (roll < 960) {
        t.Evict(w);
      } else if (roll < 985) {
        t.Rejoin(w);
      } else if (roll < 995) {
        t.SetPolicy(kPolicies[rng() % std::size(kPolicies)]);
      } else if (seed % 4 == 0) {  // a finished job is over: in a quarter of the runs
        t.Finish();
      }
    }
  }
  // The schedules mostly ran on the incremental path, or this tests nothing.
  EXPECT_GT(fast_steps, steps / 2) << fast_steps << " of " << steps;
}

// A SYNC round touches every rank once more than the round's CLOCKs: the
// last CLOCK moves the slowest clock and releases all; the others are O(1).
TEST(BarrierIndex, SyncRoundReleasesEveryoneAtTheLastClockOnly) {
  Twin t(64, BarrierParams::Sync());
  for (uint32_t round = 0; round < 5; ++round) {
    for (uint32_t w = 0; w < 64; ++w) {
      t.Clock(w);
      ASSERT_TRUE(t.fast_path_valid() || round == 0);
      const bool last = w == 63;
      for (uint32_t r = 0; r <= w; ++r) EXPECT_EQ(t.job().workers[r].released, last);
    }
  }
  EXPECT_EQ(t.job().low_all, 4u);
}

}  // namespace
}  // namespace serene::testing
