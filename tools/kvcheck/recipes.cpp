#include "tools/kvcheck/recipes.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <ostream>

#include "impl/error.h"
#include "impl/kv_format.h"
#include "reference/kv_numerics.h"
#include "reference/numerics.h"

namespace kvcheck::tool {
namespace {

float fp8_value(KvDtype fp8, uint8_t code) {
  return fp8 == KvDtype::kE4M3 ? ref::e4m3_to_float(code) : ref::e5m2_to_float(code);
}

// The dtype named `name` if it is one of `allowed`; else throws naming them.
KvDtype dtype_named(const std::string& name, std::initializer_list<KvDtype> allowed, const char* what) {
  std::string known;
  for (KvDtype d : allowed) {
    if (to_string(d) == name) return d;
    known += (known.empty() ? "" : ", ") + to_string(d);
  }
  throw Error(ErrorCode::kInvalidArgument, fmt::format("unknown {} '{}' (known: {})", what, name, known));
}

}  // namespace

void list_recipes(std::ostream& out) {
  out << "FP8 K/V store recipes (docs/spec.md §7.3.1); loads dequantise alike in all of them:\n"
         "  spec    q = cvt(x / s), IEEE division; NaN -> 0x7F                                 (kvcheck)\n"
         "  vllm    q = cvt(x / s), IEEE division; NaN -> 0x7F (the same bytes as spec)      (vLLM reshape_and_cache_flash)\n"
         "  sglang  q = cvt(fmaxf(fminf(x * RN(1/s), max), -max)); NaN -> +max (0x7E e4m3)  (SGLang store_cache_quant)\n"
         "cvt: round to nearest even, SATFINITE (e4m3 max 448, e5m2 max 57344).\n"
         "kvcheck recipes diff R1 R2 prints the inputs on which two of them differ.\n";
}

int diff_recipes(const RecipeDiffOptions& o, std::ostream& out, std::ostream& err) {
  KvRecipe a, b;
  KvDtype fp8, model;
  try {
    a = kv_recipe_from_string(o.a);
    b = kv_recipe_from_string(o.b);
    fp8 = dtype_named(o.dtype, {KvDtype::kE4M3, KvDtype::kE5M2}, "FP8 dtype");
    model = dtype_named(o.model, {KvDtype::kBF16, KvDtype::kFP16}, "model dtype");
  } catch (const Error& e) {
    err << "kvcheck recipes diff: " << e.what() << "\n";
    return 2;
  }
  std::vector<float> scales = o.scales;
  if (scales.empty()) scales = {1.0f, 3.0f, 7.0f, 0.1f};
  for (float s : scales)
    if (!std::isfinite(s) || s <= 0) {
      err << "kvcheck recipes diff: scale " << s << " is not positive and finite (SPEC §7.3)\n";
      return 2;
    }
  // The inputs in the order a person reads them: by magnitude, +x before -x, NaN last.
  std::vector<uint16_t> inputs;
  for (uint32_t x = 0; x <= 0xFFFF; ++x) inputs.push_back(static_cast<uint16_t>(x));
  const auto value = [&](uint16_t x) { return ref::model_to_float(model, x); };
  std::stable_sort(inputs.begin(), inputs.end(), [&](uint16_t p, uint16_t q) {
    const float vp = value(p), vq = value(q);
    if (std::isnan(vp) != std::isnan(vq)) return std::isnan(vq);
    if (std::isnan(vp)) return false;
    if (std::fabs(vp) != std::fabs(vq)) return std::fabs(vp) < std::fabs(vq);
    return !std::signbit(vp) && std::signbit(vq);
  });
  bool any = false;
  out << fmt::format("recipes {} and {}: {} -> {} stores\n", to_string(a), to_string(b), to_string(model),
                     to_string(fp8));
  for (float s : scales) {
    int differ = 0, shown = 0;
    std::string lines, nan_line;
    for (uint16_t x : inputs) {
      const float v = value(x);
      const uint8_t qa = ref::quantize_kv(fp8, v, s, a), qb = ref::quantize_kv(fp8, v, s, b);
      if (qa == qb) continue;
      ++differ;
      if (std::isnan(v)) {
        if (nan_line.empty())
          nan_line = fmt::format("    NaN (e.g. 0x{:04X}): {} 0x{:02X}, {} 0x{:02X}\n", x, to_string(a), qa,
                                 to_string(b), qb);
        continue;
      }
      if (shown++ < o.count)
        lines += fmt::format("    x = 0x{:04X} ({:g}): {} 0x{:02X} ({:g}), {} 0x{:02X} ({:g}); x / s = {:.9g}, "
                             "x * RN(1/s) = {:.9g}\n",
                             x, v, to_string(a), qa, fp8_value(fp8, qa), to_string(b), qb, fp8_value(fp8, qb), v / s,
                             v * (1.0f / s));
    }
    any |= differ > 0;
    out << fmt::format("  scale {:g}: {} of 65536 {} inputs give different codes{}\n", s, differ, to_string(model),
                       differ ? "; the smallest:" : "");
    out << lines << nan_line;
  }
  return any ? 1 : 0;
}

}  // namespace kvcheck::tool
