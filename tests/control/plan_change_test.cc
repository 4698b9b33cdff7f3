// PlanChange: what the controller asks the switch for, given a decision and a
// telemetry snapshot (control/controller.h).
#include <gtest/gtest.h>

#include "control/controller.h"
#include "control/telemetry_convert.h"

namespace serene::control {
namespace {

using dataplane::BarrierParams;

v1::JobTelemetry Snapshot(const BarrierParams& active, uint32_t active_epoch) {
  v1::JobTelemetry t;
  *t.mutable_policy()->mutable_active() = RuleToProto(active);
  t.mutable_policy()->set_active_epoch(active_epoch);
  return t;
}

PolicyDecision Decide(const BarrierParams& rule) {
  PolicyDecision d;
  d.rule = rule;
  d.text = "test";
  return d;
}

TEST(PlanChangeTest, AsksForARuleNotInForceAndNotForOneThatIs) {
  EXPECT_TRUE(PlanChange(Decide(BarrierParams::Ssp(10)), Snapshot(BarrierParams::Sync(), 0)));
  EXPECT_FALSE(PlanChange(Decide(BarrierParams::Sync()), Snapshot(BarrierParams::Sync(), 0)));
}

TEST(PlanChangeTest, ASnapshotOlderThanTheControllersOwnLastChangeAsksForNothing) {
  // The controller installed SSP(10) as epoch 1; a snapshot taken just before
  // (SYNC, epoch 0) must not make it install SSP(10) again as epoch 2.
  const auto stale = Snapshot(BarrierParams::Sync(), 0);
  EXPECT_FALSE(PlanChange(Decide(BarrierParams::Ssp(10)), stale, /*last_applied_epoch=*/1));
  // Once the snapshot shows that epoch (pending or in force), decisions count again.
  auto pending = stale;
  pending.mutable_policy()->set_swap_pending(true);
  *pending.mutable_policy()->mutable_next() = RuleToProto(BarrierParams::Ssp(10));
  pending.mutable_policy()->set_next_epoch(1);
  EXPECT_FALSE(PlanChange(Decide(BarrierParams::Ssp(10)), pending, 1));
  EXPECT_TRUE(PlanChange(Decide(BarrierParams::Async()), pending, 1));
  EXPECT_TRUE(PlanChange(Decide(BarrierParams::Async()), Snapshot(BarrierParams::Ssp(10), 1), 1));
}

}  // namespace
}  // namespace serene::control
