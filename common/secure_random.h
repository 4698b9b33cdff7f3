// Job keys drawn from the kernel's cryptographically secure generator
// (getrandom(2), the source /dev/urandom reads), never from a seeded
// pseudo-random generator: a key must not be predictable from another key,
// a seed, the time or the run's index.
//
// Thread-safe.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace serene {

// A uniformly drawn non-zero 32-bit key (0 means "no key" on the wire).
// Fails only if the kernel's generator cannot be read (no getrandom: Linux
// < 3.17); the error says so.
Result<uint32_t> DrawJobKey();

// A uniformly drawn 64-bit secret (the switch's JOIN cookie secret, drawn
// twice); fails as DrawJobKey does.
Result<uint64_t> DrawSecret64();

}  // namespace serene
