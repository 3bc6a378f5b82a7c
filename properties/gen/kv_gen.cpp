#include "properties/gen/kv_gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/gen_caps.h"
#include "properties/gen/splitmix.h"
#include "properties/gen/store_load_gen.h"
#include "reference/kv_numerics.h"

namespace kvcheck::props {
namespace {

uint64_t mix(uint64_t seed, int64_t a, int64_t b, int64_t h, int64_t d) {
  SplitMix64 r{seed ^ (uint64_t(a) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(b) << 40) ^ (uint64_t(h) << 20) ^
               uint64_t(d)};
  r.next();
  return r.next();
}

const char* alloc_name(KvAlloc a) {
  switch (a) {
    case KvAlloc::kSeparate: return "separate";
    case KvAlloc::kNanoVllm: return "nano-vllm [2, L, ...]";
    case KvAlloc::kFlashInfer: return "flashinfer [nb, 2, ...]";
  }
  return "?";
}

std::string ints(const std::vector<int32_t>& v, size_t max = 48) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > max) s += fmt::format(", ... ({} total)", v.size());
  return s + "]";
}

std::string floats(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += fmt::format("{}{:g}", i ? ", " : "", v[i]);
  if (v.size() > 8) s += ", ...";
  return s + "]";
}

// Block sizes of SPEC §6/§7.7 (the shared chooser), random ones small.
rc::Gen<int32_t> gen_kv_block_size() {
  return rc::gen::exec([] {
    RcSource src;
    return choose_block_size(src, 32);  // the shared chooser, fitted to the backend
  });
}

// K/V cache dtypes the backend under test supports (all when it names none).
std::vector<KvDtype> supported_kv_dtypes() {
  std::vector<KvDtype> out;
  for (KvDtype d : kv_dtypes())
    if (generator_caps().supports_kv_dtype(d)) out.push_back(d);
  return out.empty() ? kv_dtypes() : out;
}

rc::Gen<int32_t> gen_head_dim() {
  return rc::gen::weightedOneOf<int32_t>({
      {4, rc::gen::elementOf(std::vector<int32_t>{64, 80, 96, 128, 256, 576})},
      {3, rc::gen::inRange<int32_t>(1, 17)},
  });
}

rc::Gen<int32_t> gen_num_kv_heads() {
  return rc::gen::weightedOneOf<int32_t>({
      {4, rc::gen::elementOf(std::vector<int32_t>{1, 8, 40})},
      {3, rc::gen::inRange<int32_t>(1, 5)},
      {1, rc::gen::just<int32_t>(128)},
  });
}

}  // namespace

uint16_t kv_value_bits(KvDtype dtype, uint64_t seed, int64_t a, int64_t b, int64_t h, int64_t d) {
  const uint64_t r = mix(seed, a, b, h, d);
  const int roll = static_cast<int>(r % 100);
  const bool fp16 = dtype == KvDtype::kFP16;
  if (!is_model_dtype(dtype)) dtype = KvDtype::kBF16;  // rows of a wrong dtype (an error path): bf16 bits
  const uint16_t sign = (r >> 8) & 1 ? 0x8000 : 0;
  if (roll < 3) {  // specials
    switch ((r >> 9) % 5) {
      case 0: return static_cast<uint16_t>(sign | (fp16 ? 0x7C00 : 0x7F80));          // ±Inf
      case 1: return static_cast<uint16_t>(sign | (fp16 ? 0x7E00 : 0x7FC0));          // NaN
      case 2: return static_cast<uint16_t>(sign | (fp16 ? 0x7C01 : 0x7F81));          // NaN payload
      default: return sign;                                                           // ±0
    }
  }
  if (roll < 5) return static_cast<uint16_t>(sign | ((r >> 12) & (fp16 ? 0x3FF : 0x7F)) | 1);  // subnormal
  if (roll < 7) return static_cast<uint16_t>(sign | (fp16 ? 0x7BFF : 0x7F7F));  // largest finite
  // |x| = m * 2^e, e in [-12, 10): spans the FP8 range for the scales kv_scales draws.
  const int e = static_cast<int>((r >> 16) % 22) - 12;
  const float m = 1.0f + static_cast<float>((r >> 24) & 0xFFFF) / 65536.0f;
  const float x = (sign ? -1.0f : 1.0f) * std::ldexp(m, e);
  return ref::float_to_model(dtype, x);
}

std::vector<float> kv_scales(KvScaleKind kind, int32_t num_kv_heads, uint64_t seed) {
  if (kind == KvScaleKind::kNone) return {};
  const size_t n = kind == KvScaleKind::kPerHead ? static_cast<size_t>(num_kv_heads) : 1;
  static const float kNice[] = {1.0f, 2.0f, 0.5f, 3.0f, 7.0f, 0.1f, 1.0f / 448.0f, 0.0078125f};
  std::vector<float> s(n);
  SplitMix64 r{seed};
  for (auto& x : s) {
    const uint64_t v = r.next();
    x = v % 3 == 0 ? kNice[(v >> 8) % 8]
                   : std::ldexp(1.0f + static_cast<float>((v >> 16) & 0xFFFFF) / 1048576.0f,
                                static_cast<int>((v >> 40) % 16) - 10);
  }
  return s;
}

KvRows make_kv_rows(KvDtype dtype, int64_t rows, int64_t token_stride, int64_t head_stride,
                    int32_t num_kv_heads, int32_t head_dim, uint64_t seed) {
  KvRows r{dtype, rows, token_stride, head_stride, {}};
  const int64_t size = rows == 0 ? 0 : (rows - 1) * token_stride + (num_kv_heads - 1) * head_stride + head_dim;
  r.data.assign(static_cast<size_t>(std::max<int64_t>(size, 0)), dtype == KvDtype::kFP16 ? 0x7E00 : 0x7FC0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t h = 0; h < num_kv_heads; ++h)
      for (int64_t d = 0; d < head_dim; ++d)
        r.data[static_cast<size_t>(i * token_stride + h * head_stride + d)] = kv_value_bits(dtype, seed, i, 0, h, d);
  return r;
}

std::string describe(const KvCacheShape& s) {
  std::string scales;
  if (is_fp8(s.dtype))
    scales = fmt::format(", {} k_scale {} v_scale {}", to_string(s.scale_kind), floats(s.k_scale), floats(s.v_scale));
  return fmt::format("{} {} cache: {} blocks x {} tokens x {} heads x {} (pads head {} token {} page {}), {}{}{}",
                     to_string(s.dtype), to_string(s.order), s.num_blocks, s.block_size, s.num_kv_heads,
                     s.head_dim, s.pad_head, s.pad_token, s.pad_page, alloc_name(s.alloc),
                     s.alloc == KvAlloc::kNanoVllm ? fmt::format(" layer {} of {}", s.layer, s.num_layers) : "",
                     scales);
}

std::string describe(const StoreKvScenario& s) {
  return fmt::format("store_kv {}\n  n={} slot_mapping={}\n  key {} rows={} token_stride={} head_stride={}; "
                     "value {} rows={} token_stride={} head_stride={}{}",
                     describe(s.cache), s.slot_mapping.size(), ints(s.slot_mapping), to_string(s.key.dtype),
                     s.key.rows, s.key.token_stride, s.key.head_stride, to_string(s.value.dtype), s.value.rows,
                     s.value.token_stride, s.value.head_stride, s.fault.empty() ? "" : "\n  fault: " + s.fault) +
         (s.slot_tail.empty() ? "" : "\n  slot_mapping buffer goes on: " + ints(s.slot_tail)) +
         (s.threads > 0 ? fmt::format("\n  threads {}", s.threads) : "");
}

std::string describe(const GatherKvScenario& s) {
  return fmt::format("gather_kv {}\n  cu_seqlens_k={} max_blocks={} block_table={}\n  out_k {} out_v {} "
                     "out_rows={} pads head {} token {}{}",
                     describe(s.cache), ints(s.cu_seqlens_k), s.max_blocks, ints(s.block_table),
                     to_string(s.out_k_dtype), to_string(s.out_v_dtype), s.out_rows, s.out_pad_head,
                     s.out_pad_token, s.fault.empty() ? "" : "\n  fault: " + s.fault) +
         (s.out_offset > 0 ? fmt::format("\n  outputs start {} elements into their buffers", s.out_offset) : "") +
         (s.threads > 0 ? fmt::format("\n  threads {}", s.threads) : "");
}

std::string describe(const KvStepScenario& s) {
  std::string seqs;
  for (size_t i = 0; i < s.num_tokens.size(); ++i)
    seqs += fmt::format("\n  seq {}: num_cached {} num_tokens {} block_table {}", i, s.num_cached[i],
                        s.num_tokens[i], ints(s.block_tables[i]));
  return fmt::format("kv_step ({}) {}\n  key {} value {} graph_padding {}{}", s.decode ? "decode" : "prefill",
                     describe(s.cache), to_string(s.key_dtype), to_string(s.value_dtype), s.graph_padding, seqs);
}

void showValue(const KvCacheShape& s, std::ostream& os) { os << describe(s); }
void showValue(const KvRows& r, std::ostream& os) {
  os << to_string(r.dtype) << " rows=" << r.rows << " token_stride=" << r.token_stride
     << " head_stride=" << r.head_stride;
}
void showValue(const StoreKvScenario& s, std::ostream& os) { os << describe(s); }
void showValue(const GatherKvScenario& s, std::ostream& os) { os << describe(s); }
void showValue(const KvStepScenario& s, std::ostream& os) { os << describe(s); }

rc::Gen<KvCacheShape> gen_kv_cache_shape() {
  return rc::gen::exec([] {
    KvCacheShape s;
    s.dtype = *rc::gen::elementOf(supported_kv_dtypes());
    s.order = *rc::gen::elementOf(std::vector<KvHeadLayout>{KvHeadLayout::kNHD, KvHeadLayout::kHND});
    s.head_dim = *gen_head_dim();
    s.num_kv_heads = *gen_num_kv_heads();
    s.block_size = *gen_kv_block_size();
    const std::vector<int32_t> pads{0, 0, 0, 1, 3, 8};
    s.pad_head = *rc::gen::elementOf(pads);
    s.pad_token = *rc::gen::elementOf(pads);
    s.pad_page = *rc::gen::elementOf(pads);
    auto block_elements = [&] {
      return int64_t{s.block_size} * s.num_kv_heads * (s.head_dim + s.pad_head + s.pad_token) + s.pad_page;
    };
    while (block_elements() > kMaxKvCacheElements && s.block_size > 1) s.block_size /= 2;  // e.g. 128 x 576
    const int64_t per_block = block_elements();
    const int32_t want = *rc::gen::inRange(1, 7);
    s.num_blocks = static_cast<int32_t>(std::clamp<int64_t>(kMaxKvCacheElements / per_block, 1, want));
    s.alloc = *rc::gen::elementOf(std::vector<KvAlloc>{KvAlloc::kSeparate, KvAlloc::kSeparate,
                                                       KvAlloc::kNanoVllm, KvAlloc::kFlashInfer});
    if (s.alloc == KvAlloc::kNanoVllm) {
      s.num_layers = *rc::gen::inRange(1, 4);
      s.layer = *rc::gen::inRange(0, s.num_layers);
    }
    if (is_fp8(s.dtype)) {
      s.scale_kind = *rc::gen::elementOf(std::vector<KvScaleKind>{KvScaleKind::kPerTensor, KvScaleKind::kPerHead});
      s.k_scale = kv_scales(s.scale_kind, s.num_kv_heads, *rc::gen::arbitrary<uint64_t>());
      s.v_scale = kv_scales(s.scale_kind, s.num_kv_heads, *rc::gen::arbitrary<uint64_t>() ^ 0x5A17EDull);
    }
    s.fill_seed = *rc::gen::arbitrary<uint64_t>();
    return s;
  });
}

namespace {

KvDtype gen_model_dtype(KvDtype cache) {
  if (!is_fp8(cache)) return cache;
  return *rc::gen::elementOf(std::vector<KvDtype>{KvDtype::kBF16, KvDtype::kFP16});
}

KvRows gen_rows(const KvCacheShape& c, KvDtype dtype, int64_t rows) {
  const int64_t d = c.head_dim, h = c.num_kv_heads;
  const int64_t pad_h = *rc::gen::elementOf(std::vector<int64_t>{0, 0, 2, 5});
  const int64_t pad_t = *rc::gen::elementOf(std::vector<int64_t>{0, 0, 8, 3});
  const bool head_major = *rc::gen::elementOf(std::vector<bool>{false, false, false, true});
  int64_t ts = h * (d + pad_h) + pad_t, hs = d + pad_h;
  if (head_major) {  // [H][rows][D] storage: a transposed view (e.g. q/k/v split of one GEMM)
    ts = d + pad_t;
    hs = std::max<int64_t>(rows, 1) * ts;
  }
  return make_kv_rows(dtype, rows, ts, hs, c.num_kv_heads, c.head_dim, *rc::gen::arbitrary<uint64_t>());
}

}  // namespace

rc::Gen<StoreKvScenario> gen_store_kv_scenario() {
  return rc::gen::exec([] {
    StoreKvScenario s;
    s.cache = *gen_kv_cache_shape();
    const int64_t num_slots = s.cache.num_slots();
    const int64_t row_elems = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
    const int max_rows = static_cast<int>(std::clamp<int64_t>((int64_t{1} << 18) / row_elems, 2, 64));
    const int top = std::min<int>(max_rows, static_cast<int>(num_slots) + 4);
    // Empty batches are rare (they write nothing); small ones are drawn at every size.
    // (resize: 1..8 rows uniformly at every case size, still shrinking towards 1 row)
    const int n = std::min(top, *rc::gen::weightedOneOf<int>({{1, rc::gen::just(0)},
                                                              {19, gen_row_count(top)},
                                                              {10, rc::gen::resize(100, rc::gen::inRange(1, std::min(top, 8) + 1))}}));
    RcSource src;
    s.slot_mapping = choose_slot_mapping(src, s.cache.num_blocks, s.cache.block_size, n, 2);  // -1, 0 at rows 0, 1
    SplitMix64 rng{*rc::gen::arbitrary<uint64_t>()};
    const int64_t extra = *rc::gen::elementOf(std::vector<int64_t>{0, 0, 1, 5});  // CUDA-graph padding rows
    s.key = gen_rows(s.cache, gen_model_dtype(s.cache.dtype), n + extra);
    s.value = gen_rows(s.cache, gen_model_dtype(s.cache.dtype), n + extra);
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
    for (int64_t i = 0; i < extra && !unused.empty(); ++i) {
      std::swap(unused[rng.next() % unused.size()], unused.back());
      s.slot_tail.push_back(unused.back());
      unused.pop_back();
    }
    s.threads = *gen_threads();
    return s;
  });
}

rc::Gen<GatherKvScenario> gen_gather_kv_scenario() {
  return rc::gen::exec([] {
    GatherKvScenario s;
    s.cache = *gen_kv_cache_shape();
    const int64_t row_elems = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
    const int64_t max_total = std::clamp<int64_t>((int64_t{1} << 18) / row_elems, 1, 300);
    // Batches that gather nothing are rare: no sequence or no table column 1 in 20 each.
    const int num_seqs = *rc::gen::weightedOneOf<int>({{1, rc::gen::just(0)}, {19, rc::gen::inRange(1, 5)}});
    s.max_blocks = *rc::gen::weightedOneOf<int32_t>({{1, rc::gen::just<int32_t>(0)}, {19, rc::gen::inRange(1, 6)}});
    SplitMix64 rng{*rc::gen::arbitrary<uint64_t>()};
    const int junk_mode = *rc::gen::inRange(0, 3);  // unneeded entries: -1, junk, real blocks
    s.cu_seqlens_k.push_back(0);
    for (int i = 0; i < num_seqs; ++i) {
      const int64_t cap = std::min<int64_t>(int64_t{s.max_blocks} * s.cache.block_size,
                                            max_total - s.cu_seqlens_k.back());
      int64_t len = cap <= 0 ? 0 : static_cast<int64_t>(rng.next() % static_cast<uint64_t>(cap + 1));
      if (i == 0 && len == 0 && cap > 0) len = 1 + static_cast<int64_t>(rng.next() % static_cast<uint64_t>(cap));
      s.cu_seqlens_k.push_back(static_cast<int32_t>(s.cu_seqlens_k.back() + len));
      const int64_t needed = (len + s.cache.block_size - 1) / s.cache.block_size;
      for (int64_t j = 0; j < s.max_blocks; ++j) {
        int32_t entry = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(s.cache.num_blocks));
        if (j >= needed && junk_mode == 0) entry = -1;
        if (j >= needed && junk_mode == 1)
          entry = std::vector<int32_t>{-7, -1, INT32_MAX, s.cache.num_blocks}[rng.next() % 4];
        s.block_table.push_back(entry);
      }
    }
    s.out_k_dtype = gen_model_dtype(s.cache.dtype);
    s.out_v_dtype = gen_model_dtype(s.cache.dtype);
    s.out_rows = s.cu_seqlens_k.back() + *rc::gen::elementOf(std::vector<int64_t>{0, 0, 1, 3});
    s.out_pad_head = *rc::gen::elementOf(std::vector<int32_t>{0, 0, 1, 4});
    s.out_pad_token = *rc::gen::elementOf(std::vector<int32_t>{0, 0, 1, 2, 3, 8});  // odd token strides too
    s.out_seed = *rc::gen::arbitrary<uint64_t>();
    s.out_offset = *rc::gen::elementOf(std::vector<int32_t>{0, 0, 0, 1, 3, 8});  // 2-byte aligned bases only
    s.threads = *gen_threads();
    return s;
  });
}

rc::Gen<KvStepScenario> gen_kv_step_scenario() {
  return rc::gen::exec([] {
    KvStepScenario s;
    s.cache = *gen_kv_cache_shape();
    const int32_t bs = s.cache.block_size;
    const int64_t row_elems = int64_t{s.cache.num_kv_heads} * s.cache.head_dim;
    int64_t budget = std::clamp<int64_t>((int64_t{1} << 16) / row_elems, 1, 160);
    const int num_seqs = *rc::gen::inRange(1, 5);
    s.decode = *rc::gen::elementOf(std::vector<bool>{false, false, false, true});
    int64_t blocks = 0;
    for (int i = 0; i < num_seqs; ++i) {
      const int32_t lo = s.decode ? 1 : 0;
      const int32_t len = budget <= lo ? lo : *rc::gen::inRange<int32_t>(lo, static_cast<int32_t>(std::min<int64_t>(budget, 3 * int64_t{bs})) + 1);
      budget -= len;
      const int mode = s.decode ? 3 : *rc::gen::inRange(0, 4);  // no hit, whole blocks cached, a chunk, decode-like
      int32_t cached = 0;
      if (mode == 1) cached = len / bs * bs;
      if (mode == 2) cached = len == 0 ? 0 : *rc::gen::inRange<int32_t>(0, len + 1);
      if (mode == 3) cached = std::max(0, len - 1);
      s.num_tokens.push_back(len);
      s.num_cached.push_back(cached);
      blocks += (len + bs - 1) / bs;
    }
    // Distinct physical blocks for all sequences, shuffled (paged: non-contiguous).
    const int64_t per_block = int64_t{bs} * s.cache.num_kv_heads * (s.cache.head_dim + s.cache.pad_head + s.cache.pad_token) + s.cache.pad_page;
    const int64_t room = std::max<int64_t>(1, kMaxKvCacheElements / per_block);
    s.cache.num_blocks = static_cast<int32_t>(std::max<int64_t>(1, std::max(blocks, std::min<int64_t>(room, blocks + 2))));
    SplitMix64 rng{*rc::gen::arbitrary<uint64_t>()};
    const std::vector<int32_t> pool = shuffled(rng, s.cache.num_blocks, s.cache.num_blocks);
    size_t next = 0;
    for (int i = 0; i < num_seqs; ++i) {
      std::vector<int32_t> t;
      for (int64_t j = 0; j * bs < s.num_tokens[static_cast<size_t>(i)]; ++j) t.push_back(pool[next++]);
      if (rng.next() % 2) t.push_back(-1);  // a -1 tail no token needs
      s.block_tables.push_back(t);
    }
    s.key_dtype = gen_model_dtype(s.cache.dtype);
    s.value_dtype = gen_model_dtype(s.cache.dtype);
    s.graph_padding = *rc::gen::elementOf(std::vector<int32_t>{0, 0, 1, 3});
    s.value_seed = *rc::gen::arbitrary<uint64_t>();
    return s;
  });
}

}  // namespace kvcheck::props
