#include "fuzzers/decoders.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>

namespace kvcheck::fuzz {

int32_t fdp_block_size(FuzzedDataProvider& fdp) {
  constexpr size_t kNamed = std::size(props::kBlockSizes), kOdd = std::size(props::kOddBlockSizes);
  const size_t choice = fdp.ConsumeIntegralInRange<size_t>(0, kNamed + kOdd);
  if (choice < kNamed) return props::kBlockSizes[choice];
  if (choice < kNamed + kOdd) return props::kOddBlockSizes[choice - kNamed];
  return fdp.ConsumeIntegralInRange<int32_t>(1, 300);
}

std::string hex(uint32_t v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
  return buf;
}

}  // namespace kvcheck::fuzz
