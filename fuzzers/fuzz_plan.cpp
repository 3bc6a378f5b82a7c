// libFuzzer target: load plans: builder appends and compressed/SWA plans vs the per-row reference (check_plan.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("plan", data, size);
}
