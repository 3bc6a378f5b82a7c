// The device conversions the kernels use (hardware e4m3 pairs on sm_90, kvcheck's
// e2m1 ladder, bf16 pairs) and NVIDIA's software e2m1 against the scalar reference,
// for every bf16 input and a large deterministic sample of float bit patterns.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

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

// The FP8 K/V store's division (recipes spec and vllm, SPEC §7.3.1): dev::div_rn is
// a reciprocal and two FMAs where its operands allow, and must give __fdiv_rn's bits
// on every input: every significand pair a 16-bit x can meet (2^34 pairs), then every
// bf16 and fp16 value against scales of every exponent (subnormal, the fast range's
// edges 2^-60 and 2^60 on both sides, huge, 0, Inf, NaN).
TEST(CudaNumerics, DivisionMatchesIeeeOnEveryInput) {
  int count = 0;
  const std::string why = cuda_test::device_count(&count);
  if (count == 0) GTEST_SKIP() << "no CUDA device here (" << (why.empty() ? "0 devices" : why) << "); runs on the GPU machine";
  std::vector<uint32_t> scales{0x00000000u, 0x7F800000u, 0x7FC00000u, 0x00000001u, 0x7F7FFFFFu};
  for (const uint32_t edge : {0x21800000u, 0x5D800000u})  // 2^-60, 2^60 and their neighbours
    for (const uint32_t b : {edge - 1, edge, edge + 1}) scales.push_back(b);
  uint64_t r = 0x6469765F726Eull;
  for (uint32_t e = 0; e < 255; ++e)  // 8 significands per exponent, subnormals included
    for (int k = 0; k < 8; ++k) {
      r += 0x9E3779B97F4A7C15ull;
      const uint64_t z = (r ^ (r >> 31)) * 0xBF58476D1CE4E5B9ull;
      scales.push_back((e << 23) | (k == 0 ? 0u : static_cast<uint32_t>(z >> 41)));
    }
  cuda_test::DivisionCheck sig, val;
  ASSERT_EQ(cuda_test::check_div_rn(scales, sig, val), "");
  EXPECT_EQ(sig.mismatches, 0u) << "of " << sig.pairs << " significand pairs; first x 0x" << std::hex << sig.x
                                << " s 0x" << sig.s;
  EXPECT_EQ(val.mismatches, 0u) << "of " << val.pairs << " value pairs; first x 0x" << std::hex << val.x << " s 0x"
                                << val.s;
}

// The store and load kernels' fast paths, each over every input it can meet: the
// e2m1 encoder (all 2^32 floats, against NVIDIA's conversion), the hardware e4m3 pair
// decode (all 2^16 code pairs), the max.bf16x2 group amax (every half against every
// non-NaN amax), the packed-pair e2m1 encoders against the scalar one (every float in
// each half; every bf16 times every ue8m0 multiplier).
TEST(CudaNumerics, FastPathsMatchOnEveryInput) {
  int count = 0;
  const std::string why = cuda_test::device_count(&count);
  if (count == 0) GTEST_SKIP() << "no CUDA device here (" << (why.empty() ? "0 devices" : why) << "); runs on the GPU machine";
  cuda_test::ExhaustiveChecks c;
  ASSERT_EQ(cuda_test::check_exhaustive(c), "");
  EXPECT_EQ(c.e2m1.mismatches, 0u) << "cvt_e2m1 of " << c.e2m1.pairs << " floats; first 0x" << std::hex << c.e2m1.x;
  EXPECT_EQ(c.fp8_decode.mismatches, 0u) << "e4m3 pair decode of " << c.fp8_decode.pairs << " pairs; first 0x"
                                         << std::hex << c.fp8_decode.x;
  EXPECT_EQ(c.abs_max.mismatches, 0u) << "abs_max_bf16x2 of " << c.abs_max.pairs << " pairs; first m 0x" << std::hex
                                      << c.abs_max.x << " w 0x" << c.abs_max.s;
  for (const auto& [name, r] : {std::pair{"cvt_e2m1x2", c.e2m1_pair}, std::pair{"cvt_e2m1x2<kNanZero>", c.e2m1_pair_nan_zero},
                                std::pair{"e2m1x2_of_bf16x2(mul_bf16x2)", c.e2m1_pair_bf16_pow2}})
    EXPECT_EQ(r.mismatches, 0u) << name << " of " << r.pairs << " pairs; first lo/x 0x" << std::hex << r.x
                                << " hi/mult 0x" << r.s;
}

// SPEC §4.6 and the engines' power-of-two scales written with device log2f/exp2f
// (ENGINES.md §3): for every tile amax a bf16 tile can have, the exact 2^ceil_log2(t)
// (the reference's bit formula; +Inf for an Inf amax) against (a) kvcheck's kernel scale,
// (b) exp2f(ceilf(log2f(max(amax/448, 1e-4)))) (fp8_ds_mla), (c) exp2f(ceilf(log2f(
// max(amax, 1e-4)/448))) (the indexer's ue8m0 option). Device log2f is not exact near
// powers of two; this measures whether any t these recipes meet lies where it errs.
TEST(CudaNumerics, PowerOfTwoTileScalesOnEveryAmax) {
  int count = 0;
  const std::string why = cuda_test::device_count(&count);
  if (count == 0) GTEST_SKIP() << "no CUDA device here (" << (why.empty() ? "0 devices" : why) << "); runs on the GPU machine";
  std::vector<uint32_t> out;
  ASSERT_EQ(cuda_test::pow2_scales_on_device(out), "");
  const auto exact = [](float t) {
    const int k = ref::ceil_log2(t);
    const float s = k >= 128 ? std::numeric_limits<float>::infinity() : std::ldexp(1.0f, k);
    uint32_t b;
    std::memcpy(&b, &s, 4);
    return b;
  };
  // §4.9: the reference's byte for a group holding amax (NumericsOracle.Recipe49OnEveryBf16Value
  // checks the reference against NVIDIA on every bf16 value).
  const auto round_up = [](bf16_bits amax) {
    std::vector<bf16_bits> g(16, 0);
    g[0] = amax;
    std::vector<uint8_t> codes(16), scale(1);
    ref::quantize_group(KVCacheFormat::NVFP4_DS_MLA(), g, codes, scale);
    return uint32_t{scale[0]};
  };
  int64_t bad[6] = {0, 0, 0, 0, 0, 0};
  for (uint32_t i = 0; i <= 0x7F80u; ++i) {
    const float amax = ref::bf16_to_float(static_cast<bf16_bits>(i));
    const uint32_t after = exact(std::max(amax / 448.0f, 1e-4f)), before = exact(std::max(amax, 1e-4f) / 448.0f);
    // §4.8's byte is the biased exponent of §4.6's scale (0xFF for +Inf).
    const uint32_t want[6] = {after, after, before, before, after >> 23, round_up(static_cast<bf16_bits>(i))};
    static const char* const kWhat[6] = {"kvcheck fp32_pow2 (SPEC 4.6)", "exp2f(ceilf(log2f(max(amax/448,1e-4))))",
                                         "exp2f(ceilf(log2f(max(amax,1e-4)/448)))",
                                         "kvcheck fp32_pow2_floor_first (SPEC 4.7)", "kvcheck ue8m0_floor_after (SPEC 4.8)",
                                         "kvcheck e4m3_round_up (SPEC 4.9)"};
    for (int r = 0; r < 6; ++r)
      if (out[6 * i + r] != want[r] && bad[r]++ < 8)
        ADD_FAILURE() << kWhat[r] << " at amax bf16 0x" << std::hex << i << ": device 0x" << out[6 * i + r]
                      << ", exact 0x" << want[r];
  }
  std::printf("tile scales over %u amax values: kernel %lld / floor first %lld / MODEL1 byte %lld / NVFP4_DS_MLA "
              "byte %lld, log2f after the division %lld, before %lld mismatches\n",
              0x7F81u, static_cast<long long>(bad[0]), static_cast<long long>(bad[3]), static_cast<long long>(bad[4]),
              static_cast<long long>(bad[5]), static_cast<long long>(bad[1]), static_cast<long long>(bad[2]));
}

}  // namespace
}  // namespace kvcheck
