#include "dataplane/join_cookie.h"

#include <array>
#include <cstddef>

namespace serene::dataplane {
namespace {

// SipHash-2-4's state and its ARX round.
constexpr uint64_t Rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  void Round() {
    v0 += v1;
    v1 = Rotl(v1, 13);
    v1 ^= v0;
    v0 = Rotl(v0, 32);
    v2 += v3;
    v3 = Rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = Rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = Rotl(v1, 17);
    v1 ^= v2;
    v2 = Rotl(v2, 32);
  }
  void Compress(uint64_t m) {
    v3 ^= m;
    Round();
    Round();
    v0 ^= m;
  }
};

uint64_t LoadLe64(const uint8_t* p, size_t n) {
  uint64_t x = 0;
  for (size_t i = 0; i < n; ++i) x |= uint64_t{p[i]} << (8 * i);
  return x;
}

}  // namespace

uint64_t SipHash24(const CookieSecret& k, std::span<const uint8_t> bytes) {
  const uint8_t* data = bytes.data();
  const size_t n = bytes.size();
  SipState s{k.k0 ^ 0x736f6d6570736575ull, k.k1 ^ 0x646f72616e646f6dull,
             k.k0 ^ 0x6c7967656e657261ull, k.k1 ^ 0x7465646279746573ull};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) s.Compress(LoadLe64(data + i, 8));
  s.Compress(LoadLe64(data + i, n - i) | (uint64_t{n & 0xFF} << 56));
  s.v2 ^= 0xFF;
  for (int r = 0; r < 4; ++r) s.Round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t JoinCookie(const CookieSecret& secret, const proto::Endpoint& src, uint16_t job,
                    uint16_t worker, uint64_t bucket) {
  // family, address (16), port, job, rank (big-endian), bucket (8), scope (4)
  std::array<uint8_t, 1 + 16 + 2 + 2 + 2 + 8 + 4> m{};
  size_t i = 0;
  m[i++] = static_cast<uint8_t>(src.family);
  for (uint8_t b : src.addr) m[i++] = b;
  for (uint16_t v : {src.port, job, worker}) {
    m[i++] = static_cast<uint8_t>(v >> 8);
    m[i++] = static_cast<uint8_t>(v);
  }
  for (int s = 56; s >= 0; s -= 8) m[i++] = static_cast<uint8_t>(bucket >> s);
  for (int s = 24; s >= 0; s -= 8) m[i++] = static_cast<uint8_t>(src.scope_id >> s);
  return SipHash24(secret, std::span<const uint8_t>(m.data(), i));
}

bool ValidJoinCookie(const CookieSecret& secret, const proto::Endpoint& src, uint16_t job,
                     uint16_t worker, Timestamp now, uint64_t cookie) {
  const uint64_t bucket = now >> kCookieBucketShift;
  if (cookie == JoinCookie(secret, src, job, worker, bucket)) return true;
  return bucket > 0 && cookie == JoinCookie(secret, src, job, worker, bucket - 1);
}

}  // namespace serene::dataplane
