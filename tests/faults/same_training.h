// ExpectSameTraining: two serene-train metrics files (--metrics JSON) of one
// rank describe the very same training: the same iterations and stop reason,
// and every evaluation's accuracy and test loss and every training loss equal
// to the last bit (nlohmann::json compares doubles exactly; the files print
// them in round-trip precision). For the tests that claim bit-identical SYNC
// training under faults and across a switch restart.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace serene::faults {

inline void ExpectSameTraining(const nlohmann::json& a, const nlohmann::json& b) {
  EXPECT_EQ(b["iterations"], a["iterations"]);
  EXPECT_EQ(b["stop_reason"], a["stop_reason"]);
  EXPECT_EQ(b["final_accuracy"], a["final_accuracy"]);
  EXPECT_EQ(b["final_test_loss"], a["final_test_loss"]);
  ASSERT_EQ(b["timeline"].size(), a["timeline"].size());
  for (size_t i = 0; i < a["timeline"].size(); ++i) {
    const auto& pa = a["timeline"][i];
    const auto& pb = b["timeline"][i];
    SCOPED_TRACE("step " + pa["step"].dump());
    EXPECT_EQ(pb["step"], pa["step"]);
    EXPECT_EQ(pb["train_loss"], pa["train_loss"]);
    EXPECT_EQ(pb["accuracy"], pa["accuracy"]);
    EXPECT_EQ(pb["test_loss"], pa["test_loss"]);
  }
}

}  // namespace serene::faults
