#include "tools/kvcheck/recipes.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

#include "impl/error.h"
#include "impl/format.h"
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

// The bf16 inputs in the order a person reads them: by magnitude, +x before -x, NaN last.
std::vector<uint16_t> readable_order(float (*value)(uint16_t)) {
  std::vector<uint16_t> inputs;
  for (uint32_t x = 0; x <= 0xFFFF; ++x) inputs.push_back(static_cast<uint16_t>(x));
  std::stable_sort(inputs.begin(), inputs.end(), [&](uint16_t p, uint16_t q) {
    const float vp = value(p), vq = value(q);
    if (std::isnan(vp) != std::isnan(vq)) return std::isnan(vq);
    if (std::isnan(vp)) return false;
    if (std::fabs(vp) != std::fabs(vq)) return std::fabs(vp) < std::fabs(vq);
    return !std::signbit(vp) && std::signbit(vq);
  });
  return inputs;
}

// One element x stored by a paged format's rule (SPEC §4): a group holding x first, then
// zeros; its scale's value and x's code.
struct GroupRule {
  float scale;
  uint8_t code;
};
GroupRule store_first(const KVCacheFormat& f, uint16_t x) {
  std::vector<bf16_bits> g(static_cast<size_t>(f.elements_per_sf), 0);
  g[0] = x;
  std::vector<uint8_t> codes(g.size()), scale(static_cast<size_t>(f.scale_width()));
  ref::quantize_group(f, g, codes, scale);
  return {ref::scale_value(f, scale), codes[0]};
}

// `kvcheck recipes diff F1 F2` on two paged formats' scale rules (SPEC §4.1-§4.9).
int diff_format_rules(const KVCacheFormat& a, const KVCacheFormat& b, int count, std::ostream& out,
                      std::ostream& err) {
  if (!a.is_quantized() || !b.is_quantized() || a.quantized_dtype != b.quantized_dtype) {
    err << "kvcheck recipes diff: " << a.name << " and " << b.name
        << " do not quantise to one data dtype: their codes cannot be compared\n";
    return 2;
  }
  const auto data_value = [&](uint8_t c) {
    return a.quantized_dtype == QuantizedDtype::kE4M3 ? ref::e4m3_to_float(c) : ref::e2m1_to_float(c);
  };
  out << fmt::format("scale rules of {} ({}, groups of {}) and {} ({}, groups of {}): one bf16 x stored first "
                     "in an otherwise zero group\n",
                     a.name, to_string(a.sf_format), a.elements_per_sf, b.name, to_string(b.sf_format),
                     b.elements_per_sf);
  int differ = 0, shown = 0;
  std::string lines, nan_line;
  for (uint16_t x : readable_order([](uint16_t v) { return ref::bf16_to_float(v); })) {
    const GroupRule ra = store_first(a, x), rb = store_first(b, x);
    if (std::bit_cast<uint32_t>(ra.scale) == std::bit_cast<uint32_t>(rb.scale) && ra.code == rb.code) continue;
    ++differ;
    const float v = ref::bf16_to_float(x);
    const std::string line = fmt::format("{}: scale {:g}, code 0x{:X} ({:g}); {}: scale {:g}, code 0x{:X} ({:g})",
                                         a.name, ra.scale, ra.code, data_value(ra.code), b.name, rb.scale, rb.code,
                                         data_value(rb.code));
    if (std::isnan(v)) {
      if (nan_line.empty()) nan_line = fmt::format("    NaN (e.g. 0x{:04X}): {}\n", x, line);
      continue;
    }
    if (shown++ < count) lines += fmt::format("    x = 0x{:04X} ({:g}): {}\n", x, v, line);
  }
  out << fmt::format("  {} of 65536 bf16 inputs give a different scale or code{}\n", differ,
                     differ ? "; the smallest:" : "");
  out << lines << nan_line;
  return differ > 0 ? 1 : 0;
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
  // Two paged formats: their scale rules (SPEC §4), e.g. V41_FP4 and NVFP4_DS_MLA.
  // Names in any case, as contract --format and --kv-dtype take them (v41_fp4, SGLANG).
  const auto cased = [](std::string s, int (*to)(int)) {
    for (char& c : s) c = static_cast<char>(to(static_cast<unsigned char>(c)));
    return s;
  };
  const auto format = [&](const std::string& name) -> std::optional<KVCacheFormat> {
    for (const std::string& n : {name, cased(name, ::toupper)}) try {
        return format_by_name(n);
      } catch (const Error&) {
      }
    return std::nullopt;
  };
  const auto fa = format(o.a), fb = format(o.b);
  if (fa && fb) {
    // --dtype, --model and --scale are the FP8 recipes' (the formats fix their own).
    if (!o.scales.empty() || cased(o.dtype, ::tolower) != "e4m3" || cased(o.model, ::tolower) != "bf16") {
      err << "kvcheck recipes diff: --dtype, --model and --scale apply to the FP8 recipes, not to paged formats ("
          << o.a << ", " << o.b << " fix their own dtypes and compute their scales)\n";
      return 2;
    }
    return diff_format_rules(*fa, *fb, o.count, out, err);
  }
  if (fa || fb) {
    err << "kvcheck recipes diff: compare two FP8 recipes (spec, vllm, sglang) or two paged formats (V41_FP4, "
           "NVFP4_DS_MLA, ...), not a recipe with a format: '"
        << (fa ? o.a : o.b) << "' is a format, '" << (fa ? o.b : o.a) << "' is not\n";
    return 2;
  }
  KvRecipe a, b;
  KvDtype fp8, model;
  for (const auto& [name, recipe] : {std::pair{&o.a, &a}, std::pair{&o.b, &b}}) try {
      *recipe = kv_recipe_from_string(cased(*name, ::tolower));
    } catch (const Error& e) {
      err << "kvcheck recipes diff: " << e.what() << "; nor a paged format (" << quantized_format_names() << ")\n";
      return 2;
    }
  try {
    fp8 = dtype_named(cased(o.dtype, ::tolower), {KvDtype::kE4M3, KvDtype::kE5M2}, "FP8 dtype");
    model = dtype_named(cased(o.model, ::tolower), {KvDtype::kBF16, KvDtype::kFP16}, "model dtype");
  } catch (const Error& e) {
    err << "kvcheck recipes diff: " << e.what() << "\n";
    return 2;
  }
  std::vector<float> scales;
  for (double given : o.scales.empty() ? std::vector<double>{1, 3, 7, 0.1} : o.scales) {
    const float s = static_cast<float>(given);
    if (!std::isfinite(s) || s <= 0) {  // 1e39 is finite as typed, inf as the float a scale is
      err << fmt::format("kvcheck recipes diff: scale {} is not a positive finite float (SPEC §7.3)\n", given);
      return 2;
    }
    scales.push_back(s);
  }
  const auto value = [&](uint16_t x) { return ref::model_to_float(model, x); };
  const std::vector<uint16_t> inputs =
      readable_order(model == KvDtype::kBF16 ? +[](uint16_t x) { return ref::model_to_float(KvDtype::kBF16, x); }
                                             : +[](uint16_t x) { return ref::model_to_float(KvDtype::kFP16, x); });
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
