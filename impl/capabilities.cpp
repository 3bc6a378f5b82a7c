// BackendCapabilities (the generator-facing side of the plugin ABI's capabilities) and
// the kvcheck_format of a record, which both it and the ABI conversions use.
#include "impl/capabilities.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <string>
#include <utility>
#include <vector>

#include "impl/error.h"
#include "impl/layout.h"
#include "impl/op_names.h"

namespace kvcheck {

bool BackendCapabilities::supports_kv_shape(int64_t num_kv_heads, int64_t head_dim) const {
  if (num_kv_heads < 1 || head_dim < 1) return true;
  if (!supports_head_dim(head_dim)) return false;
  const int64_t row = num_kv_heads * head_dim;
  return row >= min_heads_x_head_dim && (max_heads_x_head_dim == 0 || row <= max_heads_x_head_dim);
}

bool is_kv_dtype_pair(KvDtype cache, KvDtype rows) {
  return is_model_dtype(rows) && (is_quantized_kv(cache) || cache == rows);
}

std::string describe_kv_dtype_pairs(uint32_t bits) {
  std::string out;
  for (KvDtype cache : kv_dtypes())
    for (KvDtype rows : kv_row_dtypes())
      if (bits & kv_dtype_pair_bit(cache, rows))
        out += (out.empty() ? "" : ", ") + to_string(cache) + " cache with " + to_string(rows) + " rows";
  return out;
}

bool BackendCapabilities::supports_kv_dtype_pair(KvDtype cache, KvDtype rows) const {
  return kv_dtype_pairs == 0 || !is_kv_dtype_pair(cache, rows) || (kv_dtype_pairs & kv_dtype_pair_bit(cache, rows));
}

std::string BackendCapabilities::describe_kv_shapes() const {
  std::string out;
  if (!head_dims.empty()) {
    out = "head_dims {";
    for (size_t i = 0; i < head_dims.size(); ++i) out += (i ? ", " : "") + std::to_string(head_dims[i]);
    out += "}";
  }
  const auto add = [&](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (min_heads_x_head_dim > 0) add("num_kv_heads x head_dim >= " + std::to_string(min_heads_x_head_dim));
  if (max_heads_x_head_dim > 0) add("num_kv_heads x head_dim <= " + std::to_string(max_heads_x_head_dim));
  if (kv_alignment > 1) add("addresses and strides multiples of " + std::to_string(kv_alignment) + " bytes");
  if (kv_dtype_pairs != 0) add("dtype pairs {" + describe_kv_dtype_pairs(kv_dtype_pairs) + "}");
  return out;
}

namespace {

// The named formats of the ABI's kvcheck_format, one table (SPEC §2).
const std::vector<std::pair<KVCacheFormat, int>>& named_abi_formats() {
  static const std::vector<std::pair<KVCacheFormat, int>> named = {
      {KVCacheFormat::V41(), KVCHECK_FORMAT_V41},
      {KVCacheFormat::V41_FP4(), KVCHECK_FORMAT_V41_FP4},
      {KVCacheFormat::FP4_INDEX(), KVCHECK_FORMAT_FP4_INDEX},
      {KVCacheFormat::FP8_FP32SF_INDEX(), KVCHECK_FORMAT_FP8_FP32SF_INDEX},
      {KVCacheFormat::MXFP8_INDEX(), KVCHECK_FORMAT_MXFP8_INDEX},
      {KVCacheFormat::FP8_DS_MLA(), KVCHECK_FORMAT_FP8_DS_MLA},
      {KVCacheFormat::FP8_POW2SF_INDEX(), KVCHECK_FORMAT_FP8_POW2SF_INDEX},
      {KVCacheFormat::MODEL1(), KVCHECK_FORMAT_MODEL1},
      {KVCacheFormat::NVFP4_DS_MLA(), KVCHECK_FORMAT_NVFP4_DS_MLA}};
  return named;
}

}  // namespace

int abi_format(const KVCacheFormat& f) {
  for (const auto& [format, id] : named_abi_formats()) {
    KVCacheFormat g = f;
    g.name = format.name;
    if (g == format) return id;
  }
  if (!f.is_quantized() && f.elements_per_sf == 0 && f.sf_format == SfFormat::kNone && !f.do_cast &&
      !f.token_interleaved && f.bf16_tail_elements == 0 && !f.e4m3_tail && !f.scales_last && f.elements >= 8 &&
      f.elements <= 4096 &&
      f.elements % 8 == 0)
    return KVCHECK_FORMAT_BF16;
  return KVCHECK_FORMAT_OTHER;
}

std::string abi_format_name(int id, int32_t elements) {
  if (id == KVCHECK_FORMAT_BF16) return "BF16(" + std::to_string(elements) + ")";
  for (const auto& [format, named] : named_abi_formats())
    if (named == id) return format.name;
  return "custom";
}

namespace {

// The operations each Property::op needs.
uint32_t ops_needed(const std::string& op) {
  if (op == "store") return KVCHECK_OP_STORE_KV_CACHE;
  if (op == "load") return KVCHECK_OP_LOAD_PAGED_KV_CACHE;
  if (op == "round_trip") return KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE;
  // Each index property calls one transform and says which (Property::needs, props::needs_op): a plugin of one transform is tested.
  if (op == "index") return 0;
  if (op == "prefill") return KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE | KVCHECK_OP_CONVERT_KV_INDEX;
  if (op == "store_kv") return KVCHECK_OP_STORE_KV;
  if (op == "gather_kv") return KVCHECK_OP_GATHER_KV;
  if (op == "kv_step") return KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV;
  return 0;
}

}  // namespace

bool BackendCapabilities::supports_format(const KVCacheFormat& f) const {
  // A record with flags (an e4m3 tail, scales last) only for a backend that reads them.
  if ((f.e4m3_tail || f.scales_last) && !(ops & KVCHECK_OP_RECORD_FLAGS)) return false;
  const int id = abi_format(f);
  if (id != KVCHECK_FORMAT_OTHER) return (formats >> id) & 1u;
  if (takes_custom_records()) return true;  // every format, named or not (or a scope of OTHER)
  try {  // a valid format outside the table is outside a plugin's named formats
    f.validate();
    return false;
  } catch (const Error&) {
    return true;  // invalid input: the backend's own validation must reject it
  }
}

bool BackendCapabilities::supports_block_stride(const KVCacheFormat& format, int64_t block_size,
                                                int64_t block_stride) const {
  if (ops & KVCHECK_OP_ANY_BLOCK_STRIDE) return true;
  if (block_size < 1 || block_size > INT32_MAX || block_stride <= 0 || block_stride % 32 != 0 ||
      format.bytes_per_token() <= 0)
    return true;  // invalid input, or nothing to compare with
  return block_stride <= block_stride_for(format, static_cast<int32_t>(block_size));
}

bool BackendCapabilities::supports_property_op(const std::string& op, std::string* why) const {
  const uint32_t missing = ops_needed(op) & ~ops;
  if (missing == 0) return true;
  if (why) {
    std::string names;
    for (const auto& o : kOpNames)
      if (missing & o.bit) names += (names.empty() ? "" : ", ") + std::string(o.name);
    *why = "no " + names;
  }
  return false;
}

std::vector<KvRecipe> BackendCapabilities::supported_kv_recipes() const {
  std::vector<KvRecipe> out;
  for (KvRecipe r : kvcheck::kv_recipes())
    if (supports_kv_recipe(r)) out.push_back(r);
  if (out.empty()) out.push_back(KvRecipe::kSpec);
  return out;
}

bool BackendCapabilities::supports_head_dim(int64_t d) const {
  if (d < 1 || head_dims.empty()) return true;
  for (int32_t h : head_dims)
    if (h == d) return true;
  return false;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

uint32_t format_bit_by_name(const std::string& name) {
  std::vector<std::pair<int, std::string>> names = {{KVCHECK_FORMAT_BF16, "BF16"}, {KVCHECK_FORMAT_OTHER, "OTHER"}};
  for (const auto& [format, id] : named_abi_formats()) names.emplace_back(id, format.name);
  std::sort(names.begin(), names.end());
  std::string known;
  for (const auto& [id, n] : names) {
    if (lower(n) == lower(name)) return KVCHECK_FORMAT_BIT(id);
    known += (known.empty() ? "" : ", ") + n;
  }
  throw Error(ErrorCode::kInvalidArgument, "no paged format '" + name + "'; known: " + known);
}

uint32_t kv_dtype_bit_by_name(const std::string& name) {
  std::string known;
  for (KvDtype d : kvcheck::kv_dtypes()) {
    if (to_string(d) == lower(name)) return 1u << static_cast<int>(d);
    known += (known.empty() ? "" : ", ") + to_string(d);
  }
  throw Error(ErrorCode::kInvalidArgument, "no K/V cache dtype '" + name + "'; known: " + known);
}

std::string BackendCapabilities::restrictions() const {
  std::string out, ops_missing, fmts, dts;
  for (const auto& o : kOpNames)
    if (!(ops & o.bit)) ops_missing += (ops_missing.empty() ? "" : ", ") + std::string(o.name);
  if (!ops_missing.empty()) out += "ops: no " + ops_missing + "\n";
  std::vector<std::pair<int, std::string>> names = {{KVCHECK_FORMAT_BF16, "BF16"}};
  for (const auto& [format, id] : named_abi_formats()) names.emplace_back(id, format.name);
  std::sort(names.begin(), names.end());
  int nf = 0;
  for (const auto& [id, name] : names)
    if ((formats >> id) & 1u) fmts += (nf++ ? ", " : "") + name;
  if (formats != ~0u && takes_custom_records()) fmts += (nf++ ? ", " : "") + std::string("custom records (OTHER)");
  if (formats != ~0u && (ops & (KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE)))
    out += "formats: " + (nf ? fmts + " only" : std::string("none")) + "\n";
  int nd = 0;
  for (KvDtype d : kvcheck::kv_dtypes())
    if (supports_kv_dtype(d)) dts += (nd++ ? ", " : "") + to_string(d);
  if (nd < 4 && (ops & (KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV)))
    out += "K/V dtypes: " + (nd ? dts + " only" : std::string("none")) + "\n";
  if ((ops & KVCHECK_OP_STORE_KV) && (supports_kv_dtype(KvDtype::kE4M3) || supports_kv_dtype(KvDtype::kE5M2)) &&
      supported_kv_recipes().size() < static_cast<size_t>(kNumKvRecipes)) {  // a recipe only an FP8 cache uses
    std::string rs;
    for (KvRecipe r : supported_kv_recipes()) rs += (rs.empty() ? "" : ", ") + to_string(r);
    out += "FP8 K/V recipe: " + rs + " (declared)\n";
  }
  if (!head_dims.empty() && (ops & (KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV))) {
    std::string ds;
    for (int32_t d : head_dims) ds += (ds.empty() ? "" : ", ") + std::to_string(d);
    out += "head_dim: " + ds + " only (declared)\n";
  }
  if ((min_heads_x_head_dim > 0 || max_heads_x_head_dim > 0) && (ops & (KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV)))
    out += "num_kv_heads x head_dim: " +
           (min_heads_x_head_dim > 0 ? "at least " + std::to_string(min_heads_x_head_dim) : std::string()) +
           (min_heads_x_head_dim > 0 && max_heads_x_head_dim > 0 ? ", " : "") +
           (max_heads_x_head_dim > 0 ? "at most " + std::to_string(max_heads_x_head_dim) : std::string()) +
           " (declared)\n";
  if (kv_dtype_pairs != 0 && (ops & (KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV))) {
    uint32_t taken = 0;  // the pairs of cache dtypes it takes: the others are never drawn
    for (KvDtype cache : kvcheck::kv_dtypes())
      for (KvDtype rows : kvcheck::kv_row_dtypes())
        if (supports_kv_dtype(cache)) taken |= kv_dtype_pair_bit(cache, rows);
    out += "K/V dtype pairs: " + describe_kv_dtype_pairs(kv_dtype_pairs & taken) + " (declared)\n";
  }
  if (kv_alignment > 1 && (ops & (KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV)))
    out += "K/V addresses and strides: multiples of " + std::to_string(kv_alignment) + " bytes (declared)\n";
  if (block_size_multiple > 1) out += "block_size: multiples of " + std::to_string(block_size_multiple) + "\n";
  if (max_block_size > 0) out += "block_size: at most " + std::to_string(max_block_size) + "\n";
  return out;
}

}  // namespace kvcheck
