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

}  // namespace kvcheck::ref
