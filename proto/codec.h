// Encoding and decoding of Serene packets (see packet.h for the layout).
//
// Decoding never trusts the datagram: DecodeHeader checks the length before
// each field it reads and returns a ParseError naming the first check that
// failed. Values stay in the datagram (a PacketView points into it) and are
// read on demand, so decoding allocates nothing. All functions here are pure
// and thread-safe.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "proto/packet.h"

namespace serene::proto {

// Big-endian loads and stores. Explicit byte order, no struct casts; memcpy
// plus a byte swap compiles to one load/store and a bswap (and vectorizes in
// the row loops).
inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return std::endian::native == std::endian::little ? __builtin_bswap16(v) : v;
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return std::endian::native == std::endian::little ? __builtin_bswap32(v) : v;
}
inline int32_t LoadI32(const uint8_t* p) { return static_cast<int32_t>(LoadU32(p)); }
inline void StoreU16(uint8_t* p, uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap16(v);
  std::memcpy(p, &v, sizeof v);
}
inline void StoreU32(uint8_t* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}
inline void StoreI32(uint8_t* p, int32_t v) { StoreU32(p, static_cast<uint32_t>(v)); }

// The decoded fixed header.
struct Header {
  Op op = Op::kJoin;
  uint16_t job = 0;
  uint16_t worker = 0;
  uint32_t key = 0;
  uint32_t clock = 0;
  uint32_t row = 0;
  uint16_t count = 0;
  uint16_t flags = 0;
};

// Why a datagram is not a well-formed packet. kOk means it is.
enum class ParseError : uint8_t {
  kOk = 0,
  kTruncated,       // shorter than the 24-byte header
  kBadMagic,        // magic != 0x5345
  kBadVersion,      // version != 1
  kBadOp,           // op not in 1..10
  kLengthMismatch,  // datagram length != 24 + 4 * count
};
inline constexpr size_t kNumParseErrors = 6;

std::string_view ParseErrorName(ParseError e);

// A well-formed packet inside a datagram. Valid only while the datagram is.
struct PacketView {
  Header header;
  const uint8_t* values = nullptr;  // header.count big-endian int32s

  int32_t Value(size_t i) const { return LoadI32(values + i * kValueSize); }
};

// Checks magic, version, op and length, in that order, and fills *out.
// On error *out is unspecified.
ParseError Decode(const uint8_t* data, size_t len, PacketView* out);

// Writes the 24-byte header to buf (which must hold kHeaderSize bytes).
void EncodeHeader(const Header& h, uint8_t* buf);

// Total encoded size of a packet with `count` values.
constexpr size_t PacketSize(size_t count) { return kHeaderSize + count * kValueSize; }

// Encodes a header followed by values (host-order int32) into buf, which must
// hold PacketSize(values.size()) bytes. Sets h.count from values. Returns the size.
size_t Encode(Header h, std::span<const int32_t> values, uint8_t* buf);

}  // namespace serene::proto
