// JoinCookie: the stateless cookie a JOIN must carry before the switch binds
// a rank to its source address (docs/protocol.md, "Return routability"; as
// DTLS's HelloVerifyRequest and QUIC's Retry).
//
// The cookie is SipHash-2-4, under a 128-bit secret the switch draws when it
// starts, of the source address and port, the job, the rank and a time
// bucket (the switch's clock in units of 2^kCookieBucketShift ns, ~4.3 s).
// A cookie is valid in its bucket and the next one, so a worker has 4.3 to
// 8.6 s to echo it. Nothing is stored per cookie: checking one is computing
// it again. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <span>

#include "dataplane/consts.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

struct CookieSecret {
  uint64_t k0 = 0;
  uint64_t k1 = 0;
};

// SipHash-2-4 (Aumasson and Bernstein) of `data` under the 128-bit key
// (k0, k1): the reference function, 64-bit output.
uint64_t SipHash24(const CookieSecret& key, std::span<const uint8_t> data);

// Buckets of 2^32 ns (4.29 s).
inline constexpr unsigned kCookieBucketShift = 32;

// The cookie of (`src`, `job`, `worker`) in time bucket `bucket`.
uint64_t JoinCookie(const CookieSecret& secret, const proto::Endpoint& src, uint16_t job,
                    uint16_t worker, uint64_t bucket);

// The cookie the switch sends at `now`.
inline uint64_t JoinCookieAt(const CookieSecret& secret, const proto::Endpoint& src, uint16_t job,
                             uint16_t worker, Timestamp now) {
  return JoinCookie(secret, src, job, worker, now >> kCookieBucketShift);
}

// Whether `cookie` is the one of this bucket or the previous one at `now`.
bool ValidJoinCookie(const CookieSecret& secret, const proto::Endpoint& src, uint16_t job,
                     uint16_t worker, Timestamp now, uint64_t cookie);

}  // namespace serene::dataplane
