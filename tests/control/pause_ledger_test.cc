#include "control/pause_ledger.h"

#include <gtest/gtest.h>

namespace serene::control {
namespace {

v1::JobTelemetry Ranks(uint32_t n) {
  v1::JobTelemetry t;
  for (uint32_t r = 0; r < n; ++r) t.add_ranks()->set_rank(r);
  return t;
}

TEST(PauseLedgerTest, AddsUpPerJobAndRankAndFillsOnlyTheRanksThatReported) {
  PauseLedger ledger;
  EXPECT_EQ(ledger.Add(1, 0, 40).paused_ns, 40u);
  const PauseLedger::Totals t = ledger.Add(1, 0, 25);
  EXPECT_EQ(t.paused_ns, 65u);
  EXPECT_EQ(t.pauses, 2u);
  ledger.Add(2, 0, 7);  // another job's rank 0
  ledger.Add(1, 2, 3);
  v1::JobTelemetry job1 = Ranks(3);
  ledger.Fill(1, &job1);
  EXPECT_EQ(job1.ranks(0).paused_ns(), 65u);
  EXPECT_EQ(job1.ranks(0).pauses(), 2u);
  EXPECT_EQ(job1.ranks(1).paused_ns(), 0u);
  EXPECT_EQ(job1.ranks(1).pauses(), 0u);
  EXPECT_EQ(job1.ranks(2).paused_ns(), 3u);
  v1::JobTelemetry job2 = Ranks(1);
  ledger.Fill(2, &job2);
  EXPECT_EQ(job2.ranks(0).paused_ns(), 7u);
}

TEST(PauseLedgerTest, ForgetDropsOneJobOnlyEvenAtTheLastId) {
  PauseLedger ledger;
  ledger.Add(65534, 0, 1);
  ledger.Add(65535, 0, 2);
  ledger.Add(65535, 255, 3);
  ledger.Forget(65535);
  v1::JobTelemetry last = Ranks(256);
  ledger.Fill(65535, &last);
  EXPECT_EQ(last.ranks(0).pauses(), 0u);
  EXPECT_EQ(last.ranks(255).pauses(), 0u);
  v1::JobTelemetry before = Ranks(1);
  ledger.Fill(65534, &before);
  EXPECT_EQ(before.ranks(0).paused_ns(), 1u);
  ledger.Forget(65534);
  before = Ranks(1);
  ledger.Fill(65534, &before);
  EXPECT_EQ(before.ranks(0).pauses(), 0u);
}

}  // namespace
}  // namespace serene::control
