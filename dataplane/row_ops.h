// Row kernels of the aggregation table: saturating int32 additions and the
// conversions between the table (host order) and packets (big-endian). They
// are the data plane's inner loops (one row of up to 16368 values per
// packet), so they are written branch-free in 32-bit lanes, compiled with
// -O3, and cloned for AVX2 with a baseline x86-64 fallback chosen at load
// time (common/vector_kernel.h), so the binary still runs on any x86-64.
// A row's values to host order without adding, and back to wire order, are
// proto::LoadValues and proto::StoreValues.
//
// All functions are pure; `dst` and the sources must not overlap.
#pragma once

#include <cstdint>

namespace serene::dataplane {

// dst[i] = sat(dst[i] + src[i]); returns how many additions were clamped.
uint32_t AddRowSaturating(int32_t* dst, const int32_t* src, uint32_t n);

// dst[i] = sat(dst[i] + be32(src + 4i)); returns how many were clamped.
uint32_t AddRowFromBigEndian(int32_t* dst, const uint8_t* src, uint32_t n);

// Writes sat(a[i] + b[i]) as big-endian int32 at dst + 4i; returns how many
// were clamped.
uint32_t StoreRowSumBigEndian(uint8_t* dst, const int32_t* a, const int32_t* b, uint32_t n);

// A fold and its reply in one pass: writes sat(a[i] + b[i]) as big-endian
// int32 at dst + 4i and the wrapping sum a[i] + b[i] into a[i]; returns how
// many were clamped. With none, a holds the saturating sum too; with some,
// SubtractRow(a, b) gives a back.
uint32_t FoldRowStoreBigEndian(uint8_t* dst, int32_t* a, const int32_t* b, uint32_t n);

// a[i] -= b[i] (wrapping): undoes a wrapping addition of b.
void SubtractRow(int32_t* a, const int32_t* b, uint32_t n);

// Writes a[i] - b[i] (wrapping) as big-endian int32 at dst + 4i: undoes an
// addition a = b + x that did not clamp.
void StoreRowDifferenceBigEndian(uint8_t* dst, const int32_t* a, const int32_t* b, uint32_t n);

}  // namespace serene::dataplane
