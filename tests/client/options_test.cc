// ClientOptions from the environment, in launcher conventions.
#include <gtest/gtest.h>

#include <cstdlib>

#include "serene/client.h"

namespace serene {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kVars) unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : kVars) unsetenv(v);
  }
  static constexpr const char* kVars[] = {
      "SERENE_SWITCH", "SERENE_JOB", "SERENE_KEY", "RANK", "SERENE_RANK", "OMPI_COMM_WORLD_RANK",
      "PMI_RANK", "SLURM_PROCID", "WORLD_SIZE", "SERENE_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
      "PMI_SIZE", "SLURM_NTASKS", "SERENE_WINDOW", "SERENE_TIMEOUT_MS", "SERENE_DEADLINE_S",
      "SERENE_BIND", "SERENE_OFFLOAD"};
};

TEST_F(EnvTest, DefaultsWhenNothingIsSet) {
  auto o = ClientOptions::FromEnvironment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->switch_address, "127.0.0.1:7000");
  EXPECT_EQ(o->rank, 0u);
  EXPECT_EQ(o->world_size, 0u);
}

TEST_F(EnvTest, TorchrunStyleVariables) {
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "8", 1);
  setenv("SERENE_SWITCH", "[::1]:7100", 1);
  setenv("SERENE_JOB", "7", 1);
  setenv("SERENE_KEY", "0xBEEF", 1);
  setenv("SERENE_DEADLINE_S", "5", 1);
  auto o = ClientOptions::FromEnvironment();
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->rank, 3u);
  EXPECT_EQ(o->world_size, 8u);
  EXPECT_EQ(o->switch_address, "[::1]:7100");
  EXPECT_EQ(o->job, 7);
  EXPECT_EQ(o->key, 0xBEEFu);
  EXPECT_EQ(o->deadline, std::chrono::seconds(5));
}

TEST_F(EnvTest, MpiAndSlurmFallbacks) {
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  auto o = ClientOptions::FromEnvironment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->rank, 2u);
  EXPECT_EQ(o->world_size, 4u);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_NTASKS", "6", 1);
  o = ClientOptions::FromEnvironment();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->rank, 5u);
  EXPECT_EQ(o->world_size, 6u);
  setenv("RANK", "1", 1);  // RANK wins
  EXPECT_EQ(ClientOptions::FromEnvironment()->rank, 1u);
}

TEST_F(EnvTest, OffloadIsOnUnlessTurnedOff) {
  EXPECT_TRUE(ClientOptions::FromEnvironment()->offload);
  setenv("SERENE_OFFLOAD", "off", 1);
  EXPECT_FALSE(ClientOptions::FromEnvironment()->offload);
  setenv("SERENE_OFFLOAD", "maybe", 1);
  auto o = ClientOptions::FromEnvironment();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("SERENE_OFFLOAD='maybe'"), std::string::npos)
      << o.status().message();
}

TEST_F(EnvTest, MalformedValuesAreRefusedNamingTheVariable) {
  setenv("SERENE_KEY", "banana", 1);
  auto o = ClientOptions::FromEnvironment();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("SERENE_KEY='banana'"), std::string::npos);
  unsetenv("SERENE_KEY");
  setenv("RANK", "4", 1);
  setenv("WORLD_SIZE", "4", 1);
  o = ClientOptions::FromEnvironment();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("rank 4 is not below world size 4"), std::string::npos);
  setenv("SERENE_JOB", "0", 1);
  EXPECT_FALSE(ClientOptions::FromEnvironment().ok());
}

TEST(Connect, RefusesABadSwitchAddress) {
  ClientOptions o;
  o.switch_address = "localhost";
  auto c = Client::Connect(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("bad switch address 'localhost'"), std::string::npos);
}

}  // namespace
}  // namespace serene
