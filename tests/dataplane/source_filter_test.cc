// The allow-list's prefixes: parsing, canonical form, matching (dataplane/source_filter.h).
#include "dataplane/source_filter.h"

#include <gtest/gtest.h>

namespace serene::dataplane {
namespace {

using Family = proto::Endpoint::Family;

proto::Endpoint Ep4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  proto::Endpoint e;
  e.family = Family::kIPv4;
  e.addr = {a, b, c, d};
  e.port = 1234;
  return e;
}

proto::Endpoint Ep6(std::array<uint8_t, 16> addr, uint32_t scope = 0) {
  proto::Endpoint e;
  e.family = Family::kIPv6;
  e.addr = addr;
  e.port = 1234;
  e.scope_id = scope;
  return e;
}

SourcePrefix P(const char* text) {
  auto p = ParseSourcePrefix(text);
  EXPECT_TRUE(p.ok()) << text << ": " << p.status().message();
  return p.ok() ? *p : SourcePrefix{};
}

TEST(SourcePrefix, ParsesAndFormatsIPv4AndIPv6) {
  EXPECT_EQ(FormatSourcePrefix(P("10.0.0.0/8")), "10.0.0.0/8");
  EXPECT_EQ(FormatSourcePrefix(P("192.0.2.7")), "192.0.2.7/32");
  EXPECT_EQ(FormatSourcePrefix(P("fd00::/8")), "fd00::/8");
  EXPECT_EQ(FormatSourcePrefix(P("[2001:db8::]/32")), "2001:db8::/32");
  EXPECT_EQ(FormatSourcePrefix(P("::1")), "::1/128");
  EXPECT_EQ(FormatSourcePrefix(P("0.0.0.0/0")), "0.0.0.0/0");
  EXPECT_EQ(FormatSourcePrefix(P("::/0")), "::/0");
  // IPv4-mapped prefixes are IPv4 prefixes, like IPv4-mapped endpoints.
  const SourcePrefix mapped = P("::ffff:10.0.0.0/104");
  EXPECT_EQ(mapped.family, Family::kIPv4);
  EXPECT_EQ(FormatSourcePrefix(mapped), "10.0.0.0/8");
}

TEST(SourcePrefix, RefusesBadPrefixesNamingThem) {
  const std::pair<const char*, const char*> cases[] = {
      {"10.0.0.0/33", "prefix length must be 0..32"},
      {"fd00::/129", "prefix length must be 0..128"},
      {"10.0.0.0/", "prefix length"},
      {"10.0.0.0/8x", "prefix length"},
      {"10.0.0.0/-1", "prefix length"},
      {"10.0.0.0/0x8", "prefix length"},
      {"10.0.0.1/8", "did you mean 10.0.0.0/8?"},
      {"fd00::1/8", "did you mean fd00::/8?"},
      {"switch.example.com/8", "host names are not resolved"},
      {"10.0.0/8", "numeric IPv4 prefix"},
      {"fe80::/10%eth0", "IPv6"},
      {"fe80::%eth0/10", "scope"},
      {"/8", "expected an IPv4 or IPv6 prefix"},
      {"", "expected an IPv4 or IPv6 prefix"},
  };
  for (const auto& [text, why] : cases) {
    auto p = ParseSourcePrefix(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_EQ(p.status().code(), Status::Code::kInvalidArgument);
    EXPECT_NE(p.status().message().find("allow '" + std::string(text) + "'"), std::string::npos)
        << p.status().message();
    EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status().message();
  }
}

TEST(SourcePrefix, ContainsComparesTheLeadingBitsOfItsFamilyOnly) {
  const SourcePrefix net8 = P("10.0.0.0/8");
  EXPECT_TRUE(net8.Contains(Ep4(10, 255, 1, 2)));
  EXPECT_FALSE(net8.Contains(Ep4(11, 0, 0, 0)));
  const SourcePrefix odd = P("192.168.4.0/22");  // a partial byte: 192.168.4.0 - 192.168.7.255
  EXPECT_TRUE(odd.Contains(Ep4(192, 168, 4, 0)));
  EXPECT_TRUE(odd.Contains(Ep4(192, 168, 7, 255)));
  EXPECT_FALSE(odd.Contains(Ep4(192, 168, 8, 0)));
  EXPECT_FALSE(odd.Contains(Ep4(192, 168, 3, 255)));
  const SourcePrefix host = P("192.0.2.7");
  EXPECT_TRUE(host.Contains(Ep4(192, 0, 2, 7)));
  EXPECT_FALSE(host.Contains(Ep4(192, 0, 2, 6)));
  EXPECT_TRUE(P("0.0.0.0/0").Contains(Ep4(1, 2, 3, 4)));
  EXPECT_FALSE(P("0.0.0.0/0").Contains(Ep6({0x20, 0x01}))) << "families never mix";
  EXPECT_FALSE(P("::/0").Contains(Ep4(1, 2, 3, 4)));

  const SourcePrefix ula = P("fd00::/8");
  EXPECT_TRUE(ula.Contains(Ep6({0xfd, 0x12, 0x34})));
  EXPECT_FALSE(ula.Contains(Ep6({0xfe, 0x80})));
  const SourcePrefix link = P("fe80::/10");
  EXPECT_TRUE(link.Contains(Ep6({0xfe, 0xbf}, /*scope=*/3))) << "the scope is ignored";
  EXPECT_FALSE(link.Contains(Ep6({0xfe, 0xc0})));
  EXPECT_FALSE(ula.Contains(proto::Endpoint{})) << "an invalid source is never allowed";
}

TEST(SourceAllowList, ParsesSemicolonSeparatedListsOfAtMostEight) {
  auto list = SourceAllowList::Parse("10.0.0.0/8;fd00::/8;;192.0.2.7");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_EQ(list->size, 3);
  EXPECT_EQ(list->ToString(), "10.0.0.0/8;fd00::/8;192.0.2.7/32");
  EXPECT_TRUE(list->Allows(Ep4(10, 1, 1, 1)));
  EXPECT_TRUE(list->Allows(Ep4(192, 0, 2, 7)));
  EXPECT_FALSE(list->Allows(Ep4(127, 0, 0, 1)));
  auto back = SourceAllowList::Parse(list->ToString());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *list);

  auto empty = SourceAllowList::Parse("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(empty->Allows(Ep4(127, 0, 0, 1))) << "empty = any source";

  std::string eight, nine;
  for (int i = 0; i < 9; ++i) {
    const std::string p = "10." + std::to_string(i) + ".0.0/16";
    if (i < 8) eight += (eight.empty() ? "" : ";") + p;
    nine += (nine.empty() ? "" : ";") + p;
  }
  EXPECT_TRUE(SourceAllowList::Parse(eight).ok());
  auto too_many = SourceAllowList::Parse(nine);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("9 prefixes, at most 8"), std::string::npos)
      << too_many.status().message();
  auto bad = SourceAllowList::Parse("10.0.0.0/8;10.0.0.0/33");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("allow '10.0.0.0/33'"), std::string::npos);
}

TEST(SourceAllowList, AddAndValidateKeepTheTableWellFormed) {
  SourceAllowList list;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(list.Add(P("10.0.0.0/8")).ok());
  EXPECT_FALSE(list.Add(P("10.0.0.0/8")).ok()) << "full";
  EXPECT_TRUE(list.Validate().ok());

  SourcePrefix host_bits = P("10.0.0.0/8");
  host_bits.addr[3] = 1;  // not what ParseSourcePrefix makes
  SourceAllowList other;
  EXPECT_FALSE(other.Add(host_bits).ok());
  other.prefixes[0] = host_bits;
  other.size = 1;
  EXPECT_FALSE(other.Validate().ok());
  other.prefixes[0] = SourcePrefix{};
  EXPECT_FALSE(other.Validate().ok()) << "no family";
}

}  // namespace
}  // namespace serene::dataplane
