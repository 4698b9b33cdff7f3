// Rng: a small, fully specified pseudo-random generator for everything the
// trainer draws (initial weights, shard partition, per-epoch shuffles,
// straggler decisions).
//
// Why not <random>: the distributions of the standard library are
// implementation-defined, so the same seed could give different models or
// straggler schedules on another toolchain. SplitMix64 seeding a
// xoshiro256** stream, with the conversions below, gives the same numbers
// everywhere. Not cryptographic.
//
// Thread-safety: an Rng is a value; use one per thread.
#pragma once

#include <cstdint>

namespace serene::train {

// SplitMix64 step: advances *state and returns the next output. Also a good
// 64-bit mixer for deriving independent seeds.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Derives the seed of an independent stream from a base seed and up to two
// identifiers (e.g. rank and a purpose tag).
inline uint64_t DeriveSeed(uint64_t seed, uint64_t a, uint64_t b = 0) {
  uint64_t state = seed;
  uint64_t x = SplitMix64(&state);
  state = x ^ (a * 0xD1342543DE82EF95ULL);
  x = SplitMix64(&state);
  state = x ^ (b * 0xAF251AF3B0F025B5ULL);
  return SplitMix64(&state);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t state = seed;
    for (uint64_t& word : s_) word = SplitMix64(&state);
  }

  // xoshiro256**.
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

  // Uniform integer in [0, n). REQUIRES: n > 0. Unbiased (rejection).
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % n;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace serene::train
