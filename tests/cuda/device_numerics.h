// Host interface of tests/cuda/device_numerics.cu (kept free of CUDA headers so the
// gtest side compiles as plain C++20).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kvcheck::cuda_test {

/// Per input float: e4m3 (low half of a pair cvt), e4m3_hi (high half, for the
/// input's pair neighbour), e2m1 (kvcheck's ladder), e2m1_nvidia (NVIDIA's
/// software conversion), bf16 (low half of a pair cvt).
struct DeviceConversions {
  std::vector<uint8_t> e4m3, e4m3_hi, e2m1, e2m1_nvidia;
  std::vector<uint16_t> bf16;
};

/// What DivisionsMatchIeee found: pairs compared, mismatches, and the first mismatch
/// (float bits of x and s; 0 when none).
struct DivisionCheck {
  uint64_t pairs = 0, mismatches = 0;
  uint32_t x = 0, s = 0;
};
/// dev::div_rn (impl/cuda/numerics.cuh) against __fdiv_rn on device 0, over (a) every
/// pair of significands a bf16 or fp16 x can have (11 bits) and any scale's (23 bits),
/// both signs of x, exponents 0 (the scaling argument covers the rest of div_rn's fast
/// domain); (b) every bf16 and every fp16 value x against `scales` (bit patterns).
/// Returns "" or the CUDA error text.
std::string check_div_rn(const std::vector<uint32_t>& scales, DivisionCheck& significands, DivisionCheck& values);

/// The kernels' fast conversions on device 0, exhaustively (x, s: the first
/// mismatch's operands): (a) dev::cvt_e2m1 against NVIDIA's conversion on all 2^32
/// floats; (b) the hardware e4m3 pair decode against dev::e4m3_to_f32 on all 2^16
/// pairs; (c) the max.bf16x2 amax against the integer NaN-ignoring rule on every
/// 16-bit half against every non-NaN amax; (d) the pair encoder dev::cvt_e2m1x2
/// against dev::cvt_e2m1 per half on 2^32 pairs (every float in each half), (e) its
/// NaN-as-0 form likewise, (f) the bf16x2 encoder after a power-of-two multiply
/// against cvt_e2m1 of the float product, every bf16 against every 2^-s, |s| <= 126.
struct ExhaustiveChecks {
  DivisionCheck e2m1, fp8_decode, abs_max, e2m1_pair, e2m1_pair_nan_zero, e2m1_pair_bf16_pow2;
};
/// Returns "" or the CUDA error text.
std::string check_exhaustive(ExhaustiveChecks& out);

/// Tile scales on device 0 for every tile amax a bf16 tile can have (bf16 bits i = 0 ..
/// 0x7F80): out[6i] kvcheck's fp32_pow2 scale (SPEC §4.6), out[6i+1]
/// exp2f(ceilf(log2f(max(amax / 448, 1e-4)))), out[6i+2] exp2f(ceilf(log2f(max(amax,
/// 1e-4) / 448))), out[6i+3] kvcheck's fp32_pow2_floor_first scale (§4.7), as float
/// bits, out[6i+4] its ue8m0_floor_after byte (§4.8, MODEL1), out[6i+5] its
/// e4m3_round_up byte (§4.9, NVFP4_DS_MLA); six values per input. Returns "" or the
/// CUDA error text.
std::string pow2_scales_on_device(std::vector<uint32_t>& out);

/// Number of CUDA devices; returns the runtime's error text ("" on success).
std::string device_count(int* count);
/// Converts float bit patterns on device 0; returns "" or the CUDA error text.
std::string convert_on_device(const std::vector<uint32_t>& in, DeviceConversions& out);

}  // namespace kvcheck::cuda_test
