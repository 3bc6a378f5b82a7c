// Reference numerics of the K/V family (SPEC §7.3): fp16 and e5m2 written plainly
// from their value tables (e4m3 and bf16 come from reference/numerics.h), and the
// scaled FP8 quantise/dequantise. Nothing here is shared with impl/.
#pragma once

#include <cstdint>

#include "impl/kv_format.h"

namespace kvcheck::ref {

/// IEEE binary16 from its fields; exact.
float fp16_to_float(uint16_t x);
/// Round to nearest even, overflow to ±Inf (|x| >= 65520), any NaN -> 0x7FFF.
uint16_t float_to_fp16_rn(float x);
/// OCP E5M2: RNE, SATFINITE ±57344 (0x7B, Inf too), any NaN -> 0x7F, sign of zero kept.
uint8_t cvt_e5m2(float x);
/// Value of an E5M2 code: 0x7C/0xFC ±Inf, 0x7D..0x7F / 0xFD..0xFF NaN.
float e5m2_to_float(uint8_t code);

/// A model-dtype element (bf16 or fp16 bits) as a float, exactly.
float model_to_float(KvDtype dtype, uint16_t bits);
/// A float rounded to a model dtype (bf16 as SPEC §4, fp16 as above).
uint16_t float_to_model(KvDtype dtype, float x);
/// SPEC §7.3.1 store under `recipe`: kSpec, kVllm: cvt_<fp8>(x / scale), IEEE
/// division; kSglang: y = x * RN(1 / scale), then fmaxf(fminf(y, max), -max) (a NaN
/// becomes +max) and cvt_<fp8>. max = 448 (e4m3), 57344 (e5m2).
uint8_t quantize_kv(KvDtype fp8, float x, float scale, KvRecipe recipe = KvRecipe::kSpec);
/// SPEC §7.3 load: float(q) * scale, one RN multiply (round to the model dtype after).
float dequantize_kv(KvDtype fp8, uint8_t q, float scale);

/// SPEC §7.9 (FlashInfer's NVFP4 append, exact binary32): the e4m3 scale byte of a group
/// of 16 values with global decode scale g: amax = the largest |x| that is not NaN; 0
/// when amax is 0, else cvt_e4m3(amax / RN(6 * g)).
uint8_t nvfp4_group_scale(const float* x, float g);
/// The multiplier of a group's elements: 1 / RN(float(sf) * g), or 0 when amax is 0
/// or the scale decodes to 0.
float nvfp4_group_inv(const float* x, uint8_t sf, float g);
/// The e2m1 nibble of v = RN(x * inv) by FlashInfer's thresholds (ties to even; > 5 and
/// Inf -> 6): sign bit from v, magnitude code 0..7; a NaN v -> 0.
uint8_t nvfp4_code(float x, float inv);
/// SPEC §7.9 load: RN(RN(e2m1(code) * e4m3(sf)) * g) (the first product is exact).
float dequantize_nvfp4(uint8_t code, uint8_t sf, float g);

}  // namespace kvcheck::ref
