// JSON forms of the K/V family's scenario types (regression files, SPEC §6, §7.7):
// the cache pair's whole geometry, model-dtype rows as hex strings (one per
// token_stride values), FP8 scales exactly (gen/scenario_json.h), block tables as rows
// of max_blocks. Declared in kv_gen.h; every field round-trips bit for bit, the
// injected faults' impossible values (NaN scales, a short buffer, a partial table row,
// negative strides) included.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/gen/scenario_json.h"

namespace kvcheck::props {
namespace {

const char* alloc_name(KvAlloc a) {
  switch (a) {
    case KvAlloc::kSeparate: return "separate";
    case KvAlloc::kNanoVllm: return "nano-vllm";
    case KvAlloc::kFlashInfer: return "flashinfer";
    case KvAlloc::kLayerPages: return "layer-pages";
    case KvAlloc::kNvfp4Pages: return "nvfp4-pages";
  }
  return "?";
}

KvDtype dtype_from(const nlohmann::json& j) {
  return enum_from_name(j.get<std::string>(), KvDtype::kBF16, KvDtype::kE2M1,
                        [](KvDtype d) { return to_string(d); }, "K/V dtype");
}

nlohmann::json floats(const std::vector<float>& v) {
  nlohmann::json a = nlohmann::json::array();
  for (float f : v) a.push_back(exact_float(f));
  return a;
}

std::vector<float> floats_from(const nlohmann::json& j) {
  std::vector<float> v;
  for (const auto& f : j) v.push_back(exact_float_from(f));
  return v;
}

// The fields every K/V scenario ends with: what its fault demands (absent for a valid
// case; "fault" without "expected_error": raw values, the reference decides).
void fault_to_json(nlohmann::json& j, const std::string& fault, const std::optional<ErrorCode>& code) {
  if (!fault.empty()) j["fault"] = fault;
  if (code) j["expected_error"] = std::string(to_string(*code));
}

void fault_from_json(const nlohmann::json& j, std::string& fault, std::optional<ErrorCode>& code) {
  fault = j.value("fault", std::string());
  code.reset();
  if (j.contains("expected_error")) code = error_code_from_name(j.at("expected_error").get<std::string>());
}

void check_type(const nlohmann::json& j, const char* type) {
  if (j.at("type") != type) throw std::runtime_error(std::string("scenario type is not ") + type);
}

}  // namespace

void to_json(nlohmann::json& j, const KvCacheShape& s) {
  j = {{"dtype", to_string(s.dtype)},
       {"order", to_string(s.order)},
       {"num_blocks", s.num_blocks},
       {"block_size", s.block_size},
       {"num_kv_heads", s.num_kv_heads},
       {"head_dim", s.head_dim},
       {"pad_head", s.pad_head},
       {"pad_token", s.pad_token},
       {"pad_page", s.pad_page},
       {"alloc", alloc_name(s.alloc)},
       {"scale_kind", to_string(s.scale_kind)},
       {"fill_seed", s.fill_seed}};
  if (s.alloc == KvAlloc::kNanoVllm || s.num_layers != 1 || s.layer != 0) {
    j["num_layers"] = s.num_layers;
    j["layer"] = s.layer;
  }
  if (!s.k_scale.empty()) j["k_scale"] = floats(s.k_scale);
  if (!s.v_scale.empty()) j["v_scale"] = floats(s.v_scale);
  if (s.capacity_cut != 0) j["capacity_cut"] = s.capacity_cut;
  if (s.dtype == KvDtype::kE2M1) j["sf_layout"] = to_string(s.sf_layout);
  if (s.sf_fault != KvSfFault::kNone) j["sf_fault"] = static_cast<int>(s.sf_fault);
  // Absent = spec, so files written before recipes read as they were written.
  if (s.recipe != KvRecipe::kSpec) {
    if (is_kv_recipe(s.recipe)) j["recipe"] = to_string(s.recipe);
    else j["recipe"] = static_cast<int32_t>(s.recipe);
  }
}

void from_json(const nlohmann::json& j, KvCacheShape& s) {
  s.dtype = dtype_from(j.at("dtype"));
  s.order = enum_from_name(j.at("order").get<std::string>(), KvHeadLayout::kNHD, KvHeadLayout::kHND,
                           [](KvHeadLayout o) { return to_string(o); }, "head layout");
  s.num_blocks = int_at<int32_t>(j, "num_blocks");
  s.block_size = int_at<int32_t>(j, "block_size");
  s.num_kv_heads = int_at<int32_t>(j, "num_kv_heads");
  s.head_dim = int_at<int32_t>(j, "head_dim");
  s.pad_head = int_at<int32_t>(j, "pad_head");
  s.pad_token = int_at<int32_t>(j, "pad_token");
  s.pad_page = int_at<int32_t>(j, "pad_page");
  s.alloc = enum_from_name(j.at("alloc").get<std::string>(), KvAlloc::kSeparate, KvAlloc::kNvfp4Pages, alloc_name,
                           "alloc");
  s.scale_kind = enum_from_name(j.at("scale_kind").get<std::string>(), KvScaleKind::kNone, KvScaleKind::kPerHead,
                                [](KvScaleKind k) { return to_string(k); }, "scale_kind");
  s.fill_seed = int_at<uint64_t>(j, "fill_seed");
  s.num_layers = int_value<int>(j, "num_layers", 1);
  s.layer = int_value<int>(j, "layer", 0);
  s.k_scale = floats_from(j.value("k_scale", nlohmann::json::array()));
  s.v_scale = floats_from(j.value("v_scale", nlohmann::json::array()));
  s.capacity_cut = int_value<int64_t>(j, "capacity_cut", 0);
  s.sf_layout = j.contains("sf_layout")
                    ? enum_from_name(j.at("sf_layout").get<std::string>(), KvSfLayout::kLinear, KvSfLayout::kInterleave4,
                                     [](KvSfLayout l) { return to_string(l); }, "sf_layout")
                    : KvSfLayout::kLinear;
  const int sf_fault = int_value<int>(j, "sf_fault", 0);
  if (sf_fault < 0 || sf_fault > static_cast<int>(KvSfFault::kNullKSf)) throw std::runtime_error("sf_fault out of range");
  s.sf_fault = static_cast<KvSfFault>(sf_fault);
  s.recipe = KvRecipe::kSpec;
  if (j.contains("recipe"))
    s.recipe = j.at("recipe").is_string() ? kv_recipe_from_string(j.at("recipe").get<std::string>())
                                          : static_cast<KvRecipe>(int_at<int32_t>(j, "recipe"));
  // What the harness allocates from (KvBuffers): a file cannot ask for more than a
  // generated case could, nor for a shape with no elements to lay out.
  if (s.num_blocks < 1 || s.block_size < 1 || s.num_kv_heads < 1 || s.head_dim < 1 || s.num_layers < 1 ||
      s.pad_token < 0 || s.pad_page < 0 ||  // drawn >= 0; only pad_head is made negative (a fault: heads overlap)
      s.layer < 0 || s.layer >= s.num_layers || (s.alloc == KvAlloc::kNvfp4Pages && s.dtype != KvDtype::kE2M1) ||
      (s.sf_fault == KvSfFault::kKSfIntoData && s.alloc != KvAlloc::kNvfp4Pages))  // into the data: pages only
    throw std::runtime_error(
        "K/V cache shape out of range (num_blocks, block_size, num_kv_heads, head_dim, pad_token, pad_page, layer)");
  // Generated caches stay under 8 MiB; 2^27 elements (as a double: the product of int32
  // fields may pass int64) is far past any of them.
  const double elements = static_cast<double>(s.num_blocks) * s.num_layers *
                          (static_cast<double>(s.block_size) * (static_cast<double>(s.num_kv_heads) * (static_cast<double>(s.head_dim) + s.pad_head) + s.pad_token) +
                           s.pad_page);
  if (elements > double(int64_t{1} << 27))
    throw std::runtime_error("K/V cache shape: " + std::to_string(elements) +
                             " elements per cache is more than a scenario may ask for (2^27)");
}

void to_json(nlohmann::json& j, const KvRows& r) {
  j = {{"dtype", to_string(r.dtype)},
       {"rows", r.rows},
       {"token_stride", r.token_stride},
       {"head_stride", r.head_stride},
       {"data", hex_rows(r.data, r.token_stride)}};
}

void from_json(const nlohmann::json& j, KvRows& r) {
  r.dtype = dtype_from(j.at("dtype"));
  r.rows = int_at<int64_t>(j, "rows");
  r.token_stride = int_at<int64_t>(j, "token_stride");
  r.head_stride = int_at<int64_t>(j, "head_stride");
  r.data = parse_hex_rows(j.at("data"));
}

namespace {

/// The key or value rows of a store scenario hold every element their rows and strides
/// claim for the cache's heads (what make_kv_rows allocates): a file that claims more
/// would have the backend read past the buffer. Negative strides and no data at all (a
/// null pointer) are faults the backend must refuse before reading: not checked here.
void check_rows_extent(const KvRows& r, const KvCacheShape& c, const char* side) {
  if (r.rows < 0) throw std::runtime_error(std::string(side) + " rows " + std::to_string(r.rows) + " < 0");
  check_at_most(r.rows, int64_t{1} << 24, (std::string(side) + " rows").c_str());
  if (r.rows == 0 || r.data.empty() || r.token_stride < 0 || r.head_stride < 0) return;
  const __int128 need = __int128{r.rows - 1} * r.token_stride + __int128{c.num_kv_heads - 1} * r.head_stride + c.head_dim;
  if (need > static_cast<__int128>(r.data.size()))
    throw std::runtime_error(std::string(side) + ": " + std::to_string(r.data.size()) + " elements of data, but rows " +
                             std::to_string(r.rows) + ", token_stride " + std::to_string(r.token_stride) +
                             " and head_stride " + std::to_string(r.head_stride) + " over " +
                             std::to_string(c.num_kv_heads) + " heads of " + std::to_string(c.head_dim) +
                             " claim more");
}

}  // namespace

void to_json(nlohmann::json& j, const StoreKvScenario& s) {
  j = {{"type", "store_kv"}, {"cache", s.cache}, {"slot_mapping", s.slot_mapping}, {"key", s.key}, {"value", s.value}};
  fault_to_json(j, s.fault, s.code);
  if (s.threads != 0) j["threads"] = s.threads;
  if (!s.slot_tail.empty()) j["slot_mapping_tail"] = s.slot_tail;
  if (s.rope) j["rope"] = *s.rope;
}

void from_json(const nlohmann::json& j, StoreKvScenario& s) {
  check_type(j, "store_kv");
  s.cache = j.at("cache").get<KvCacheShape>();
  s.slot_mapping = ints_at<int32_t>(j, "slot_mapping");
  s.key = j.at("key").get<KvRows>();
  s.value = j.at("value").get<KvRows>();
  fault_from_json(j, s.fault, s.code);
  s.threads = threads_value(j);
  s.slot_tail = ints_value<int32_t>(j, "slot_mapping_tail");
  s.rope.reset();
  if (j.contains("rope")) s.rope = j.at("rope").get<ScenarioRope>();
  check_rows_extent(s.key, s.cache, "key");
  check_rows_extent(s.value, s.cache, "value");
}

void to_json(nlohmann::json& j, const GatherKvScenario& s) {
  // block_table as [num_seqs][max_blocks] rows; entries past the last whole row (a
  // fault: one entry too many) follow as plain numbers, as a load's partial segment.
  nlohmann::json table = nlohmann::json::array();
  const size_t width = s.max_blocks > 0 ? static_cast<size_t>(s.max_blocks) : 0;
  const size_t whole = width > 0 ? s.block_table.size() / width * width : 0;
  for (size_t i = 0; i < whole; i += width)
    table.push_back(std::vector<int32_t>(s.block_table.begin() + static_cast<std::ptrdiff_t>(i),
                                         s.block_table.begin() + static_cast<std::ptrdiff_t>(i + width)));
  for (size_t i = whole; i < s.block_table.size(); ++i) table.push_back(s.block_table[i]);
  j = {{"type", "gather_kv"},
       {"cache", s.cache},
       {"block_table", std::move(table)},
       {"max_blocks", s.max_blocks},
       {"cu_seqlens_k", s.cu_seqlens_k},
       {"out_k_dtype", to_string(s.out_k_dtype)},
       {"out_v_dtype", to_string(s.out_v_dtype)},
       {"out_rows", s.out_rows},
       {"out_pad_head", s.out_pad_head},
       {"out_pad_token", s.out_pad_token},
       {"out_seed", s.out_seed}};
  fault_to_json(j, s.fault, s.code);
  if (s.threads != 0) j["threads"] = s.threads;
  if (s.out_offset != 0) j["out_offset"] = s.out_offset;
  if (s.out_v_rows) j["out_v_rows"] = *s.out_v_rows;
  if (s.out_v_pad_token) j["out_v_pad_token"] = *s.out_v_pad_token;
  if (!s.seq_starts.empty()) {
    j["seq_starts"] = s.seq_starts;
    j["seq_start_unit"] = s.seq_start_unit == SeqStartUnit::kBlock ? "block" : "token";
  }
}

void from_json(const nlohmann::json& j, GatherKvScenario& s) {
  check_type(j, "gather_kv");
  s.cache = j.at("cache").get<KvCacheShape>();
  s.max_blocks = int_at<int32_t>(j, "max_blocks");
  s.block_table.clear();
  for (const auto& row : j.at("block_table")) {
    if (!row.is_array()) {
      s.block_table.push_back(int_of<int32_t>(row, "block_table"));
      continue;
    }
    if (static_cast<int64_t>(row.size()) != s.max_blocks) throw std::runtime_error("a block_table row needs max_blocks entries");
    for (const auto& e : row) s.block_table.push_back(int_of<int32_t>(e, "block_table"));
  }
  s.cu_seqlens_k = ints_at<int32_t>(j, "cu_seqlens_k");
  s.out_k_dtype = dtype_from(j.at("out_k_dtype"));
  s.out_v_dtype = dtype_from(j.at("out_v_dtype"));
  s.out_rows = int_at<int64_t>(j, "out_rows");
  s.out_pad_head = int_at<int32_t>(j, "out_pad_head");
  s.out_pad_token = int_at<int32_t>(j, "out_pad_token");
  s.out_seed = int_at<uint64_t>(j, "out_seed");
  fault_from_json(j, s.fault, s.code);
  s.threads = threads_value(j);
  s.out_offset = int_value<int>(j, "out_offset", 0);
  s.out_v_rows.reset();
  s.out_v_pad_token.reset();
  if (j.contains("out_v_rows")) s.out_v_rows = int_at<int64_t>(j, "out_v_rows");
  if (j.contains("out_v_pad_token")) s.out_v_pad_token = int_at<int32_t>(j, "out_v_pad_token");
  s.seq_starts = ints_value<int32_t>(j, "seq_starts");
  const std::string unit = j.value("seq_start_unit", std::string("token"));
  if (unit != "token" && unit != "block") throw std::runtime_error("seq_start_unit is token or block");
  s.seq_start_unit = unit == "block" ? SeqStartUnit::kBlock : SeqStartUnit::kToken;
  if (s.out_rows < 0 || s.out_offset < 0 || s.rows_of(1) < 0) throw std::runtime_error("negative out_rows or out_offset");
  // The output buffers and the reference's gather (cu_seqlens_k's total rows) stay far
  // below these in every generated case.
  for (const int32_t c : s.cu_seqlens_k) check_at_most(c, int64_t{1} << 24, "gather_kv: a cu_seqlens_k entry");
  for (const int side : {0, 1})
    check_at_most(s.rows_of(side), (int64_t{1} << 27) / std::max<int64_t>(1, int64_t{s.cache.num_kv_heads} *
                                                                              (s.cache.head_dim + std::max(s.out_pad_head, 0)) +
                                                                          std::max(s.out_pad_token, 0)),
                  "gather_kv: out rows");
}

}  // namespace kvcheck::props
