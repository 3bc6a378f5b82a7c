// libFuzzer target: store_kv (SPEC §7): reference vs backend, bit for bit (check_store_kv.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("store_kv", data, size);
}
