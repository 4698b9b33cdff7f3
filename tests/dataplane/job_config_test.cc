#include "dataplane/job_config.h"

#include <gtest/gtest.h>

namespace serene::dataplane {
namespace {

TEST(JobConfig, ParsesFullSpec) {
  auto c = JobConfig::ParseSpec(
      "id=3,workers=4,elements=79510,row=512,scale=2^20,key=0xBEEF,policy=ssp:10");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->id, 3);
  EXPECT_EQ(c->workers, 4u);
  EXPECT_EQ(c->elements, 79510u);
  EXPECT_EQ(c->row_width, 512u);
  EXPECT_EQ(c->scale_log2, 20u);
  EXPECT_EQ(c->key, 0xBEEFu);
  EXPECT_EQ(c->policy, BarrierParams::Ssp(10));
  EXPECT_EQ(c->rows(), 156u);
  EXPECT_EQ(c->RowLength(155), 79510u - 155 * 512);
}

TEST(JobConfig, EvictAfterIsADurationAndZeroTurnsItOff) {
  auto c = JobConfig::ParseSpec("id=1,workers=2,elements=10,evict_after=1.5s");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->evict_after_ms, 1500u);
  EXPECT_NE(c->ToString().find("evict_after=1500ms"), std::string::npos) << c->ToString();
  auto off = JobConfig::ParseSpec("id=1,workers=2,elements=10,evict_after=0");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->evict_after_ms, 0u);
  auto back = JobConfig::ParseSpec(c->ToString().substr(0, c->ToString().find(",policy")));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->evict_after_ms, 1500u);
}

TEST(JobConfig, GeneralPolicyFormTakesTheRestOfTheSpec) {
  auto c = JobConfig::ParseSpec("id=1,workers=4,elements=10,policy=window=2,quorum=3,lag=5");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->policy, (BarrierParams{2, 3, 5}));
  EXPECT_FALSE(JobConfig::ParseSpec("id=1,workers=4,elements=10,policy=window=2,color=3").ok());
}

TEST(JobConfig, AllowListIsSemicolonSeparatedAndRoundTrips) {
  auto c = JobConfig::ParseSpec("id=1,workers=2,elements=10,allow=10.0.0.0/8;fd00::/8,key=7");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->allow.size, 2);
  EXPECT_EQ(c->allow.ToString(), "10.0.0.0/8;fd00::/8");
  EXPECT_NE(c->ToString().find(",allow=10.0.0.0/8;fd00::/8,"), std::string::npos) << c->ToString();
  auto back = JobConfig::ParseSpec(c->ToString());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->allow, c->allow);
  auto none = JobConfig::ParseSpec("id=1,workers=2,elements=10");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->allow.empty()) << "default: any source";
  EXPECT_EQ(none->ToString().find("allow"), std::string::npos) << none->ToString();
  // Validate() checks a table filled by hand (the runtime API's path).
  JobConfig bad = *none;
  bad.allow.size = 1;  // an entry without a family
  EXPECT_FALSE(bad.Validate().ok());
}

TEST(JobConfig, Defaults) {
  auto c = JobConfig::ParseSpec("id=1,workers=2,elements=10");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->row_width, 256u);
  EXPECT_EQ(c->scale_log2, 24u);
  EXPECT_EQ(c->key, 0u);
  EXPECT_EQ(c->policy, BarrierParams::Sync());
  EXPECT_EQ(c->evict_after_ms, 10000u);
  auto s = JobConfig::ParseSpec("id=1,workers=2,elements=10,scale=16777216,key=12345");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->scale_log2, 24u);
  EXPECT_EQ(s->key, 12345u);
}

TEST(JobConfig, RefusesBadSpecsWithAMessageNamingTheProblem) {
  struct Case { const char* spec; const char* expect; };
  for (const Case& k : std::initializer_list<Case>{
           {"workers=2,elements=10", "missing id"},
           {"id=0,workers=2,elements=10", "id must be 1..65535"},
           {"id=70000,workers=2,elements=10", "id must be"},
           {"id=1,workers=0,elements=10", "workers must be 1..1024"},
           {"id=1,workers=1025,elements=10", "workers must be"},
           {"id=1,workers=2,elements=0", "elements must be"},
           {"id=1,workers=2,elements=10,row=0", "row must be 1..16368"},
           {"id=1,workers=2,elements=10,row=20000", "row must be"},
           {"id=1,workers=2,elements=10,scale=1000", "power of two"},
           {"id=1,workers=2,elements=10,key=0xZZ", "key must be"},
           {"id=1,workers=2,elements=10,key=4294967296", "key must be"},
           {"id=1,workers=2,elements=10,policy=fast", "unknown strategy"},
           {"id=1,workers=2,elements=10,color=red", "unknown field 'color'"},
           {"id=1,workers=2,elements", "not key=value"},
           {"id=1,workers=2,elements=10,evict_after=5", "evict_after must be a duration"},
           {"id=1,workers=2,elements=10,evict_after=1500us", "whole milliseconds"},
           {"id=1,workers=2,elements=10,evict_after=2h", "evict_after must be"},
           {"id=1,workers=2,elements=10,allow=10.0.0.0/33", "allow '10.0.0.0/33': prefix length"},
           {"id=1,workers=2,elements=10,allow=10.0.0.1/8", "did you mean 10.0.0.0/8?"},
           {"id=1,workers=2,elements=10,allow=host.example/8", "host names are not resolved"},
           {"id=1,workers=2,elements=10,allow=1.0.0.0/8;2.0.0.0/8;3.0.0.0/8;4.0.0.0/8;"
            "5.0.0.0/8;6.0.0.0/8;7.0.0.0/8;8.0.0.0/8;9.0.0.0/8",
            "9 prefixes, at most 8"},
       }) {
    auto c = JobConfig::ParseSpec(k.spec);
    ASSERT_FALSE(c.ok()) << k.spec;
    EXPECT_NE(c.status().message().find(k.expect), std::string::npos)
        << k.spec << " -> " << c.status().message();
    EXPECT_NE(c.status().message().find(k.spec), std::string::npos) << "names the spec";
  }
}

TEST(BarrierParams, ParsesNamedStrategiesAndGeneralForm) {
  EXPECT_EQ(*BarrierParams::Parse("sync"), BarrierParams::Sync());
  EXPECT_EQ(*BarrierParams::Parse("async"), BarrierParams::Async());
  EXPECT_EQ(*BarrierParams::Parse("ssp:10"), BarrierParams::Ssp(10));
  EXPECT_EQ(*BarrierParams::Parse("quorum:3:8"), BarrierParams::Quorum(3, 8));
  EXPECT_EQ(*BarrierParams::Parse("quorum:3:inf"),
            BarrierParams::Quorum(3, BarrierParams::kUnbounded));
  auto g = BarrierParams::Parse("window=2,quorum=5,lag=inf");
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->window, 2u);
  EXPECT_EQ(g->quorum, 5u);
  EXPECT_EQ(g->lag, BarrierParams::kUnbounded);
  for (const char* bad : {"", "ssp", "ssp:", "ssp:x", "quorum:3", "quorum:0:1", "sync:1",
                          "window=1,speed=2", "window=-1"}) {
    EXPECT_FALSE(BarrierParams::Parse(bad).ok()) << bad;
  }
}

TEST(BarrierParams, ToStringRoundTrips) {
  for (const BarrierParams& p :
       {BarrierParams::Sync(), BarrierParams::Async(), BarrierParams::Ssp(7),
        BarrierParams::Quorum(3, 2), BarrierParams{2, 3, 9}}) {
    auto back = BarrierParams::Parse(p.ToString());
    ASSERT_TRUE(back.ok()) << p.ToString();
    EXPECT_EQ(*back, p) << p.ToString();
  }
  EXPECT_TRUE(BarrierParams::Sync().Exact(4));
  EXPECT_TRUE(BarrierParams::Quorum(4, 3).Exact(4));
  EXPECT_FALSE(BarrierParams::Quorum(3, 3).Exact(4));
  EXPECT_FALSE(BarrierParams::Ssp(1).Exact(4));
}

}  // namespace
}  // namespace serene::dataplane
