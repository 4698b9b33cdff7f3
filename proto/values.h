// Row values between host int32 and the wire's big-endian layout, for whole
// rows at once (vectorized with AVX2 where the CPU has it): the client
// encodes every INC and decodes every READ_REPLY through these.
#pragma once

#include <cstdint>
#include <span>

namespace serene::proto {

// out[4i..4i+3] = big-endian values[i].
void StoreValues(std::span<const int32_t> values, uint8_t* out);
// values[i] = the big-endian int32 at in[4i].
void LoadValues(const uint8_t* in, std::span<int32_t> values);

}  // namespace serene::proto
