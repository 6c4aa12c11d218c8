// libFuzzer target: config.json text through the shape generator of `tgemm shapes`
// (model_linear_shapes, model_dtype). The first byte picks the options (tensor-parallel degree
// 1..8, lm_head on or off); the rest is the JSON text. A config it cannot use must be refused
// with tgemm::Error; anything else escaping, a crash or a sanitizer report (signed overflow among
// them) is a finding. Every shape produced must have positive N, K and M scale.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_shapes.h"
#include "tests/fuzz/fuzz_check.h"
#include "tgemm/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  tgemm::ModelShapeOptions options;
  options.tp = 1 + (data[0] & 7);
  options.lm_head = (data[0] & 8) != 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const std::vector<tgemm::LinearShape> shapes = tgemm::model_linear_shapes(text, options);
    for (const tgemm::LinearShape& s : shapes) {
      TGEMM_FUZZ_REQUIRE(s.n > 0 && s.k > 0 && s.m_scale > 0, "layer %s: N=%lld K=%lld m_scale=%g", s.layer.c_str(),
                         static_cast<long long>(s.n), static_cast<long long>(s.k), s.m_scale);
    }
  } catch (const tgemm::Error&) {
    // A refused config: the message names the key.
  }
  try {
    (void)tgemm::model_dtype(text);
  } catch (const tgemm::Error&) {
  }
  return 0;
}
