// Scalar reference numerics (SPEC §4), written from the OCP Microscaling (MX) spec
// v1.0 value tables with explicit round-to-nearest-even: no bit tricks from a fast
// path. Nothing here is shared with impl/.
#pragma once

#include <cstdint>
#include <span>

#include "impl/format.h"

namespace kvcheck::ref {

/// SPEC §4 constants, fp32 round-to-nearest of the quotient.
inline constexpr float kInv448 = 1.0f / 448.0f;  // 0x3B124925
inline constexpr float kInv6 = 1.0f / 6.0f;      // 0x3E2AAAAB
inline constexpr float kFp8AmaxMargin = 1e-4f;   // FP8_AMAX_MARGIN (SPEC §4.1)

/// Exact: bits << 16 (SPEC §4).
float bf16_to_float(bf16_bits x);
/// Round to nearest even; any NaN -> 0x7FFF (SPEC §4).
bf16_bits float_to_bf16_rn(float x);

/// OCP E4M3 (fn): RNE, saturate to ±448 (±Inf too), NaN -> 0x7F, sign of zero kept.
uint8_t cvt_e4m3(float x);
/// OCP E2M1: RNE, saturate to ±6, NaN -> 0x7 (+6), -0 -> 0x8. Returns a nibble.
uint8_t cvt_e2m1(float x);
/// Value of an E4M3 code (0x7F/0xFF -> NaN).
float e4m3_to_float(uint8_t code);
/// Value of an E2M1 nibble (low 4 bits used).
float e2m1_to_float(uint8_t nibble);
/// Value 2^(byte-127) of an E8M0 byte (0xFF -> NaN).
float e8m0_to_float(uint8_t byte);

/// Index of the entry of `table` nearest to `mag`, ties to the even index, where table
/// holds the non-negative values of a binary format in code order (strictly
/// ascending: code = index) with `mbits` mantissa bits and smallest normal exponent
/// `emin`, and 0 <= mag < last entry + its half step (the callers round or saturate
/// larger ones). The entry at or below mag is found from mag's binade, not by a search:
/// binade [2^e, 2^(e+1)) holds codes (e - emin) * 2^mbits + [2^mbits, 2^(mbits+1))
/// spaced 2^(e - mbits), the subnormals below 2^emin codes [0, 2^mbits) spaced
/// 2^(emin - mbits), so lo = (e - emin) * 2^mbits + floor(mag / 2^(e - mbits)) with e =
/// max(binade, emin). That it brackets mag (table[lo] <= mag < table[lo + 1]) is checked
/// (std::logic_error otherwise): the answer is the table's nearest entry, as a search
/// over the whole table would find it.
int nearest_even_code(std::span<const double> table, double mag, int mbits, int emin);

/// SPEC §4: smallest k with 2^k >= s from s's bits; +Inf -> 128. s must be > 0.
int ceil_log2(float s);
/// SPEC §4: largest |x| ignoring NaN; all-NaN or empty -> 0.
float group_amax(std::span<const float> x);

/// Quantises one scale group of `format` (SPEC §4.1-4.4). x has
/// format.elements_per_sf elements; codes gets one code per element (e2m1: a
/// nibble per byte, not packed); scale gets 1 byte (ue8m0/e4m3) or 4 bytes
/// (fp32, little-endian). Throws Error(kInvalidFormat) for BF16 formats.
void quantize_group(const KVCacheFormat& format, std::span<const bf16_bits> x,
                    std::span<uint8_t> codes, std::span<uint8_t> scale);

/// Value of one group's scale bytes as a float: ue8m0 2^(b-127), e4m3 decoded,
/// fp32 from 4 little-endian bytes. scale has 1 or 4 bytes. Throws kInvalidFormat
/// for BF16.
float scale_value(const KVCacheFormat& format, std::span<const uint8_t> scale);

/// Dequantised value of one code under its group's scale bytes, rounded to BF16
/// (SPEC §4: bf16_rn(float(q) * scale)).
bf16_bits dequantize(const KVCacheFormat& format, uint8_t code, std::span<const uint8_t> scale);

}  // namespace kvcheck::ref
