// libFuzzer target: store_kv_cache: reference vs backend, whole cache bit for bit (check_store.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("store", data, size);
}
