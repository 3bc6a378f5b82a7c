#include "properties/gen/ops/store_load/store_load_gen.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <limits>
#include <string>

#include "impl/layout.h"
#include "impl/slot_mapping.h"
#include "properties/gen/choices.h"
#include "properties/gen/gen_caps.h"

namespace kvcheck::props {
namespace {

template <class T>
void shuffle_with(SplitMix64& rng, std::vector<T>& v) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.next() % i]);
}

// Output rows a load may have so its buffers stay under kMaxLoadOutBytes.
int64_t max_load_rows(const KVCacheFormat& f) {
  return std::max<int64_t>(1, kMaxLoadOutBytes / (f.load_row_bytes() + f.load_scale_row_bytes() + 80));
}

// A row stride past 2^30 elements for rows placed in a sparse buffer (row offsets pass
// 2^31 elements), 1 case in 11; 0 where the engine draws no multi-GiB inputs.
int64_t choose_far_row_stride(Source& src) {
  if (!src.huge_inputs() || src.weighted({10, 1}) == 0) return 0;
  return src.pick<int64_t>({(int64_t{1} << 30) + 1, (int64_t{1} << 30) + 8, (int64_t{3} << 29) + 3,
                            (int64_t{1} << 31) - 5, (int64_t{1} << 31) + 7});
}

}  // namespace

// Size-independent: a 2-row case on 2 threads is the edge.
int32_t choose_threads(Source& src) { return src.pick_weighted<int32_t>({{2, 0}, {1, 1}, {3, 2}, {2, 3}, {2, 4}}); }

CacheShape build_cache_shape(Source& src) { return build_cache_shape(src, choose_format(src)); }

CacheShape build_cache_shape(Source& src, const KVCacheFormat& format) {
  CacheShape s;
  s.format = format;
  s.block_size = choose_block_size(src);
  // One case's cache stays under kMaxCacheBytes: fewer blocks, or a smaller block.
  while (s.block_size > 1 && block_stride_for(s.format, s.block_size) > kMaxCacheBytes)
    s.block_size = fit_block_size(s.block_size / 2);
  const int64_t stride = block_stride_for(s.format, s.block_size);
  const int64_t max_blocks = std::clamp<int64_t>(kMaxCacheBytes / stride, 1, 6);
  s.num_blocks = static_cast<int32_t>(src.count(1, max_blocks, 8 + stride / 512));  // big blocks cost more input
  s.fill_seed = src.seed();
  // 1 in 4: other layers' blocks between this layer's (2-3 layers) and/or padding,
  // the block stride != block size x record class (vLLM #54465); fewer blocks if needed.
  if ((generator_caps().ops & KVCHECK_OP_ANY_BLOCK_STRIDE) && src.weighted({3, 1}) == 1) {
    s.block_stride = src.range(1, 3) * stride + 32 * src.pick<int64_t>({0, 1, 3});
    if (s.block_stride == stride) s.block_stride += 32;
    while (s.num_blocks > 1 && (s.num_blocks - 1) * s.block_stride + stride > kMaxCacheBytes) --s.num_blocks;
  }
  return s;
}

int64_t shape_block_stride(const CacheShape& s) {
  return s.block_stride != 0 ? s.block_stride : block_stride_for(s.format, s.block_size);
}

StoreScenario build_store_scenario(Source& src, const CacheShape& shape, bool far_rows, bool slot_space_edges) {
  StoreScenario s;
  s.shape = shape;
  const int64_t e = shape.format.elements;
  const int64_t row_cap = e >= 512 ? 40 : 96;
  const SlotSpaceEdge edge = slot_space_edges ? draw_slot_space_edge(src) : SlotSpaceEdge{};
  const bool edges = edge.want && shape_block_stride(shape) * slot_threshold_blocks(row_cap, shape.block_size, true) <=
                                       kMaxEdgeCacheBytes;
  s.far_row_stride = far_rows ? choose_far_row_stride(src) : 0;
  int64_t max_rows =
      std::min<int64_t>((edges ? slot_bitmap_max_slots(0) : int64_t{shape.num_blocks} * shape.block_size) + 4, row_cap);
  if (s.far_row_stride > 0) max_rows = std::min<int64_t>(max_rows, 6);  // a few rows, far apart
  // Empty batches are rare (they write nothing); small ones are drawn at every size.
  const int64_t row_cost = 2 + e / 32;
  int64_t n = 0;
  switch (src.weighted({1, 29, 10})) {
    case 0: break;
    case 1: n = src.count(1, max_rows, row_cost); break;
    default: n = src.count(1, std::min<int64_t>(max_rows, 8), row_cost); break;
  }
  if (s.far_row_stride > 0) n = std::max(n, std::min<int64_t>(max_rows, 3));  // rows 2+ lie past 2^31 elements
  if (edges) s.shape.num_blocks = static_cast<int32_t>(slot_threshold_blocks(n, shape.block_size, edge.past));
  const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
  s.slot_mapping = choose_slot_mapping(src, s.shape.num_blocks, s.shape.block_size, n, max_rows);
  // CUDA-graph padding: kv holds more rows than slot_mapping, and slot_mapping's buffer
  // goes on with real, unused slots; a kernel counting kv rows stores them.
  const int extra = src.pick_weighted<int>({{3, 0}, {1, 1}, {1, 3}});
  if (extra > 0 && num_slots > 0) {
    std::vector<bool> used(static_cast<size_t>(num_slots), false);
    for (int32_t slot : s.slot_mapping)
      if (slot >= 0) used[static_cast<size_t>(slot)] = true;
    int64_t slot = src.range(0, num_slots - 1);
    for (int i = 0; i < extra; ++i) {
      int64_t tries = 0;
      while (tries < num_slots && used[static_cast<size_t>(slot)]) slot = (slot + 1) % num_slots, ++tries;
      s.slot_tail.push_back(tries < num_slots ? static_cast<int32_t>(slot) : -1);
      if (tries < num_slots) used[static_cast<size_t>(slot)] = true;
    }
  }
  s.row_stride = e + src.pick<int64_t>({0, 0, 8, 3, 17});
  ValueMix mix = choose_value_mix(src);
  if (s.far_row_stride > 0) mix.zero_group_pct = 0;  // far rows must differ from the zeros around them
  s.kv = make_bf16_rows(mix, n + extra, s.row_stride, e, shape.format.is_quantized() ? shape.format.elements_per_sf : 8);
  s.threads = choose_threads(src);
  return s;
}

LoadScenario build_load_scenario(Source& src, const CacheShape& shape) {
  LoadScenario s;
  s.shape = shape;
  const int32_t bs = shape.block_size;
  const int64_t max_rows = max_load_rows(shape.format);
  std::vector<LoadSegment> segs;
  if (src.weighted({5, 1}) == 0) {  // a plan: gaps, zero fill, whole blocks, shuffled
    // Plans without segments load nothing: 1 in 25. Small plans at every size.
    const int64_t seg_cost = 3 + bs * shape.format.load_row_bytes() / 512;
    int64_t num_segments = 0;
    switch (src.weighted({1, 14, 10})) {
      case 0: break;
      case 1: num_segments = src.count(1, 12, seg_cost); break;
      default: num_segments = src.count(1, 4, seg_cost); break;
    }
    const int zero_fill_pct = static_cast<int>(src.range(0, 39));
    const int gap_pct = static_cast<int>(src.range(0, 49));
    SplitMix64 rng{src.seed()};
    int32_t dst = 0;
    for (int64_t i = 0; i < num_segments; ++i) {
      if (static_cast<int>(rng.next() % 100) < gap_pct) dst += static_cast<int32_t>(rng.next() % 4);
      const bool zero = static_cast<int>(rng.next() % 100) < zero_fill_pct;
      int32_t a = static_cast<int32_t>(rng.next() % (bs + 1)), b = static_cast<int32_t>(rng.next() % (bs + 1));
      if (a > b) std::swap(a, b);
      if (rng.next() % 4 == 0) a = 0, b = bs;  // whole blocks are the common case
      if (i == 0 && a == b) {  // the first segment is never empty
        if (b < bs) ++b;
        else --a;
      }
      if (i > 0 && dst + (b - a) > max_rows) break;
      const int32_t block = zero ? -1 : static_cast<int32_t>(rng.next() % static_cast<uint64_t>(shape.num_blocks));
      segs.push_back({block, a, b, dst});
      dst += b - a;
    }
    if (static_cast<int>(rng.next() % 100) < gap_pct) dst += 1;
    s.total_k = dst;
    shuffle_with(rng, segs);
  } else {  // SWA: a zero-fill pad, then a ring block read from x to its end and wrapped to [0, y), y <= x
    const int64_t row_cost = 1 + shape.format.load_row_bytes() / 128;  // rows cost input: see count()
    const int32_t pad = static_cast<int32_t>(src.count(0, bs, row_cost));
    const int32_t b = static_cast<int32_t>(src.range(0, shape.num_blocks - 1));
    const int32_t x = bs - 1 - static_cast<int32_t>(src.count(0, bs - 1, row_cost));  // simplest: the last token
    const int32_t y = static_cast<int32_t>(src.count(0, x, row_cost));                // simplest: no wrap
    if (pad > 0) segs.push_back({-1, 0, pad, 0});
    segs.push_back({b, x, bs, pad});
    if (y > 0) segs.push_back({b, 0, y, pad + bs - x});
    s.total_k = pad + bs - x + y;
  }
  for (const auto& g : segs)
    s.load_segments.insert(s.load_segments.end(), {g.src_block_id, g.src_begin, g.src_end, g.dst_offset});
  s.out_rows = s.total_k + src.range(0, 2);
  s.out_seed = src.seed();
  // Output rows: padded (16), tight, odd strides, and bases off alignment.
  s.out_data_pad = src.pick_weighted<int64_t>({{3, 16}, {2, 0}, {1, 1}, {1, 3}, {1, 7}, {1, 33}});
  s.out_scale_pad = src.pick_weighted<int64_t>({{3, 16}, {2, 0}, {1, 1}, {1, 5}});
  s.out_offset = src.pick_weighted<int32_t>({{3, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 8}, {1, 13}});
  s.threads = choose_threads(src);
  return s;
}

rc::Gen<KVCacheFormat> gen_format() {
  return rc::gen::exec([] {
    RcSource src;
    return choose_format(src);
  });
}

rc::Gen<KVCacheFormat> gen_custom_format() {
  return rc::gen::exec([] {
    RcSource src;
    return choose_custom_format(src);
  });
}

rc::Gen<int32_t> gen_block_size() {
  return rc::gen::exec([] {
    RcSource src;
    return choose_block_size(src);
  });
}

rc::Gen<CacheShape> gen_cache_shape() {
  return rc::gen::exec([] {
    RcSource src;
    return build_cache_shape(src);
  });
}

rc::Gen<int32_t> gen_threads() {
  return rc::gen::exec([] {
    RcSource src;
    return choose_threads(src);
  });
}

rc::Gen<int> gen_row_count(int max_rows) {
  return rc::gen::exec([max_rows] {
    RcSource src;
    return static_cast<int>(src.count(1, std::max(max_rows, 1), 1));
  });
}

rc::Gen<int64_t> gen_far_row_stride() {
  return rc::gen::exec([] {
    RcSource src;
    return choose_far_row_stride(src);
  });
}

rc::Gen<StoreScenario> gen_store_scenario(const CacheShape& shape) {
  return rc::gen::exec([shape] {
    RcSource src;
    return build_store_scenario(src, shape);
  });
}

rc::Gen<StoreScenario> gen_store_scenario() {
  return rc::gen::mapcat(gen_cache_shape(), [](const CacheShape& shape) { return gen_store_scenario(shape); });
}

rc::Gen<LoadScenario> gen_load_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_load_scenario(src, build_cache_shape(src));
  });
}

namespace {

/// 1 in 2: k_pe a tensor of its own (packed, padded, or rows on the 16-byte grid: the
/// vector paths), holding the kv rows' k_pe values; else a view of the kv rows.
void choose_pe_rows(Source& src, StoreScenario& s) {
  if (!src.coin()) return;
  s.pe_row_stride = src.coin() ? s.rope_dim + src.pick<int64_t>({0, 8, 3, 64}) : (s.rope_dim + 7) / 8 * 8;
  s.pe_rows = -1;
}

/// A format the backend takes for `want`, else one choose_format draws.
KVCacheFormat supported_or_any(Source& src, const KVCacheFormat& want) {
  return generator_caps().supports_format(want) ? want : choose_format(src);
}

}  // namespace

StoreScenario build_concat_split_scenario(Source& src) {
  // FlashInfer's ckv / kpe caches: BF16(512) for kv_c half the time (else any store
  // format), BF16(64) for k_pe half the time (else BF16 of 8-72 elements or any format).
  const KVCacheFormat fc = src.coin() ? supported_or_any(src, KVCacheFormat::BF16(512)) : choose_format(src);
  KVCacheFormat fp;
  switch (src.weighted({3, 2, 1})) {
    case 0: fp = supported_or_any(src, KVCacheFormat::BF16(64)); break;
    case 1: fp = supported_or_any(src, KVCacheFormat::BF16(static_cast<int32_t>(8 * src.range(1, 9)))); break;
    default: fp = choose_format(src); break;
  }
  StoreScenario s = build_store_scenario(src, build_cache_shape(src, fc), false, false);
  CacheShape pe{fp, s.shape.block_size, s.shape.num_blocks, src.seed(), 0};
  const int64_t packed = block_stride_for(fp, pe.block_size);
  // pe_cache's own stride: the cache's pages and k_pe's need not be alike (vLLM #54465).
  if ((generator_caps().ops & KVCHECK_OP_ANY_BLOCK_STRIDE) && src.weighted({3, 1}) == 1 &&
      pe.num_blocks * (packed + 96) <= kMaxCacheBytes)
    pe.block_stride = packed + 32 * src.range(1, 3);
  // kv rows of kv_lora_rank + rope_dim elements: the cache's row, k_pe's values, the
  // cache row's padding.
  const int64_t ec = fc.elements, ep = fp.elements, rows = s.kv_rows(), pad = s.row_stride - ec;
  const std::vector<bf16_bits> pe_values =
      make_bf16_rows(choose_value_mix(src), rows, ep, ep, fp.is_quantized() ? fp.elements_per_sf : 8);
  std::vector<bf16_bits> kv(static_cast<size_t>(rows * (ec + ep + pad)));
  for (int64_t r = 0; r < rows; ++r) {
    auto out = kv.begin() + r * (ec + ep + pad);
    const auto in = s.kv.begin() + r * s.row_stride;
    std::copy_n(in, ec, out);
    std::copy_n(pe_values.begin() + r * ep, ep, out + ec);
    std::copy_n(in + ec, pad, out + ec + ep);
  }
  s.kv = std::move(kv);
  s.row_stride = ec + ep + pad;
  s.kv_lora_rank = static_cast<int32_t>(ec);
  s.rope_dim = static_cast<int32_t>(ep);
  s.pe_shape = pe;
  choose_pe_rows(src, s);
  return s;
}

namespace {

/// build_concat_scenario with k_pe rows of at least min_rope elements.
StoreScenario build_concat_scenario(Source& src, int32_t min_rope) {
  // Half the cases one of the engines' MLA records (vLLM's 656-byte fp8_ds_mla and
  // 352-byte nvfp4_ds_mla, the 576-element BF16 record, V41) when the backend takes it;
  // else any store format.
  KVCacheFormat f = choose_format(src);
  std::vector<KVCacheFormat> mla;
  for (const KVCacheFormat& m :
       {KVCacheFormat::FP8_DS_MLA(), KVCacheFormat::BF16(576), KVCacheFormat::V41(), KVCacheFormat::NVFP4_DS_MLA()})
    if (generator_caps().supports_format(m)) mla.push_back(m);
  if (!mla.empty() && src.coin()) f = src.pick(std::span<const KVCacheFormat>(mla));
  if (f.elements < 1 + min_rope) f = KVCacheFormat::BF16(576);  // too short to split
  StoreScenario s = build_store_scenario(src, build_cache_shape(src, f), false, false);
  const int32_t e = f.elements, g = f.is_quantized() ? f.elements_per_sf : 8;
  int64_t lora = 0;
  switch (src.weighted({3, 2, 2, 2})) {
    case 0: lora = e > 64 ? e - 64 : e / 2; break;  // the engines' rope_dim 64 (512 + 64)
    case 1: lora = 8 * src.range(1, std::max(1, e / 8 - 1)); break;  // 16-byte boundaries: the vector paths
    case 2: lora = src.range(1, e - 1); break;  // anywhere: a 16-byte chunk, a tile, a byte of two sources
    default: lora = g * src.range(0, std::max(0, e / g - 1)) + src.pick<int64_t>({-1, 1, g / 2}); break;  // a group
  }
  s.kv_lora_rank = static_cast<int32_t>(std::clamp<int64_t>(lora, 1, e - min_rope));
  s.rope_dim = e - s.kv_lora_rank;
  choose_pe_rows(src, s);
  return s;
}

}  // namespace

StoreScenario build_concat_scenario(Source& src) { return build_concat_scenario(src, 1); }

StoreScenario build_concat_rope_scenario(Source& src) {
  StoreScenario s = (generator_caps().ops & KVCHECK_OP_CONCAT_MLA_PE_CACHE) && src.coin()
                        ? build_concat_split_scenario(src)
                        : build_concat_scenario(src, 2);
  if (s.rope_dim < 2) s = build_concat_scenario(src, 2);  // a split pe_cache of one element
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  ScenarioRope r = build_rope(src, s.rope_dim, n);
  // Rows at a cancelling table row get pairs of equal values (see rope_cancels).
  for (int64_t i = 0; i < n && i < s.kv_rows(); ++i)
    if (rope_cancels(r, i)) make_pairs_equal(r, s.kv.data() + i * s.row_stride + s.kv_lora_rank);
  s.rope = std::move(r);
  return s;
}

rc::Gen<StoreScenario> gen_concat_split_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_concat_split_scenario(src);
  });
}

rc::Gen<StoreFaultScenario> gen_concat_split_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    StoreFaultScenario c{build_concat_split_scenario(src), "", std::nullopt};
    inject_concat_fault(src, c);
    return c;
  });
}

rc::Gen<StoreScenario> gen_concat_rope_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_concat_rope_scenario(src);
  });
}

rc::Gen<StoreFaultScenario> gen_concat_rope_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    StoreFaultScenario c{build_concat_rope_scenario(src), "", std::nullopt};
    inject_concat_rope_fault(src, c);
    return c;
  });
}

rc::Gen<StoreScenario> gen_concat_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_concat_scenario(src);
  });
}

rc::Gen<StoreFaultScenario> gen_concat_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    StoreFaultScenario c{build_concat_scenario(src), "", std::nullopt};
    inject_concat_fault(src, c);
    return c;
  });
}

rc::Gen<StoreFaultScenario> gen_store_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    StoreFaultScenario c{*gen_store_scenario(), "", std::nullopt};
    inject_store_fault(src, c);
    return c;
  });
}

rc::Gen<LoadFaultScenario> gen_load_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    LoadFaultScenario c{*gen_load_scenario(), "", std::nullopt};
    inject_load_fault(src, c);
    return c;
  });
}

}  // namespace kvcheck::props
