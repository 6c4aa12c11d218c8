// Host reference of MXFP4 (include/tgemm/fp4.h): encoding and decoding of e2m1 codes and E8M0
// scales and the quantizer, written from the OCP Microscaling v1.0 rules independently of the
// kernels (nearest grid point by search, frexp for the exponent), so the GPU quantizer can be
// compared with it byte for byte and the GEMMs against the weights it decodes.
#pragma once

#include <cstdint>
#include <vector>

namespace tgemm::test {

// The value of an e2m1 code (low 4 bits of `code`): +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
float e2m1_value(std::uint8_t code);
// The value of an E8M0 scale: 2^(s - 127), NaN for 255.
float e8m0_value(std::uint8_t s);
// The code nearest to v (ties to the code with mantissa bit 0), saturated to +-6, sign kept; v
// finite.
std::uint8_t e2m1_encode(float v);
// The E8M0 scale of a block: clamp(floor(log2(amax)) - 2, -127, 127) + 127; 0 for amax 0; 255
// when any value is NaN or infinite.
std::uint8_t e8m0_block_scale(const float* v, int count);

// x [m, k] row-major (k % 32 == 0) -> q [m, k / 2] (element 2i low nibble), scale [m, k / 32].
void quant_mxfp4_ref(const std::vector<float>& x, std::int64_t m, std::int64_t k, std::vector<std::uint8_t>& q,
                     std::vector<std::uint8_t>& scale);
// The weight q, scale of quant_mxfp4_ref decoded to fp32 [rows, k] (code value times scale; a NaN
// scale gives NaN).
std::vector<float> dequant_mxfp4_ref(const std::vector<std::uint8_t>& q, const std::vector<std::uint8_t>& scale,
                                     std::int64_t rows, std::int64_t k);

}  // namespace tgemm::test
