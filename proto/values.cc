#include "proto/values.h"

#include <cstring>

#include "common/vector_kernel.h"

namespace serene::proto {
namespace {

SERENE_VECTOR_KERNEL
void Store(const int32_t* __restrict values, uint8_t* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t v = __builtin_bswap32(static_cast<uint32_t>(values[i]));
    std::memcpy(out + 4 * i, &v, 4);
  }
}

SERENE_VECTOR_KERNEL
void Load(const uint8_t* __restrict in, int32_t* __restrict values, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t v;
    std::memcpy(&v, in + 4 * i, 4);
    values[i] = static_cast<int32_t>(__builtin_bswap32(v));
  }
}

}  // namespace

void StoreValues(std::span<const int32_t> values, uint8_t* out) {
  Store(values.data(), out, values.size());
}

void LoadValues(const uint8_t* in, std::span<int32_t> values) {
  Load(in, values.data(), values.size());
}

}  // namespace serene::proto
