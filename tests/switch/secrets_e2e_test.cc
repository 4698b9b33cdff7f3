// The real serene-switch takes its secrets from private files (docs/security.md,
// "Secrets"): a job's key from key_file=, the runtime API's and /metrics'
// tokens from files that group and others cannot read, of at least 16 bytes.
// A key on the command line still works (tests, throwaway runs) but is warned
// about. Every refusal exits 2 before any socket opens, naming the file, its
// mode or length and the fix; every wait has a deadline. serene-bench stands
// for the worker tools (serene-train resolves its key the same way,
// apps/key_flags.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "loadgen/child_process.h"
#include "loadgen/switch_launch.h"
#include "net/address.h"
#include "proto/codec.h"
#include "testing/scratch_dir.h"
#include "udp_peer.h"

namespace serene::switchd::testing {
namespace {

using loadgen::ChildProcess;
using proto::Op;

constexpr uint32_t kKey = 0xC0FFEE;
constexpr auto kExitDeadline = std::chrono::seconds(10);

std::string WriteFile(const std::filesystem::path& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
  return path.string();
}

// Starts the daemon; it must exit with `code` within the deadline (a daemon
// that starts serving instead is stopped and the test fails).
std::string ExpectExit(const std::vector<std::string>& extra, int code) {
  std::vector<std::string> args = {"--bind", "127.0.0.1", "--port", "0", "--control", "off"};
  args.insert(args.end(), extra.begin(), extra.end());
  ChildProcess sw(SERENE_SWITCH_BINARY, args);
  std::optional<int> exit = sw.Wait(kExitDeadline);
  if (!exit) {
    sw.Signal(SIGKILL);
    (void)sw.Wait();
    ADD_FAILURE() << "the switch did not exit; its output:\n" << sw.output();
    return sw.output();
  }
  EXPECT_EQ(*exit, code) << sw.output();
  return sw.output();
}

TEST(SecretsE2eTest, TakesAJobKeyFromAPrivateKeyFile) {
  serene::testing::ScratchDir dir("serene-secrets-key");
  const std::string key = WriteFile(dir.path() / "job.key", "0xC0FFEE\n", 0600);
  ChildProcess sw(SERENE_SWITCH_BINARY,
                  {"--bind", "127.0.0.1", "--port", "0", "--control", "off", "--job",
                   "id=7,workers=1,elements=4,row=4,key_file=" + key + ",policy=sync"});
  auto listening = loadgen::WaitForListening(sw);
  ASSERT_TRUE(listening) << sw.output();
  auto addr = net::ParseEndpoint(*listening);
  ASSERT_TRUE(addr.ok());
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(*addr, Request{Op::kJoin, 7, 0, kKey, 0, 0, {}, 0}));
  auto ack = peer.Next();
  ASSERT_TRUE(ack.has_value()) << "a JOIN with the file's key is answered";
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  sw.Signal(SIGTERM);
  EXPECT_EQ(sw.Wait(kExitDeadline), 0);
  EXPECT_EQ(sw.output().find("on the command line"), std::string::npos) << sw.output();
  EXPECT_EQ(sw.output().find("c0ffee"), std::string::npos) << "the key is never logged";
}

TEST(SecretsE2eTest, RefusesAKeyFileOthersCanRead) {
  serene::testing::ScratchDir dir("serene-secrets-key-mode");
  const std::string key = WriteFile(dir.path() / "job.key", "0xC0FFEE\n", 0644);
  const std::string out = ExpectExit({"--job", "id=7,workers=1,elements=4,key_file=" + key}, 2);
  EXPECT_NE(out.find("key file '" + key + "' has mode 0644"), std::string::npos) << out;
  EXPECT_NE(out.find("chmod 600 " + key), std::string::npos) << out;
}

TEST(SecretsE2eTest, RefusesAKeyGivenTwice) {
  serene::testing::ScratchDir dir("serene-secrets-key-twice");
  const std::string key = WriteFile(dir.path() / "job.key", "0xC0FFEE\n", 0600);
  const std::string out =
      ExpectExit({"--job", "id=7,workers=1,elements=4,key=5,key_file=" + key}, 2);
  EXPECT_NE(out.find("key= or key_file=, not both"), std::string::npos) << out;
}

TEST(SecretsE2eTest, RefusesATokenFileOthersCanRead) {
  serene::testing::ScratchDir dir("serene-secrets-token-mode");
  const std::string token = WriteFile(dir.path() / "token", "a-long-enough-secret-token\n", 0640);
  const std::string out = ExpectExit({"--token-file", token}, 2);
  EXPECT_NE(out.find("token file '" + token + "' has mode 0640"), std::string::npos) << out;
  EXPECT_NE(out.find("chmod 600"), std::string::npos) << out;
}

TEST(SecretsE2eTest, RefusesAShortToken) {
  serene::testing::ScratchDir dir("serene-secrets-token-short");
  const std::string token = WriteFile(dir.path() / "token", "hunter2\n", 0600);
  for (const char* flag : {"--token-file", "--metrics-token-file"}) {
    std::vector<std::string> args = {flag, token};
    if (std::string(flag) == "--metrics-token-file") {
      args.insert(args.end(), {"--metrics", "127.0.0.1:0"});
    }
    const std::string out = ExpectExit(args, 2);
    EXPECT_NE(out.find("token file '" + token + "' holds 7 bytes; a token needs at least 16"),
              std::string::npos)
        << flag << ":\n"
        << out;
  }
}

TEST(SecretsE2eTest, WarnsAboutAKeyOnTheCommandLine) {
  ChildProcess sw(SERENE_SWITCH_BINARY, {"--bind", "127.0.0.1", "--port", "0", "--control", "off",
                                         "--job", "id=3,workers=1,elements=4,key=0x5e4e"});
  ASSERT_TRUE(loadgen::WaitForListening(sw)) << sw.output();
  sw.Signal(SIGTERM);
  EXPECT_EQ(sw.Wait(kExitDeadline), 0);
  EXPECT_NE(sw.output().find("job 3: its key is on the command line"), std::string::npos)
      << sw.output();
  EXPECT_NE(sw.output().find("key_file=FILE"), std::string::npos) << sw.output();
}

// serene-bench as a worker tool: its key from --key-file or SERENE_KEY
// without a warning, from --key with one; a shared key file is refused.
TEST(SecretsE2eTest, WorkersTakeTheKeyFromAFileOrTheEnvironment) {
  serene::testing::ScratchDir dir("serene-secrets-workers");
  const std::string key = WriteFile(dir.path() / "job.key", "0xC0FFEE\n", 0600);
  // One fresh job per run (a finished job cannot be run again), one key file.
  std::vector<std::string> args = {"--bind", "127.0.0.1", "--port", "0", "--control", "off"};
  for (int id = 1; id <= 3; ++id) {
    args.insert(args.end(), {"--job", "id=" + std::to_string(id) +
                                          ",workers=2,elements=8,row=4,key_file=" + key});
  }
  ChildProcess sw(SERENE_SWITCH_BINARY, args);
  auto listening = loadgen::WaitForListening(sw);
  ASSERT_TRUE(listening) << sw.output();
  auto run = [&](int job, std::vector<std::string> env, std::vector<std::string> extra) {
    std::vector<std::string> a = std::move(env);
    a.insert(a.end(), {SERENE_BENCH_BINARY, "--switch", *listening, "--job", std::to_string(job),
                       "--workers", "2", "--elements", "8", "--row", "4", "--clocks", "3"});
    a.insert(a.end(), extra.begin(), extra.end());
    return loadgen::RunToExit("/usr/bin/env", a);
  };
  auto [file_code, file_out] = run(1, {}, {"--key-file", key});
  EXPECT_EQ(file_code, 0) << file_out;
  EXPECT_EQ(file_out.find("on the command line"), std::string::npos) << file_out;
  auto [env_code, env_out] = run(2, {"SERENE_KEY=0xC0FFEE"}, {});
  EXPECT_EQ(env_code, 0) << env_out;
  EXPECT_EQ(env_out.find("on the command line"), std::string::npos) << env_out;
  auto [argv_code, argv_out] = run(3, {}, {"--key", "0xC0FFEE"});
  EXPECT_EQ(argv_code, 0) << argv_out;
  EXPECT_NE(argv_out.find("the job key is on the command line"), std::string::npos) << argv_out;

  const std::string shared = WriteFile(dir.path() / "shared.key", "0xC0FFEE\n", 0644);
  auto [shared_code, shared_out] = run(1, {}, {"--key-file", shared});
  EXPECT_EQ(shared_code, 2) << shared_out;
  EXPECT_NE(shared_out.find("--key-file: key file '" + shared + "' has mode 0644"),
            std::string::npos)
      << shared_out;
  sw.Signal(SIGTERM);
  EXPECT_EQ(sw.Wait(kExitDeadline), 0);
}

}  // namespace
}  // namespace serene::switchd::testing
