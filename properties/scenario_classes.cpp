// The case classes of the store / load scenarios (properties/classes.h): what each
// case exercised, counted by the runner against the properties' declared bounds.
#include "properties/classes.h"
#include "properties/ops/kv/kv_harness.h"
#include "properties/regression.h"

#include <algorithm>
#include <cstring>

namespace kvcheck::props {
namespace {

void note_format_classes(const CacheShape& shape) {
  const KVCacheFormat& f = shape.format;
  if (!is_named_format(f)) note_class("custom format");
  if (f.is_quantized() && f.elements_per_sf != 16 && f.elements_per_sf != 32 && f.elements_per_sf != 128)
    note_class("run-time group size");
  if (shape.block_size == 1) note_class("block_size 1");
  if (shape.block_size > 1 && shape.block_size % 2 == 1) note_class("odd block_size");
  if (shape.block_stride != 0 && shape.num_blocks > 1) note_class("other layers' blocks between");
}

}  // namespace

void note_scenario_classes(const StoreScenario& s) {
  note_format_classes(s.shape);
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  int64_t valid = 0, padding = 0;
  for (int32_t slot : s.slot_mapping) (slot >= 0 ? valid : padding) += 1;
  if (valid == 0) note_class("writes nothing");
  if (valid > 0 && padding > 0) note_class("padding rows");
  if (valid == 0 && padding > 0) note_class("all padding");
  for (int64_t i = 0; i + 1 < n; ++i)
    if (s.slot_mapping[static_cast<size_t>(i)] == -1 && s.slot_mapping[static_cast<size_t>(i + 1)] == 0)
      note_class("slot 0 after a padding row");
  const int64_t rows = s.row_stride > 0 ? static_cast<int64_t>(s.kv.size()) / s.row_stride : 0;
  if (rows > n && n > 0) note_class("kv longer than slot_mapping");
  for (int32_t slot : s.slot_tail)
    if (slot >= 0 && n > 0) note_class("slot_mapping buffer goes on");
  if (s.far_row_stride > 0)
    for (int64_t i = 0; i < n; ++i)
      if (s.slot_mapping[static_cast<size_t>(i)] >= 0 && i * s.far_row_stride >= (int64_t{1} << 31))
        note_class("kv row past 2^31 elements");
  if (s.row_stride > s.shape.format.elements) note_class("padded kv rows");
  note_slot_space_class(n, int64_t{s.shape.num_blocks} * s.shape.block_size, s.shape.block_size);
  if (s.rope) {  // fused RoPE (docs/spec.md §8.4)
    const ScenarioRope& r = *s.rope;
    note_class(r.is_neox ? "rope neox" : "rope gpt-j");
    if (r.rot_dim < s.rope_dim) note_class("rope on a sub-range of k_pe");
    if (s.pe_shape) note_class("rope into split caches");
    bool cancel = false;  // a stored row at a table row whose sin equals its cos (pairs made equal)
    for (size_t i = 0; i < s.slot_mapping.size() && !cancel; ++i)
      cancel = s.slot_mapping[i] >= 0 && rope_cancels(r, static_cast<int64_t>(i));
    if (cancel) note_class("rope with cancelling pairs");
  }
  if (s.pe_shape) {  // split caches
    note_class(s.pe_row_stride == 0 ? "concat k_pe a view of kv_c's rows" : "concat k_pe a buffer of its own");
    if (s.shape.format == KVCacheFormat::BF16(512) && s.pe_shape->format == KVCacheFormat::BF16(64))
      note_class("concat FlashInfer's ckv / kpe caches");
    if (s.pe_shape->format.is_quantized()) note_class("concat pe_cache quantised");
    if (s.pe_shape->block_stride != 0) note_class("concat pe_cache with a block stride of its own");
  } else if (s.is_concat()) {
    const KVCacheFormat& f = s.shape.format;
    note_class(s.pe_row_stride == 0 ? "concat k_pe a view of kv_c's rows" : "concat k_pe a buffer of its own");
    if (s.kv_lora_rank % 8 != 0) note_class("concat split off the 16-byte grid");
    if (f.is_quantized() && s.kv_lora_rank < f.quantized_elements() && s.kv_lora_rank % f.elements_per_sf != 0)
      note_class("concat split inside a scale group");
    if ((f == KVCacheFormat::FP8_DS_MLA() || f == KVCacheFormat::BF16(576) || f == KVCacheFormat::V41() ||
         f == KVCacheFormat::NVFP4_DS_MLA()) &&
        s.kv_lora_rank == f.elements - 64)
      note_class("concat engines' MLA record");
  }
}

void note_scenario_classes(const LoadScenario& s) {
  note_format_classes(s.shape);
  const size_t num_segments = s.load_segments.size() / 4;
  if (num_segments == 0) note_class("no segments");
  int64_t covered = 0;
  int32_t last_dst = -1;
  bool shuffled = false;
  for (size_t i = 0; i < num_segments; ++i) {
    const int32_t* g = &s.load_segments[4 * i];
    const int32_t len = g[2] - g[1];
    covered += std::max(0, len);
    if (g[0] == -1 && len > 0) note_class("zero-fill segment");
    if (len > 0 && g[3] < last_dst) shuffled = true;
    if (len > 0) last_dst = g[3];
  }
  if (shuffled) note_class("shuffled segments");
  if (covered == 0) note_class("loads nothing");
  if (covered > 0 && covered < s.out_rows) note_class("uncovered output rows");
  const KVCacheFormat& f = s.shape.format;
  const int64_t data_stride = f.load_row_bytes() + s.out_data_pad;
  const int64_t scale_stride = f.load_scale_row_bytes() + s.out_scale_pad;
  if (covered > 0 && (data_stride % 2 == 1 || (f.is_index() && scale_stride % 2 == 1)))
    note_class("odd output stride");
  if (covered > 0 && s.out_data_pad == 0) note_class("tight output rows");
  if (covered > 0 && s.out_offset % 16 != 0) note_class("misaligned output base");
}

void note_scenario_classes(const StoreFaultScenario& s) {
  note_class("error");
  if (s.code) note_class(std::string("error ").append(to_string(*s.code)));
  note_format_classes(s.scenario.shape);
}

void note_scenario_classes(const LoadFaultScenario& s) {
  note_class("error");
  if (s.code) note_class(std::string("error ").append(to_string(*s.code)));
  note_format_classes(s.scenario.shape);
}

// A K/V scenario with an injected fault is an "error" case (the fault properties'
// bounds count nothing else); a valid one notes its geometry (note_kv_classes).
void note_scenario_classes(const StoreKvScenario& s) {
  if (!s.fault.empty())
    note_class("error");
  else
    note_kv_classes(s);
}

void note_scenario_classes(const GatherKvScenario& s) {
  if (!s.fault.empty())
    note_class("error");
  else
    note_kv_classes(s);
}

}  // namespace kvcheck::props
