// The BMv2 back end's pure parts: reading simple_switch_CLI's answers, the
// kick frame on the wire, and the target flags of serene-switch. The back end
// against a real simple_switch is p4/conformance.sh (ctest p4.conformance_bmv2).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "bmv2/bmv2_daemon.h"
#include "bmv2/cli_session.h"
#include "bmv2/kick_channel.h"
#include "proto/packet.h"

namespace serene::bmv2 {
namespace {

TEST(CliAnswers, RegisterValues) {
  auto v = ParseRegisterValue("SereneIngress.rank_done[3]= 42");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, 42u);
  auto big = ParseRegisterValue("SereneIngress.rank_seen[17]= 281474976710655");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(*big, (uint64_t{1} << 48) - 1);
  EXPECT_FALSE(ParseRegisterValue("Invalid register operation (INVALID_INDEX)").ok());
  EXPECT_FALSE(ParseRegisterValue("SereneIngress.rank_done[3]= ").ok());
}

TEST(CliAnswers, CounterPackets) {
  auto v = ParseCounterPackets("SereneIngress.job_drops[17]= (1234 bytes, 5 packets)");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, 5u);
  EXPECT_FALSE(ParseCounterPackets("Error: Invalid counter name").ok());
}

// A CLI that is gone (simple_switch died, the CLI crashed) fails the call
// with the reason; writing to it must not kill this process with SIGPIPE.
TEST(CliSessionTest, ACliThatClosedItsInputFailsTheCallAndDoesNotKillTheCaller) {
  // A fake CLI: answers the first batch (one marker) only after closing its
  // input, so the next batch is written to a pipe nobody reads.
  const std::string cli = ::testing::TempDir() + "fake_cli_" + std::to_string(::getpid());
  {
    std::ofstream f(cli);
    f << "#!/bin/sh\nread line\nexec 0<&-\necho \"*** Unknown syntax: $line\"\nsleep 5\n";
  }
  ASSERT_EQ(::chmod(cli.c_str(), 0700), 0);
  auto s = CliSession::Start(cli, 9, "", std::chrono::seconds(5));
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto r = (*s)->Run({"register_read x 0"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable) << r.status().message();
  EXPECT_FALSE((*s)->Run({"register_read x 0"}).ok());  // the session is dead from then on
  std::remove(cli.c_str());
}

uint16_t Be16(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<uint16_t>(f[at] << 8 | f[at + 1]);
}
uint32_t Be32(const std::vector<uint8_t>& f, size_t at) {
  return uint32_t{Be16(f, at)} << 16 | Be16(f, at + 2);
}

TEST(KickFrame, IsAnIpv4UdpSerenePacketWithAValidChecksum) {
  const std::array<uint8_t, 6> mac = {2, 0, 0, 0, 0, 9};
  auto f = BuildKickFrame(mac, 0xA9FE5345, 40001, 0x0A4D0001, 7000, kKickPolicy, 7, 0x5e7e7e01, 3,
                          {4, 0xFFFFFFFF, 4, 12, 1});
  ASSERT_EQ(f.size(), 14u + 20 + 8 + proto::kHeaderSize + 5 * 4);
  EXPECT_EQ(Be16(f, 12), 0x0800);
  EXPECT_EQ(std::vector<uint8_t>(f.begin() + 6, f.begin() + 12),
            std::vector<uint8_t>(mac.begin(), mac.end()));
  uint32_t sum = 0;
  for (size_t i = 14; i < 34; i += 2) sum += Be16(f, i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  EXPECT_EQ(sum, 0xFFFFu) << "IPv4 header checksum";
  EXPECT_EQ(Be16(f, 16), f.size() - 14);  // IPv4 total length
  EXPECT_EQ(f[23], 17);                   // UDP
  EXPECT_EQ(Be32(f, 26), 0xA9FE5345u);
  EXPECT_EQ(Be32(f, 30), 0x0A4D0001u);
  EXPECT_EQ(Be16(f, 34), 40001);
  EXPECT_EQ(Be16(f, 36), 7000);
  EXPECT_EQ(Be16(f, 38), f.size() - 34);  // UDP length
  const size_t se = 42;
  EXPECT_EQ(Be16(f, se), proto::kMagic);
  EXPECT_EQ(f[se + 2], proto::kVersion);
  EXPECT_EQ(f[se + 3], kKickPolicy);
  EXPECT_EQ(Be16(f, se + 4), 7);
  EXPECT_EQ(Be16(f, se + 6), 3);
  EXPECT_EQ(Be32(f, se + 8), 0x5e7e7e01u);
  EXPECT_EQ(Be16(f, se + 20), 5);  // count
  EXPECT_EQ(Be32(f, se + 24), 4u);
  EXPECT_EQ(Be32(f, se + 28), 0xFFFFFFFFu);
  EXPECT_EQ(Be32(f, se + 40), 1u);
}

TEST(TargetFlags, EachTargetRefusesTheOthersFlags) {
  Bmv2Flags b;
  switchd::SwitchFlags sw;
  EXPECT_TRUE(CheckTargetFlags(b, sw).ok());
  b.interface = "lo";
  EXPECT_NE(CheckTargetFlags(b, sw).message().find("--target bmv2"), std::string::npos);

  b.target = "bmv2";
  b.interface.clear();
  EXPECT_NE(CheckTargetFlags(b, sw).message().find("--interface"), std::string::npos);
  b.interface = "lo";
  b.address = "10.0.0.1:7000";
  EXPECT_TRUE(CheckTargetFlags(b, sw).ok()) << CheckTargetFlags(b, sw).message();
  b.address = "10.0.0.1";  // the port defaults to 7000
  EXPECT_TRUE(CheckTargetFlags(b, sw).ok());
  sw.bind = {"127.0.0.1"};
  EXPECT_NE(CheckTargetFlags(b, sw).message().find("--bind"), std::string::npos);
  sw.bind.clear();
  sw.fault = "drop=0.1";
  EXPECT_NE(CheckTargetFlags(b, sw).message().find("--fault"), std::string::npos);
  sw.fault.reset();
  for (const char* bad : {"10.0.0.1:0", "10.0.0.1:70000", "fd00::1", "[fd00::1]:7000",
                          "0.0.0.0:7000", "switch:7000", "10.0.0:1"}) {
    b.address = bad;
    const Status s = CheckTargetFlags(b, sw);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("--address"), std::string::npos) << s.message();
  }
  b.address = "10.0.0.1";
  b.interface = "no-such-if0";
  EXPECT_NE(CheckTargetFlags(b, sw).message().find("no such interface"), std::string::npos);
}

}  // namespace
}  // namespace serene::bmv2
