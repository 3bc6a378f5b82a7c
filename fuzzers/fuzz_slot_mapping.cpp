// libFuzzer target: host slot mappings of SPEC §5.4 and §7.6 against the reference (check_slot_mapping.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one("slot_mapping", data, size);
}
