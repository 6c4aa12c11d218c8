// Reference checks of the quantization entry points shared by their GPU test (test_quant.cpp) and
// the concurrency test (test_concurrency_families.cpp): a case (grouping, shape, dtypes, layout),
// its device data (x rows of different magnitudes, q and the scales poisoned), the call on a given
// stream, and the comparison with a host reference of the same arithmetic, code for code and scale
// for scale (bit-exact).
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "runtime/device_utils.h"
#include "tgemm/quant.h"

namespace tgemm::test {

enum class Grouping { kTensor, kTensorStatic, kToken, kBlock1x128, kBlock1x128MnMajor, kBlock128x128 };

const char* grouping_name(Grouping g);

struct QuantCase {
  Grouping grouping = Grouping::kToken;
  std::int64_t m = 1, k = 1;
  DType in = DType::kBFloat16;
  DType q_type = DType::kFloat8E4M3;
  std::int64_t ldx_pad = 0, ldq_pad = 0;
  std::int64_t x_offset = 0;  // elements: an odd offset breaks the 16-byte alignment
  bool zero_rows = false;     // every fifth row all zeros
  float static_scale = 0.0f;  // kTensorStatic
  std::string describe() const {
    std::ostringstream os;
    os << grouping_name(grouping) << " M=" << m << " K=" << k << " " << dtype_short_name(in) << "->"
       << dtype_short_name(q_type);
    if (ldx_pad || ldq_pad || x_offset)
      os << " ldx_pad=" << ldx_pad << " ldq_pad=" << ldq_pad << " x_offset=" << x_offset;
    if (zero_rows) os << " zero_rows";
    return os.str();
  }
};

// A case of the default layout (no padding, aligned x); the static scale 2^-7.
QuantCase quant_case(Grouping g, std::int64_t m, std::int64_t k, DType in = DType::kBFloat16,
                     DType q_type = DType::kFloat8E4M3);

struct ScaleLayout {
  std::int64_t rows = 1, cols = 1, s0 = 1, s1 = 1, elements = 1;
};

ScaleLayout scale_layout(const QuantCase& c);
// The element of the scale view that holds group `group` (row-major over the groups).
std::int64_t scale_index(std::int64_t group, const ScaleLayout& s);
void run_quant(const QuantCase& c, const TensorView& x, const TensorView& q, const TensorView& scale, Stream stream);

// A case's device buffers and views. q is poisoned with a code the quantizer never writes (0xff, a
// NaN in e4m3fn; 0x80 in int8), every scale element with NaN (the static scale holds its value).
struct QuantData {
  QuantCase c;
  std::int64_t ldx = 0, ldq = 0, x_elems = 0, q_elems = 0;
  int poison = 0;
  ScaleLayout sl;
  DeviceBuffer xbuf, qbuf, sbuf;
  TensorView x, q, scale;
};

// x filled and the outputs poisoned, on the legacy stream (synchronous).
QuantData make_quant(const QuantCase& c, std::uint64_t seed);
// The outputs poisoned again, on `stream`.
void poison_quant(const QuantData& d, Stream stream);
// "" when every code and scale matches the host reference and q's row padding is untouched, else
// the first mismatch. Reads the buffers synchronously: the call's stream must have finished.
std::string quant_mismatch(const QuantData& d);
// make_quant, the call on the legacy stream, a device synchronisation, quant_mismatch.
std::string check_case(const QuantCase& c, std::uint64_t seed);

}  // namespace tgemm::test
