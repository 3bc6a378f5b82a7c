// Fault injectors of the K/V family (SPEC §7.4, §7.5): one fault on a valid scenario
// and the code it demands (both engines), and raw values with several errors at once
// (the fuzz decoders only; the check then demands the reference's outcome).
#include <fmt/format.h>

#include <bit>
#include <climits>
#include <limits>
#include <stdexcept>

#include "impl/slot_mapping.h"
#include "properties/gen/choices.h"
#include "properties/gen/gen_caps.h"
#include "properties/gen/ops/kv/kv_gen.h"

namespace kvcheck::props {

void inject_store_kv_rope_fault(Source& src, StoreKvScenario& s) {
  ScenarioRope& r = *s.rope;
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  const size_t kind = src.weighted({2, 5, n >= 2 ? 1 : 0});
  if (kind == 1) {  // a RoPE rule (docs/spec.md §8.4), the rest valid
    inject_rope_fault(src, r, s.cache.head_dim, n, s.fault, s.code);
    return;
  }
  if (kind == 2) {  // a bad slot on row 0, a bad position on the last: the position's error
    inject_position_before_slot(r, s.slot_mapping, s.cache.num_slots(), s.fault, s.code);
    return;
  }
  inject_store_kv_fault(src, s);  // the RoPE valid
  fit_positions(r, n, s.slot_mapping.size());
}

namespace {

/// One fault of an e2m1 cache's scale caches (SPEC §7.9), and the code it demands.
void inject_sf_fault(Source& src, KvCacheShape& c, std::string& fault, std::optional<ErrorCode>& code) {
  // Each rule on either side alone (a check copied from its neighbour tests one twice).
  std::vector<KvSfFault> kinds{KvSfFault::kShortKSf, KvSfFault::kShortVSf, KvSfFault::kVSfOnKSf,
                               KvSfFault::kNullKSf, KvSfFault::kNullVSf};
  if (c.alloc == KvAlloc::kNvfp4Pages) kinds.insert(kinds.end(), 2, KvSfFault::kKSfIntoData);  // the page rule's edge
  c.sf_fault = src.pick(std::span<const KvSfFault>(kinds));
  switch (c.sf_fault) {
    case KvSfFault::kShortKSf: fault = "k_sf's buffer ends one byte before its view"; break;
    case KvSfFault::kVSfOnKSf: fault = "v_sf on k_sf's bytes"; break;
    case KvSfFault::kNullVSf: fault = "v_sf is null"; break;
    case KvSfFault::kShortVSf: fault = "v_sf's buffer ends one byte before its view"; break;
    case KvSfFault::kNullKSf: fault = "k_sf is null"; break;
    default: fault = "k_sf one byte into K's data (every page's last data byte is a scale byte)"; break;
  }
  code = c.sf_fault == KvSfFault::kVSfOnKSf || c.sf_fault == KvSfFault::kKSfIntoData ? ErrorCode::kInvalidArgument
                                                                                     : ErrorCode::kShapeMismatch;
}

}  // namespace

void inject_store_kv_fault(Source& src, StoreKvScenario& s) {
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  const bool fp8 = is_fp8(s.cache.dtype);
  std::vector<int> kinds{6, 7};
  if (n > 0) kinds.insert(kinds.end(), {0, 2, 3, 9});
  bool has_valid = false;
  for (int32_t x : s.slot_mapping) has_valid |= x >= 0;
  if (n >= 2 && has_valid) kinds.push_back(1);
  if (s.cache.num_slots() > slot_bitmap_max_slots(0) && n > 0) {  // a slot space at the bitmap's limit: its path's faults
    kinds.insert(kinds.end(), {0, 0});
    if (n >= 2 && has_valid) kinds.insert(kinds.end(), {1, 1, 1, 1});
  }
  if (fp8 || is_nvfp4(s.cache.dtype)) kinds.insert(kinds.end(), {4, 5, 10});
  if (fp8 && generator_caps().recipe_aware) kinds.push_back(11);  // a plugin without a contract: reserved0 = 0
  if (is_nvfp4(s.cache.dtype)) kinds.insert(kinds.end(), {12, 12, 12, 13});  // scale-cache faults weighted 3
  if (s.cache.num_kv_heads > 1) kinds.push_back(8);
  switch (src.pick(std::span<const int>(kinds))) {
    case 0: {
      const auto row = static_cast<size_t>(src.range(0, n - 1));
      const int32_t bad = src.pick<int32_t>({-2, INT32_MIN, INT32_MAX, static_cast<int32_t>(s.cache.num_slots()), -1000});
      s.slot_mapping[row] = bad;
      s.fault = fmt::format("slot_mapping[{}] = {}", row, bad);
      s.code = ErrorCode::kSlotOutOfRange;
      return;
    }
    case 1: {
      size_t from = 0;
      while (s.slot_mapping[from] < 0) ++from;
      size_t dst = static_cast<size_t>(src.range(0, n - 2));
      if (dst >= from) ++dst;
      s.slot_mapping[dst] = s.slot_mapping[from];
      s.fault = fmt::format("rows {} and {} both store slot {}", from, dst, s.slot_mapping[from]);
      s.code = ErrorCode::kDuplicateSlot;
      return;
    }
    case 2:
      (src.coin() ? s.key : s.value).rows = n - 1;
      s.fault = "key or value holds one row fewer than slot_mapping";
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 3:
      s.value.data.clear();
      s.fault = "value data is null";
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 4: {
      auto& v = src.coin() ? s.cache.k_scale : s.cache.v_scale;
      const float bad = src.pick<float>({0.0f, -1.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(),
                                         std::numeric_limits<float>::infinity()});
      v[static_cast<size_t>(src.range(0, static_cast<int64_t>(v.size()) - 1))] = bad;
      s.fault = fmt::format("a scale is {}", bad);
      s.code = ErrorCode::kInvalidArgument;
      return;
    }
    case 5:
      s.cache.v_scale.push_back(1.0f);
      s.fault = "v_scale has one float too many";
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 6: {
      // Either side (SPEC §7.4 checks key, then value): an FP8 dtype, or for a 2-byte
      // cache the other 2-byte dtype (a kernel copying bits would take it silently).
      KvRows& rows = src.coin() ? s.key : s.value;
      rows.dtype = src.pick({KvDtype::kE4M3, KvDtype::kE5M2});
      if (!is_quantized_kv(s.cache.dtype) && src.coin())
        rows.dtype = s.cache.dtype == KvDtype::kBF16 ? KvDtype::kFP16 : KvDtype::kBF16;
      s.fault = std::string(&rows == &s.key ? "key" : "value") + " dtype " + to_string(rows.dtype) +
                " does not go with the cache";
      s.code = ErrorCode::kInvalidArgument;
      return;
    }
    case 7:
      s.cache.capacity_cut = src.range(1, 2);
      s.fault = "k_cache's buffer ends before the view does";
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 10:
      s.value.dtype = s.key.dtype == KvDtype::kBF16 ? KvDtype::kFP16 : KvDtype::kBF16;
      s.fault = "key is " + to_string(s.key.dtype) + " but value is " + to_string(s.value.dtype);
      s.code = ErrorCode::kInvalidArgument;
      return;
    case 11: {
      // A recipe value no engine has (SPEC §7.3.1): only a plugin call can carry one.
      const int32_t bad = src.pick<int32_t>({kNumKvRecipes, -1, 1 << 30});
      s.cache.recipe = static_cast<KvRecipe>(bad);
      s.fault = fmt::format("recipe {}", bad);
      s.code = ErrorCode::kInvalidArgument;
      return;
    }
    case 12:  // an e2m1 cache's scale caches (SPEC §7.9)
      inject_sf_fault(src, s.cache, s.fault, s.code);
      return;
    case 13:  // an e2m1 cache takes one global scale per side
      s.cache.scale_kind = KvScaleKind::kPerHead;
      s.cache.k_scale.assign(static_cast<size_t>(s.cache.num_kv_heads), s.cache.k_scale[0]);
      s.cache.v_scale.assign(static_cast<size_t>(s.cache.num_kv_heads), s.cache.v_scale[0]);
      s.fault = "per-head scales on an e2m1 cache";
      s.code = ErrorCode::kInvalidArgument;
      return;
    case 8:
      s.cache.pad_head = -1;  // stride_head = D - 1 (NHD) / heads overlap by a token (HND)
      if (s.cache.order == KvHeadLayout::kHND) s.cache.pad_head = -s.cache.head_dim - s.cache.pad_token;
      s.fault = "heads overlap (stride_head too small)";
      s.code = ErrorCode::kInvalidArgument;
      return;
    default:
      s.key.head_stride = -1;
      s.fault = "key head_stride = -1";
      s.code = ErrorCode::kInvalidArgument;
      return;
  }
}

namespace {

void inject_gather_fault(Source& src, GatherKvScenario& s, bool starts_only) {
  const int64_t num_seqs = static_cast<int64_t>(s.cu_seqlens_k.size()) - 1;
  const int64_t total = s.cu_seqlens_k.back();
  std::vector<int> kinds;
  std::vector<int64_t> busy;  // sequences with tokens
  for (int64_t i = 0; i < num_seqs; ++i)
    if (s.cu_seqlens_k[static_cast<size_t>(i + 1)] > s.cu_seqlens_k[static_cast<size_t>(i)]) busy.push_back(i);
  if (!starts_only) {
    kinds = {2, 3, 4, 6};
    if (!busy.empty()) kinds.insert(kinds.end(), {0, 1, 5});
    if (is_quantized_kv(s.cache.dtype)) kinds.insert(kinds.end(), {7, 9});
    if (is_nvfp4(s.cache.dtype)) kinds.insert(kinds.end(), 3, 13);
    if (total > 1) kinds.push_back(8);
  }
  if (!s.seq_starts.empty()) kinds.insert(kinds.end(), {10, 12});
  if (!s.seq_starts.empty() && !busy.empty()) kinds.push_back(11);
  if (kinds.empty()) throw std::logic_error("a seq_starts fault needs a scenario with seq_starts");
  switch (src.pick(std::span<const int>(kinds))) {
    case 10: {
      const auto i = static_cast<size_t>(src.range(0, num_seqs - 1));
      s.seq_starts[i] = src.pick<int32_t>({-1, -s.cache.block_size, INT32_MIN});
      s.fault = fmt::format("seq_starts[{}] = {}", i, s.seq_starts[i]);
      s.code = ErrorCode::kInvalidArgument;
      return;
    }
    case 11: {
      // vLLM #27909: an offset into the row with no bound. The smallest start (in the
      // scenario's unit) whose tokens pass the row, or far past it.
      const int64_t i = src.pick(std::span<const int64_t>(busy));
      const int64_t len = s.cu_seqlens_k[static_cast<size_t>(i + 1)] - s.cu_seqlens_k[static_cast<size_t>(i)];
      const int64_t bs = s.cache.block_size, row = int64_t{s.max_blocks} * bs;
      const int64_t first = s.seq_start_unit == SeqStartUnit::kBlock ? ((row - len) / bs + 1) * bs : row - len + 1;
      const int64_t raw = src.coin() ? first + src.range(0, bs - 1) : INT32_MAX;
      s.seq_starts[static_cast<size_t>(i)] = static_cast<int32_t>(raw);
      s.fault = fmt::format("seq_starts[{}] = {}: sequence {}'s {} tokens pass its row of {} positions", i, raw, i,
                            len, row);
      s.code = ErrorCode::kRangeOutOfTable;
      return;
    }
    case 12:
      if (src.coin() || s.seq_starts.size() == 1) s.seq_starts.push_back(0);
      else s.seq_starts.pop_back();
      s.fault = fmt::format("seq_starts has {} entries for {} sequences", s.seq_starts.size(), num_seqs);
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 0:
    case 1: {
      const int64_t i = src.pick(std::span<const int64_t>(busy));
      const int64_t len = s.cu_seqlens_k[static_cast<size_t>(i + 1)] - s.cu_seqlens_k[static_cast<size_t>(i)];
      // A column the sequence's tokens use: from its start's column on (SPEC §7.5).
      const int64_t bs = s.cache.block_size;
      int64_t start = s.seq_starts.empty() ? 0 : s.seq_starts[static_cast<size_t>(i)];
      if (s.seq_start_unit == SeqStartUnit::kBlock) start -= start % bs;
      const int64_t j = src.range(start / bs, (start + len + bs - 1) / bs - 1);
      int32_t& entry = s.block_table[static_cast<size_t>(i * s.max_blocks + j)];
      const bool minus_one = src.coin();
      entry = minus_one ? -1 : src.pick<int32_t>({s.cache.num_blocks, INT32_MAX, -2, INT32_MIN});
      s.fault = fmt::format("block_table[{}][{}] = {} is needed", i, j, entry);
      s.code = minus_one ? ErrorCode::kRangeOutOfTable : ErrorCode::kBlockOutOfRange;
      return;
    }
    case 2:
      if (num_seqs == 0) {
        s.cu_seqlens_k[0] = 1;
        s.fault = "cu_seqlens_k[0] = 1";
      } else {
        const auto i = static_cast<size_t>(src.range(0, num_seqs - 1));
        s.cu_seqlens_k[i + 1] = s.cu_seqlens_k[i] - 1;
        s.fault = fmt::format("cu_seqlens_k[{}] decreases", i + 1);
      }
      s.code = ErrorCode::kInvalidArgument;
      return;
    case 3:
      s.cu_seqlens_k.clear();
      s.fault = "cu_seqlens_k is empty";
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 4:
      s.block_table.push_back(0);
      s.fault = "block_table has one entry too many";
      s.code = ErrorCode::kShapeMismatch;
      return;
    case 5: {
      // Both outputs, or one alone (the other keeps its rows).
      const int64_t side = src.range(0, 2);  // 0 both, 1 out_k, 2 out_v
      if (side == 1) s.out_v_rows = s.out_rows;
      if (side == 2) s.out_v_rows = total - 1;
      else s.out_rows = total - 1;
      s.fault = std::string(side == 0 ? "out" : side == 1 ? "out_k" : "out_v") + " rows < cu_seqlens_k[b]";
      s.code = ErrorCode::kShapeMismatch;
      return;
    }
    case 6: {
      // Either output: an FP8 dtype, or for a 2-byte cache the other 2-byte dtype.
      const bool k = src.coin();
      KvDtype& d = k ? s.out_k_dtype : s.out_v_dtype;
      d = src.pick({KvDtype::kE4M3, KvDtype::kE5M2});
      if (!is_quantized_kv(s.cache.dtype) && src.coin())
        d = s.cache.dtype == KvDtype::kBF16 ? KvDtype::kFP16 : KvDtype::kBF16;
      s.fault = std::string(k ? "out_k" : "out_v") + " dtype " + to_string(d);
      s.code = ErrorCode::kInvalidArgument;
      return;
    }
    case 9:
      s.out_v_dtype = s.out_k_dtype == KvDtype::kBF16 ? KvDtype::kFP16 : KvDtype::kBF16;
      s.fault = "out_k is " + to_string(s.out_k_dtype) + " but out_v is " + to_string(s.out_v_dtype);
      s.code = ErrorCode::kInvalidArgument;
      return;
    case 13:  // an e2m1 cache's scale caches (SPEC §7.9)
      inject_sf_fault(src, s.cache, s.fault, s.code);
      return;
    case 7:
      s.cache.v_scale[0] = src.pick<float>({0.0f, -2.0f, std::numeric_limits<float>::quiet_NaN(),
                                            -std::numeric_limits<float>::infinity()});
      s.fault = fmt::format("v_scale[0] = {}", s.cache.v_scale[0]);
      s.code = ErrorCode::kInvalidArgument;
      return;
    default: {
      // token_stride 0 on both outputs, or on one alone.
      const int64_t side = src.range(0, 2);  // 0 both, 1 out_k, 2 out_v
      const int32_t zero = -(s.cache.num_kv_heads * (s.cache.head_dim + s.out_pad_head));
      if (side == 1) s.out_v_pad_token = s.out_pad_token;
      if (side == 2) s.out_v_pad_token = zero;
      else s.out_pad_token = zero;
      s.fault = std::string(side == 0 ? "output" : side == 1 ? "out_k" : "out_v") + " rows overlap (token_stride 0)";
      s.code = ErrorCode::kInvalidArgument;
      return;
    }
  }
}

}  // namespace

void inject_gather_kv_fault(Source& src, GatherKvScenario& s) { inject_gather_fault(src, s, false); }
void inject_gather_kv_seq_starts_fault(Source& src, GatherKvScenario& s) { inject_gather_fault(src, s, true); }

void raw_store_kv(Source& src, StoreKvScenario& s) {
  s.slot_mapping = raw_slot_mapping(src, s.cache.num_slots(), static_cast<int64_t>(s.slot_mapping.size()));
  s.fault = "raw slot_mapping";
  if (is_quantized_kv(s.cache.dtype) && src.coin()) {
    // Raw bits: zero, negative, subnormal, huge, NaN and Inf scales alike.
    auto& v = src.coin() ? s.cache.k_scale : s.cache.v_scale;
    v[static_cast<size_t>(src.range(0, static_cast<int64_t>(v.size()) - 1))] = std::bit_cast<float>(src.seed());
    s.fault += " and a raw scale";
  }
  s.code.reset();
}

void raw_gather_kv(Source& src, GatherKvScenario& s) {
  // SPEC §6's awkward entries anywhere in the table, and sometimes a cu_seqlens_k entry
  // moved: several errors at once, so the smallest-index rule of SPEC §5.2 is exercised.
  const int32_t awkward[] = {-2, INT32_MIN, INT32_MAX, s.cache.num_blocks, -1, -7, 0};
  for (int32_t& e : s.block_table)
    if (src.one_in(4)) e = src.pick(std::span<const int32_t>(awkward));
  if (s.cu_seqlens_k.size() > 1 && src.one_in(4))
    s.cu_seqlens_k[static_cast<size_t>(src.range(0, static_cast<int64_t>(s.cu_seqlens_k.size()) - 1))] +=
        static_cast<int32_t>(src.range(-3, 3));
  // seq_starts near the row's end and past it, negative and extreme.
  const int32_t row = s.max_blocks * s.cache.block_size;
  const int32_t starts[] = {-1, INT32_MIN, INT32_MAX, row, row - 1, s.cache.block_size, 0};
  for (int32_t& e : s.seq_starts)
    if (src.one_in(3)) e = src.pick(std::span<const int32_t>(starts));
  s.fault = "raw block_table";
  s.code.reset();
}

}  // namespace kvcheck::props
