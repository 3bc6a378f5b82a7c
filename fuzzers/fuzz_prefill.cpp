// libFuzzer target: a whole prefill step on the backend, props::run_prefill_step (check_prefill.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("prefill", data, size);
}
