// SYNC training across a switch restart is bit-identical to an uninterrupted
// run: two real serene-train ranks (MLP, Fashion-MNIST) against a real
// serene-switch, once undisturbed and then with the switch killed (SIGKILL)
// and restarted on its port with the same job at several moments. The ranks
// rebuild the lost job from their own updates (docs/protocol.md, Recovery),
// so every evaluation's loss and accuracy and every training loss must equal
// the undisturbed run's to the last bit.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "control/runtime_client.h"
#include "loadgen/child_process.h"
#include "same_training.h"
#include "testing/scratch_dir.h"
#include "testing/switch_process.h"

namespace serene::faults {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;
using loadgen::ChildProcess;
using testing::ScratchDir;
using testing::Slurp;
using testing::SwitchProcess;

constexpr uint32_t kSteps = 60;
// The MLP 784-100-10 as one flat vector.
// The job's key comes from a 0600 file (docs/security.md: never argv).
std::string JobSpec(const fs::path& key_file) {
  return "id=1,workers=2,elements=79510,row=362,key_file=" + key_file.string() + ",policy=sync";
}

fs::path WriteKeyFile(const fs::path& dir) {
  const fs::path key = dir / "key";
  std::ofstream(key) << "0x7E57\n";
  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  return key;
}

std::unique_ptr<ChildProcess> StartRank(const std::string& address, int rank,
                                        const fs::path& metrics, const fs::path& key_file) {
  const fs::path model = metrics.parent_path() / ("model" + std::to_string(rank) + ".bin");
  return std::make_unique<ChildProcess>(SERENE_TRAIN_BIN,
                                        std::vector<std::string>{"--backend",
                                                                 "serene",
                                                                 "--switch",
                                                                 address,
                                                                 "--job",
                                                                 "1",
                                                                 "--key-file",
                                                                 key_file.string(),
                                                                 "--rank",
                                                                 std::to_string(rank),
                                                                 "--world-size",
                                                                 "2",
                                                                 "--model",
                                                                 "mlp",
                                                                 "--steps",
                                                                 std::to_string(kSteps),
                                                                 "--eval-every",
                                                                 "10",
                                                                 "--eval-samples",
                                                                 "1000",
                                                                 "--eval-ranks",
                                                                 "all",
                                                                 "--seed",
                                                                 "5",
                                                                 "--threads",
                                                                 "1",
                                                                 "--target-accuracy",
                                                                 "1",
                                                                 "--metrics",
                                                                 metrics.string(),
                                                                 "--save-model",
                                                                 model.string(),
                                                                 "--log-level",
                                                                 "warn"});
}

// Trains both ranks into `dir`; with `kill_after` > 0, kills the switch once
// the slowest rank completed that clock and starts another on its port.
void Train(const fs::path& dir, uint32_t kill_after) {
  fs::create_directories(dir);
  const fs::path key_file = WriteKeyFile(dir);
  const std::string job = JobSpec(key_file);
  auto sw = std::make_unique<SwitchProcess>(std::vector<std::string>{"--job", job});
  ASSERT_TRUE(sw->ok()) << sw->output();
  const std::string address = sw->address();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(StartRank(address, r, dir / ("rank" + std::to_string(r) + ".json"), key_file));
  }
  std::unique_ptr<SwitchProcess> second;
  if (kill_after > 0) {
    auto api = control::RuntimeClient::Create(sw->control_address(), "");
    ASSERT_TRUE(api.ok()) << api.status().message();
    const auto give_up = SteadyClock::now() + std::chrono::seconds(60);
    int64_t low = -1;
    while (low < kill_after && SteadyClock::now() < give_up) {
      auto t = (*api)->GetTelemetry(1);
      low = t.ok() ? t->low() : -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GE(low, kill_after) << sw->output();
    ASSERT_LT(low, kSteps) << "the kill must land inside the run";
    sw->Kill();
    const std::string port = address.substr(address.rfind(':') + 1);
    second =
        std::make_unique<SwitchProcess>(std::vector<std::string>{"--job", job, "--port", port});
    ASSERT_TRUE(second->ok()) << second->output();
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r]->Wait(std::chrono::seconds(120)), 0) << "rank " << r << ":\n"
                                                            << ranks[r]->output();
  }
}

TEST(TrainingRestartTest, SyncTrainingAcrossASwitchRestartIsBitIdentical) {
  ScratchDir scratch("serene-train-restart");
  Train(scratch.path() / "undisturbed", 0);
  ASSERT_FALSE(::testing::Test::HasFailure());
  for (uint32_t kill_after : {3u, 27u, 52u}) {
    SCOPED_TRACE("switch killed after clock " + std::to_string(kill_after));
    const fs::path dir = scratch.path() / ("killed" + std::to_string(kill_after));
    Train(dir, kill_after);
    if (::testing::Test::HasFailure()) return;
    for (int rank = 0; rank < 2; ++rank) {
      SCOPED_TRACE("rank " + std::to_string(rank));
      const std::string file = "rank" + std::to_string(rank) + ".json";
      const auto a = nlohmann::json::parse(Slurp(scratch.path() / "undisturbed" / file));
      const auto b = nlohmann::json::parse(Slurp(dir / file));
      EXPECT_EQ(a["iterations"], kSteps);
      EXPECT_EQ(a["timeline"].size(), kSteps / 10 + 1);  // steps 0, 10, ..., 60
      ExpectSameTraining(a, b);
      // And the final models, byte for byte.
      const std::string model = "model" + std::to_string(rank) + ".bin";
      const std::string want = Slurp(scratch.path() / "undisturbed" / model);
      EXPECT_EQ(want.size(), 79510u * sizeof(float));
      EXPECT_TRUE(want == Slurp(dir / model)) << "the final models differ";
    }
  }
}

}  // namespace
}  // namespace serene::faults
