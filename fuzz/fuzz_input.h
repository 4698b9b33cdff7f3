// FuzzInput: reads a fuzzer's input front to back as small big-endian
// integers. Past the end every read returns 0, so any byte string is a valid
// input and a seed written by make_corpus reads back exactly as written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace serene::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  bool empty() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

  uint8_t U8() { return p_ < end_ ? *p_++ : 0; }
  uint16_t U16() { return static_cast<uint16_t>((uint16_t{U8()} << 8) | U8()); }
  uint32_t U32() { return (uint32_t{U16()} << 16) | U16(); }

  // The next min(n, remaining()) bytes.
  std::span<const uint8_t> Bytes(size_t n) {
    if (n > remaining()) n = remaining();
    std::span<const uint8_t> s(p_, n);
    p_ += n;
    return s;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace serene::fuzz
