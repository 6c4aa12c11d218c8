// Invariant checks inside fuzz targets: a broken invariant prints the values and aborts, which
// libFuzzer records as a crash with the input that caused it (assert() is compiled out in the
// Release builds the fuzzers use).
#pragma once

#include <cstdio>
#include <cstdlib>

#define TGEMM_FUZZ_REQUIRE(cond, ...)                                                   \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)
