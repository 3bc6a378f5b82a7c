// libFuzzer target: store then load: reference vs backend, BF16 identity (check_round_trip.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("round_trip", data, size);
}
