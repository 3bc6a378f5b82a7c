// The fault injectors and raw values of store/load (SPEC §5.1, §5.2): one broken rule
// per case with the code it must raise, shared by the fault properties and the fuzz
// decoders; raw segments for the fuzz decoders (several errors, the reference decides).
#include <algorithm>
#include <climits>
#include <string>

#include "impl/slot_mapping.h"
#include "properties/gen/ops/store_load/store_load_gen.h"

namespace kvcheck::props {

void inject_block_stride_fault(Source& src, CacheShape& shape, std::string& fault) {
  const int64_t packed = block_stride_for(shape.format, shape.block_size);
  const int64_t stride = shape.block_stride != 0 ? shape.block_stride : packed;
  // Below the packed stride (a record of the block would overlap the next block), off
  // the 32-byte grid, zero or negative (SPEC §3).
  shape.block_stride = src.pick<int64_t>({packed - 32, stride + 16, stride - 1, -packed, packed / 2});
  if (shape.block_stride == 0) shape.block_stride = -32;
  fault = "block_stride " + std::to_string(shape.block_stride) + " (packed " + std::to_string(packed) + ")";
}

namespace {

bool has_valid_slot(const StoreScenario& s) {
  return std::any_of(s.slot_mapping.begin(), s.slot_mapping.end(), [](int32_t x) { return x >= 0; });
}

// One fault of inject_store_fault's kinds (0 slot range, 1 kv short, 2 kv stride, 3
// duplicate slot, 4 block stride).
void apply_store_fault(Source& src, StoreFaultScenario& c, int kind) {
  StoreScenario& s = c.scenario;
  const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  switch (kind) {
    case 4:
      inject_block_stride_fault(src, s.shape, c.fault);
      c.code = ErrorCode::kInvalidArgument;
      return;
    case 0: {  // an out-of-range slot: awkward values of SPEC §6
      if (n == 0) {
        s.slot_mapping.push_back(-1);
        s.kv.resize(s.kv.size() + static_cast<size_t>(s.row_stride), 0);
      }
      const int64_t row = src.range(0, static_cast<int64_t>(s.slot_mapping.size()) - 1);
      const int32_t bad = src.pick<int32_t>({-2, INT32_MIN, INT32_MAX, static_cast<int32_t>(num_slots),
                                             static_cast<int32_t>(num_slots + 7), -1000});
      s.slot_mapping[static_cast<size_t>(row)] = bad;
      c.fault = "slot_mapping[" + std::to_string(row) + "] = " + std::to_string(bad);
      c.code = ErrorCode::kSlotOutOfRange;
      return;
    }
    case 1:  // kv holds fewer rows than slot_mapping: the count comes from slot_mapping
      s.kv.resize(static_cast<size_t>(n * s.row_stride));  // CUDA-graph rows gone
      s.slot_tail.clear();
      s.slot_mapping.push_back(-1);
      c.fault = "kv has one row fewer than slot_mapping";
      c.code = ErrorCode::kShapeMismatch;
      return;
    case 2:
      s.row_stride = s.shape.format.elements - 1;
      s.kv.resize(static_cast<size_t>(n * s.row_stride));
      s.far_row_stride = 0;  // the op sees row_stride itself
      c.fault = "kv row stride smaller than E";
      c.code = ErrorCode::kInvalidArgument;
      return;
    default: {
      size_t from = 0;
      while (s.slot_mapping[from] < 0) ++from;
      size_t to = static_cast<size_t>(src.range(0, n - 2));
      if (to >= from) ++to;
      s.slot_mapping[to] = s.slot_mapping[from];
      c.fault = "rows " + std::to_string(from) + " and " + std::to_string(to) + " both store slot " +
                std::to_string(s.slot_mapping[from]);
      c.code = ErrorCode::kDuplicateSlot;
      return;
    }
  }
}

}  // namespace

void inject_store_fault(Source& src, StoreFaultScenario& c) {
  const StoreScenario& s = c.scenario;
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  std::vector<int> kinds{0, 1};
  if (n > 0 && s.shape.format.elements >= 2) kinds.push_back(2);  // row_stride E - 1 >= 1 (0 rows otherwise)
  if (n >= 2 && has_valid_slot(s)) kinds.push_back(3);
  kinds.push_back(4);
  if (int64_t{s.shape.num_blocks} * s.shape.block_size > slot_bitmap_max_slots(0)) {
    // A slot space drawn at validate_slot_mapping's bitmap limit: that path's faults.
    kinds.insert(kinds.end(), {0, 0});
    if (n >= 2 && has_valid_slot(s)) kinds.insert(kinds.end(), {3, 3, 3, 3});
  }
  apply_store_fault(src, c, src.pick(std::span<const int>(kinds)));
}

void inject_concat_rope_fault(Source& src, StoreFaultScenario& c) {
  StoreScenario& s = c.scenario;
  ScenarioRope& r = *s.rope;
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  const size_t kind = src.weighted({2, 5, n >= 2 ? 1 : 0});
  if (kind == 1) {  // a RoPE rule (docs/spec.md §8.4), the rest valid
    inject_rope_fault(src, r, s.rope_dim, n, c.fault, c.code);
    return;
  }
  if (kind == 2) {  // a bad slot on row 0, a bad position on the last: the position's error
    inject_position_before_slot(r, s.slot_mapping, int64_t{s.shape.num_blocks} * s.shape.block_size, c.fault, c.code);
    return;
  }
  inject_concat_fault(src, c);  // a rule of §8.2 or the store, the RoPE valid
  fit_positions(r, n, s.slot_mapping.size());
}

void inject_concat_fault(Source& src, StoreFaultScenario& c) {
  StoreScenario& s = c.scenario;
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  // 0, 3, 4: the store's slot and stride rules; 1: kv_c (the kv rows) one row short;
  // 10-14 the rules of docs/spec.md §8.2.
  std::vector<int> kinds{0, 1, 4, 10, 11, 12};
  if (n >= 2 && has_valid_slot(s)) kinds.push_back(3);
  if (n > 0) kinds.push_back(13);
  if (n > 0 && s.rope_dim >= 2) kinds.push_back(14);  // a stride of 0 would read as "k_pe a view
  if (n > 0 && s.kv_lora_rank >= 2) kinds.push_back(15);
  // Split caches: 16 pe_cache's geometry, 17 its block stride, 18 pe_cache inside the
  // cache's buffer (when it fits there).
  int64_t cache_bytes = 0, pe_bytes = 0;
  if (s.pe_shape) {
    kinds.insert(kinds.end(), {16, 17});
    const auto bytes = [](const CacheShape& sh) {
      return (int64_t{sh.num_blocks} - 1) * shape_block_stride(sh) + block_stride_for(sh.format, sh.block_size);
    };
    cache_bytes = bytes(s.shape);
    pe_bytes = bytes(*s.pe_shape);
    if (n > 0 && pe_bytes <= cache_bytes) kinds.push_back(18);
  }
  const int kind = src.pick(std::span<const int>(kinds));
  if (kind < 10) {
    apply_store_fault(src, c, kind);
    if (kind == 1)  // kv_c is checked first, so it is the one blamed
      c.fault = s.pe_row_stride == 0 ? "kv_c (and its k_pe view) has one row fewer than slot_mapping"
                                     : "kv_c and k_pe have one row fewer than slot_mapping";
    return;
  }
  const auto own_pe = [&] {  // k_pe as a buffer of its own (so it can differ from kv_c)
    if (s.pe_row_stride == 0) s.pe_row_stride = s.rope_dim;
  };
  switch (kind) {
    case 10:
      c.fault = "kv_lora_rank = 0";
      s.kv_lora_rank = 0;
      c.code = ErrorCode::kInvalidArgument;
      return;
    case 11:
      c.fault = "rope_dim = 0";
      s.rope_dim = 0;
      if (!s.pe_shape) s.kv_lora_rank = s.shape.format.elements;
      c.code = ErrorCode::kInvalidArgument;
      return;
    case 12: {
      if (s.pe_shape) {  // one width one off its cache's E, the other still at least 1
        const bool rope = s.kv_lora_rank == 1 || src.coin();
        int32_t& w = rope ? s.rope_dim : s.kv_lora_rank;
        w += w == 1 || src.coin() ? 1 : -1;
        c.fault = std::string(rope ? "rope_dim = " : "kv_lora_rank = ") + std::to_string(w) + " but " +
                  (rope ? "pe_cache's E is " + std::to_string(s.pe_shape->format.elements)
                        : "the cache's E is " + std::to_string(s.shape.format.elements));
        c.code = ErrorCode::kShapeMismatch;
        return;
      }
      const int32_t d = src.coin() ? 1 : -1;
      if (d < 0 && s.rope_dim == 1) ++s.kv_lora_rank;  // rope_dim stays >= 1: the sum is what is wrong
      else s.rope_dim += d;
      c.fault = "kv_lora_rank + rope_dim = " + std::to_string(s.kv_lora_rank + s.rope_dim) + " != E";
      c.code = ErrorCode::kShapeMismatch;
      return;
    }
    case 13:
      own_pe();
      s.pe_rows = n - 1;
      c.fault = "k_pe has one row fewer than slot_mapping";
      c.code = ErrorCode::kShapeMismatch;
      return;
    case 14:
      own_pe();
      s.pe_row_stride = s.rope_dim - 1;
      c.fault = "k_pe row stride " + std::to_string(s.pe_row_stride) + " < rope_dim " + std::to_string(s.rope_dim);
      c.code = ErrorCode::kInvalidArgument;
      return;
    case 16: {
      CacheShape& pe = *s.pe_shape;
      if (src.coin()) {
        ++pe.num_blocks;
      } else {
        ++pe.block_size;
        pe.block_stride = 0;  // packed: a stride of the old block size may be too small now
      }
      c.fault = "pe_cache has " + std::to_string(pe.num_blocks) + " blocks of " + std::to_string(pe.block_size) +
                " tokens, the cache " + std::to_string(s.shape.num_blocks) + " of " +
                std::to_string(s.shape.block_size);
      c.code = ErrorCode::kShapeMismatch;
      return;
    }
    case 17:
      inject_block_stride_fault(src, *s.pe_shape, c.fault);
      c.fault = "pe_cache " + c.fault;
      c.code = ErrorCode::kInvalidArgument;
      return;
    case 18:
      s.pe_inside_cache = src.pick<int64_t>({0, cache_bytes - pe_bytes, (cache_bytes - pe_bytes) / 2});
      c.fault = "pe_cache starts " + std::to_string(s.pe_inside_cache) + " bytes into the cache's buffer";
      c.code = ErrorCode::kInvalidArgument;
      return;
    default: {  // kv_c's stride below kv_lora_rank: the kv rows re-laid at that stride
      own_pe();
      const int64_t stride = s.kv_lora_rank - 1;
      std::vector<bf16_bits> kv(static_cast<size_t>(s.kv_rows() * stride));
      for (int64_t r = 0; r < s.kv_rows(); ++r)
        std::copy_n(s.kv.begin() + r * s.row_stride, stride, kv.begin() + r * stride);
      c.fault = "kv_c row stride " + std::to_string(stride) + " < kv_lora_rank " + std::to_string(s.kv_lora_rank);
      s.kv = std::move(kv);
      s.row_stride = stride;
      s.slot_tail.clear();
      c.code = ErrorCode::kInvalidArgument;
      return;
    }
  }
}

void inject_load_fault(Source& src, LoadFaultScenario& c) {
  LoadScenario& s = c.scenario;
  auto& segs = s.load_segments;
  const int32_t bs = s.shape.block_size;
  const size_t num_segments = segs.size() / 4;
  std::vector<int> kinds{0, 1, 2};
  if (num_segments > 0) kinds.insert(kinds.end(), {3, 4, 5, 6});
  bool has_nonempty = false;
  for (size_t i = 0; i < num_segments; ++i) has_nonempty |= segs[4 * i + 2] > segs[4 * i + 1];
  if (has_nonempty) kinds.insert(kinds.end(), {7, 8});
  if (s.total_k > 0) kinds.push_back(9);
  if (s.total_k > 0 && s.shape.format.is_index() && s.shape.format.load_scale_row_bytes() > 0) kinds.push_back(10);
  kinds.push_back(11);
  const int kind = src.pick(std::span<const int>(kinds));
  if (kind == 11) {
    inject_block_stride_fault(src, s.shape, c.fault);
    c.code = ErrorCode::kInvalidArgument;
    return;
  }
  const size_t seg = num_segments ? static_cast<size_t>(src.range(0, static_cast<int64_t>(num_segments) - 1)) : 0;
  int32_t* g = num_segments ? &segs[4 * seg] : nullptr;
  // Range faults may lengthen a segment: grow total_k so only the intended check fires.
  auto grow = [&] {
    s.total_k += 2 * bs + 2;
    s.out_rows += 2 * bs + 2;
  };
  auto nonempty = [&] {
    size_t k = seg;
    while (segs[4 * k + 2] == segs[4 * k + 1]) k = (k + 1) % num_segments;
    return k;
  };
  const std::string at = "load_segments[" + std::to_string(seg) + "]";
  switch (kind) {
    case 0:
      s.total_k = -1;
      c.fault = "total_k = -1", c.code = ErrorCode::kInvalidArgument;
      return;
    case 1:
      segs.push_back(0);
      c.fault = "load_segments size is not a multiple of 4", c.code = ErrorCode::kInvalidArgument;
      return;
    case 2:
      s.total_k += 1;
      s.out_rows = s.total_k - 1;
      c.fault = "output holds total_k - 1 rows", c.code = ErrorCode::kShapeMismatch;
      return;
    case 3:
      g[0] = src.pick<int32_t>({-2, INT32_MIN, INT32_MAX, s.shape.num_blocks});
      c.fault = at + " src_block_id = " + std::to_string(g[0]), c.code = ErrorCode::kSegmentBlockOutOfRange;
      return;
    case 4:
      grow();
      g[2] = bs + 1;
      c.fault = at + " src_end = block_size + 1", c.code = ErrorCode::kSegmentRangeInvalid;
      return;
    case 5:
      g[1] = g[2] + 1;
      c.fault = at + " src_begin > src_end", c.code = ErrorCode::kSegmentRangeInvalid;
      return;
    case 6:
      grow();
      g[1] = src.pick<int32_t>({-1, INT32_MIN});
      c.fault = at + " src_begin = " + std::to_string(g[1]), c.code = ErrorCode::kSegmentRangeInvalid;
      return;
    case 7: {
      int32_t* h = &segs[4 * nonempty()];
      h[3] = src.pick<int32_t>({-1, INT32_MIN, INT32_MAX, s.total_k - (h[2] - h[1]) + 1});
      c.fault = "load_segments[" + std::to_string((h - segs.data()) / 4) + "] dst_offset = " + std::to_string(h[3]) +
                " (total_k " + std::to_string(s.total_k) + ")";
      c.code = ErrorCode::kSegmentDestinationOutOfRange;
      return;
    }
    case 8: {
      const size_t k = nonempty();
      const std::vector<int32_t> copy(segs.begin() + static_cast<std::ptrdiff_t>(4 * k),
                                      segs.begin() + static_cast<std::ptrdiff_t>(4 * k + 4));
      segs.insert(segs.end(), copy.begin(), copy.end());
      c.fault = "load_segments[" + std::to_string(k) + "] repeated at the end (same destination rows)";
      c.code = ErrorCode::kSegmentOverlap;
      return;
    }
    case 9:
      s.out_data_pad = -1;
      c.fault = "output data row stride = load_row_bytes - 1", c.code = ErrorCode::kShapeMismatch;
      return;
    default:
      s.out_scale_pad = -1;
      c.fault = "output scale row stride = load_scale_row_bytes - 1", c.code = ErrorCode::kShapeMismatch;
      return;
  }
}

std::vector<int32_t> raw_load_segments(Source& src, const CacheShape& shape, int32_t total_k) {
  std::vector<int32_t> v;
  const int64_t count = src.count(0, 8, 8);
  auto field = [&](int64_t lo, int64_t hi) {
    return src.one_in(8) ? src.pick<int32_t>({-2, INT32_MIN, INT32_MAX}) : static_cast<int32_t>(src.range(lo, hi));
  };
  for (int64_t i = 0; i < count; ++i) {
    v.push_back(field(-1, shape.num_blocks));
    v.push_back(field(-1, shape.block_size + 1));
    v.push_back(field(-1, shape.block_size + 1));
    v.push_back(field(-1, std::max(total_k, 0)));
  }
  if (src.one_in(4))  // stray int32: not S*4
    for (int64_t i = src.range(1, 3); i > 0; --i) v.push_back(field(-1, shape.block_size));
  return v;
}

}  // namespace kvcheck::props
