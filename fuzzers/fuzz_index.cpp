// libFuzzer target: index transforms of SPEC §5.5, reference vs backend (check_index.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("index", data, size);
}
