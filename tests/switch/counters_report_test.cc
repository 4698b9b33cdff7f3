// The exit counters report (switch/counters_report.h) over a pipeline that
// saw known traffic.
#include "switch/counters_report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "net/address.h"
#include "proto/codec.h"

namespace serene::switchd {
namespace {

using proto::Op;

std::vector<uint8_t> Packet(Op op, uint16_t worker, uint32_t key, uint32_t clock = 0,
                            uint32_t row = 0, std::vector<int32_t> values = {}) {
  proto::Header h;
  h.op = op;
  h.job = 5;
  h.worker = worker;
  h.key = key;
  h.clock = clock;
  h.row = row;
  std::vector<uint8_t> buf(proto::PacketSize(values.size()));
  proto::Encode(h, values, buf.data());
  return buf;
}

// Processes `d` from `from`; a JOIN answered with a COOKIE is sent again
// carrying it, as a worker does (docs/protocol.md, "Return routability").
void ProcessAsWorker(dataplane::Pipeline& p, std::vector<uint8_t> d, const proto::Endpoint& from,
                     const proto::Endpoint& via, dataplane::Timestamp now, dataplane::Output* out) {
  out->Clear();
  p.Process(d, from, via, now, out);
  if (d.size() < proto::kHeaderSize || d[proto::kOffOp] != static_cast<uint8_t>(Op::kJoin) ||
      out->size() != 1) {
    return;  // a datagram too short to be a JOIN, or not answered with a COOKIE alone
  }
  const auto reply = out->bytes(0);
  if (reply.size() < proto::kHeaderSize ||
      reply[proto::kOffOp] != static_cast<uint8_t>(Op::kCookie)) {
    return;
  }
  std::copy(reply.begin() + proto::kOffClock, reply.begin() + proto::kOffCount,
            d.begin() + proto::kOffClock);
  out->Clear();
  p.Process(d, from, via, now, out);
}

std::string Line(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find('\n', at) - at);
}

class SwitchCountersReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto job = dataplane::JobConfig::ParseSpec("id=5,workers=2,elements=8,row=4,key=9");
    ASSERT_TRUE(job.ok());
    ASSERT_TRUE(pipeline_.CreateJob(*job).ok());
    rank0_ = *net::ParseEndpoint("127.0.0.1:40000");
  }

  void Send(const std::vector<uint8_t>& d) {
    ProcessAsWorker(pipeline_, d, rank0_, proto::Endpoint{}, 1000, &out_);
  }

  dataplane::Pipeline pipeline_;
  dataplane::Output out_ = dataplane::Output::ForBatch(1);
  proto::Endpoint rank0_;
};

TEST_F(SwitchCountersReportTest, QuietSwitchReportsNothingWrong) {
  const std::string r = FormatCountersReport(pipeline_, ServerCounters{});
  EXPECT_EQ(Line(r, "parse errors:"), "parse errors: none");
  EXPECT_EQ(Line(r, "  drops:"), "  drops: none");
  EXPECT_EQ(Line(r, "pipeline:"), "pipeline: packets=0 unknown_job=0 not_request=0 bad_key=0");
  EXPECT_NE(r.find("rank 1 (not joined) done=-"), std::string::npos) << r;
  EXPECT_EQ(r.find("faults"), std::string::npos) << r;  // no injector, no line
}

TEST_F(SwitchCountersReportTest, ListsDropsParseErrorsAndRanks) {
  Send(Packet(Op::kJoin, 0, 9));
  Send(Packet(Op::kInc, 0, 9, 0, 0, {1, 2, 3, 4}));
  Send(Packet(Op::kInc, 0, 9, 0, 0, {1, 2, 3, 4}));  // duplicate
  Send(Packet(Op::kRead, 0, 8));                     // wrong key
  Send(std::vector<uint8_t>(30, 0xEE));              // bad magic
  Send(std::vector<uint8_t>(3, 0x53));               // truncated
  ServerCounters server;
  server.rx_datagrams = 6;
  server.rx_faults.offered = 7;
  server.rx_faults.dropped = 1;
  const std::string r = FormatCountersReport(pipeline_, server);

  EXPECT_NE(Line(r, "ports:").find("rx=6 datagrams"), std::string::npos) << r;
  EXPECT_NE(Line(r, "faults rx:").find("offered=7 delivered=0 dropped=1"), std::string::npos) << r;
  EXPECT_EQ(Line(r, "faults tx:"), "");
  EXPECT_EQ(Line(r, "pipeline:"), "pipeline: packets=7 unknown_job=0 not_request=0 bad_key=1");
  EXPECT_EQ(Line(r, "parse errors:"), "parse errors: truncated=1 bad_magic=1");
  EXPECT_EQ(Line(r, "  requests:"), "  requests: JOIN=2 READ=0 INC=2 CLOCK=0 LEAVE=0");
  const std::string drops = Line(r, "  drops:");
  EXPECT_NE(
      drops.find(std::string(dataplane::DropReasonName(dataplane::DropReason::kBadKey)) + "=1"),
      std::string::npos)
      << r;
  EXPECT_NE(
      drops.find(std::string(dataplane::DropReasonName(dataplane::DropReason::kIncDuplicate)) +
                 "=1"),
      std::string::npos)
      << r;
  const std::string rank0 = Line(r, "  rank 0 ");
  EXPECT_NE(rank0.find("127.0.0.1:40000"), std::string::npos) << r;
  EXPECT_NE(rank0.find("joins=1"), std::string::npos) << r;
  EXPECT_NE(rank0.find("incs=1 inc_dups=1"), std::string::npos) << r;
  // The job's key is a secret: never printed.
  EXPECT_EQ(r.find("key=9"), std::string::npos) << r;
  EXPECT_EQ(r.find(",key="), std::string::npos) << r;
}

TEST(SwitchCountersReport, ShowsTheAllowListTheAddressEachRankJoinedAndSecurityDrops) {
  dataplane::Pipeline pipeline;
  auto job = dataplane::JobConfig::ParseSpec(
      "id=5,workers=2,elements=8,row=4,key=9,allow=127.0.0.0/8;fd00::/8");
  ASSERT_TRUE(job.ok()) << job.status().message();
  ASSERT_TRUE(pipeline.CreateJob(*job).ok());
  dataplane::Output out = dataplane::Output::ForBatch(1);
  const proto::Endpoint rank0 = *net::ParseEndpoint("127.0.0.1:40000");
  const proto::Endpoint via = *net::ParseEndpoint("127.0.0.2:7000");
  const auto send = [&](const std::vector<uint8_t>& d, const proto::Endpoint& from) {
    ProcessAsWorker(pipeline, d, from, via, 1000, &out);
  };
  send(Packet(Op::kJoin, 0, 9), rank0);
  send(Packet(Op::kJoin, 0, 9), *net::ParseEndpoint("127.0.0.1:40001"));  // rank_in_use
  send(Packet(Op::kJoin, 1, 9), *net::ParseEndpoint("192.0.2.9:40000"));  // not allowed
  ASSERT_TRUE(pipeline.Evict(5, 0, 2000, &out).ok());
  proto::Header h;
  h.op = Op::kLeave;
  h.job = 5;
  h.key = 9;
  h.flags = proto::flags::kFinished;
  std::vector<uint8_t> leave(proto::kHeaderSize);
  proto::Encode(h, {}, leave.data());
  send(leave, rank0);  // an evicted rank cannot end the job

  const std::string r = FormatCountersReport(pipeline, ServerCounters{});
  EXPECT_NE(Line(r, "job 5 ").find(",allow=127.0.0.0/8;fd00::/8,"), std::string::npos) << r;
  EXPECT_EQ(Line(r, "job 5 ").find("finished"), std::string::npos) << r;
  const std::string drops = Line(r, "  drops:");
  EXPECT_NE(drops.find("rank_in_use=1"), std::string::npos) << r;
  EXPECT_NE(drops.find("source_not_allowed=1"), std::string::npos) << r;
  EXPECT_NE(drops.find("finish_not_live=1"), std::string::npos) << r;
  EXPECT_NE(Line(r, "  rank 0 ").find("127.0.0.1:40000 via 127.0.0.2:7000 done="),
            std::string::npos)
      << r;
  EXPECT_NE(Line(r, "  rank 1 ").find("(not joined) done="), std::string::npos) << r;
}

}  // namespace
}  // namespace serene::switchd
