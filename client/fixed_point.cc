// Fixed-point conversion. Error bound (docs/client.md): quantizing rounds to
// the nearest multiple of 2^-s, so each value is off by at most 2^-(s+1); the
// switch adds exactly (integers), so the sum of N quantized vectors is off by
// at most N * 2^-(s+1) per element; dequantizing to float adds at most half
// an ulp of the result (relative 2^-24).
//
// Both run over every value of every Pull and Push, so their loops are
// written to vectorize (this file is compiled with -O3 and the loops are
// cloned for AVX2, as proto/values.cc): Quantize converts a block first and
// checks its range after, without an early exit in the loop.
#include <cmath>
#include <cstdint>
#include <string>

#include "common/vector_kernel.h"
#include "include/serene/client.h"

namespace serene {
namespace {

constexpr double kMax = 2147483647.0, kMin = -2147483648.0;

// out[i] = round(in[i] * scale) for values in range (0 for the others);
// returns false if any value is out of range or not finite (NaN fails both
// compares). Counted, not branched on, so the loop vectorizes.
SERENE_VECTOR_KERNEL
bool QuantizeBlock(const float* __restrict in, double scale, int32_t* __restrict out, size_t n) {
  size_t good = 0;
  for (size_t i = 0; i < n; ++i) {
    const double v = __builtin_nearbyint(static_cast<double>(in[i]) * scale);
    const bool in_range = (v <= kMax) & (v >= kMin);
    good += in_range;
    out[i] = static_cast<int32_t>(in_range ? v : 0.0);
  }
  return good == n;
}

SERENE_VECTOR_KERNEL
void DequantizeBlock(const int32_t* __restrict in, double inv, float* __restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i] * inv);
}

}  // namespace

Status Quantize(std::span<const float> in, uint32_t scale_log2, std::span<int32_t> out) {
  const double scale = std::ldexp(1.0, static_cast<int>(scale_log2));
  if (QuantizeBlock(in.data(), scale, out.data(), in.size())) return Status::Ok();
  // Name the first value that does not fit.
  for (size_t i = 0; i < in.size(); ++i) {
    const double v = std::nearbyint(static_cast<double>(in[i]) * scale);
    if (std::isfinite(v) && v <= kMax && v >= kMin) continue;
    return Status::InvalidArgument(
        "value [" + std::to_string(i) + "] = " + std::to_string(in[i]) +
        " does not fit the fixed-point range +-" +
        std::to_string(std::ldexp(1.0, 31 - static_cast<int>(scale_log2))) + " at scale 2^" +
        std::to_string(scale_log2) + (std::isfinite(in[i]) ? "; use a smaller scale" : ""));
  }
  return Status::Ok();
}

void Dequantize(std::span<const int32_t> in, uint32_t scale_log2, std::span<float> out) {
  DequantizeBlock(in.data(), std::ldexp(1.0, -static_cast<int>(scale_log2)), out.data(),
                  in.size());
}

}  // namespace serene
