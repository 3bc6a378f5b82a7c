// The libFuzzer entry point of every target: built once per fuzzers/ops/<family>/check_<name>.cpp
// as fuzz_<name> (and replay_<name>), included by a generated fuzz_<name>.cpp that
// defines KVCHECK_FUZZ_TARGET_NAME (fuzzers/CMakeLists.txt).
#include <cstddef>
#include <cstdint>

#include "fuzzers/checks.h"

#ifndef KVCHECK_FUZZ_TARGET_NAME
#error "define KVCHECK_FUZZ_TARGET_NAME (fuzzers/CMakeLists.txt generates the file that does)"
#endif
#define KVCHECK_STR2(x) #x
#define KVCHECK_STR(x) KVCHECK_STR2(x)

// Before the first input (libFuzzer calls it once per process; the replay main calls
// check_setup itself).
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  kvcheck::fuzz::check_setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kvcheck::fuzz::fuzz_one(KVCHECK_STR(KVCHECK_FUZZ_TARGET_NAME), data, size);
}
