// The reliability/security rules against the real serene-switch (docs/security.md):
// the runtime API's allow-list field, the allow-list on the packet path, and
// a restarted worker that rejoins once its old binding was evicted.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "control/runtime_client.h"
#include "net/address.h"
#include "proto/codec.h"
#include "testing/switch_process.h"
#include "udp_peer.h"

namespace serene::switchd::testing {
namespace {

using namespace std::chrono_literals;
using control::RuntimeClient;
using proto::Op;
using serene::testing::SwitchProcess;

std::unique_ptr<RuntimeClient> Api(const SwitchProcess& sw) {
  auto api = RuntimeClient::Create(sw.control_address(), "");
  EXPECT_TRUE(api.ok()) << api.status().message();
  return api.ok() ? std::move(*api) : nullptr;
}

proto::Endpoint Target(const SwitchProcess& sw) { return *net::ParseEndpoint(sw.address()); }

Request Req(uint16_t job, uint32_t key, Op op, uint16_t worker, uint32_t clock = 0,
            uint32_t row = 0) {
  return Request{op, job, worker, key, clock, row, {}, 0};
}

int32_t ErrorCodeOf(const Reply& r) { return r.values.at(proto::error_reply::kCode); }

uint64_t Drops(const control::v1::JobTelemetry& t, const std::string& reason) {
  auto it = t.counters().drops().find(reason);
  return it == t.counters().drops().end() ? 0 : it->second;
}

TEST(SecurityE2E, TheRuntimeApiCreatesJobsWithAnAllowList) {
  SwitchProcess sw({});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Api(sw);
  ASSERT_NE(api, nullptr);

  control::v1::Job job;
  job.set_id(3);
  job.set_workers(2);
  job.set_elements(8);
  job.add_allow("10.0.0.0/8");
  job.add_allow("::1");
  auto created = api->CreateJob(job);
  ASSERT_TRUE(created.ok()) << created.status().message();
  ASSERT_EQ(created->allow_size(), 2);
  EXPECT_EQ(created->allow(0), "10.0.0.0/8");
  EXPECT_EQ(created->allow(1), "::1/128") << "canonical form";
  auto jobs = api->ListJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].job().allow_size(), 2);

  // A worker on 127.0.0.1 with the right key is outside the list: no answer.
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(Target(sw), Req(3, created->key(), Op::kJoin, 0)));
  EXPECT_FALSE(peer.Next(300ms).has_value());
  auto t = api->GetTelemetry(3);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(Drops(*t, "source_not_allowed"), 1u);
  EXPECT_FALSE(t->ranks(0).joined());
  EXPECT_EQ(t->job().allow_size(), 2) << "telemetry shows the list (never the key)";

  // Bad prefixes are refused naming the field.
  job.set_id(4);
  job.clear_allow();
  job.add_allow("10.0.0.0/8");
  job.add_allow("10.0.0.0/33");
  auto bad = api->CreateJob(job);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("job.allow[1]"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("10.0.0.0/33"), std::string::npos)
      << bad.status().message();
  job.clear_allow();
  for (int i = 0; i < 9; ++i) job.add_allow("10." + std::to_string(i) + ".0.0/16");
  auto too_many = api->CreateJob(job);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("job.allow"), std::string::npos)
      << too_many.status().message();
  EXPECT_NE(too_many.status().message().find("at most 8"), std::string::npos)
      << too_many.status().message();
  EXPECT_EQ(api->ListJobs()->size(), 1u) << "nothing was created";
}

TEST(SecurityE2E, AJobFlagsAllowListAdmitsOnlyItsPrefixes) {
  SwitchProcess sw({"--job", "id=1,workers=1,elements=4,key=11,allow=10.0.0.0/8",  //
                    "--job", "id=2,workers=1,elements=4,key=12,allow=127.0.0.0/8;::1"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  UdpPeer peer;
  ASSERT_TRUE(peer.Send(Target(sw), Req(1, 11, Op::kJoin, 0)));
  ASSERT_TRUE(peer.Send(Target(sw), Req(2, 12, Op::kJoin, 0)));
  auto ack = peer.Next();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header.job, 2) << "job 1 does not answer 127.0.0.1";
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  EXPECT_FALSE(peer.Next(200ms).has_value());
  EXPECT_EQ(sw.Stop(), 0);
  const std::string out = sw.output();
  EXPECT_NE(out.find("allow=10.0.0.0/8,"), std::string::npos) << out;
  EXPECT_NE(out.find("drops: source_not_allowed=1"), std::string::npos) << out;
}

TEST(SecurityE2E, ARestartedWorkerRejoinsOnceItsOldBindingIsEvicted) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=8,row=4,key=21,evict_after=0"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Api(sw);
  ASSERT_NE(api, nullptr);
  const proto::Endpoint target = Target(sw);

  UdpPeer old_worker, restarted;
  ASSERT_TRUE(old_worker.Send(target, Req(1, 21, Op::kJoin, 0)));
  auto ack = old_worker.Next();
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(ack->header.op, Op::kJoinAck);

  // While the old binding is live, the JOIN from the new port is refused and
  // the binding stays where it was.
  ASSERT_TRUE(restarted.Send(target, Req(1, 21, Op::kJoin, 0)));
  auto refused = restarted.Next();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->header.op, Op::kError);
  EXPECT_EQ(ErrorCodeOf(*refused), static_cast<int32_t>(proto::ErrorCode::kRankInUse));
  auto t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ranks(0).address(), net::FormatEndpoint(old_worker.local()));
  EXPECT_EQ(Drops(*t, "rank_in_use"), 1u);

  // serene-ctl evict 1 0: the rank is free, the restarted worker joins.
  ASSERT_TRUE(api->Evict(1, 0).ok());
  ASSERT_TRUE(restarted.Send(target, Req(1, 21, Op::kJoin, 0)));
  ack = restarted.Next();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  // The old process, if it still runs, has lost the rank: its address is
  // not the rank's any more, so it gets a COOKIE (counted wrong_source).
  ASSERT_TRUE(old_worker.Send(target, Req(1, 21, Op::kRead, 0, 0, 0)));
  auto lost = old_worker.Next();
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->header.op, Op::kCookie);
  EXPECT_EQ(proto::cookie::AnsweredOp(lost->header.flags), Op::kRead);
  EXPECT_EQ(lost->values.size(), 0u);
  // And it cannot end the job: its LEAVE is refused (wrong_source).
  Request finish = Req(1, 21, Op::kLeave, 0);
  finish.flags = proto::flags::kFinished;
  ASSERT_TRUE(old_worker.Send(target, finish));
  ASSERT_TRUE(old_worker.Next().has_value());
  t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->finished());
  EXPECT_EQ(t->ranks(0).address(), net::FormatEndpoint(restarted.local()));
}

// Return routability through a real daemon: a JOIN that does not echo the
// cookie — what a forger of someone else's address is left with — gets one
// 24-byte COOKIE and binds nothing; echoing it binds the rank.
TEST(SecurityE2E, AJoinBindsOnlyOnceItsSourceEchoedTheCookie) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=8,row=4,key=41"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Api(sw);
  ASSERT_NE(api, nullptr);
  UdpPeer peer;
  peer.set_echo_cookies(false);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(peer.Send(Target(sw), Req(1, 41, Op::kJoin, 0)));
  uint64_t cookie = 0;
  for (int i = 0; i < 3; ++i) {
    auto c = peer.Next();
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->header.op, Op::kCookie);
    EXPECT_EQ(c->header.count, 0u) << "no larger than the JOIN";
    EXPECT_EQ(proto::cookie::AnsweredOp(c->header.flags), Op::kJoin);
    cookie = proto::cookie::Of(c->header.clock, c->header.row);
  }
  EXPECT_FALSE(peer.Next(std::chrono::milliseconds(200)).has_value()) << "one reply per JOIN";
  auto t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->ranks(0).joined());
  EXPECT_EQ(Drops(*t, "join_cookie"), 3u);

  Request echo = Req(1, 41, Op::kJoin, 0);
  echo.clock = proto::cookie::High(cookie);
  echo.row = proto::cookie::Low(cookie);
  ASSERT_TRUE(peer.Send(Target(sw), echo));
  auto ack = peer.Next();
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(ack->header.op, Op::kJoinAck);
  t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->ranks(0).address(), net::FormatEndpoint(peer.local()));
}

TEST(SecurityE2E, AnEvictedRanksLeaveDoesNotEndTheJob) {
  SwitchProcess sw({"--job", "id=1,workers=2,elements=8,row=4,key=31,evict_after=0"});
  ASSERT_TRUE(sw.ok()) << sw.output();
  auto api = Api(sw);
  ASSERT_NE(api, nullptr);
  UdpPeer r0, r1;
  ASSERT_TRUE(r0.Send(Target(sw), Req(1, 31, Op::kJoin, 0)));
  ASSERT_TRUE(r0.Next().has_value());
  ASSERT_TRUE(r1.Send(Target(sw), Req(1, 31, Op::kJoin, 1)));
  ASSERT_TRUE(r1.Next().has_value());
  ASSERT_TRUE(api->Evict(1, 0).ok());
  Request finish = Req(1, 31, Op::kLeave, 0);
  finish.flags = proto::flags::kFinished;
  ASSERT_TRUE(r0.Send(Target(sw), finish));
  auto bye = r0.Next();
  ASSERT_TRUE(bye.has_value());
  EXPECT_EQ(bye->header.op, Op::kLeave) << "answered, so the client can exit";
  EXPECT_FALSE(bye->header.flags & proto::flags::kFinished);
  auto t = api->GetTelemetry(1);
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->finished());
  EXPECT_EQ(Drops(*t, "finish_not_live"), 1u);
}

}  // namespace
}  // namespace serene::switchd::testing
