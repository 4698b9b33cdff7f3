#include "dataplane/row_ops.h"

#include <cstring>

#include "common/vector_kernel.h"

namespace serene::dataplane {
namespace {

// a + b clamped to the int32 range; *clamps counts clamping. Branch-free on
// 32-bit lanes: overflow iff a and b share a sign that the wrapped sum lacks.
inline uint32_t AddSat(uint32_t a, uint32_t b, uint32_t* clamps) {
  const uint32_t r = a + b;
  const uint32_t ovf = ((a ^ r) & (b ^ r)) >> 31;
  const uint32_t sat = (a >> 31) + 0x7FFFFFFFu;  // INT32_MAX, or INT32_MIN when a < 0
  *clamps += ovf;
  return ovf ? sat : r;
}

inline uint32_t Load(const int32_t* p, uint32_t i) { return static_cast<uint32_t>(p[i]); }
inline uint32_t LoadBe(const uint8_t* p, uint32_t i) {
  uint32_t v;
  std::memcpy(&v, p + 4 * size_t{i}, 4);
  return __builtin_bswap32(v);
}
inline void StoreBe(uint8_t* p, uint32_t i, uint32_t v) {
  v = __builtin_bswap32(v);
  std::memcpy(p + 4 * size_t{i}, &v, 4);
}

}  // namespace

SERENE_VECTOR_KERNEL
uint32_t AddRowSaturating(int32_t* __restrict dst, const int32_t* __restrict src, uint32_t n) {
  uint32_t clamps = 0;
  for (uint32_t i = 0; i < n; ++i) {
    dst[i] = static_cast<int32_t>(AddSat(Load(dst, i), Load(src, i), &clamps));
  }
  return clamps;
}

SERENE_VECTOR_KERNEL
uint32_t AddRowFromBigEndian(int32_t* __restrict dst, const uint8_t* __restrict src, uint32_t n) {
  uint32_t clamps = 0;
  for (uint32_t i = 0; i < n; ++i) {
    dst[i] = static_cast<int32_t>(AddSat(Load(dst, i), LoadBe(src, i), &clamps));
  }
  return clamps;
}

SERENE_VECTOR_KERNEL
uint32_t StoreRowSumBigEndian(uint8_t* __restrict dst, const int32_t* __restrict a,
                              const int32_t* __restrict b, uint32_t n) {
  uint32_t clamps = 0;
  for (uint32_t i = 0; i < n; ++i) StoreBe(dst, i, AddSat(Load(a, i), Load(b, i), &clamps));
  return clamps;
}

SERENE_VECTOR_KERNEL
uint32_t FoldRowStoreBigEndian(uint8_t* __restrict dst, int32_t* __restrict a,
                               const int32_t* __restrict b, uint32_t n) {
  uint32_t clamps = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t x = Load(a, i), y = Load(b, i);
    StoreBe(dst, i, AddSat(x, y, &clamps));
    a[i] = static_cast<int32_t>(x + y);
  }
  return clamps;
}

SERENE_VECTOR_KERNEL
void SubtractRow(int32_t* __restrict a, const int32_t* __restrict b, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) a[i] = static_cast<int32_t>(Load(a, i) - Load(b, i));
}

SERENE_VECTOR_KERNEL
void StoreRowDifferenceBigEndian(uint8_t* __restrict dst, const int32_t* __restrict a,
                                 const int32_t* __restrict b, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) StoreBe(dst, i, Load(a, i) - Load(b, i));
}

}  // namespace serene::dataplane
