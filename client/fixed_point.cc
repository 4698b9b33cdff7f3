// Fixed-point conversion. Error bound (docs/client.md): quantizing rounds to
// the nearest multiple of 2^-s, so each value is off by at most 2^-(s+1); the
// switch adds exactly (integers), so the sum of N quantized vectors is off by
// at most N * 2^-(s+1) per element; dequantizing to float adds at most half
// an ulp of the result (relative 2^-24).
#include <cmath>
#include <cstdint>
#include <string>

#include "include/serene/client.h"

namespace serene {

Status Quantize(std::span<const float> in, uint32_t scale_log2, std::span<int32_t> out) {
  const double scale = std::ldexp(1.0, static_cast<int>(scale_log2));
  constexpr double kMax = 2147483647.0, kMin = -2147483648.0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double v = std::nearbyint(static_cast<double>(in[i]) * scale);
    if (!std::isfinite(v) || v > kMax || v < kMin) {
      return Status::InvalidArgument(
          "value [" + std::to_string(i) + "] = " + std::to_string(in[i]) +
          " does not fit the fixed-point range +-" +
          std::to_string(std::ldexp(1.0, 31 - static_cast<int>(scale_log2))) + " at scale 2^" +
          std::to_string(scale_log2) + (std::isfinite(in[i]) ? "; use a smaller scale" : ""));
    }
    out[i] = static_cast<int32_t>(v);
  }
  return Status::Ok();
}

void Dequantize(std::span<const int32_t> in, uint32_t scale_log2, std::span<float> out) {
  const double inv = std::ldexp(1.0, -static_cast<int>(scale_log2));
  for (size_t i = 0; i < in.size(); ++i) out[i] = static_cast<float>(in[i] * inv);
}

}  // namespace serene
