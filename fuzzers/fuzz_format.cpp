// libFuzzer target: format validation, sizes, offsets, resolve_format (check_format.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("format", data, size);
}
