// A second, deliberately naive reading of docs/protocol.md's parse rules
// ("What the switch checks, in order", step 1 and 2), written from the page
// and not from proto/codec.cc, so the fuzzers can compare proto::Decode and
// Pipeline::Process against it byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proto/codec.h"

namespace serene::fuzz {

inline proto::ParseError ReferenceParse(const uint8_t* d, size_t len) {
  if (len < 24) return proto::ParseError::kTruncated;
  if (d[0] != 0x53 || d[1] != 0x45) return proto::ParseError::kBadMagic;
  if (d[2] != 1) return proto::ParseError::kBadVersion;
  if (d[3] < 1 || d[3] > 11) return proto::ParseError::kBadOp;
  const size_t count = (size_t{d[20]} << 8) | d[21];
  if (len != 24 + 4 * count) return proto::ParseError::kLengthMismatch;
  return proto::ParseError::kOk;
}

// JOIN, READ, INC, CLOCK and LEAVE: the ops a worker sends.
inline bool ReferenceIsRequest(uint8_t op) {
  return op == 1 || op == 3 || op == 5 || op == 6 || op == 9;
}

}  // namespace serene::fuzz
