#include "impl/kv_format.h"

#include "impl/error.h"

namespace kvcheck {

int64_t kv_dtype_bytes(KvDtype dtype) { return is_model_dtype(dtype) ? 2 : 1; }
int64_t kv_bytes(KvDtype dtype, int64_t elements) {
  return is_nvfp4(dtype) ? (elements + 1) / 2 : elements * kv_dtype_bytes(dtype);
}
bool is_fp8(KvDtype dtype) { return dtype == KvDtype::kE4M3 || dtype == KvDtype::kE5M2; }
bool is_model_dtype(KvDtype dtype) { return dtype == KvDtype::kBF16 || dtype == KvDtype::kFP16; }

std::string to_string(KvDtype dtype) {
  switch (dtype) {
    case KvDtype::kBF16: return "bf16";
    case KvDtype::kFP16: return "fp16";
    case KvDtype::kE4M3: return "e4m3";
    case KvDtype::kE5M2: return "e5m2";
    case KvDtype::kE2M1: return "e2m1";
  }
  return "dtype(" + std::to_string(static_cast<int>(dtype)) + ")";
}

std::string to_string(KvHeadLayout layout) {
  return layout == KvHeadLayout::kNHD ? "NHD" : "HND";
}

std::string to_string(KvSfLayout layout) {
  switch (layout) {
    case KvSfLayout::kLinear: return "linear";
    case KvSfLayout::kInterleave4: return "interleave4";
  }
  return "sf-layout(" + std::to_string(static_cast<int>(layout)) + ")";
}

std::string to_string(KvScaleKind kind) {
  switch (kind) {
    case KvScaleKind::kNone: return "none";
    case KvScaleKind::kPerTensor: return "per-tensor";
    case KvScaleKind::kPerHead: return "per-head";
  }
  return "scale-kind(" + std::to_string(static_cast<int>(kind)) + ")";
}

std::string to_string(KvRecipe recipe) {
  switch (recipe) {
    case KvRecipe::kSpec: return "spec";
    case KvRecipe::kVllm: return "vllm";
    case KvRecipe::kSglang: return "sglang";
  }
  return "recipe(" + std::to_string(static_cast<int>(recipe)) + ")";
}

bool is_kv_recipe(KvRecipe recipe) {
  return static_cast<int32_t>(recipe) >= 0 && static_cast<int32_t>(recipe) < kNumKvRecipes;
}

KvRecipe kv_recipe_from_string(const std::string& name) {
  std::string known;
  for (const KvRecipe r : kv_recipes()) {
    if (to_string(r) == name) return r;
    known += (known.empty() ? "" : ", ") + to_string(r);
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown recipe '" + name + "' (known: " + known + ")");
}

std::vector<KvRecipe> kv_recipes() { return {KvRecipe::kSpec, KvRecipe::kVllm, KvRecipe::kSglang}; }

std::vector<KvDtype> kv_row_dtypes() { return {KvDtype::kBF16, KvDtype::kFP16, KvDtype::kE4M3, KvDtype::kE5M2}; }

std::vector<KvDtype> kv_dtypes() {
  return {KvDtype::kBF16, KvDtype::kFP16, KvDtype::kE4M3, KvDtype::kE5M2, KvDtype::kE2M1};
}

}  // namespace kvcheck
