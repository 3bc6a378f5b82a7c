// The device conversions the kernels use (hardware e4m3 pairs on sm_90, kvcheck's
// e2m1 ladder, bf16 pairs) and NVIDIA's software e2m1 against the scalar reference,
// for every bf16 input and a large deterministic sample of float bit patterns.
#include <gtest/gtest.h>

#include <cstring>

#include "reference/numerics.h"
#include "tests/cuda/device_numerics.h"

namespace kvcheck {
namespace {

TEST(CudaNumerics, DeviceConversionsMatchReference) {
  int count = 0;
  const std::string why = cuda_test::device_count(&count);
  if (count == 0) GTEST_SKIP() << "no CUDA device here (" << (why.empty() ? "0 devices" : why) << "); runs on the GPU machine";
  std::vector<uint32_t> in;
  for (uint32_t b = 0; b < 65536; ++b) in.push_back(b << 16);  // every bf16 value
  uint64_t x = 0x6B76636865636Bull;
  for (int i = 0; i < (1 << 22); ++i) {  // splitmix64 sample of all floats
    x += 0x9E3779B97F4A7C15ull;
    uint64_t z = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    in.push_back(static_cast<uint32_t>(z ^ (z >> 31)));
  }
  cuda_test::DeviceConversions dev;
  ASSERT_EQ(cuda_test::convert_on_device(in, dev), "");
  int64_t bad = 0;
  for (size_t i = 0; i < in.size() && bad < 10; ++i) {
    float f;
    std::memcpy(&f, &in[i], 4);
    const uint8_t e4m3 = ref::cvt_e4m3(f), e2m1 = ref::cvt_e2m1(f);
    const uint16_t bf16 = ref::float_to_bf16_rn(f);
    if (e4m3 != dev.e4m3[i] || e4m3 != dev.e4m3_hi[i] || e2m1 != dev.e2m1[i] || e2m1 != dev.e2m1_nvidia[i] ||
        bf16 != dev.bf16[i]) {
      ++bad;
      ADD_FAILURE() << "float bits 0x" << std::hex << in[i] << ": e4m3 ref 0x" << int{e4m3} << " gpu 0x"
                    << int{dev.e4m3[i]} << " (high half 0x" << int{dev.e4m3_hi[i]} << "), e2m1 ref 0x"
                    << int{e2m1} << " gpu 0x" << int{dev.e2m1[i]} << " (NVIDIA's 0x" << int{dev.e2m1_nvidia[i]}
                    << "), bf16 ref 0x" << bf16 << " gpu 0x" << dev.bf16[i];
    }
  }
}

}  // namespace
}  // namespace kvcheck
