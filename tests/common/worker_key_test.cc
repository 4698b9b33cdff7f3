// Where a worker tool takes its job key from (common/worker_key.h).
#include "common/worker_key.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <optional>
#include <string>

#include "testing/scratch_dir.h"

namespace serene {
namespace {

WorkerKeySources Sources(std::optional<std::string> key, std::optional<std::string> key_file,
                         const char* env, uint32_t fallback = 0) {
  WorkerKeySources s;
  s.key = std::move(key);
  s.key_file = std::move(key_file);
  s.env = env;
  s.fallback = fallback;
  return s;
}

TEST(WorkerKeyTest, KeyFileThenEnvironmentThenArgvThenDefault) {
  testing::ScratchDir dir("serene-worker-key-test");
  const std::string file = (dir.path() / "job.key").string();
  std::ofstream(file) << "0xC0FFEE\n";
  ::chmod(file.c_str(), 0600);

  auto from_file = ResolveWorkerKey(Sources(std::nullopt, file, "7", 9));
  ASSERT_TRUE(from_file.ok()) << from_file.status().message();
  EXPECT_EQ(from_file->key, 0xC0FFEEu);
  EXPECT_FALSE(from_file->from_argv);

  auto from_env = ResolveWorkerKey(Sources(std::nullopt, std::nullopt, "0x1234", 9));
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->key, 0x1234u);
  EXPECT_FALSE(from_env->from_argv);

  auto from_argv = ResolveWorkerKey(Sources("42", std::nullopt, "7", 9));
  ASSERT_TRUE(from_argv.ok());
  EXPECT_EQ(from_argv->key, 42u);
  EXPECT_TRUE(from_argv->from_argv) << "the tool warns";

  auto fallback = ResolveWorkerKey(Sources(std::nullopt, std::nullopt, nullptr, 9));
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(fallback->key, 9u);
}

TEST(WorkerKeyTest, ErrorsNameTheSource) {
  auto both = ResolveWorkerKey(Sources("1", "/k", nullptr));
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(both.status().message(), "give the job key once: --key-file or --key, not both");
  auto bad_env = ResolveWorkerKey(Sources(std::nullopt, std::nullopt, "secret"));
  ASSERT_FALSE(bad_env.ok());
  EXPECT_EQ(bad_env.status().message(), "SERENE_KEY: expected a 32-bit decimal or 0x-hex number");
  auto bad_argv = ResolveWorkerKey(Sources("x", std::nullopt, nullptr));
  ASSERT_FALSE(bad_argv.ok());
  EXPECT_EQ(bad_argv.status().message(), "--key 'x': expected a 32-bit decimal or 0x-hex number");
  auto missing = ResolveWorkerKey(Sources(std::nullopt, "/nonexistent/job.key", nullptr));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("--key-file: cannot read key file "
                                            "'/nonexistent/job.key'"),
            std::string::npos);
}

TEST(WorkerKeyTest, TheArgvWarningSaysWhatToDoInstead) {
  EXPECT_NE(ArgvKeyWarning().find("/proc/PID/cmdline"), std::string::npos);
  EXPECT_NE(ArgvKeyWarning().find("--key-file FILE"), std::string::npos);
  EXPECT_NE(ArgvKeyWarning().find("SERENE_KEY"), std::string::npos);
}

}  // namespace
}  // namespace serene
