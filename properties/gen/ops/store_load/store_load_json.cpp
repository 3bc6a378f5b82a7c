// JSON forms of the store/load scenario types (regression files, SPEC §6): the cache
// shape's format in full, kv rows as hex bf16 (gen/scenario_json.h), segments as
// [block, begin, end, dst]. Declared in store_load_gen.h.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <stdexcept>

#include "properties/gen/scenario_json.h"
#include "properties/gen/ops/store_load/store_load_gen.h"

namespace kvcheck::props {

void to_json(nlohmann::json& j, const CacheShape& s) {
  const KVCacheFormat& f = s.format;
  j = {{"format",
        {{"name", f.name},
         {"quantized_dtype", to_string(f.quantized_dtype)},
         {"elements", f.elements},
         {"elements_per_sf", f.elements_per_sf},
         {"sf_format", to_string(f.sf_format)},
         {"do_cast", f.do_cast},
         {"token_interleaved", f.token_interleaved}}},
       {"block_size", s.block_size},
       {"num_blocks", s.num_blocks},
       {"fill_seed", s.fill_seed}};
  if (s.block_stride != 0) j["block_stride"] = s.block_stride;
  if (f.bf16_tail_elements != 0) j["format"]["bf16_tail_elements"] = f.bf16_tail_elements;
  if (f.e4m3_tail) j["format"]["e4m3_tail"] = true;
  if (f.scales_last) j["format"]["scales_last"] = true;
}

void from_json(const nlohmann::json& j, CacheShape& s) {
  const auto& f = j.at("format");
  KVCacheFormat format;
  format.name = f.at("name").get<std::string>();
  format.quantized_dtype = enum_from_name(f.at("quantized_dtype").get<std::string>(), QuantizedDtype::kNone,
                                          QuantizedDtype::kE2M1,
                                          [](QuantizedDtype q) { return to_string(q); }, "quantized_dtype");
  format.elements = int_at<int32_t>(f, "elements");
  format.elements_per_sf = int_at<int32_t>(f, "elements_per_sf");
  format.sf_format = enum_from_name(f.at("sf_format").get<std::string>(), SfFormat::kNone, SfFormat::kE4M3RoundUp,
                                    [](SfFormat x) { return to_string(x); }, "sf_format");
  format.do_cast = f.at("do_cast").get<bool>();
  format.token_interleaved = f.at("token_interleaved").get<bool>();
  format.bf16_tail_elements = int_value<int>(f, "bf16_tail_elements", 0);  // older files have none
  format.e4m3_tail = f.value("e4m3_tail", false);                  // nor these
  format.scales_last = f.value("scales_last", false);
  format.validate();
  s.format = std::move(format);
  s.block_size = int_at<int32_t>(j, "block_size");
  s.num_blocks = int_at<int32_t>(j, "num_blocks");
  s.fill_seed = int_at<uint32_t>(j, "fill_seed");
  s.block_stride = int_value<int64_t>(j, "block_stride", 0);
  // Every generated cache has a block (CacheLayout::make refuses less, and the round
  // trip divides by block_size before making one) and stays far below 256 MiB.
  if (s.num_blocks < 1 || s.block_size < 1) throw std::runtime_error("cache shape: num_blocks and block_size >= 1");
  const int64_t per_block = std::max(s.block_stride, int64_t{s.block_size} * s.format.bytes_per_token());
  check_at_most(s.num_blocks, (int64_t{1} << 28) / std::max<int64_t>(per_block, 1), "cache shape: num_blocks");
}

void to_json(nlohmann::json& j, const StoreScenario& s) {
  to_json(j, s.shape);
  j["type"] = "store";
  j["slot_mapping"] = s.slot_mapping;
  j["row_stride"] = s.row_stride;
  nlohmann::json rows = nlohmann::json::array();
  const int64_t n = s.row_stride > 0 ? static_cast<int64_t>(s.kv.size()) / s.row_stride : 0;
  for (int64_t r = 0; r < n; ++r) rows.push_back(hex_row(&s.kv[static_cast<size_t>(r * s.row_stride)], s.row_stride));
  j["kv"] = std::move(rows);
  if (s.threads != 0) j["threads"] = s.threads;
  if (!s.slot_tail.empty()) j["slot_mapping_tail"] = s.slot_tail;
  if (s.far_row_stride != 0) j["far_row_stride"] = s.far_row_stride;
  if (s.is_concat()) {
    j["kv_lora_rank"] = s.kv_lora_rank;
    j["rope_dim"] = s.rope_dim;
    if (s.pe_row_stride != 0) j["pe_row_stride"] = s.pe_row_stride;
    if (s.pe_rows != -1) j["pe_rows"] = s.pe_rows;
    if (s.pe_shape) j["pe_cache"] = *s.pe_shape;
    if (s.pe_inside_cache >= 0) j["pe_inside_cache"] = s.pe_inside_cache;
    if (s.rope) j["rope"] = *s.rope;
  }
}

void from_json(const nlohmann::json& j, StoreScenario& s) {
  if (j.at("type") != "store") throw std::runtime_error("scenario type is not store");
  from_json(j, s.shape);
  s.slot_mapping = ints_at<int32_t>(j, "slot_mapping");
  s.row_stride = int_at<int64_t>(j, "row_stride");
  s.kv.clear();
  for (const auto& row : j.at("kv")) {
    const size_t before = s.kv.size();
    parse_hex_row(row.get<std::string>(), s.kv);
    if (static_cast<int64_t>(s.kv.size() - before) != s.row_stride)
      throw std::runtime_error("a kv row does not hold row_stride values");
  }
  s.threads = threads_value(j);
  s.slot_tail = ints_value<int32_t>(j, "slot_mapping_tail");
  s.far_row_stride = int_value<int64_t>(j, "far_row_stride", 0);
  if (s.far_row_stride != 0 && s.far_row_stride < s.row_stride)
    throw std::runtime_error("far_row_stride is below row_stride");
  s.kv_lora_rank = int_value<int>(j, "kv_lora_rank", 0);
  s.rope_dim = int_value<int>(j, "rope_dim", 0);
  s.pe_row_stride = int_value<int64_t>(j, "pe_row_stride", 0);
  s.pe_rows = int_value<int64_t>(j, "pe_rows", -1);
  s.pe_shape.reset();
  if (j.contains("pe_cache")) s.pe_shape = j.at("pe_cache").get<CacheShape>();
  s.pe_inside_cache = int_value<int64_t>(j, "pe_inside_cache", -1);
  s.rope.reset();
  if (j.contains("rope")) s.rope = j.at("rope").get<ScenarioRope>();
  if (s.rope && !s.is_concat()) throw std::runtime_error("a rope on a scenario that is not concat_and_cache_mla");
  if (s.is_concat() && s.far_row_stride != 0) throw std::runtime_error("a concat scenario with far rows");
  // pe_cache inside the cache's buffer: both buffers are the harness's, so pe_cache's
  // buffer (as run_store sizes it: max(size_bytes, one packed block)) must end inside
  // the cache's. 128-bit sums: a file's offsets and strides may be anything.
  const auto extent = [](const CacheShape& sh) {
    const __int128 packed = block_stride_for(sh.format, sh.block_size);
    return std::max<__int128>((__int128{sh.num_blocks} - 1) * shape_block_stride(sh) + packed, packed);
  };
  if (s.pe_inside_cache >= 0 && (!s.pe_shape || s.pe_inside_cache + extent(*s.pe_shape) > extent(s.shape)))
    throw std::runtime_error("pe_inside_cache puts pe_cache past the end of the cache's buffer");
  if (s.pe_row_stride < 0 || s.pe_rows < -1 || s.pe_row_stride > (int64_t{1} << 20) ||
      std::max<int64_t>(s.pe_rows, 1) * std::max<int64_t>(s.pe_row_stride, 1) > (int64_t{1} << 24))
    throw std::runtime_error("pe_row_stride / pe_rows out of range (at most 2^24 k_pe elements)");
}

void to_json(nlohmann::json& j, const LoadScenario& s) {
  to_json(j, s.shape);
  j["type"] = "load";
  nlohmann::json segs = nlohmann::json::array();
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    segs.push_back({s.load_segments[i], s.load_segments[i + 1], s.load_segments[i + 2], s.load_segments[i + 3]});
  // A trailing partial segment (a fault: size not a multiple of 4) stays visible.
  for (size_t i = s.load_segments.size() / 4 * 4; i < s.load_segments.size(); ++i) segs.push_back(s.load_segments[i]);
  j["load_segments"] = std::move(segs);
  j["total_k"] = s.total_k;
  j["out_rows"] = s.out_rows;
  j["out_seed"] = s.out_seed;
  if (s.threads != 0) j["threads"] = s.threads;
  if (s.out_data_pad != 16 || s.out_scale_pad != 16 || s.out_offset != 0) {
    j["out_data_pad"] = s.out_data_pad;
    j["out_scale_pad"] = s.out_scale_pad;
    j["out_offset"] = s.out_offset;
  }
}

void from_json(const nlohmann::json& j, LoadScenario& s) {
  if (j.at("type") != "load") throw std::runtime_error("scenario type is not load");
  from_json(j, s.shape);
  s.load_segments.clear();
  for (const auto& seg : j.at("load_segments")) {
    if (seg.is_array()) {
      if (seg.size() != 4) throw std::runtime_error("a load segment needs 4 values");
      for (const auto& v : seg) s.load_segments.push_back(int_of<int32_t>(v, "load_segments"));
    } else {
      s.load_segments.push_back(int_of<int32_t>(seg, "load_segments"));
    }
  }
  s.total_k = int_at<int32_t>(j, "total_k");
  s.out_rows = int_at<int64_t>(j, "out_rows");
  s.out_seed = int_at<uint32_t>(j, "out_seed");
  s.threads = threads_value(j);
  s.out_data_pad = int_value<int64_t>(j, "out_data_pad", 16);
  s.out_scale_pad = int_value<int64_t>(j, "out_scale_pad", 16);
  s.out_offset = int_value<int>(j, "out_offset", 0);
  check_at_most(s.out_rows, (int64_t{1} << 28) / std::max<int64_t>(1, s.shape.format.load_row_bytes() +
                                                                        std::max<int64_t>(s.out_data_pad, 0)),
                "load: out_rows");
  // A pad may be negative (a stride fault) but the stride must not be.
  if (s.shape.format.load_row_bytes() + s.out_data_pad < 0 || s.out_scale_pad < -s.shape.format.load_scale_row_bytes() ||
      s.out_offset < 0)
    throw std::runtime_error("negative output stride or offset");
}

void to_json(nlohmann::json& j, const StoreFaultScenario& s) {
  to_json(j, s.scenario);
  j["type"] = "store_fault";
  j["fault"] = s.fault;
  if (s.code) j["expected_error"] = std::string(to_string(*s.code));
}

void from_json(const nlohmann::json& j, StoreFaultScenario& s) {
  if (j.at("type") != "store_fault") throw std::runtime_error("scenario type is not store_fault");
  nlohmann::json inner = j;
  inner["type"] = "store";
  from_json(inner, s.scenario);
  s.fault = j.at("fault").get<std::string>();
  s.code.reset();
  if (j.contains("expected_error")) s.code = error_code_from_name(j.at("expected_error").get<std::string>());
}

void to_json(nlohmann::json& j, const LoadFaultScenario& s) {
  to_json(j, s.scenario);
  j["type"] = "load_fault";
  j["fault"] = s.fault;
  if (s.code) j["expected_error"] = std::string(to_string(*s.code));
}

void from_json(const nlohmann::json& j, LoadFaultScenario& s) {
  if (j.at("type") != "load_fault") throw std::runtime_error("scenario type is not load_fault");
  nlohmann::json inner = j;
  inner["type"] = "load";
  from_json(inner, s.scenario);
  s.fault = j.at("fault").get<std::string>();
  s.code.reset();
  if (j.contains("expected_error")) s.code = error_code_from_name(j.at("expected_error").get<std::string>());
}

}  // namespace kvcheck::props
