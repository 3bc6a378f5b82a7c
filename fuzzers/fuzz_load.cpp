// libFuzzer target: load_paged_kv_cache: reference vs backend, whole output bit for bit (check_load.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("load", data, size);
}
