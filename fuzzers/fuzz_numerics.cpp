// libFuzzer target: reference conversions vs NVIDIA host conversions (check_numerics.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("numerics", data, size);
}
