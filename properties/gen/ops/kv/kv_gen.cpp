#include "properties/gen/ops/kv/kv_gen.h"

#include <algorithm>

#include "impl/slot_mapping.h"
#include "properties/gen/choices.h"
#include "properties/gen/gen_caps.h"
#include "properties/gen/splitmix.h"
#include "properties/gen/ops/store_load/store_load_gen.h"
#include "reference/kv_numerics.h"

namespace kvcheck::props {
namespace {

// K/V cache dtypes the backend under test supports (all when it names none).
std::vector<KvDtype> supported_kv_dtypes() {
  std::vector<KvDtype> out;
  for (KvDtype d : kv_dtypes())
    if (generator_caps().supports_kv_dtype(d)) out.push_back(d);
  return out.empty() ? kv_dtypes() : out;
}

// A row dtype the cache takes: its own, or bf16/fp16 for an FP8 cache, among the
// pairs the backend declares (kvcheck_contract.kv_dtype_pairs; the loader made sure
// each cache dtype it names has one).
KvDtype choose_model_dtype(Source& src, KvDtype cache) {
  if (!is_quantized_kv(cache)) return cache;
  const BackendCapabilities& c = generator_caps();
  const bool bf16 = c.supports_kv_dtype_pair(cache, KvDtype::kBF16), fp16 = c.supports_kv_dtype_pair(cache, KvDtype::kFP16);
  if (bf16 != fp16) return bf16 ? KvDtype::kBF16 : KvDtype::kFP16;
  return src.pick({KvDtype::kBF16, KvDtype::kFP16});
}

// Elements of one block of one view (stride_page of the NHD/HND layout).
int64_t block_elements(const KvCacheShape& s) {
  return int64_t{s.block_size} * s.num_kv_heads * (s.head_dim + s.pad_head + s.pad_token) + s.pad_page;
}

// Pads raised so that every stride of the layout (kv_layout_of) is a multiple of the
// backend's declared kv_alignment: the innermost stride (head_dim + its pad) is
// aligned, then each outer one adds an aligned pad to a multiple of an aligned stride,
// whatever block_size and layer count come later.
void align_pads(KvCacheShape& s) {
  const int64_t eb = kv_dtype_bytes(s.dtype);
  const bool e2m1 = is_nvfp4(s.dtype);  // two elements a byte: strides even, aligned in bytes
  const auto pad_to = [eb, e2m1](int64_t base, int32_t& pad) {
    if (e2m1) pad = static_cast<int32_t>(2 * kv_aligned_elements((base + pad + 1) / 2, 1) - base);
    else pad = static_cast<int32_t>(kv_aligned_elements(base + pad, eb) - base);
  };
  int32_t& inner = s.order == KvHeadLayout::kNHD ? s.pad_head : s.pad_token;
  int32_t& outer = s.order == KvHeadLayout::kNHD ? s.pad_token : s.pad_head;
  pad_to(s.head_dim, inner);
  pad_to(0, outer);
  pad_to(0, s.pad_page);
}

// The output rows' pads and base offset aligned as align_pads does the cache's.
void align_out(GatherKvScenario& s) {
  const int64_t eb = kv_dtype_bytes(s.out_k_dtype), d = s.cache.head_dim;  // out_v: the same model dtype
  s.out_pad_head = static_cast<int32_t>(kv_aligned_elements(d + s.out_pad_head, eb) - d);
  s.out_pad_token = static_cast<int32_t>(kv_aligned_elements(s.out_pad_token, eb));
  s.out_offset = static_cast<int32_t>(kv_aligned_elements(s.out_offset, eb));
}

// Input a count of units costs: about one byte per 512 bytes of what a unit allocates.
int64_t cost_of(int64_t elements) { return 2 + elements / 256; }

// Key or value rows: padded strides or a head-major (transposed) view.
KvRows choose_rows(Source& src, const KvCacheShape& c, KvDtype dtype, int64_t rows) {
  const int64_t d = c.head_dim, h = c.num_kv_heads;
  const int64_t pad_h = src.pick<int64_t>({0, 0, 2, 5});
  const int64_t pad_t = src.pick<int64_t>({0, 0, 8, 3});
  const bool head_major = src.weighted({3, 1}) == 1;
  const int64_t eb = kv_dtype_bytes(dtype);
  int64_t hs = kv_aligned_elements(d + pad_h, eb), ts = kv_aligned_elements(h * hs + pad_t, eb);
  if (head_major) {  // [H][rows][D] storage: a transposed view (e.g. q/k/v split of one GEMM)
    ts = kv_aligned_elements(d + pad_t, eb);
    hs = std::max<int64_t>(rows, 1) * ts;
  }
  return make_kv_rows(dtype, rows, ts, hs, c.num_kv_heads, c.head_dim, src.seed());
}

}  // namespace

float nvfp4_global_scale(uint64_t seed) {
  // amax/448-style decode scales for kv_value_bits' values (|x| up to 2^10 and
  // specials): codes at every magnitude, saturated groups (small g), scales that
  // underflow e4m3 (large g), and scales whose 6 * g and sf * g round.
  // 1.2547742 is one whose RN(sf * g) rounds differently from RN(RN(q * sf) * g) in fp16
  // for 51 of the 378 (q in {1.5, 3, 6}, e4m3 sf) pairs (a search over 4,000 random g
  // found no other): the load's order of multiplications shows.
  static constexpr float kScales[] = {1.0f, 1.0f / 448, 2.2857143f, 0.37f, 3.0f, 96.0f, 2e-5f, 7.0f, 1.1e3f, 0.0123f,
                                      1.2547742f};
  return kScales[SplitMix64{seed}.next() % (sizeof kScales / sizeof kScales[0])];
}

KvCacheShape build_kv_cache_shape(Source& src, const KvLimits& lim) { return build_kv_cache_shape(src, lim, 1); }

KvCacheShape build_kv_cache_shape(Source& src, const KvLimits& lim, int32_t min_head_dim) {
  KvCacheShape s;
  const BackendCapabilities& caps = generator_caps();
  s.dtype = src.pick(std::span<const KvDtype>(supported_kv_dtypes()));
  s.order = src.pick({KvHeadLayout::kNHD, KvHeadLayout::kHND});
  // head_dims a row limit of the contract leaves some num_kv_heads for.
  const auto fits = [&caps](int64_t d) { return caps.kv_head_dim_fits_rows(d); };
  std::vector<int32_t> declared;
  for (int32_t d : caps.head_dims)
    if (fits(d) && d >= min_head_dim) declared.push_back(d);
  if (declared.empty())  // none that large (the property is then not exercised): any that fits
    for (int32_t d : caps.head_dims)
      if (fits(d)) declared.push_back(d);
  if (!declared.empty())
    s.head_dim = src.pick(std::span<const int32_t>(declared));  // the backend's contract
  else
    s.head_dim = src.weighted({3, 4}) == 0 ? static_cast<int32_t>(src.range(1, 16))
                                           : src.pick<int32_t>({64, 80, 96, 128, 256, 576});
  if (caps.head_dims.empty() && !fits(s.head_dim))  // one head of the largest row it takes
    s.head_dim = static_cast<int32_t>(caps.max_heads_x_head_dim);
  if (s.head_dim < min_head_dim && caps.head_dims.empty() && fits(min_head_dim)) s.head_dim = min_head_dim;
  if (is_nvfp4(s.dtype) && s.head_dim % 16 != 0) {
    // One e4m3 scale per 16 elements (SPEC §7.9): a multiple of 16 the contract takes
    // (none declared: the drawn head_dim rounded up, else down, to one the row limits
    // take: under at most 100 elements a row, 128 -> 96, where rounding up alone gave
    // 112 and lost the case to another dtype), else a cache of another dtype.
    const std::vector<int32_t> candidates =
        declared.empty() ? std::vector<int32_t>{(s.head_dim + 15) / 16 * 16, s.head_dim / 16 * 16} : declared;
    int32_t d16 = 0;
    for (int32_t d : candidates)
      if (d >= 16 && d % 16 == 0 && fits(d) && d16 == 0) d16 = d;
    if (d16 != 0) {
      s.head_dim = d16;
    } else {  // none (a head_dim below 16 with no room for 16, or declared ones filtered
              // by min_head_dim): another dtype the backend takes
      const std::vector<KvDtype> all = supported_kv_dtypes();
      const auto other = std::find_if(all.begin(), all.end(), [](KvDtype d) { return !is_nvfp4(d); });
      s.dtype = other != all.end() ? *other : KvDtype::kBF16;
    }
  }
  switch (src.weighted({3, 4, 1})) {
    case 0: s.num_kv_heads = static_cast<int32_t>(src.range(1, 4)); break;
    case 1: s.num_kv_heads = src.pick<int32_t>({1, 8, 40}); break;
    default: s.num_kv_heads = 128; break;
  }
  // The contract's num_kv_heads x head_dim limits (a thread per element, fixed tiles).
  const auto [lo, hi] = caps.kv_heads_range(s.head_dim);
  if (s.num_kv_heads < lo || s.num_kv_heads > hi)
    s.num_kv_heads = static_cast<int32_t>(src.coin() ? lo : std::min<int64_t>(hi, lo + src.range(0, 3)));
  s.block_size = choose_block_size(src, 32);  // the shared chooser, fitted to the backend
  s.pad_head = src.pick<int32_t>({0, 0, 0, 1, 3, 8});
  s.pad_token = src.pick<int32_t>({0, 0, 0, 1, 3, 8});
  s.pad_page = src.pick<int32_t>({0, 0, 0, 1, 3, 8});
  align_pads(s);
  while (block_elements(s) > lim.cache_elements && s.block_size > 1) s.block_size /= 2;  // e.g. 128 x 576
  const int64_t per_block = block_elements(s);
  const int64_t room = std::clamp<int64_t>(lim.cache_elements / per_block, 1, 6);
  s.num_blocks = static_cast<int32_t>(src.count(1, room, cost_of(per_block)));
  s.alloc = src.pick({KvAlloc::kSeparate, KvAlloc::kSeparate, KvAlloc::kNanoVllm, KvAlloc::kFlashInfer,
                       KvAlloc::kLayerPages});
  if (s.alloc == KvAlloc::kNanoVllm) {
    s.num_layers = static_cast<int32_t>(src.range(1, 3));
    s.layer = static_cast<int32_t>(src.range(0, s.num_layers - 1));
  }
  if (s.alloc == KvAlloc::kLayerPages) {
    // 2-4 layers per block; fewer blocks when all layers' pages would not fit.
    s.num_layers = static_cast<int32_t>(src.range(2, 4));
    s.layer = static_cast<int32_t>(src.range(0, s.num_layers - 1));
    const int64_t fit = std::max<int64_t>(1, lim.cache_elements / (per_block * 2 * s.num_layers));
    s.num_blocks = static_cast<int32_t>(std::min<int64_t>(s.num_blocks, fit));
  }
  if (is_fp8(s.dtype)) {
    s.scale_kind = src.pick({KvScaleKind::kPerTensor, KvScaleKind::kPerHead});
    s.k_scale = kv_scales(s.scale_kind, s.num_kv_heads, src.seed());
    s.v_scale = kv_scales(s.scale_kind, s.num_kv_heads, src.seed() ^ 0x5A17EDull);
  }

  s.fill_seed = src.seed();
  if (is_nvfp4(s.dtype)) {
    // From fill_seed, as the recipe below (no input spent: the fuzz corpus decodes as
    // before): vLLM's NVFP4 pages (dense [K data | K scales | V data | V scales]) in 1
    // case of 3 when their dense strides and offsets keep the declared kv_alignment;
    // interleave4 scales (vLLM, TRT-LLM) in 1 of 2 when block_size allows, else
    // FlashInfer's linear ones; one global decode scale per side (SPEC §7.9).
    SplitMix64 r{s.fill_seed ^ 0xF4F4ull};
    KvCacheShape dense = s;
    dense.pad_head = dense.pad_token = dense.pad_page = 0;
    align_pads(dense);
    const int64_t a = std::max<int64_t>(generator_caps().kv_alignment, 1);
    const int64_t page_data = int64_t{s.block_size} * s.num_kv_heads * s.head_dim / 2;
    const int64_t page_scales = int64_t{s.block_size} * s.num_kv_heads * (s.head_dim / 16);
    if (r.next() % 3 == 0 && dense.pad_head == 0 && dense.pad_token == 0 && dense.pad_page == 0 && page_data % a == 0 &&
        page_scales % a == 0) {
      s.alloc = KvAlloc::kNvfp4Pages;
      s.pad_head = s.pad_token = s.pad_page = 0;
      s.num_layers = 1;
      s.layer = 0;
    }
    s.sf_layout = s.block_size % 4 == 0 && r.next() % 2 == 0 ? KvSfLayout::kInterleave4 : KvSfLayout::kLinear;
    s.scale_kind = KvScaleKind::kPerTensor;
    s.k_scale = {nvfp4_global_scale(s.fill_seed ^ 0x6B5CA1Eull)};
    s.v_scale = {nvfp4_global_scale(s.fill_seed ^ 0x5A17EDull)};
  }
  if (is_fp8(s.dtype)) {
    // The recipe comes from fill_seed (mixed: RapidCheck's seeds are small at small
    // sizes) rather than a draw of its own, so the fuzz corpus decodes as before.
    const std::vector<KvRecipe> recipes = generator_caps().supported_kv_recipes();
    s.recipe = recipes[static_cast<size_t>(SplitMix64{s.fill_seed ^ 0x7EC1BEull}.next() % recipes.size())];
  }
  return s;
}

StoreKvScenario build_store_kv_scenario(Source& src, const KvLimits& lim) { return build_store_kv_scenario(src, lim, 1); }

StoreKvScenario build_store_kv_scenario(Source& src, const KvLimits& lim, int32_t min_head_dim) {
  StoreKvScenario s;
  s.cache = build_kv_cache_shape(src, lim, min_head_dim);
  const int64_t row_elems = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
  const int64_t max_rows = std::clamp<int64_t>(lim.row_elements / row_elems, 2, lim.max_rows);
  // 1 cache in 3 of those small enough per slot gets tens of thousands of slots: the
  // slot space at validate_slot_mapping's bitmap limit for this batch or one block past
  // it (its hash map), so the properties reach both paths (SPEC §6, "Reach").
  const int64_t per_slot = block_elements(s.cache) / s.cache.block_size * std::max(1, s.cache.num_layers);
  const SlotSpaceEdge edge = draw_slot_space_edge(src);
  const bool threshold = edge.want && per_slot * slot_threshold_blocks(max_rows, s.cache.block_size, true) *
                                               s.cache.block_size <= kMaxEdgeKvCacheElements;
  const int64_t top = std::min<int64_t>(max_rows, (threshold ? slot_bitmap_max_slots(0) : s.cache.num_slots()) + 4);
  // Empty batches are rare (they write nothing); small ones are drawn at every size.
  int64_t n = 0;
  switch (src.weighted({1, 19, 10})) {
    case 0: break;
    case 1: n = src.count(1, top, cost_of(2 * row_elems)); break;
    default: n = src.count(1, std::min<int64_t>(top, 8), cost_of(2 * row_elems)); break;
  }
  if (threshold)
    s.cache.num_blocks = static_cast<int32_t>(slot_threshold_blocks(n, s.cache.block_size, edge.past));
  const int64_t num_slots = s.cache.num_slots();
  s.slot_mapping = choose_slot_mapping(src, s.cache.num_blocks, s.cache.block_size, n, 2);  // -1, 0 at rows 0, 1
  const int64_t extra = src.pick<int64_t>({0, 0, 1, 5});  // CUDA-graph padding rows
  // Key and value share one model dtype (SPEC §7.1); a pair that differs is a fault.
  const KvDtype model = choose_model_dtype(src, s.cache.dtype);
  s.key = choose_rows(src, s.cache, model, n + extra);
  s.value = choose_rows(src, s.cache, model, n + extra);
  // slot_mapping's buffer goes on for the padding rows with real, unused slots: a
  // kernel that takes its row count from key/value stores them.
  std::vector<int32_t> unused;
  {
    std::vector<bool> used(static_cast<size_t>(num_slots), false);
    for (int32_t slot : s.slot_mapping)
      if (slot >= 0) used[static_cast<size_t>(slot)] = true;
    for (int64_t i = 0; i < num_slots; ++i)
      if (!used[static_cast<size_t>(i)]) unused.push_back(static_cast<int32_t>(i));
  }
  SplitMix64 rng{src.seed()};
  for (int64_t i = 0; i < extra && !unused.empty(); ++i) {
    std::swap(unused[rng.next() % unused.size()], unused.back());
    s.slot_tail.push_back(unused.back());
    unused.pop_back();
  }
  s.threads = choose_threads(src);
  return s;
}

StoreKvScenario build_store_kv_rope_scenario(Source& src, const KvLimits& lim) {
  StoreKvScenario s = build_store_kv_scenario(src, lim, 2);  // a head holds a pair at least
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  ScenarioRope r = build_rope(src, std::max(s.cache.head_dim, 2), n);
  // The engines' shape, drawn again in 1 case of 2 where the head allows it: NeoX over a
  // whole power-of-two head on dense rows (FlashInfer's rope + quantise + append; the CUDA
  // kernels' pairs path, rope_pairs_in_thread). The draws above reached it in about 1
  // rope case in 70 (2026-12-06: the rows' padded strides take most). Drawn last, so the
  // bytes before it decode as they did.
  const int32_t d = s.cache.head_dim, heads = s.cache.num_kv_heads;
  if (d >= 16 && (d & (d - 1)) == 0 && src.coin()) {
    r = build_rope(src, d, n, /*whole_neox=*/true);
    s.key = make_kv_rows(s.key.dtype, s.key.rows, int64_t{heads} * d, d, heads, d, src.seed());
    s.value = make_kv_rows(s.value.dtype, s.value.rows, int64_t{heads} * d, d, heads, d, src.seed());
  }
  for (int64_t i = 0; i < n && i < s.key.rows; ++i)
    if (rope_cancels(r, i))
      for (int64_t h = 0; h < s.cache.num_kv_heads && s.cache.head_dim >= 2; ++h)
        make_pairs_equal(r, s.key.data.data() + i * s.key.token_stride + h * s.key.head_stride);
  s.rope = std::move(r);
  return s;
}

namespace {

GatherKvScenario build_gather(Source& src, const KvLimits& lim, bool with_starts) {
  GatherKvScenario s;
  s.cache = build_kv_cache_shape(src, lim);
  const int64_t row_elems = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
  const int64_t max_total = std::clamp<int64_t>(lim.row_elements / row_elems, 1, lim.max_gather_rows);
  // Batches that gather nothing are rare: no sequence or no table column 1 in 20 each.
  const int64_t num_seqs = !with_starts && src.weighted({1, 19}) == 0 ? 0 : src.range(1, 4);
  s.max_blocks = !with_starts && src.weighted({1, 19}) == 0 ? 0 : static_cast<int32_t>(src.range(1, 5));
  const int64_t junk_mode = src.range(0, 2);  // unneeded entries: -1, junk, real blocks
  // seq_starts (SPEC §7.5) for backends that take them: 1 in 3 batches (or all).
  const bool starts = with_starts || ((generator_caps().ops & KVCHECK_OP_GATHER_KV_SEQ_STARTS) && num_seqs > 0 &&
                                      s.max_blocks > 0 && src.weighted({2, 1}) == 1);
  if (starts) s.seq_start_unit = src.coin() ? SeqStartUnit::kToken : SeqStartUnit::kBlock;
  const int32_t bs = s.cache.block_size;
  const int64_t row = int64_t{s.max_blocks} * bs;  // positions of a table row
  SplitMix64 rng{src.seed()};
  s.cu_seqlens_k.push_back(0);
  for (int64_t i = 0; i < num_seqs; ++i) {
    const int64_t cap = std::min<int64_t>(row, max_total - s.cu_seqlens_k.back());
    // The first sequence has tokens (when it may): a batch of empty sequences is rare.
    const int64_t len = cap <= 0 ? 0 : src.count(i == 0 ? 1 : 0, cap, cost_of(4 * row_elems));
    s.cu_seqlens_k.push_back(static_cast<int32_t>(s.cu_seqlens_k.back() + len));
    int64_t start = 0;
    if (starts) {
      // Any start the row has room for: 0, mid-block, the last that fits; block-unit
      // starts anywhere in their block (the kernel rounds them down).
      const int64_t room = row - len;
      int64_t raw = src.pick<int64_t>({0, 1, 2, 3}) == 0 ? room : src.range(0, room);
      if (s.seq_start_unit == SeqStartUnit::kBlock) {
        start = raw / bs * bs;
        raw = start + src.range(0, bs - 1);
      } else {
        start = raw;
      }
      s.seq_starts.push_back(static_cast<int32_t>(raw));
    }
    // The columns tokens [start, start + len) of the row use (worked out here, not by
    // the validator's kv_needed_columns: the generator must not share its bug).
    const int64_t first = start / bs, end = len > 0 ? (start + len + bs - 1) / bs : 0;
    for (int64_t j = 0; j < s.max_blocks; ++j) {
      int32_t entry = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(s.cache.num_blocks));
      const bool needed = j >= first && j < end;
      if (!needed && junk_mode == 0) entry = -1;
      if (!needed && junk_mode == 1) entry = std::vector<int32_t>{-7, -1, INT32_MAX, s.cache.num_blocks}[rng.next() % 4];
      s.block_table.push_back(entry);
    }
  }
  s.out_k_dtype = choose_model_dtype(src, s.cache.dtype);
  s.out_v_dtype = s.out_k_dtype;  // one model dtype (SPEC §7.1)
  s.out_rows = s.cu_seqlens_k.back() + src.pick<int64_t>({0, 0, 1, 3});
  s.out_pad_head = src.pick<int32_t>({0, 0, 1, 4});
  s.out_pad_token = src.pick<int32_t>({0, 0, 1, 2, 3, 8});  // odd token strides too
  s.out_seed = src.seed();
  s.out_offset = src.pick<int32_t>({0, 0, 0, 1, 3, 8});  // 2-byte aligned bases only
  align_out(s);
  s.threads = choose_threads(src);
  return s;
}

}  // namespace

GatherKvScenario build_gather_kv_scenario(Source& src, const KvLimits& lim) { return build_gather(src, lim, false); }
GatherKvScenario build_gather_kv_seq_starts_scenario(Source& src, const KvLimits& lim) {
  return build_gather(src, lim, true);
}

KvStepScenario build_kv_step_scenario(Source& src, const KvLimits& lim) {
  KvStepScenario s;
  s.cache = build_kv_cache_shape(src, lim);
  const int32_t bs = s.cache.block_size;
  const int64_t row_elems = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
  int64_t budget = std::clamp<int64_t>((int64_t{1} << 16) / row_elems, 1, 160);
  const int64_t num_seqs = src.range(1, 4);
  s.decode = src.weighted({3, 1}) == 1;
  int64_t blocks = 0;
  for (int64_t i = 0; i < num_seqs; ++i) {
    const int32_t lo = s.decode ? 1 : 0;
    const int32_t len = budget <= lo ? lo
                                     : static_cast<int32_t>(src.count(lo, std::min<int64_t>(budget, 3 * int64_t{bs}),
                                                                      cost_of(4 * row_elems)));
    budget -= len;
    const int64_t mode = s.decode ? 3 : src.range(0, 3);  // no hit, whole blocks cached, a chunk, decode-like
    int32_t cached = 0;
    if (mode == 1) cached = len / bs * bs;
    if (mode == 2) cached = len == 0 ? 0 : static_cast<int32_t>(src.range(0, len));
    if (mode == 3) cached = std::max(0, len - 1);
    s.num_tokens.push_back(len);
    s.num_cached.push_back(cached);
    blocks += (len + bs - 1) / bs;
  }
  // Distinct physical blocks for all sequences, shuffled (paged: non-contiguous).
  const int64_t room = std::max<int64_t>(1, lim.cache_elements / block_elements(s.cache));
  s.cache.num_blocks = static_cast<int32_t>(std::max<int64_t>(1, std::max(blocks, std::min<int64_t>(room, blocks + 2))));
  SplitMix64 rng{src.seed()};
  const std::vector<int32_t> pool = shuffled(rng, s.cache.num_blocks, s.cache.num_blocks);
  size_t next = 0;
  for (int64_t i = 0; i < num_seqs; ++i) {
    std::vector<int32_t> t;
    for (int64_t j = 0; j * bs < s.num_tokens[static_cast<size_t>(i)]; ++j) t.push_back(pool[next++]);
    if (rng.next() % 2) t.push_back(-1);  // a -1 tail no token needs
    s.block_tables.push_back(t);
  }
  s.key_dtype = choose_model_dtype(src, s.cache.dtype);
  s.value_dtype = s.key_dtype;  // one model dtype (SPEC §7.1)
  s.graph_padding = src.pick<int32_t>({0, 0, 1, 3});
  s.value_seed = src.seed();
  s.page_table = !s.decode && src.coin();
  return s;
}

template <class S>
rc::Gen<S> on_rc(S (*build)(Source&, const KvLimits&)) {
  return rc::gen::exec([build] {
    RcSource src;
    return build(src, kPropertyKvLimits);
  });
}

rc::Gen<KvCacheShape> gen_kv_cache_shape() { return on_rc(build_kv_cache_shape); }
rc::Gen<StoreKvScenario> gen_store_kv_scenario() { return on_rc(build_store_kv_scenario); }
rc::Gen<StoreKvScenario> gen_store_kv_rope_scenario() { return on_rc(build_store_kv_rope_scenario); }
rc::Gen<StoreKvScenario> gen_store_kv_rope_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    StoreKvScenario s = build_store_kv_rope_scenario(src, kPropertyKvLimits);
    inject_store_kv_rope_fault(src, s);
    return s;
  });
}
rc::Gen<GatherKvScenario> gen_gather_kv_scenario() { return on_rc(build_gather_kv_scenario); }
rc::Gen<KvStepScenario> gen_kv_step_scenario() { return on_rc(build_kv_step_scenario); }

rc::Gen<StoreKvScenario> gen_store_kv_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    StoreKvScenario s = build_store_kv_scenario(src, kPropertyKvLimits);
    inject_store_kv_fault(src, s);
    return s;
  });
}

rc::Gen<GatherKvScenario> gen_gather_kv_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    GatherKvScenario s = build_gather_kv_scenario(src, kPropertyKvLimits);
    inject_gather_kv_fault(src, s);
    return s;
  });
}

rc::Gen<GatherKvScenario> gen_gather_kv_seq_starts_scenario() { return on_rc(build_gather_kv_seq_starts_scenario); }

rc::Gen<GatherKvScenario> gen_gather_kv_seq_starts_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    GatherKvScenario s = build_gather_kv_seq_starts_scenario(src, kPropertyKvLimits);
    inject_gather_kv_seq_starts_fault(src, s);
    return s;
  });
}

}  // namespace kvcheck::props
