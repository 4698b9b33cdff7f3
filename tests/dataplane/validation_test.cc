// Every malformed or unauthorized packet is rejected with its reason and
// changes nothing (golden fixtures, katran style).
#include <gtest/gtest.h>

#include <functional>
#include <sstream>

#include "dataplane/join_cookie.h"
#include "packet_builder.h"

namespace serene::testing {
namespace {

using dataplane::DropReason;
using dataplane::Verdict;
using proto::ErrorCode;
using proto::Op;
using proto::ParseError;

constexpr uint32_t kKey = 0xC0FFEE;

// Everything a packet could change, except the counters of drops and errors.
std::string Digest(Harness& h) {
  std::ostringstream s;
  auto t = h.Telemetry();
  for (int32_t v : h.Model()) s << v << ',';
  s << "|low=" << t.low << " high=" << t.high << " sat=" << t.saturated << " fin=" << t.finished
    << " epoch=" << t.active_epoch << " swap=" << t.swap_pending << " rel=" << t.counters.releases
    << " nacks=" << t.counters.nacks << " folds=" << t.counters.folds;
  for (const auto& w : t.workers) {
    s << "|w" << w.rank << " done=" << w.done << " joined=" << w.joined << " live=" << w.live
      << " waiting=" << w.waiting << " rows=" << w.rows_this_clock << " port=" << w.addr.port
      << " inc=" << w.counters.incs_applied
      << " reads=" << w.counters.reads << " clocks=" << w.counters.clocks
      << " rel=" << w.counters.releases << " joins=" << w.counters.joins;
  }
  return s.str();
}

struct Fixture {
  const char* description;
  std::function<std::vector<uint8_t>()> packet;
  uint32_t from_port_rank;  // source address: WorkerAddr(from_port_rank)
  Verdict verdict;
  DropReason reason;
  ParseError parse_error;
  int error_code;  // ERROR reply expected with this code; 0: no reply at all; kCookie: a COOKIE
};

// A COOKIE, not an ERROR, answers the fixture (docs/protocol.md, "Return routability").
constexpr int kCookie = -1;
constexpr dataplane::Timestamp kNow = 1'000'000;  // Harness::now

// The cookie the harness's pipeline (secret {0, 0}) gives rank `worker` of
// job 1 at WorkerAddr(from_port_rank), `buckets_ago` buckets before now.
uint64_t CookieFor(uint16_t worker, uint32_t from_port_rank, uint64_t buckets_ago = 0) {
  return dataplane::JoinCookie({}, WorkerAddr(from_port_rank), 1, worker,
                               (kNow >> dataplane::kCookieBucketShift) - buckets_ago);
}

std::vector<uint8_t> Good(Op op, uint16_t worker = 0, uint32_t clock = 1, uint32_t row = 0,
                          std::vector<int32_t> values = {}) {
  return PacketBuilder(op, 1, worker, kKey).Clock(clock).Row(row).Values(std::move(values)).Build();
}

// A JOIN of `worker` from WorkerAddr(from_port_rank) carrying `cookie`.
std::vector<uint8_t> CookiedJoin(uint16_t worker, uint64_t cookie, std::vector<int32_t> values = {}) {
  return PacketBuilder(Op::kJoin, 1, worker, kKey)
      .Clock(proto::cookie::High(cookie))
      .Row(proto::cookie::Low(cookie))
      .Values(std::move(values))
      .Build();
}

std::vector<Fixture> Fixtures() {
  const std::vector<int32_t> row4 = {1, 2, 3, 4};
  return {
      {"datagram shorter than the header", [] { return std::vector<uint8_t>(10, 0x53); }, 0,
       Verdict::kDropped, DropReason::kParse, ParseError::kTruncated, 0},
      {"empty datagram", [] { return std::vector<uint8_t>(); }, 0, Verdict::kDropped,
       DropReason::kParse, ParseError::kTruncated, 0},
      {"bad magic", [=] { auto d = Good(Op::kInc, 0, 1, 0, row4); d[0] = 0x12; return d; }, 0,
       Verdict::kDropped, DropReason::kParse, ParseError::kBadMagic, 0},
      {"bad version", [=] { auto d = Good(Op::kInc, 0, 1, 0, row4); d[2] = 2; return d; }, 0,
       Verdict::kDropped, DropReason::kParse, ParseError::kBadVersion, 0},
      {"op 0", [] { auto d = Good(Op::kRead); d[3] = 0; return d; }, 0, Verdict::kDropped,
       DropReason::kParse, ParseError::kBadOp, 0},
      {"op 12", [] { auto d = Good(Op::kRead); d[3] = 12; return d; }, 0, Verdict::kDropped,
       DropReason::kParse, ParseError::kBadOp, 0},
      {"a COOKIE sent to the switch", [] { return Good(Op::kCookie); }, 0, Verdict::kDropped,
       DropReason::kNotRequest, ParseError::kOk, 0},
      {"count beyond the datagram",
       [=] { auto d = Good(Op::kInc, 0, 1, 0, row4); d.resize(d.size() - 4); return d; }, 0,
       Verdict::kDropped, DropReason::kParse, ParseError::kLengthMismatch, 0},
      {"trailing bytes after the values",
       [=] { auto d = Good(Op::kInc, 0, 1, 0, row4); d.push_back(0); return d; }, 0,
       Verdict::kDropped, DropReason::kParse, ParseError::kLengthMismatch, 0},
      {"a reply op sent to the switch", [=] { return Good(Op::kReadReply, 0, 1, 0, row4); }, 0,
       Verdict::kDropped, DropReason::kNotRequest, ParseError::kOk, 0},
      {"unknown job",
       [=] { return PacketBuilder(Op::kInc, 9, 0, kKey).Clock(1).Values(row4).Build(); }, 0,
       Verdict::kDropped, DropReason::kUnknownJob, ParseError::kOk, 0},
      {"wrong key on INC",
       [=] { return PacketBuilder(Op::kInc, 1, 0, kKey + 1).Clock(1).Values(row4).Build(); }, 0,
       Verdict::kDropped, DropReason::kBadKey, ParseError::kOk, 0},
      {"wrong key on JOIN (no re-bind)",
       [] { return PacketBuilder(Op::kJoin, 1, 1, 0).Build(); }, 7, Verdict::kDropped,
       DropReason::kBadKey, ParseError::kOk, 0},
      {"wrong key on CLOCK (no reply)",
       [] { return PacketBuilder(Op::kClock, 1, 0, 0).Clock(1).Row(3).Build(); }, 0,
       Verdict::kDropped, DropReason::kBadKey, ParseError::kOk, 0},
      {"INC from rank >= N", [=] { return Good(Op::kInc, 3, 1, 0, row4); }, 3, Verdict::kDropped,
       DropReason::kBadRank, ParseError::kOk, 0},
      {"CLOCK from rank >= N", [] { return Good(Op::kClock, 200, 1, 0); }, 0, Verdict::kRefused,
       DropReason::kBadRank, ParseError::kOk, kCookie},
      {"JOIN of rank >= N without a cookie", [] { return Good(Op::kJoin, 3, 0); }, 3,
       Verdict::kRefused, DropReason::kJoinCookie, ParseError::kOk, kCookie},
      {"JOIN of rank >= N with its cookie", [] { return CookiedJoin(3, CookieFor(3, 3)); }, 3,
       Verdict::kRefused, DropReason::kBadRank, ParseError::kOk,
       static_cast<int>(ErrorCode::kBadRank)},
      {"JOIN carrying values, without a cookie", [] { return Good(Op::kJoin, 1, 0, 0, {5}); }, 9,
       Verdict::kRefused, DropReason::kJoinCookie, ParseError::kOk, kCookie},
      {"JOIN carrying values, with its cookie", [] { return CookiedJoin(1, CookieFor(1, 9), {5}); },
       9, Verdict::kRefused, DropReason::kBadCount, ParseError::kOk,
       static_cast<int>(ErrorCode::kBadCount)},
      {"JOIN of a free rank with the cookie of another address",
       [] { return CookiedJoin(2, CookieFor(2, 8)); }, 9, Verdict::kRefused,
       DropReason::kJoinCookie, ParseError::kOk, kCookie},
      {"JOIN of a free rank with the cookie of another rank",
       [] { return CookiedJoin(2, CookieFor(1, 9)); }, 9, Verdict::kRefused,
       DropReason::kJoinCookie, ParseError::kOk, kCookie},
      {"JOIN of a free rank with a cookie two buckets old",
       [] { return CookiedJoin(2, CookieFor(2, 9, 2)); }, 9, Verdict::kRefused,
       DropReason::kJoinCookie, ParseError::kOk, kCookie},
      {"INC row out of range", [] { return Good(Op::kInc, 0, 1, 3, {1, 2}); }, 0,
       Verdict::kDropped, DropReason::kBadRow, ParseError::kOk, 0},
      {"READ row out of range", [] { return Good(Op::kRead, 0, 1, 3); }, 0, Verdict::kRefused,
       DropReason::kBadRow, ParseError::kOk, static_cast<int>(ErrorCode::kBadRow)},
      {"INC with the wrong count for the row", [] { return Good(Op::kInc, 0, 1, 2, {1, 2, 3}); },
       0, Verdict::kDropped, DropReason::kBadRowLength, ParseError::kOk, 0},
      {"CLOCK announcing more rows than the job has", [] { return Good(Op::kClock, 0, 1, 4); },
       0, Verdict::kRefused, DropReason::kBadRowCount, ParseError::kOk,
       static_cast<int>(ErrorCode::kBadRowCount)},
      {"CLOCK carrying values", [] { return Good(Op::kClock, 0, 1, 3, {1}); }, 0,
       Verdict::kRefused, DropReason::kBadCount, ParseError::kOk,
       static_cast<int>(ErrorCode::kBadCount)},
      {"packet from a rank that never joined", [] { return Good(Op::kRead, 2, 1, 0); }, 2,
       Verdict::kRefused, DropReason::kNotJoined, ParseError::kOk, kCookie},
      {"INC from another address than the joined one", [=] { return Good(Op::kInc, 0, 1, 0, row4); },
       5, Verdict::kDropped, DropReason::kWrongSource, ParseError::kOk, 0},
      {"READ from another address", [] { return Good(Op::kRead, 0, 1, 0); }, 5, Verdict::kRefused,
       DropReason::kWrongSource, ParseError::kOk, kCookie},
      {"LEAVE from another address", [] { return Good(Op::kLeave, 0, 1, 0); }, 5,
       Verdict::kRefused, DropReason::kWrongSource, ParseError::kOk, kCookie},
      {"JOIN of a live rank from another address, without a cookie",
       [] { return Good(Op::kJoin, 0, 0); }, 5, Verdict::kRefused, DropReason::kJoinCookie,
       ParseError::kOk, kCookie},
      {"JOIN of a live rank from another address (no take-over)",
       [] { return CookiedJoin(0, CookieFor(0, 5)); }, 5, Verdict::kRefused,
       DropReason::kRankInUse, ParseError::kOk, static_cast<int>(ErrorCode::kRankInUse)},
      {"JOIN of a live rank from another address, carrying values",
       [] { return CookiedJoin(0, CookieFor(0, 5), {5}); }, 5, Verdict::kRefused,
       DropReason::kBadCount, ParseError::kOk, static_cast<int>(ErrorCode::kBadCount)},
      {"READ at a clock the rank is not in", [] { return Good(Op::kRead, 0, 5, 0); }, 0,
       Verdict::kRefused, DropReason::kBadClock, ParseError::kOk,
       static_cast<int>(ErrorCode::kBadClock)},
      {"INC of a completed clock", [=] { return Good(Op::kInc, 0, 0, 0, row4); }, 0,
       Verdict::kDropped, DropReason::kIncStale, ParseError::kOk, 0},
      {"INC of a future clock", [=] { return Good(Op::kInc, 0, 2, 0, row4); }, 0,
       Verdict::kDropped, DropReason::kIncEarly, ParseError::kOk, 0},
      {"INC already applied at this clock", [=] { return Good(Op::kInc, 0, 1, 1, row4); }, 0,
       Verdict::kDropped, DropReason::kIncDuplicate, ParseError::kOk, 0},
      {"CLOCK for a clock neither current nor last", [] { return Good(Op::kClock, 0, 9, 0); }, 0,
       Verdict::kRefused, DropReason::kBadClock, ParseError::kOk,
       static_cast<int>(ErrorCode::kBadClock)},
  };
}

class ValidationTest : public ::testing::TestWithParam<size_t> {};

// Job 1: 2 ranks (rank 2 of a 3-rank job never joins), 10 elements in rows of 4;
// seeded; rank 0 is in clock 1 and has INC'd row 1.
void Prepare(Harness& h) {
  dataplane::JobConfig c;
  c.id = 1;
  c.workers = 3;
  c.elements = 10;
  c.row_width = 4;
  c.key = kKey;
  c.policy = dataplane::BarrierParams::Async();
  h.CreateJob(c);
  h.Join(0);
  h.Join(1);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 2, h.now, &out).ok());
  h.Seed({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  ASSERT_EQ(h.Inc(0, 1, 1, {1, 1, 1, 1}).verdict, Verdict::kApplied);
}

TEST_P(ValidationTest, RejectedWithReasonAndNoStateChange) {
  const Fixture f = Fixtures()[GetParam()];
  SCOPED_TRACE(f.description);
  Harness h(kKey);
  Prepare(h);
  const std::string before = Digest(h);
  const auto global_before = h.pipeline().global_counters();
  const auto drops_before = h.Telemetry().counters.drops;

  dataplane::ProcessResult r;
  auto emitted = h.SendRaw(f.packet(), WorkerAddr(f.from_port_rank), &r);
  EXPECT_EQ(r.verdict, f.verdict);
  EXPECT_EQ(r.reason, f.reason) << dataplane::DropReasonName(r.reason);
  EXPECT_EQ(r.parse_error, f.parse_error) << proto::ParseErrorName(r.parse_error);
  if (f.error_code == 0) {
    EXPECT_TRUE(emitted.empty()) << "expected no reply";
  } else if (f.error_code == kCookie) {
    // One COOKIE, no larger than the request, carrying the source's cookie
    // and the answered op, and nothing of the job's state.
    ASSERT_EQ(emitted.size(), 1u);
    const Emitted& c = emitted[0];
    const auto bytes = f.packet();
    proto::PacketView req;
    ASSERT_EQ(proto::Decode(bytes.data(), bytes.size(), &req), proto::ParseError::kOk);
    EXPECT_EQ(c.header.op, Op::kCookie);
    EXPECT_EQ(c.dst, WorkerAddr(f.from_port_rank));
    EXPECT_EQ(c.header.key, kKey);
    EXPECT_EQ(c.header.worker, req.header.worker);
    EXPECT_EQ(c.header.count, 0u);
    EXPECT_LE(proto::PacketSize(c.header.count), bytes.size());
    EXPECT_EQ(c.header.flags, proto::cookie::FlagsFor(req.header.op));
    EXPECT_EQ(proto::cookie::Of(c.header.clock, c.header.row),
              CookieFor(req.header.worker, f.from_port_rank));
  } else {
    ASSERT_EQ(emitted.size(), 1u);
    EXPECT_EQ(emitted[0].header.op, Op::kError);
    EXPECT_EQ(emitted[0].dst, WorkerAddr(f.from_port_rank)) << "ERROR goes to the source";
    EXPECT_EQ(emitted[0].header.key, kKey);
    ASSERT_EQ(emitted[0].values.size(), proto::error_reply::kCount);
    EXPECT_EQ(emitted[0].values[proto::error_reply::kCode], f.error_code);
    // The ERROR names the refused request: its op, clock and row.
    proto::PacketView req;
    const auto bytes = f.packet();
    ASSERT_EQ(proto::Decode(bytes.data(), bytes.size(), &req), proto::ParseError::kOk);
    EXPECT_EQ(emitted[0].values[proto::error_reply::kOp], static_cast<int32_t>(req.header.op));
    EXPECT_EQ(emitted[0].header.clock, req.header.clock);
    EXPECT_EQ(emitted[0].header.row, req.header.row);
  }
  EXPECT_EQ(Digest(h), before) << "state changed";

  // Counted by reason: on the job if it was identified, globally otherwise.
  const auto g = h.pipeline().global_counters();
  const auto drops = h.Telemetry().counters.drops;
  switch (f.reason) {
    case DropReason::kParse:
      EXPECT_EQ(g.parse_errors[static_cast<size_t>(f.parse_error)],
                global_before.parse_errors[static_cast<size_t>(f.parse_error)] + 1);
      break;
    case DropReason::kNotRequest: EXPECT_EQ(g.not_request, global_before.not_request + 1); break;
    case DropReason::kUnknownJob: EXPECT_EQ(g.unknown_job, global_before.unknown_job + 1); break;
    default: {
      const size_t i = static_cast<size_t>(f.reason);
      EXPECT_EQ(drops[i], drops_before[i] + 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ValidationTest, ::testing::Range<size_t>(0, Fixtures().size()),
                         [](const ::testing::TestParamInfo<size_t>& param_info) {
                           std::string name = Fixtures()[param_info.param].description;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(Validation, RejoinFromNewAddressRebindsTheRankOnceItIsNoLongerLive) {
  Harness h(kKey);
  Prepare(h);
  // A restarted rank 1 joins from a new port while its old binding is live:
  // refused (rank_in_use). Once evicted, it joins and replies go there.
  dataplane::ProcessResult refused;
  h.JoinFrom(1, WorkerAddr(21), &refused);
  EXPECT_EQ(refused.reason, DropReason::kRankInUse);
  dataplane::Output out = dataplane::Output::ForBatch(1);
  ASSERT_TRUE(h.pipeline().Evict(1, 1, h.now, &out).ok());
  auto e = h.JoinFrom(1, WorkerAddr(21));
  ASSERT_EQ(OfOp(e, Op::kJoinAck).size(), 1u);
  EXPECT_EQ(OfOp(e, Op::kJoinAck)[0].dst, WorkerAddr(21));
  // The old address is now refused.
  dataplane::ProcessResult r;
  h.SendRaw(Good(Op::kRead, 1, 1, 0), WorkerAddr(1), &r);
  EXPECT_EQ(r.reason, DropReason::kWrongSource);
  h.SendRaw(Good(Op::kRead, 1, 1, 0), WorkerAddr(21), &r);
  EXPECT_EQ(r.verdict, Verdict::kReplied);
}

TEST(Validation, JoinAckDescribesTheJob) {
  Harness h(kKey);
  Prepare(h);
  auto e = h.Join(0);
  ASSERT_EQ(e.size(), 1u);
  const auto& v = e[0].values;
  ASSERT_EQ(v.size(), proto::join_ack::kCount);
  EXPECT_EQ(v[proto::join_ack::kWorkers], 3);
  EXPECT_EQ(v[proto::join_ack::kElements], 10);
  EXPECT_EQ(v[proto::join_ack::kRowWidth], 4);
  EXPECT_EQ(v[proto::join_ack::kDone], 0);
  EXPECT_EQ(v[proto::join_ack::kRows], 3);
  EXPECT_EQ(v[proto::join_ack::kScaleLog2], 24);
  EXPECT_FALSE(e[0].header.flags & proto::flags::kWaiting);
  EXPECT_EQ(h.Telemetry().workers[0].rows_this_clock, 1u) << "a re-JOIN keeps the clock's INCs";
}

}  // namespace
}  // namespace serene::testing
