// The Prometheus exposition of the switch's state: a real Pipeline driven by
// hand-made packets, rendered, checked line by line against the text format
// (version 0.0.4) and for specific values.
#include "switch/metrics_exposition.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dataplane/job_config.h"
#include "tests/dataplane/packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::BarrierParams;
using dataplane::JobConfig;
using dataplane::JobTelemetry;
using dataplane::WorkerTelemetry;
using proto::Op;
using switchd::ControlPlaneCounters;
using switchd::FormatMetrics;
using switchd::MetricsSnapshot;
using switchd::RenderMetrics;
using switchd::ServerCounters;

constexpr uint64_t kSecond = 1'000'000'000;

bool IsMetricName(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsValue(const std::string& s) {
  if (s == "NaN" || s == "+Inf" || s == "-Inf") return true;
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && s.find_first_of("iInN") == std::string::npos;
}

// A checker of the text exposition format, version 0.0.4, as strict as this
// project writes it: each family is `# HELP`, `# TYPE` (counter or gauge),
// then its samples, contiguous; no timestamps; label values escape only \\,
// \" and \n; every series once. Returns series ("name{labels}" exactly as
// written) -> value text into *out; reports every violation as a test
// failure (and stops at a line it cannot read).
void ParseInto(const std::string& text, std::map<std::string, std::string>* out) {
  std::map<std::string, std::string>& series = *out;
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "the exposition must end with a line feed";
  std::set<std::string> families;
  std::string family, type, help_of;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    SCOPED_TRACE("line " + std::to_string(n) + ": " + line);
    if (line.rfind("# HELP ", 0) == 0) {
      const std::string rest = line.substr(7);
      const size_t sp = rest.find(' ');
      ASSERT_NE(sp, std::string::npos) << "HELP without text";
      help_of = rest.substr(0, sp);
      EXPECT_TRUE(IsMetricName(help_of));
      EXPECT_TRUE(families.insert(help_of).second) << "family written twice: " << help_of;
      const std::string doc = rest.substr(sp + 1);
      for (size_t i = 0; i < doc.size(); ++i) {
        if (doc[i] != '\\') continue;
        ASSERT_LT(i + 1, doc.size()) << "dangling backslash in HELP";
        EXPECT_TRUE(doc[i + 1] == '\\' || doc[i + 1] == 'n') << "bad escape in HELP";
        ++i;
      }
      family.clear();
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, kind, extra;
      t >> name >> kind;
      EXPECT_FALSE(t >> extra) << "trailing text after TYPE";
      EXPECT_EQ(name, help_of) << "TYPE must follow the HELP of its family";
      EXPECT_TRUE(kind == "counter" || kind == "gauge") << kind;
      if (kind == "counter") {
        EXPECT_TRUE(name.size() > 6 && name.substr(name.size() - 6) == "_total")
            << "counter without _total: " << name;
      }
      family = name;
      type = kind;
      continue;
    }
    ASSERT_FALSE(line.empty()) << "empty line";
    ASSERT_NE(line[0], '#') << "unknown comment";
    ASSERT_FALSE(family.empty()) << "sample outside a family";

    // name
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    const std::string name = line.substr(0, i);
    EXPECT_EQ(name, family) << "sample of another family, or a family split";
    // labels
    std::set<std::string> label_names;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        ASSERT_LT(i, line.size()) << "unterminated labels";
        if (line[i] == '}') {
          ++i;
          break;
        }
        size_t eq = line.find('=', i);
        ASSERT_NE(eq, std::string::npos);
        const std::string lname = line.substr(i, eq - i);
        EXPECT_TRUE(IsMetricName(lname) && lname.find(':') == std::string::npos) << lname;
        EXPECT_TRUE(label_names.insert(lname).second) << "label twice: " << lname;
        ASSERT_LT(eq + 1, line.size());
        ASSERT_EQ(line[eq + 1], '"') << "label value not quoted";
        i = eq + 2;
        while (true) {
          ASSERT_LT(i, line.size()) << "unterminated label value";
          if (line[i] == '\\') {
            ASSERT_LT(i + 1, line.size());
            const char e = line[i + 1];
            EXPECT_TRUE(e == '\\' || e == '"' || e == 'n') << "bad escape \\" << e;
            i += 2;
            continue;
          }
          if (line[i] == '"') break;
          ++i;
        }
        ++i;  // closing quote
        ASSERT_LT(i, line.size());
        if (line[i] == ',') {
          ++i;
        } else {
          EXPECT_EQ(line[i], '}') << "expected , or } after a label";
        }
      }
    }
    ASSERT_LT(i, line.size());
    ASSERT_EQ(line[i], ' ') << "expected one space before the value";
    const std::string value = line.substr(i + 1);
    EXPECT_TRUE(IsValue(value)) << "bad value '" << value << "' (or a timestamp)";
    EXPECT_TRUE(series.emplace(line.substr(0, i), value).second)
        << "series written twice: " << line.substr(0, i);
  }
}

std::map<std::string, std::string> Parse(const std::string& text) {
  std::map<std::string, std::string> series;
  ParseInto(text, &series);
  return series;
}

// The value of one series; fails (and returns "") when absent.
std::string At(const std::map<std::string, std::string>& m, const std::string& series) {
  auto it = m.find(series);
  EXPECT_NE(it, m.end()) << "missing series " << series;
  return it == m.end() ? std::string() : it->second;
}

double Number(const std::map<std::string, std::string>& m, const std::string& series) {
  return std::strtod(At(m, series).c_str(), nullptr);
}

TEST(EscapeLabelValue, EscapesBackslashQuoteAndLineFeedOnly) {
  EXPECT_EQ(switchd::EscapeLabelValue("plain ssp:10 window=2,lag=inf"),
            "plain ssp:10 window=2,lag=inf");
  EXPECT_EQ(switchd::EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(switchd::EscapeLabelValue(""), "");
  std::string out = "x";
  switchd::AppendEscapedLabelValue("\\\\", &out);
  EXPECT_EQ(out, "x\\\\\\\\");
}

// Job 1 (key 7, two ranks, sync): seeded at clock 0, rank 0 completed clock 1
// and waits; plus packets that are dropped for every global reason.
class MetricsExpositionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = JobConfig::ParseSpec("id=1,workers=2,elements=10,key=7");
    ASSERT_TRUE(c.ok()) << c.status().message();
    h_.CreateJob(*c);
    h_.JoinAll(2);
    h_.Seed(std::vector<int32_t>(10, 1));
    h_.now += kSecond;
    h_.Inc(0, 1, 0, std::vector<int32_t>(10, 2));
    h_.Inc(0, 1, 0, std::vector<int32_t>(10, 2));  // a retransmission: ignored
    h_.Clock(0, 1, 1);                             // rank 0 completes clock 1 and waits
    wait_since_ = h_.now;

    // Dropped before any job claims them.
    h_.Send(PacketBuilder(Op::kJoin, 1, 0, 8), 0);  // bad key
    h_.Send(PacketBuilder(Op::kJoin, 9, 0, 7), 0);  // unknown job
    const uint8_t runt[3] = {1, 2, 3};
    h_.SendRaw(runt, WorkerAddr(0));  // truncated
    h_.now += kSecond / 2;
  }

  std::map<std::string, std::string> Render(ServerCounters server = {},
                                            ControlPlaneCounters control = {}) {
    text_ = RenderMetrics(h_.pipeline(), server, control, h_.now);
    return Parse(text_);
  }

  Harness h_;
  dataplane::Timestamp wait_since_ = 0;
  std::string text_;
};

TEST_F(MetricsExpositionTest, EveryLineIsValidExposition) {
  auto m = Render();
  EXPECT_GT(m.size(), 100u);
  EXPECT_EQ(text_.find("\r"), std::string::npos);
}

TEST_F(MetricsExpositionTest, JobGauges) {
  auto m = Render();
  EXPECT_EQ(At(m, "serene_jobs"), "1");
  EXPECT_EQ(At(m, R"(serene_job_workers{job_id="1"})"), "2");
  EXPECT_EQ(At(m, R"(serene_job_elements{job_id="1"})"), "10");
  EXPECT_EQ(At(m, R"(serene_job_rows{job_id="1"})"), "1");
  EXPECT_EQ(At(m, R"(serene_job_live_ranks{job_id="1"})"), "2");
  EXPECT_EQ(At(m, R"(serene_job_low_clock{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_high_clock{job_id="1"})"), "1");
  EXPECT_EQ(At(m, R"(serene_job_max_released_clock{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_policy_info{job_id="1",bank="active",policy="sync",epoch="0"})"), "1");
  EXPECT_EQ(At(m, R"(serene_job_policy_window{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_policy_quorum{job_id="1"})"), "+Inf");
  EXPECT_EQ(At(m, R"(serene_job_policy_lag{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_policy_epoch{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_swap_pending{job_id="1"})"), "0");
  EXPECT_EQ(m.count(R"(serene_job_swap_clock{job_id="1"})"), 0u) << "only while a swap is pending";
  EXPECT_EQ(At(m, R"(serene_job_saturated{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_finished{job_id="1"})"), "0");
}

TEST_F(MetricsExpositionTest, JobCounters) {
  auto m = Render();
  EXPECT_EQ(At(m, R"(serene_job_requests_total{job_id="1",op="JOIN"})"), "4");  // 2 COOKIEs
  EXPECT_EQ(At(m, R"(serene_job_requests_total{job_id="1",op="INC"})"), "3");
  EXPECT_EQ(At(m, R"(serene_job_requests_total{job_id="1",op="CLOCK"})"), "3");
  EXPECT_EQ(At(m, R"(serene_job_requests_total{job_id="1",op="READ"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_requests_total{job_id="1",op="LEAVE"})"), "0");
  EXPECT_EQ(m.count(R"(serene_job_requests_total{job_id="1",op="RELEASE"})"), 0u)
      << "reply ops are never counted per job";
  EXPECT_EQ(At(m, R"(serene_job_drops_total{job_id="1",reason="bad_key"})"), "1");
  EXPECT_EQ(At(m, R"(serene_job_drops_total{job_id="1",reason="inc_duplicate"})"), "1");
  EXPECT_EQ(At(m, R"(serene_job_drops_total{job_id="1",reason="clock_early"})"), "0");
  // Every reason is a series, the security ones too (DropReasonName).
  for (const char* reason : {"rank_in_use", "finish_not_live", "source_not_allowed"}) {
    EXPECT_EQ(At(m, R"(serene_job_drops_total{job_id="1",reason=")" + std::string(reason) + "\"}"),
              "0")
        << reason;
  }
  EXPECT_EQ(m.count(R"(serene_job_drops_total{job_id="1",reason="unknown_job"})"), 0u);
  EXPECT_EQ(m.count(R"(serene_job_drops_total{job_id="1",reason="none"})"), 0u);
  EXPECT_EQ(At(m, R"(serene_job_releases_total{job_id="1"})"), "2");
  EXPECT_EQ(At(m, R"(serene_job_nacks_total{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_errors_total{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_swaps_total{job_id="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_job_saturations_total{job_id="1"})"), "0");
  At(m, R"(serene_job_folds_total{job_id="1"})");
}

TEST_F(MetricsExpositionTest, RankState) {
  auto m = Render();
  EXPECT_EQ(At(m, R"(serene_rank_joined{job_id="1",rank="0"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_live{job_id="1",rank="1"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_done_clock{job_id="1",rank="0"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_done_clock{job_id="1",rank="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_lag_clocks{job_id="1",rank="0"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_lag_clocks{job_id="1",rank="1"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_waiting{job_id="1",rank="0"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_waiting{job_id="1",rank="1"})"), "0");
  // Rank 0 has waited since its CLOCK(1), half a second before the scrape.
  EXPECT_EQ(h_.now - wait_since_, kSecond / 2);
  EXPECT_EQ(At(m, R"(serene_rank_waiting_seconds{job_id="1",rank="0"})"), "0.5");
  EXPECT_EQ(At(m, R"(serene_rank_waiting_seconds{job_id="1",rank="1"})"), "0");
  // The clock-0 waits took no time (the manual clock stood still), so the
  // total is the current wait.
  EXPECT_EQ(At(m, R"(serene_rank_wait_seconds_total{job_id="1",rank="0"})"), "0.5");
  EXPECT_DOUBLE_EQ(Number(m, R"(serene_rank_last_seen_seconds{job_id="1",rank="0"})"), 0.5);
  EXPECT_DOUBLE_EQ(Number(m, R"(serene_rank_last_seen_seconds{job_id="1",rank="1"})"), 1.5);
  // Rank 0 completed clocks 0 and 1, one second apart.
  EXPECT_GT(Number(m, R"(serene_rank_iteration_seconds{job_id="1",rank="0"})"), 0.0);
  EXPECT_EQ(At(m, R"(serene_rank_incs_applied_total{job_id="1",rank="0"})"), "2");
  EXPECT_EQ(At(m, R"(serene_rank_incs_duplicate_total{job_id="1",rank="0"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_clocks_total{job_id="1",rank="0"})"), "2");
  EXPECT_EQ(At(m, R"(serene_rank_clock_retransmits_total{job_id="1",rank="0"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_releases_total{job_id="1",rank="1"})"), "1");
  EXPECT_EQ(At(m, R"(serene_rank_nacks_total{job_id="1",rank="0"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_errors_total{job_id="1",rank="0"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_evictions_total{job_id="1",rank="0"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_joins_total{job_id="1",rank="1"})"), "1");
}

TEST_F(MetricsExpositionTest, RanksNeverSeenHaveNoClockAndNoLastSeen) {
  auto c = JobConfig::ParseSpec("id=2,workers=3,elements=4,key=0x5e7e7e01,policy=async");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(h_.pipeline().CreateJob(*c).ok());
  // JOIN, answered with a COOKIE, and JOIN echoing it (protocol.md).
  auto cookie = h_.Send(PacketBuilder(Op::kJoin, 2, 0, 0x5e7e7e01), 0);
  ASSERT_EQ(cookie.size(), 1u);
  ASSERT_EQ(cookie[0].header.op, Op::kCookie);
  h_.Send(PacketBuilder(Op::kJoin, 2, 0, 0x5e7e7e01).Clock(cookie[0].header.clock)
              .Row(cookie[0].header.row),
          0);
  auto m = Render();
  EXPECT_EQ(At(m, "serene_jobs"), "2");
  EXPECT_EQ(At(m, R"(serene_job_low_clock{job_id="2"})"), "-1");
  EXPECT_EQ(At(m, R"(serene_job_high_clock{job_id="2"})"), "-1");
  EXPECT_EQ(At(m, R"(serene_job_policy_window{job_id="2"})"), "+Inf");
  EXPECT_EQ(At(m, R"(serene_job_policy_lag{job_id="2"})"), "+Inf");
  EXPECT_EQ(At(m, R"(serene_job_policy_info{job_id="2",bank="active",policy="async",epoch="0"})"),
            "1");
  EXPECT_EQ(At(m, R"(serene_rank_done_clock{job_id="2",rank="2"})"), "-1");
  EXPECT_EQ(At(m, R"(serene_rank_lag_clocks{job_id="2",rank="2"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_joined{job_id="2",rank="2"})"), "0");
  At(m, R"(serene_rank_last_seen_seconds{job_id="2",rank="0"})");
  EXPECT_EQ(m.count(R"(serene_rank_last_seen_seconds{job_id="2",rank="1"})"), 0u);
  EXPECT_EQ(m.count(R"(serene_rank_iteration_seconds{job_id="2",rank="1"})"), 0u);
  EXPECT_EQ(m.count(R"(serene_rank_work_seconds{job_id="2",rank="1"})"), 0u);
  // Both jobs' samples of one family are together (Parse checks contiguity).
  EXPECT_LT(text_.find(R"(serene_job_workers{job_id="1"})"),
            text_.find(R"(serene_job_workers{job_id="2"})"));
}

TEST_F(MetricsExpositionTest, NeverExposesAJobKey) {
  auto c = JobConfig::ParseSpec("id=2,workers=1,elements=4,key=0x5e7e7e01");
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_TRUE(h_.pipeline().CreateJob(*c).ok());
  Render();
  EXPECT_EQ(text_.find("5e7e7e01"), std::string::npos);
  EXPECT_EQ(text_.find("1585364481"), std::string::npos);  // 0x5e7e7e01 in decimal
  EXPECT_EQ(text_.find("key="), std::string::npos);
  EXPECT_EQ(text_.find("{key=\""), std::string::npos);
  EXPECT_EQ(text_.find(",key=\""), std::string::npos);
  // Job 1's key is 7: no label carries it and no job line is the config string.
  EXPECT_EQ(text_.find("=\"7\""), std::string::npos);
  EXPECT_EQ(text_.find("id=1"), std::string::npos);
}

TEST_F(MetricsExpositionTest, GlobalPortAndControlCounters) {
  ServerCounters server;
  server.rx_datagrams = 11;
  server.rx_bytes = 1234;
  server.rx_truncated = 1;
  server.rx_errors = 2;
  server.tx_datagrams = 7;
  server.tx_bytes = 567;
  server.tx_errors = 3;
  server.control_tx = 4;
  server.rx_faults.dropped = 5;
  server.tx_faults.delayed = 6;
  ControlPlaneCounters control;
  control.rpcs = 9;
  control.unauthenticated = 1;
  control.invalid_argument = 2;
  control.silence_evictions = 3;
  auto m = Render(server, control);

  // 4 JOINs (2 answered with a COOKIE), 3 seeding, 2 INCs and a CLOCK, 3
  // dropped globally.
  EXPECT_EQ(At(m, "serene_packets_total"), "13");
  EXPECT_EQ(At(m, R"(serene_parse_errors_total{kind="truncated"})"), "1");
  EXPECT_EQ(At(m, R"(serene_parse_errors_total{kind="bad_magic"})"), "0");
  EXPECT_EQ(At(m, R"(serene_parse_errors_total{kind="length_mismatch"})"), "0");
  EXPECT_EQ(m.count(R"(serene_parse_errors_total{kind="ok"})"), 0u);
  EXPECT_EQ(At(m, "serene_unknown_job_packets_total"), "1");
  EXPECT_EQ(At(m, "serene_bad_key_packets_total"), "1");
  EXPECT_EQ(At(m, "serene_not_request_packets_total"), "0");

  EXPECT_EQ(At(m, "serene_port_rx_datagrams_total"), "11");
  EXPECT_EQ(At(m, "serene_port_rx_bytes_total"), "1234");
  EXPECT_EQ(At(m, "serene_port_rx_truncated_total"), "1");
  EXPECT_EQ(At(m, "serene_port_rx_errors_total"), "2");
  EXPECT_EQ(At(m, "serene_port_tx_datagrams_total"), "7");
  EXPECT_EQ(At(m, "serene_port_tx_bytes_total"), "567");
  EXPECT_EQ(At(m, "serene_port_tx_errors_total"), "3");
  EXPECT_EQ(At(m, "serene_control_tx_datagrams_total"), "4");
  EXPECT_EQ(At(m, R"(serene_fault_dropped_total{direction="rx"})"), "5");
  EXPECT_EQ(At(m, R"(serene_fault_dropped_total{direction="tx"})"), "0");
  EXPECT_EQ(At(m, R"(serene_fault_delayed_total{direction="tx"})"), "6");

  EXPECT_EQ(At(m, "serene_control_rpcs_total"), "9");
  EXPECT_EQ(At(m, "serene_control_unauthenticated_total"), "1");
  EXPECT_EQ(At(m, "serene_control_invalid_argument_total"), "2");
  EXPECT_EQ(At(m, "serene_control_silence_evictions_total"), "3");
}

TEST_F(MetricsExpositionTest, PendingSwapShowsBothBanks) {
  dataplane::Output out = dataplane::Output::ForBatch(1);
  auto change = h_.pipeline().SetPolicy(1, BarrierParams::Ssp(4), 5, h_.now, &out);
  ASSERT_TRUE(change.ok()) << change.status().message();
  auto m = Render();
  EXPECT_EQ(At(m, R"(serene_job_swap_pending{job_id="1"})"), "1");
  EXPECT_EQ(At(m, R"(serene_job_swap_clock{job_id="1"})"), "5");
  EXPECT_EQ(At(m, R"(serene_job_policy_info{job_id="1",bank="active",policy="sync",epoch="0"})"), "1");
  const std::string next = R"(serene_job_policy_info{job_id="1",bank="next",policy="ssp:4",epoch=")" +
                           std::to_string(change->epoch) + "\"}";
  EXPECT_EQ(At(m, next), "1");
}

// The formatter on its own, with telemetry no pipeline would produce easily.
TEST(FormatMetrics, WaitTotalsIncludeTheCurrentWaitAndSaturateAtZero) {
  MetricsSnapshot s;
  s.now = 100 * kSecond;
  JobTelemetry& t = s.jobs.emplace_back();
  t.config.id = 65535;
  t.config.workers = 3;
  t.config.elements = 1;
  t.config.key = 0xDEADBEEF;
  t.active = BarrierParams{3, 2, BarrierParams::kUnbounded};
  t.low = proto::kNoClock;
  t.high = 4'000'000'000u;  // a clock beyond int32: written unsigned
  for (uint32_t r = 0; r < 3; ++r) {
    WorkerTelemetry& w = t.workers.emplace_back();
    w.rank = r;
  }
  // Rank 0: waited 2 s before, waiting for 0.25 s now.
  t.workers[0].waiting = true;
  t.workers[0].wait_since = s.now - kSecond / 4;
  t.workers[0].counters.wait_ns = 2 * kSecond;
  t.workers[0].done = 4'000'000'000u;
  t.workers[0].iter_ns = 1'500'000;
  t.workers[0].work_ns = 250'000;
  // Rank 1: stamped by another thread slightly after `now`.
  t.workers[1].waiting = true;
  t.workers[1].wait_since = s.now + 1000;
  t.workers[1].last_seen = s.now + 1000;
  t.workers[1].done = 3'999'999'990u;

  const std::string text = FormatMetrics(s);
  auto m = Parse(text);
  EXPECT_EQ(At(m, R"(serene_rank_waiting_seconds{job_id="65535",rank="0"})"), "0.25");
  EXPECT_EQ(At(m, R"(serene_rank_wait_seconds_total{job_id="65535",rank="0"})"), "2.25");
  EXPECT_EQ(At(m, R"(serene_rank_waiting_seconds{job_id="65535",rank="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_last_seen_seconds{job_id="65535",rank="1"})"), "0");
  EXPECT_EQ(At(m, R"(serene_rank_iteration_seconds{job_id="65535",rank="0"})"), "0.0015");
  EXPECT_EQ(At(m, R"(serene_rank_work_seconds{job_id="65535",rank="0"})"), "0.00025");
  EXPECT_EQ(At(m, R"(serene_job_high_clock{job_id="65535"})"), "4000000000");
  EXPECT_EQ(At(m, R"(serene_job_low_clock{job_id="65535"})"), "-1");
  EXPECT_EQ(At(m, R"(serene_rank_lag_clocks{job_id="65535",rank="1"})"), "10");
  EXPECT_EQ(At(m, R"(serene_job_policy_window{job_id="65535"})"), "3");
  EXPECT_EQ(At(m, R"(serene_job_policy_quorum{job_id="65535"})"), "2");
  EXPECT_EQ(At(m, R"(serene_job_policy_lag{job_id="65535"})"), "+Inf");
  EXPECT_EQ(
      At(m,
         R"(serene_job_policy_info{job_id="65535",bank="active",policy="window=3,quorum=2,lag=inf",epoch="0"})"),
      "1");
  EXPECT_EQ(text.find("3735928559"), std::string::npos);  // 0xDEADBEEF
  EXPECT_EQ(text.find("deadbeef"), std::string::npos);
}

TEST(FormatMetrics, NoJobsStillValid) {
  MetricsSnapshot s;
  std::string text = "# preceding text\n";
  switchd::AppendMetrics(s, &text);
  EXPECT_EQ(text.rfind("# preceding text\n", 0), 0u) << "AppendMetrics appends";
  auto m = Parse(text.substr(17));
  EXPECT_EQ(At(m, "serene_jobs"), "0");
  EXPECT_EQ(At(m, "serene_packets_total"), "0");
}

}  // namespace
}  // namespace serene::testing
