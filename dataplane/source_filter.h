// Source filter: a job's allow-list of source prefixes, applied right after
// the key check (pipeline.cc). Like a small P4 LPM table keyed on the source
// address whose only action is "permit": at most kMaxAllowPrefixes entries,
// held in a fixed array inside the JobConfig, so the check is a bounded
// number of byte comparisons per packet and allocates nothing. An empty list
// admits every source (the default).
//
// Prefixes are canonical like endpoints (net/address.h): an IPv4-mapped IPv6
// prefix (::ffff:10.0.0.0/104) is stored as the IPv4 prefix 10.0.0.0/8, so
// it matches IPv4 workers seen through a dual-stack socket. A prefix matches
// only endpoints of its own family; the port and an IPv6 scope are ignored.
//
// Pure values and functions; thread-compatible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "dataplane/consts.h"
#include "proto/endpoint.h"

namespace serene::dataplane {

struct SourcePrefix {
  proto::Endpoint::Family family = proto::Endpoint::Family::kNone;
  uint8_t length = 0;                 // bits: 0..32 (IPv4), 0..128 (IPv6)
  std::array<uint8_t, 16> addr = {};  // network order; bits past `length` are 0

  // True if `src`'s address lies in this prefix (same family).
  bool Contains(const proto::Endpoint& src) const;

  friend bool operator==(const SourcePrefix&, const SourcePrefix&) = default;
};

// Parses "10.0.0.0/8", "fd00::/8" or a single address ("192.0.2.7" = /32,
// "2001:db8::7" = /128). Refuses host names, a length out of range and bits
// set past the length ("10.0.0.1/8": did you mean 10.0.0.0/8?). Errors quote
// the text: "allow '10.0.0.0/33': ...".
Result<SourcePrefix> ParseSourcePrefix(std::string_view text);
// "10.0.0.0/8", "fd00::/8".
std::string FormatSourcePrefix(const SourcePrefix& p);

// A job's allow-list: up to kMaxAllowPrefixes prefixes; empty = any source.
struct SourceAllowList {
  std::array<SourcePrefix, kMaxAllowPrefixes> prefixes = {};
  uint8_t size = 0;

  bool empty() const { return size == 0; }
  // True if the list is empty or some prefix contains `src`. Bounded work:
  // at most kMaxAllowPrefixes comparisons of at most 16 bytes.
  bool Allows(const proto::Endpoint& src) const;
  // Appends a prefix; fails when the list is full or `p` is not a valid prefix.
  Status Add(const SourcePrefix& p);
  // Checks every entry (family, length, no host bits) and the size.
  Status Validate() const;

  // Parses "P[;P...]" (';' because ',' separates the fields of a --job spec).
  // Empty text gives the empty list.
  static Result<SourceAllowList> Parse(std::string_view text);
  // "10.0.0.0/8;fd00::/8"; "" when empty.
  std::string ToString() const;

  friend bool operator==(const SourceAllowList&, const SourceAllowList&) = default;
};

}  // namespace serene::dataplane
