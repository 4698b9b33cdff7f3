// The daemon's configuration: defaults, flags (parsed by CLI11 as the daemon
// does), the TOML file, their merge, and every refusal (switch/switch_config.h).
#include "switch/switch_config.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>

#include "switch/switch_flags.h"

namespace serene::switchd {
namespace {

// Parses argv as serene-switch does; returns the flags.
SwitchFlags ParseFlags(std::vector<std::string> args) {
  CLI::App app;
  SwitchFlags flags;
  AddSwitchFlags(&app, &flags);
  args.insert(args.begin(), "serene-switch");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    ADD_FAILURE() << "CLI11 refused: " << e.what();
  }
  return flags;
}

Result<SwitchConfig> FromFlags(std::vector<std::string> args) {
  return BuildConfig(ParseFlags(std::move(args)));
}

std::string ErrorOf(const Result<SwitchConfig>& r) {
  return r.ok() ? std::string("(no error)") : r.status().message();
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(SwitchConfigTest, Defaults) {
  auto c = BuildConfig(SwitchFlags{});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->server.bind.empty());  // "::" dual-stack, or 0.0.0.0
  EXPECT_EQ(c->server.port, 7000);
  EXPECT_EQ(c->server.threads, 1u);
  EXPECT_EQ(c->server.batch, 32u);
  EXPECT_FALSE(c->server.nice.has_value());  // as started
  EXPECT_FALSE(c->server.sched_batch);
  EXPECT_EQ(c->server.recv_buffer, 4 << 20);
  EXPECT_EQ(c->server.send_buffer, 4 << 20);
  EXPECT_FALSE(c->server.fault.enabled());
  EXPECT_EQ(c->log_level, "info");
  EXPECT_TRUE(c->jobs.empty());
  EXPECT_TRUE(c->Warnings().empty());
}

TEST(SwitchConfigTest, AppliesEveryFlag) {
  auto c = FromFlags(
      {"--bind",        "127.0.0.1",
       "--bind",        "::1",
       "--port",        "7100",
       "--threads",     "4",
       "--batch",       "64",
       "--nice",        "-5",
       "--sched",       "batch",
       "--recv-buffer", "8MiB",
       "--send-buffer", "512KiB",
       "--log-level",   "debug",
       "--fault",       "drop=0.1,seed=9,dir=both",
       "--control",     "[::1]:7101",
       "--token-file",  "/etc/serene/token",
       "--metrics",     "127.0.0.1:9470",
       "--metrics-token-file", "/etc/serene/metrics.token",
       "--job",         "id=1,workers=4,elements=79510,policy=ssp:10,key=0xBEEF,evict_after=2500ms",
       "--job",         "id=2,workers=2,elements=10,row=4,scale=2^20,key=7,policy=quorum:1:3"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server.bind, (std::vector<std::string>{"127.0.0.1", "::1"}));
  EXPECT_EQ(c->server.port, 7100);
  EXPECT_EQ(c->server.threads, 4u);
  EXPECT_EQ(c->server.batch, 64u);
  EXPECT_EQ(c->server.nice, -5);
  EXPECT_TRUE(c->server.sched_batch);
  EXPECT_EQ(c->server.recv_buffer, 8 << 20);
  EXPECT_EQ(c->server.send_buffer, 512 << 10);
  EXPECT_EQ(c->log_level, "debug");
  EXPECT_DOUBLE_EQ(c->server.fault.drop, 0.1);
  EXPECT_EQ(c->server.fault.seed, 9u);
  ASSERT_EQ(c->jobs.size(), 2u);
  EXPECT_EQ(c->jobs[0].id, 1);
  EXPECT_EQ(c->jobs[0].workers, 4u);
  EXPECT_EQ(c->jobs[0].elements, 79510u);
  EXPECT_EQ(c->jobs[0].key, 0xBEEFu);
  EXPECT_EQ(c->jobs[0].policy, dataplane::BarrierParams::Ssp(10));
  EXPECT_EQ(c->jobs[0].evict_after_ms, 2500u);
  EXPECT_EQ(c->jobs[1].evict_after_ms, dataplane::kDefaultEvictAfterMs);
  EXPECT_EQ(c->control, "[::1]:7101");
  EXPECT_TRUE(c->control_given);
  EXPECT_EQ(c->token_file, "/etc/serene/token");
  EXPECT_EQ(c->metrics, "127.0.0.1:9470");
  EXPECT_EQ(c->jobs[1].row_width, 4u);
  EXPECT_EQ(c->jobs[1].scale_log2, 20u);
  EXPECT_EQ(c->jobs[1].policy, dataplane::BarrierParams::Quorum(1, 3));
  EXPECT_EQ(c->metrics_token_file, "/etc/serene/metrics.token");
  // Both keys were on the command line: warned about (docs/security.md, "Secrets").
  EXPECT_EQ(c->argv_key_jobs, (std::vector<uint16_t>{1, 2}));
  const auto w = c->Warnings();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0], "job 1: its key is on the command line (--job key=), where every local user can "
                  "read it (/proc/PID/cmdline); give key_file=FILE (mode 0600) instead");
}

TEST(SwitchConfigTest, AJobKeyFromAPrivateFile) {
  const std::string key = WriteTemp("switch-config-test.key", "0xBEEF\n");
  std::filesystem::permissions(key, std::filesystem::perms::owner_read |
                                        std::filesystem::perms::owner_write);
  auto flags = FromFlags({"--job", "id=1,workers=2,elements=4,key_file=" + key + ",policy=sync"});
  ASSERT_TRUE(flags.ok()) << ErrorOf(flags);
  EXPECT_EQ(flags->jobs[0].key, 0xBEEFu);
  EXPECT_TRUE(flags->Warnings().empty()) << flags->Warnings()[0];

  auto toml = ParseTomlConfig("[[job]]\nid = 3\nworkers = 2\nelements = 4\nkey_file = \"" + key +
                                  "\"\n",
                              "k.toml");
  ASSERT_TRUE(toml.ok()) << ErrorOf(toml);
  EXPECT_EQ(toml->jobs[0].key, 0xBEEFu);

  auto both = FromFlags({"--job", "id=1,workers=2,elements=4,key=1,key_file=" + key});
  EXPECT_NE(ErrorOf(both).find("--job: give a job's key once: key= or key_file=, not both"),
            std::string::npos)
      << ErrorOf(both);
  std::filesystem::permissions(key, std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  auto shared = FromFlags({"--job", "id=1,workers=2,elements=4,key_file=" + key});
  EXPECT_NE(ErrorOf(shared).find("--job: key_file: key file '" + key + "' has mode 0640"),
            std::string::npos)
      << ErrorOf(shared);
  std::filesystem::remove(key);
}

TEST(SwitchConfigTest, OffloadIsOnUnlessTurnedOff) {
  auto on = BuildConfig(SwitchFlags{});
  ASSERT_TRUE(on.ok());
  EXPECT_TRUE(on->server.offload);
  auto off = FromFlags({"--offload", "off"});
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->server.offload);
}

TEST(SwitchConfigTest, TheReceiveBufferHoldsTheLargestJobsBurstUnlessGiven) {
  // 4 ranks x 1M elements x 4 bytes = 16 MB.
  auto c = FromFlags({"--job", "id=1,workers=4,elements=1000000", "--job",
                      "id=2,workers=2,elements=10"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server.recv_buffer, 16'000'000);
  // Small jobs keep the 4 MiB floor, huge ones stop at 256 MiB.
  EXPECT_EQ(AutoRecvBuffer({}), 4 << 20);
  dataplane::JobConfig huge;
  huge.workers = 8;
  huge.elements = 100'000'000;
  EXPECT_EQ(AutoRecvBuffer({huge}), 256 << 20);
  // An explicit size wins, even a small one.
  auto given = FromFlags({"--recv-buffer", "1MiB", "--job", "id=1,workers=4,elements=1000000"});
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->server.recv_buffer, 1 << 20);
}

TEST(SwitchConfigTest, RefusesBadFlagValuesNamingThem) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--port", "99999"}, "--port '99999': expected a UDP port number 0..65535"},
      {{"--port", "-1"}, "--port '-1'"},
      {{"--port", "7k"}, "--port '7k'"},
      {{"--threads", "0"}, "--threads '0': expected a number of threads 1..64"},
      {{"--threads", "65"}, "--threads '65'"},
      {{"--batch", "0"}, "--batch '0': expected datagrams per batch 1..1024"},
      {{"--nice", "20"}, "--nice '20': expected a niceness -20..19"},
      {{"--nice", "-21"}, "--nice '-21': expected a niceness -20..19"},
      {{"--nice", "--5"}, "--nice '--5'"},
      {{"--nice", "high"}, "--nice 'high'"},
      {{"--sched", "fifo"}, "--sched 'fifo': expected normal or batch"},
      {{"--recv-buffer", "2GiB"}, "--recv-buffer '2GiB': expected a size in bytes 0..1GiB"},
      {{"--send-buffer", "4MB"}, "--send-buffer '4MB'"},
      {{"--log-level", "verbose"}, "--log-level 'verbose': expected one of trace, debug"},
      {{"--offload", "yes"}, "--offload 'yes': expected on or off"},
      {{"--fault", "drop=0.5,jitter=1ms"}, "--fault: bad fault spec"},
      {{"--bind", "my-host"}, "--bind 'my-host': expected a numeric IPv4 or IPv6 address"},
      {{"--job", "id=0,workers=1,elements=1"}, "--job: bad job spec 'id=0,workers=1,elements=1'"},
      {{"--job", "id=1,workers=2000,elements=1"}, "workers must be 1..1024"},
      {{"--job", "id=1,workers=2,elements=4,policy=fast"}, "bad policy 'fast'"},
      {{"--job", "id=1,workers=2,elements=4,key=xyz"}, "key must be"},
      {{"--control", "7001"}, "--control '7001': expected HOST:PORT"},
      {{"--control", "my-host:7001"}, "--control 'my-host:7001'"},
      {{"--control", "127.0.0.1:70000"}, "--control '127.0.0.1:70000'"},
      {{"--metrics", "0.0.0.0"}, "--metrics '0.0.0.0': expected HOST:PORT"},
      {{"--token-file", ""}, "--token-file '': expected a file"},
      {{"--job", "id=1,workers=2,elements=4,evict_after=10"}, "evict_after must be a duration"},
      {{"--job", "id=1,workers=2,elements=4,evict_after=2h"}, "evict_after must be"},
      {{"--job", "id=3,workers=1,elements=1", "--job", "id=3,workers=2,elements=2"},
       "job id 3 is defined twice"},
  };
  for (const Case& c : cases) {
    auto r = FromFlags(c.args);
    ASSERT_FALSE(r.ok()) << c.args[1];
    EXPECT_EQ(r.status().code() == Status::Code::kInvalidArgument ||
                  r.status().code() == Status::Code::kAlreadyExists,
              true);
    EXPECT_NE(ErrorOf(r).find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << ErrorOf(r);
  }
}

TEST(SwitchConfigTest, ParsesEveryTomlKey) {
  auto c = ParseTomlConfig(R"(
bind = ["0.0.0.0", "::1"]
port = 7001
threads = 2
batch = 16
nice = -3
sched = "normal"
recv_buffer = "1MiB"
send_buffer = 65536
log_level = "warn"
fault = "reorder=0.05,delay=1ms..2ms"

[[job]]
id = 1
workers = 4
elements = 100
row = 8
scale = 16777216
key = 0xDEADBEEF
policy = "ssp:3"

[[job]]
id = 2
workers = 3
elements = 7
scale = "2^10"
key = "0x10"
policy = "window=2,quorum=2,lag=5"
)",
                           "test.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server.bind, (std::vector<std::string>{"0.0.0.0", "::1"}));
  EXPECT_EQ(c->server.port, 7001);
  EXPECT_EQ(c->server.threads, 2u);
  EXPECT_EQ(c->server.batch, 16u);
  EXPECT_EQ(c->server.nice, -3);
  EXPECT_FALSE(c->server.sched_batch);
  EXPECT_EQ(c->server.recv_buffer, 1 << 20);
  EXPECT_EQ(c->server.send_buffer, 65536);
  EXPECT_EQ(c->log_level, "warn");
  EXPECT_DOUBLE_EQ(c->server.fault.reorder, 0.05);
  EXPECT_EQ(c->server.fault.delay_max, 2'000'000u);
  ASSERT_EQ(c->jobs.size(), 2u);
  EXPECT_EQ(c->jobs[0].key, 0xDEADBEEFu);
  EXPECT_EQ(c->jobs[0].row_width, 8u);
  EXPECT_EQ(c->jobs[0].scale_log2, 24u);
  EXPECT_EQ(c->jobs[0].policy, dataplane::BarrierParams::Ssp(3));
  EXPECT_EQ(c->jobs[1].key, 0x10u);
  EXPECT_EQ(c->jobs[1].scale_log2, 10u);
  EXPECT_EQ(c->jobs[1].policy, (dataplane::BarrierParams{2, 2, 5}));
  // A single address may be a plain string.
  auto one = ParseTomlConfig("bind = \"::\"\n", "one.toml");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->server.bind, (std::vector<std::string>{"::"}));
}

TEST(SwitchConfigTest, RefusesBadTomlNamingFileKeyAndValue) {
  struct Case {
    const char* toml;
    std::string message;
  } cases[] = {
      {"port = \n", "bad.toml:1:"},  // syntax error, with line:column
      {"prot = 7000\n", "bad.toml: unknown key 'prot'"},
      {"port = 70000\n", "bad.toml: port '70000': expected a UDP port number 0..65535"},
      {"port = 7.5\n", "bad.toml: port is a float, expected an integer or a string"},
      {"threads = true\n", "bad.toml: threads is a boolean"},
      {"bind = [\"::\", 5]\n", "found an integer in the array"},
      {"bind = \"example.org\"\n", "bad.toml: bind 'example.org'"},
      {"log_level = \"chatty\"\n", "bad.toml: log_level 'chatty'"},
      {"fault = \"drop=9\"\n", "bad.toml: fault: bad fault spec 'drop=9'"},
      {"job = 5\n", "bad.toml: job: expected [[job]] tables"},
      {"[[job]]\nid = 1\nworkers = 2\n",
       "[[job]] #1: bad job spec 'id=1,workers=2': missing elements"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nworker = 1\n",
       "[[job]] #1: unknown key 'worker'"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\npolicy = \"sometimes\"\n",
       "[[job]] #1: bad policy 'sometimes'"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nkey = [1]\n", "[[job]] #1: key is an array"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nkey = -5\n", "key must be"},
      {"[[job]]\nid = 1\nworkers = 1\nelements = 1\n[[job]]\nid = 1\nworkers = 1\nelements = 2\n",
       "bad.toml: job id 1 is defined twice"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nallow = [\"10.0.0.0/33\"]\n",
       "bad.toml: [[job]] #1: allow '10.0.0.0/33': prefix length must be 0..32"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nallow = [\"10.1.0.0/8\"]\n",
       "did you mean 10.0.0.0/8?"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nallow = [10]\n",
       "[[job]] #1: allow: expected an array of prefix strings"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nallow = 10\n",
       "[[job]] #1: allow is an integer"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nallow = [\"10.0.0.0/8;fd00::/8\"]\n",
       "one prefix per array element"},
      {"[[job]]\nid = 1\nworkers = 2\nelements = 3\nallow = [\"1.0.0.0/8\", \"2.0.0.0/8\", "
       "\"3.0.0.0/8\", \"4.0.0.0/8\", \"5.0.0.0/8\", \"6.0.0.0/8\", \"7.0.0.0/8\", "
       "\"8.0.0.0/8\", \"9.0.0.0/8\"]\n",
       "9 prefixes, at most 8"},
  };
  for (const Case& c : cases) {
    auto r = ParseTomlConfig(c.toml, "bad.toml");
    ASSERT_FALSE(r.ok()) << c.toml;
    EXPECT_NE(ErrorOf(r).find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << ErrorOf(r);
  }
}

TEST(SwitchConfigTest, FlagsOverrideTheFileAndJobsAddUp) {
  const std::string path = WriteTemp("serene-switch-config-test.toml", R"(
bind = "0.0.0.0"
port = 7000
threads = 2
log_level = "warn"
[[job]]
id = 1
workers = 2
elements = 10
key = 1
)");
  auto c = FromFlags({"--config", path, "--port", "0", "--bind", "127.0.0.1", "--job",
                      "id=2,workers=1,elements=5,key=2"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->server.port, 0);                                        // flag
  EXPECT_EQ(c->server.bind, (std::vector<std::string>{"127.0.0.1"}));  // flag
  EXPECT_EQ(c->server.threads, 2u);                                    // file
  EXPECT_EQ(c->log_level, "warn");                                     // file
  ASSERT_EQ(c->jobs.size(), 2u);
  EXPECT_EQ(c->jobs[0].id, 1);
  EXPECT_EQ(c->jobs[1].id, 2);

  auto dup = FromFlags({"--config", path, "--job", "id=1,workers=1,elements=5"});
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(ErrorOf(dup).find("job id 1 is defined twice"), std::string::npos) << ErrorOf(dup);
  std::filesystem::remove(path);
}

TEST(SwitchConfigTest, AllowListsFromTheFileAndFromJobFlags) {
  auto c = ParseTomlConfig(R"(
[[job]]
id = 1
workers = 2
elements = 10
key = 1
allow = ["10.0.0.0/8", "fd00::/8"]
policy = "window=1,quorum=2,lag=1"
[[job]]
id = 2
workers = 2
elements = 10
key = 2
allow = "192.0.2.0/24;2001:db8::/32"
[[job]]
id = 3
workers = 2
elements = 10
key = 3
allow = []
)",
                           "allow.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->jobs.size(), 3u);
  EXPECT_EQ(c->jobs[0].allow.ToString(), "10.0.0.0/8;fd00::/8");
  EXPECT_EQ(c->jobs[0].policy, (dataplane::BarrierParams{1, 2, 1}));
  EXPECT_EQ(c->jobs[1].allow.ToString(), "192.0.2.0/24;2001:db8::/32");
  EXPECT_TRUE(c->jobs[2].allow.empty()) << "an empty array admits every source";

  auto flags = FromFlags({"--job", "id=4,workers=1,elements=5,key=4,allow=127.0.0.0/8;::1"});
  ASSERT_TRUE(flags.ok()) << ErrorOf(flags);
  EXPECT_EQ(flags->jobs[0].allow.ToString(), "127.0.0.0/8;::1/128");
  auto bad = FromFlags({"--job", "id=4,workers=1,elements=5,allow=10.0.0.0/33"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(ErrorOf(bad).find("--job: bad job spec"), std::string::npos) << ErrorOf(bad);
  EXPECT_NE(ErrorOf(bad).find("allow '10.0.0.0/33'"), std::string::npos) << ErrorOf(bad);
}

TEST(SwitchConfigTest, MissingFileIsNamed) {
  auto c = FromFlags({"--config", "/nonexistent/dir/serene.toml"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Status::Code::kNotFound);
  EXPECT_NE(ErrorOf(c).find("'/nonexistent/dir/serene.toml'"), std::string::npos);
}

TEST(SwitchConfigTest, TheExampleFileIsValid) {
  auto c = LoadTomlConfig(std::string(SERENE_SOURCE_DIR) + "/configs/serene-switch.example.toml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->jobs.size(), 2u);
  EXPECT_EQ(c->jobs[0].elements, 79510u);
  EXPECT_EQ(c->jobs[0].policy, dataplane::BarrierParams::Ssp(10));
  EXPECT_EQ(c->jobs[0].evict_after_ms, 10000u);
  EXPECT_EQ(c->control, "127.0.0.1:7001");
  EXPECT_TRUE(c->token_file.empty());
  EXPECT_TRUE(c->metrics.empty());
  EXPECT_TRUE(c->Warnings().empty());
}

TEST(SwitchConfigTest, WarnsAboutMissingKeysAndOversizedRows) {
  auto c = FromFlags({"--job", "id=4,workers=2,elements=10", "--job",
                      "id=5,workers=2,elements=4096,row=1024,key=3"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  auto w = c->Warnings();
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("job 4 has no key"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("job 5: rows of 1024 values make 4120-byte datagrams"), std::string::npos)
      << w[1];
  EXPECT_NE(w[2].find("job 5: its key is on the command line"), std::string::npos) << w[2];
  // Loopback has a 64 KiB MTU: large rows are fine there.
  auto lo =
      FromFlags({"--bind", "127.0.0.1", "--job", "id=5,workers=2,elements=4096,row=1024,key=3"});
  ASSERT_TRUE(lo.ok());
  ASSERT_EQ(lo->Warnings().size(), 1u);
  EXPECT_NE(lo->Warnings()[0].find("on the command line"), std::string::npos);
}

TEST(SwitchConfigTest, ByteSizesAndLogLevels) {
  int v = 0;
  ASSERT_TRUE(ParseByteSize("0", &v));
  EXPECT_EQ(v, 0);
  ASSERT_TRUE(ParseByteSize("1GiB", &v));
  EXPECT_EQ(v, 1 << 30);
  ASSERT_TRUE(ParseByteSize("64K", &v));
  EXPECT_EQ(v, 64 << 10);
  EXPECT_FALSE(ParseByteSize("1025MiB", &v));
  EXPECT_FALSE(ParseByteSize("MiB", &v));
  EXPECT_FALSE(ParseByteSize("-1", &v));
  EXPECT_FALSE(ParseByteSize("", &v));
  for (const char* l : {"trace", "debug", "info", "warn", "error", "critical", "off"}) {
    EXPECT_TRUE(IsLogLevel(l)) << l;
  }
  EXPECT_FALSE(IsLogLevel("warning"));
  EXPECT_FALSE(IsLogLevel("INFO"));
}

}  // namespace
}  // namespace serene::switchd
