// Golden packets (p4/golden/README.md) through the C++ pipeline: the same
// bytes p4/golden.py replays over UDP against serene-switch and against
// p4/serene.p4 in simple_switch, so the three are held to one contract.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "dataplane/output.h"
#include "dataplane/pipeline.h"

#ifndef SERENE_SOURCE_DIR
#error "SERENE_SOURCE_DIR must be defined"
#endif

namespace serene::dataplane {
namespace {

proto::Endpoint Addr(uint8_t last, uint16_t port) {
  proto::Endpoint e;
  e.family = proto::Endpoint::Family::kIPv4;
  e.addr[0] = 10;
  e.addr[1] = 77;
  e.addr[2] = 0;
  e.addr[3] = last;
  e.port = port;
  return e;
}

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string ToHex(std::span<const uint8_t> bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

// '.' matches any nibble; a trailing '*' allows a longer reply.
bool Matches(std::string want, const std::string& got) {
  const bool prefix = !want.empty() && want.back() == '*';
  if (prefix) want.pop_back();
  if (got.size() < want.size() || (!prefix && got.size() != want.size())) return false;
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != '.' && want[i] != got[i]) return false;
  }
  return true;
}

TEST(GoldenPackets, TheSmokeExchangeMatchesByteForByte) {
  const std::string path = std::string(SERENE_SOURCE_DIR) + "/p4/golden/smoke.golden";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  Pipeline pipeline(42);
  auto job = JobConfig::ParseSpec("id=7,workers=2,elements=100,row=64,key=0x5e7e7e01");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(pipeline.CreateJob(*job).ok());
  const proto::Endpoint local = Addr(1, 7000);
  const std::map<std::string, proto::Endpoint> endpoints = {
      {"a", Addr(2, 5000)}, {"b", Addr(2, 5001)}, {"c", Addr(2, 5002)}};
  std::map<std::string, std::vector<std::string>> inbox;  // replies not yet expected
  std::map<std::string, std::string> cookie;  // the last COOKIE's cookie (hex) per endpoint
  Timestamp now = 1'000'000'000;
  std::string line, what;
  int lineno = 0, matched = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (line[0] == '#') {
      what = line.substr(2);
      continue;
    }
    std::istringstream fields(line);
    std::string kind, ep, hex;
    fields >> kind >> ep >> hex;
    SCOPED_TRACE("smoke.golden:" + std::to_string(lineno) + " (" + what + ")");
    ASSERT_EQ(endpoints.count(ep), 1u) << line;
    if (kind == "send") {
      Output out = Output::ForBatch(1);
      if (const size_t at = hex.find("@cookie"); at != std::string::npos) {
        ASSERT_EQ(cookie.count(ep), 1u) << ep << " echoes a cookie it never got";
        hex.replace(at, 7, cookie.at(ep));
      }
      const auto datagram = FromHex(hex);
      pipeline.Process(datagram, endpoints.at(ep), local, now, &out);
      now += 1'000'000;  // 1 ms between packets
      for (size_t i = 0; i < out.size(); ++i) {
        const auto& p = out.packet(i);
        bool found = false;
        for (const auto& [name, e] : endpoints) {
          if (e == p.dst) {
            inbox[name].push_back(ToHex(out.bytes(i)));
            found = true;
          }
        }
        ASSERT_TRUE(found) << "a reply to an endpoint the exchange does not have";
        if (p.src.valid()) {
          EXPECT_TRUE(p.src == local) << "a reply not from the switch address";
        }
      }
    } else if (kind == "expect") {
      ASSERT_FALSE(inbox[ep].empty()) << "no reply for " << ep << "; want " << hex;
      EXPECT_TRUE(Matches(hex, inbox[ep].front()))
          << ep << " got\n  " << inbox[ep].front() << "\nwant\n  " << hex;
      if (inbox[ep].front().substr(6, 2) == "0b") cookie[ep] = inbox[ep].front().substr(24, 16);
      inbox[ep].erase(inbox[ep].begin());
      ++matched;
    } else if (kind == "silence") {
      EXPECT_TRUE(inbox[ep].empty()) << ep << " got an unexpected reply " << inbox[ep].front();
      ++matched;
    } else {
      FAIL() << "unknown line: " << line;
    }
  }
  EXPECT_EQ(matched, 37);
  for (const auto& [name, replies] : inbox) {
    EXPECT_TRUE(replies.empty()) << name << " has replies the exchange never expected";
  }
}

}  // namespace
}  // namespace serene::dataplane
