#include "properties/ops/kv/kv_harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "impl/kv_paged_layout.h"
#include "properties/classes.h"
#include "properties/diff.h"
#include "properties/gen/splitmix.h"
#include "reference/gather_kv.h"
#include "reference/kv_layout.h"
#include "reference/kv_numerics.h"
#include "reference/numerics.h"
#include "reference/store_kv.h"

namespace kvcheck::props {
namespace {

constexpr uint8_t kCanary = KVCache::kCanary;  // the canary byte of every harness buffer

int64_t elem_bytes(KvDtype d) { return (d == KvDtype::kBF16 || d == KvDtype::kFP16) ? 2 : 1; }
// Bytes of `elements` elements (e2m1: two a byte; its layouts' extents are even).
int64_t to_bytes(KvDtype d, int64_t elements) { return d == KvDtype::kE2M1 ? (elements + 1) / 2 : elements * elem_bytes(d); }
int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

int64_t span_of(const KvCacheLayout& l) {
  return (l.num_blocks - 1) * l.stride_page + int64_t{l.block_size - 1} * l.stride_token +
         int64_t{l.num_kv_heads - 1} * l.stride_head + l.head_dim;
}

// Greedy decode of an element offset (SPEC §7.2 views are nested): false when it is
// not an element of the view.
bool decode_element(const KvCacheLayout& l, int64_t e, int64_t out[4]) {
  if (e < 0) return false;
  struct Ax { int64_t stride, extent; int idx; } ax[3] = {
      {l.stride_page, l.num_blocks, 0}, {l.stride_token, l.block_size, 1}, {l.stride_head, l.num_kv_heads, 2}};
  std::sort(std::begin(ax), std::end(ax), [](const Ax& a, const Ax& b) { return a.stride > b.stride; });
  for (const Ax& a : ax) {
    int64_t i = a.stride == 0 ? 0 : std::min(e / a.stride, a.extent - 1);
    out[a.idx] = i;
    e -= i * a.stride;
  }
  out[3] = e;
  return e < l.head_dim;
}

}  // namespace

KvCacheLayout kv_layout_of(const KvCacheShape& s) {
  KvCacheLayout l{s.dtype, s.num_blocks, s.block_size, s.num_kv_heads, s.head_dim, 0, 0, 0};
  const int64_t d = s.head_dim, h = s.num_kv_heads, bs = s.block_size;
  if (s.order == KvHeadLayout::kNHD) {
    l.stride_head = d + s.pad_head;
    l.stride_token = h * l.stride_head + s.pad_token;
    l.stride_page = bs * l.stride_token + s.pad_page;
  } else {
    l.stride_token = d + s.pad_token;
    l.stride_head = bs * l.stride_token + s.pad_head;
    l.stride_page = h * l.stride_head + s.pad_page;
  }
  if (s.alloc == KvAlloc::kFlashInfer) l.stride_page *= 2;
  if (s.alloc == KvAlloc::kLayerPages) l.stride_page *= 2 * int64_t{s.num_layers};
  // vLLM's NVFP4 page [K data | K scales | V data | V scales]: the data page of bs*H*D
  // elements, then bs*H*D/16 scale bytes (= bs*H*D/8 elements' worth), twice.
  if (s.alloc == KvAlloc::kNvfp4Pages) l.stride_page = 2 * (l.stride_page + bs * h * d / 8);
  return l;
}

KvBuffers::KvBuffers(const KvCacheShape& s)
    : shape(s), layout(kv_layout_of(s)), bytes(static_cast<size_t>(place() + 2 * kGuardBytes)) {
  fill_pattern(bytes.span(), s.fill_seed);
  std::memset(bytes.data(), kCanary, static_cast<size_t>(kGuardBytes));
  std::memset(bytes.data() + bytes.size() - kGuardBytes, kCanary, static_cast<size_t>(kGuardBytes));
}

KvBuffers::KvBuffers(const KvBuffers& o)
    : shape(o.shape),
      layout(o.layout),
      body_bytes(o.body_bytes),
      k_offset(o.k_offset),
      v_offset(o.v_offset),
      k_capacity(o.k_capacity),
      v_capacity(o.v_capacity),
      k_sf_offset(o.k_sf_offset),
      v_sf_offset(o.v_sf_offset),
      k_sf_capacity(o.k_sf_capacity),
      v_sf_capacity(o.v_sf_capacity),
      sf(o.sf),
      bytes(o.bytes.clone()) {}

int64_t KvBuffers::place() {
  const KvCacheShape& s = shape;
  const KvDtype dt = s.dtype;
  const int64_t span = span_of(layout);
  const auto B = [dt](int64_t elements) { return to_bytes(dt, elements); };
  const auto E = [dt](int64_t bytes) { return dt == KvDtype::kE2M1 ? 2 * bytes : bytes / elem_bytes(dt); };
  switch (s.alloc) {
    case KvAlloc::kSeparate:
      v_offset = (B(span) + 64 + 255) / 256 * 256;  // a 64+ byte gap; V as aligned as K (kv_alignment <= 256)
      body_bytes = v_offset + B(span);
      k_capacity = v_capacity = span;
      break;
    case KvAlloc::kNanoVllm: {
      const int64_t layer = s.num_blocks * layout.stride_page;  // elements per [layer] slice
      const int64_t total = 2 * s.num_layers * layer;
      k_offset = B(s.layer * layer);
      v_offset = B((s.num_layers + s.layer) * layer);
      body_bytes = B(total);
      k_capacity = total - E(k_offset);
      v_capacity = total - E(v_offset);
      break;
    }
    case KvAlloc::kFlashInfer: {
      const int64_t total = s.num_blocks * layout.stride_page;
      v_offset = B(layout.stride_page / 2);
      body_bytes = B(total);
      k_capacity = total;
      v_capacity = total - layout.stride_page / 2;
      break;
    }
    case KvAlloc::kLayerPages: {
      const int64_t page = layout.stride_page / (2 * int64_t{s.num_layers});  // one layer's K (or V) page
      const int64_t total = s.num_blocks * layout.stride_page;
      k_offset = B(2 * s.layer * page);
      v_offset = B((2 * s.layer + 1) * page);
      body_bytes = B(total);
      k_capacity = total - E(k_offset);
      v_capacity = total - E(v_offset);
      break;
    }
    case KvAlloc::kNvfp4Pages: {  // e2m1 only: [K data | K scales | V data | V scales] per page
      const int64_t data = B(int64_t{s.block_size} * s.num_kv_heads * s.head_dim);
      const int64_t scales = int64_t{s.block_size} * s.num_kv_heads * (s.head_dim / 16);
      const int64_t page = B(layout.stride_page);
      k_offset = 0;
      k_sf_offset = data;
      v_offset = data + scales;
      v_sf_offset = 2 * data + scales;
      body_bytes = s.num_blocks * page;
      k_capacity = E(body_bytes);
      v_capacity = E(body_bytes - v_offset);
      k_sf_capacity = body_bytes - k_sf_offset;
      v_sf_capacity = body_bytes - v_sf_offset;
      break;
    }
  }
  if (dt == KvDtype::kE2M1) {
    // SPEC §7.9's scale caches: dense [blocks][tokens][H][S] (NHD) or [blocks][H][tokens][S]
    // (HND; interleave4 tiles always are), in vLLM's pages or after the data.
    const int64_t groups = s.head_dim / 16, bs = s.block_size, h = s.num_kv_heads;
    const bool head_major = s.order == KvHeadLayout::kHND || s.sf_layout == KvSfLayout::kInterleave4;
    sf.layout = s.sf_layout;
    sf.stride_token = head_major ? groups : h * groups;
    sf.stride_head = head_major ? bs * groups : groups;
    sf.stride_page = bs * h * groups;
    if (s.alloc == KvAlloc::kNvfp4Pages) {
      sf.stride_page = B(layout.stride_page);
    } else {
      const int64_t sf_span = s.num_blocks * sf.stride_page;
      k_sf_offset = round_up(body_bytes + 64, 256);
      v_sf_offset = round_up(k_sf_offset + sf_span + 64, 256);
      body_bytes = v_sf_offset + sf_span;
      k_sf_capacity = v_sf_capacity = sf_span;
    }
    if (s.sf_fault == KvSfFault::kKSfIntoData && k_sf_offset > 0) {  // the last data byte of each page too
      k_sf_offset -= 1;
      k_sf_capacity += 1;
    }
    if (s.sf_fault == KvSfFault::kShortKSf || s.sf_fault == KvSfFault::kShortVSf) {  // one byte short of the span
      const int64_t tail = s.sf_layout == KvSfLayout::kInterleave4
                               ? (h - 1) * sf.stride_head + bs * groups
                               : (bs - 1) * sf.stride_token + (h - 1) * sf.stride_head + groups;
      (s.sf_fault == KvSfFault::kShortKSf ? k_sf_capacity : v_sf_capacity) = (s.num_blocks - 1) * sf.stride_page + tail - 1;
    }
  }
  if (s.capacity_cut > 0) k_capacity = span - s.capacity_cut;
  return body_bytes;
}

KvCacheView KvBuffers::view() {
  KvCacheView v{body() + k_offset, k_capacity, body() + v_offset, v_capacity, layout,
                {shape.scale_kind, shape.k_scale, shape.v_scale, shape.recipe}, nullptr, 0, nullptr, 0, {}};
  if (shape.dtype == KvDtype::kE2M1) {
    v.k_sf = shape.sf_fault == KvSfFault::kNullKSf ? nullptr : body() + k_sf_offset;
    v.k_sf_capacity = k_sf_capacity;
    v.v_sf = shape.sf_fault == KvSfFault::kNullVSf   ? nullptr
             : shape.sf_fault == KvSfFault::kVSfOnKSf ? v.k_sf
                                                      : body() + v_sf_offset;
    v.v_sf_capacity = v_sf_capacity;
    v.sf = sf;
  }
  return v;
}

ConstKvCacheView KvBuffers::view() const { return const_cast<KvBuffers*>(this)->view(); }

bool KvBuffers::guards_intact() const {
  // Two memcmps against one canary band: no per-byte loop for ASan and the coverage
  // hooks to instrument (it was 8 % of fuzz_store_kv's time).
  static const std::vector<uint8_t> band(static_cast<size_t>(kGuardBytes), kCanary);
  return std::memcmp(bytes.data(), band.data(), band.size()) == 0 &&
         std::memcmp(bytes.data() + bytes.size() - band.size(), band.data(), band.size()) == 0;
}

namespace {

// Output row strides of s (elements): head, token.
int64_t out_head_stride(const GatherKvScenario& s) { return int64_t{s.cache.head_dim} + s.out_pad_head; }
int64_t out_token_stride(const GatherKvScenario& s, int side) {
  return int64_t{s.cache.num_kv_heads} * out_head_stride(s) + s.pad_token_of(side);
}
int64_t out_offset_bytes(const GatherKvScenario& s) { return 2 * int64_t{std::max(s.out_offset, 0)}; }
size_t out_buffer_bytes(const GatherKvScenario& s, int side) {
  return static_cast<size_t>(out_offset_bytes(s) +
                             std::max<int64_t>(s.rows_of(side), 0) * std::max<int64_t>(out_token_stride(s, side), 0) * 2 +
                             64);
}

}  // namespace

KvOutBuffers::KvOutBuffers(const GatherKvScenario& s)
    : offset_bytes(out_offset_bytes(s)), k(out_buffer_bytes(s, kKvSideK)), v(out_buffer_bytes(s, kKvSideV)) {
  const int64_t hs = out_head_stride(s);
  fill_pattern(k.span(), s.out_seed);
  fill_pattern(v.span(), s.out_seed ^ 0x5CA1E5u);
  out_k = {k.data() + offset_bytes, s.out_k_dtype, s.rows_of(kKvSideK), out_token_stride(s, kKvSideK), hs};
  out_v = {v.data() + offset_bytes, s.out_v_dtype, s.rows_of(kKvSideV), out_token_stride(s, kKvSideV), hs};
}

KvOutBuffers::KvOutBuffers(const KvOutBuffers& o)
    : offset_bytes(o.offset_bytes), k(o.k.clone()), v(o.v.clone()), out_k(o.out_k), out_v(o.out_v) {
  out_k.data = k.data() + offset_bytes;
  out_v.data = v.data() + offset_bytes;
}

namespace {

// The first (what, bytes) of `items` that is not a multiple of `alignment`, described.
std::string first_misaligned(std::initializer_list<std::pair<const char*, int64_t>> items, int64_t alignment) {
  if (alignment <= 1) return "";
  for (const auto& [what, bytes] : items)
    if (bytes % alignment != 0)
      return fmt::format("{} {} bytes is not a multiple of the declared kv_alignment {}", what, bytes, alignment);
  return "";
}

std::string cache_misalignment(const KvBuffers& b, int64_t a) {
  const auto address = [&](int64_t offset) { return static_cast<int64_t>(reinterpret_cast<uintptr_t>(b.body() + offset) % 256); };
  return first_misaligned({{"k_cache address (mod 256)", address(b.k_offset)},
                           {"v_cache address (mod 256)", address(b.v_offset)},
                           {"cache stride_page", to_bytes(b.layout.dtype, b.layout.stride_page)},
                           {"cache stride_token", to_bytes(b.layout.dtype, b.layout.stride_token)},
                           {"cache stride_head", to_bytes(b.layout.dtype, b.layout.stride_head)}},
                          a);
}

}  // namespace

std::string kv_misalignment(const StoreKvScenario& s, const KvBuffers& cache, int64_t a) {
  if (std::string m = cache_misalignment(cache, a); !m.empty()) return m;
  const int64_t kb = elem_bytes(s.key.dtype), vb = elem_bytes(s.value.dtype);
  return first_misaligned({{"key token_stride", s.key.token_stride * kb},
                           {"key head_stride", s.key.head_stride * kb},
                           {"value token_stride", s.value.token_stride * vb},
                           {"value head_stride", s.value.head_stride * vb}},
                          a);
}

std::string kv_misalignment(const GatherKvScenario& s, const KvBuffers& cache, int64_t a) {
  if (std::string m = cache_misalignment(cache, a); !m.empty()) return m;
  return first_misaligned({{"out_k / out_v offset", out_offset_bytes(s)},
                           {"out_k token_stride", out_token_stride(s, kKvSideK) * 2},
                           {"out_v token_stride", out_token_stride(s, kKvSideV) * 2},
                           {"out head_stride", out_head_stride(s) * 2}},
                          a);
}

KvRowsCopy::KvRowsCopy(const KvRows& r) : bytes(r.data.size() * sizeof(uint16_t)), in(kv_tokens(r)) {
  if (!r.data.empty()) std::memcpy(bytes.data(), r.data.data(), bytes.size());
  if (in.data) in.data = bytes.data();
}

KvTokensIn kv_tokens(const KvRows& r) {
  return {r.data.empty() ? nullptr : reinterpret_cast<const uint8_t*>(r.data.data()), r.dtype, r.rows,
          r.token_stride, r.head_stride};
}

std::optional<ErrorCode> run_store_kv(const Backend* backend, const StoreKvScenario& s, KvBuffers& b,
                                      std::string* what, std::string* inputs_written) {
  std::vector<int32_t> slots(s.slot_mapping);
  slots.insert(slots.end(), s.slot_tail.begin(), s.slot_tail.end());
  const std::span<const int32_t> slot_mapping(slots.data(), s.slot_mapping.size());
  int64_t valid = 0;
  for (int32_t slot : s.slot_mapping) valid += slot >= 0;
  // The rows as copies (the scenario is never written), checked after the call: key and
  // value are only read (vLLM's rotary_embedding rotates the key in place; a fused store
  // must not).
  const KvRowsCopy key(s.key), value(s.value);
  const KvTokensIn key_in = key.in, value_in = value.in;
  const std::optional<RopeArgs> rope = s.rope ? std::optional<RopeArgs>(rope_args(*s.rope)) : std::nullopt;
  std::optional<ErrorCode> code;
  try {
    const ScopedParallelism split(backend, s.threads, valid);
    if (backend)
      backend->store_kv(key_in, value_in, slot_mapping, b.view(), rope ? &*rope : nullptr);
    else
      ref::store_kv(key_in, value_in, slot_mapping, b.view(), rope ? &*rope : nullptr);
  } catch (const Error& e) {
    if (what) *what = e.what();
    code = e.code();
  }
  if (inputs_written) {
    inputs_written->clear();
    for (const auto& [now, was, name] : {std::tuple{&key.bytes, &s.key, "key"}, std::tuple{&value.bytes, &s.value, "value"}})
      if (!was->data.empty() && std::memcmp(now->data(), was->data.data(), now->size()) != 0) {
        *inputs_written = std::string(name) + " rows changed: they are only read";
        break;
      }
  }
  return code;
}

std::optional<ErrorCode> run_gather_kv(const Backend* backend, const GatherKvScenario& s, const KvBuffers& b,
                                       KvOutBuffers& out, std::string* what) {
  const int64_t total = s.cu_seqlens_k.empty() ? 0 : s.cu_seqlens_k.back();
  try {
    const ScopedParallelism split(backend, s.threads, total);
    const GatherKvArgs a{b.view(),     s.block_table,    s.max_blocks, s.cu_seqlens_k,
                         s.seq_starts, s.seq_start_unit, out.out_k,    out.out_v};
    if (backend)
      backend->gather_kv(a);
    else
      ref::gather_kv(a);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return std::nullopt;
}

void note_kv_classes(const StoreKvScenario& s) {
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  int64_t valid = 0, padding = 0;
  for (int32_t slot : s.slot_mapping) (slot >= 0 ? valid : padding) += 1;
  if (valid == 0) note_class("writes nothing");
  if (valid > 0 && padding > 0) note_class("padding rows");
  if (n > 0 && (s.key.rows > n || s.value.rows > n)) note_class("kv longer than slot_mapping");
  for (int32_t slot : s.slot_tail)
    if (slot >= 0 && n > 0) note_class("slot_mapping buffer goes on");
  if (is_fp8(s.cache.dtype)) note_class("fp8 cache");
  if (is_fp8(s.cache.dtype) && s.cache.recipe == KvRecipe::kSglang) note_class("fp8 recipe sglang");
  if (is_nvfp4(s.cache.dtype)) note_class(s.cache.sf_layout == KvSfLayout::kInterleave4 ? "nvfp4 interleave4 scales" : "nvfp4 linear scales");
  if (s.cache.alloc == KvAlloc::kNvfp4Pages) note_class("nvfp4 vLLM pages");
  if (s.cache.order == KvHeadLayout::kHND) note_class("HND");
  if (s.cache.alloc == KvAlloc::kLayerPages) note_class("other layers' pages between");
  note_slot_space_class(n, s.cache.num_slots(), s.cache.block_size);
  if (s.rope) {  // a fused RoPE of the key rows (docs/spec.md §8.4)
    note_class(s.rope->is_neox ? "rope neox" : "rope gpt-j");
    if (s.rope->rot_dim < s.cache.head_dim) note_class("rope on a sub-range of the head");
    if (s.rope->is_neox && s.rope->rope_offset == 0 && s.rope->rot_dim == s.cache.head_dim)
      note_class("rope neox over the whole head");
    if (s.key.dtype == KvDtype::kFP16) note_class("rope fp16 rows");
    for (int64_t i = 0; i < n; ++i)
      if (s.slot_mapping[static_cast<size_t>(i)] >= 0 && rope_cancels(*s.rope, i)) {
        note_class("rope with cancelling pairs");
        break;
      }
  }
}

void note_kv_classes(const GatherKvScenario& s) {
  const int64_t total = s.cu_seqlens_k.empty() ? 0 : s.cu_seqlens_k.back();
  if (s.cu_seqlens_k.size() <= 1) note_class("no sequence");
  if (total == 0) note_class("gathers nothing");
  const int64_t ts = int64_t{s.cache.num_kv_heads} * (s.cache.head_dim + s.out_pad_head) + s.out_pad_token;
  if (total > 0 && ts % 2 == 1) note_class("odd output stride");
  if (total > 0 && s.out_offset % 8 != 0) note_class("misaligned output base");
  if (is_fp8(s.cache.dtype)) note_class("fp8 cache");
  if (is_nvfp4(s.cache.dtype)) note_class(s.cache.sf_layout == KvSfLayout::kInterleave4 ? "nvfp4 interleave4 scales" : "nvfp4 linear scales");
  if (s.cache.alloc == KvAlloc::kLayerPages) note_class("other layers' pages between");
  const int64_t bs = s.cache.block_size;
  for (size_t i = 0; i + 1 < s.cu_seqlens_k.size(); ++i)
    if ((s.cu_seqlens_k[i + 1] - s.cu_seqlens_k[i]) % bs != 0) {
      note_class("partial last block");
      break;
    }
  if (!s.seq_starts.empty()) {
    note_class(s.seq_start_unit == SeqStartUnit::kBlock ? "seq_starts in blocks" : "seq_starts in tokens");
    for (int32_t v : s.seq_starts)
      if (v > 0 && v % bs != 0) {
        note_class("a start off its block boundary");
        break;
      }
  }
}

std::string show_kv_element(KvDtype dtype, const uint8_t* p) {
  switch (dtype) {
    case KvDtype::kBF16: {
      const uint16_t x = static_cast<uint16_t>(p[0] | (p[1] << 8));
      return fmt::format("bf16 0x{:04X} = {:g}", x, ref::bf16_to_float(x));
    }
    case KvDtype::kFP16: {
      const uint16_t x = static_cast<uint16_t>(p[0] | (p[1] << 8));
      return fmt::format("fp16 0x{:04X} = {:g}", x, ref::fp16_to_float(x));
    }
    case KvDtype::kE4M3: return fmt::format("e4m3 0x{:02X} = {:g}", p[0], ref::e4m3_to_float(p[0]));
    case KvDtype::kE5M2: return fmt::format("e5m2 0x{:02X} = {:g}", p[0], ref::e5m2_to_float(p[0]));
    case KvDtype::kE2M1:
      return fmt::format("e2m1 pair 0x{:02X} = ({:g}, {:g})", p[0], ref::e2m1_to_float(p[0] & 0x0F),
                         ref::e2m1_to_float(p[0] >> 4));
  }
  return "?";
}

namespace {

/// "K scale of block 1 token 3 head 0 group 2 (interleave4 byte 9 of its tile)" when
/// `offset` is a scale byte of an e2m1 cache (SPEC §7.9), else "".
std::string locate_sf_byte(const KvBuffers& b, int64_t offset) {
  if (b.layout.dtype != KvDtype::kE2M1) return "";
  const KvCacheLayout& l = b.layout;
  const ConstKvCacheView view = b.view();
  const bool inter = b.sf.layout == KvSfLayout::kInterleave4;
  for (const auto& [name, base] : {std::pair{"K", b.k_sf_offset}, std::pair{"V", b.v_sf_offset}})
    for (int64_t blk = 0; blk < l.num_blocks; ++blk)
      for (int64_t h = 0; h < l.num_kv_heads; ++h)
        for (int64_t t = 0; t < l.block_size; ++t)
          for (int64_t g = 0; g < l.head_dim / 16; ++g) {
            const int64_t at = ref::kv_sf_byte_offset(view, blk, t, h, g);  // the reference's formula
            if (base + at == offset)
              return fmt::format("{} scale of block {} token {} (slot {}) head {} group {} (elements {}-{}){}", name, blk,
                                 t, blk * l.block_size + t, h, g, 16 * g, 16 * g + 15,
                                 inter ? fmt::format(", interleave4 byte {} of its block/head tile",
                                                     at - blk * b.sf.stride_page - h * b.sf.stride_head)
                                       : "");
          }
  return "";
}

/// Where element data of K or V holds body byte `offset`: the byte's element start
/// (e2m1: the byte itself), or -1 for a byte outside every element (stride padding,
/// the K/V gap, another layer, a scale).
int64_t kv_element_start(const KvBuffers& b, int64_t offset) {
  const bool e2m1 = b.layout.dtype == KvDtype::kE2M1;  // two elements a byte
  const int64_t eb = e2m1 ? 1 : elem_bytes(b.layout.dtype);
  for (const int64_t base : {b.k_offset, b.v_offset}) {
    int64_t idx[4];
    const int64_t rel = offset - base;
    if (rel >= 0 && decode_element(b.layout, e2m1 ? 2 * rel : rel / eb, idx)) return offset - rel % eb;
  }
  return -1;
}

}  // namespace

std::string locate_kv_byte(const KvBuffers& b, int64_t offset) {
  if (std::string sf = locate_sf_byte(b, offset); !sf.empty()) return sf;
  if (b.layout.dtype == KvDtype::kE2M1) {  // two elements a byte
    for (const auto& [name, base] : {std::pair{"K", b.k_offset}, std::pair{"V", b.v_offset}}) {
      int64_t idx[4];
      const int64_t rel = offset - base;
      if (rel >= 0 && decode_element(b.layout, 2 * rel, idx))
        return fmt::format("{} block {} token {} (slot {}) head {} elements {} (low nibble) and {} (high)", name, idx[0],
                           idx[1], idx[0] * b.layout.block_size + idx[1], idx[2], idx[3], idx[3] + 1);
    }
    return "not an element or a scale of K or V (stride padding, a gap or another layer)";
  }
  const int64_t eb = elem_bytes(b.layout.dtype);
  const struct { const char* name; int64_t base; } sides[] = {{"K", b.k_offset}, {"V", b.v_offset}};
  for (const auto& s : sides) {
    int64_t idx[4];
    const int64_t rel = offset - s.base;
    if (rel >= 0 && rel % eb == 0 && decode_element(b.layout, rel / eb, idx))
      return fmt::format("{} block {} token {} (slot {}) head {} element {}", s.name, idx[0], idx[1],
                         idx[0] * b.layout.block_size + idx[1], idx[2], idx[3]);
    if (rel >= 0 && rel % eb != 0 && decode_element(b.layout, rel / eb, idx))
      return fmt::format("{} block {} token {} head {} element {} (byte {} of it)", s.name, idx[0], idx[1], idx[2],
                         idx[3], rel % eb);
  }
  return "not an element of K or V (stride padding, the K/V gap or another layer)";
}

std::string diff_kv_buffers(const KvBuffers& b, std::span<const uint8_t> expected, std::span<const uint8_t> actual) {
  const auto [first, count] = byte_diff(expected, actual);
  if (count == 0) return "";
  const int64_t off = static_cast<int64_t>(first) - kGuardBytes;
  std::string where;
  if (off < 0 || off >= b.body_bytes) {
    where = fmt::format("the canary band {} the buffer", off < 0 ? "before" : "after");
  } else {
    where = fmt::format("body byte {}: {}", off, locate_kv_byte(b, off));
  }
  // Raw bytes unless the byte is a value: a padding byte decoded as an element read as
  // a wrong element value (the adversarial review's cosmetic finding).
  std::string values = fmt::format("expected: 0x{:02X}\n  actual:   0x{:02X}", expected[first], actual[first]);
  const int64_t start = off >= 0 && off < b.body_bytes ? kv_element_start(b, off) : -1;
  if (b.layout.dtype == KvDtype::kE2M1 && off >= 0 && off < b.body_bytes && !locate_sf_byte(b, off).empty()) {
    const uint8_t e = expected[first], a = actual[first];
    values = fmt::format("expected: e4m3 0x{:02X} = {:g}\n  actual:   e4m3 0x{:02X} = {:g}", e, ref::e4m3_to_float(e),
                         a, ref::e4m3_to_float(a));
  } else if (start >= 0 && start + elem_bytes(b.layout.dtype) <= b.body_bytes) {
    values = fmt::format("expected: {}\n  actual:   {}",
                         show_kv_element(b.layout.dtype, expected.data() + kGuardBytes + start),
                         show_kv_element(b.layout.dtype, actual.data() + kGuardBytes + start));
  }
  return fmt::format("first differing byte at {} ({} bytes differ)\n  at:       {}\n  {}", off, count, where, values);
}

std::string diff_kv_out(const char* what, const KvTokensOut& o, int32_t num_kv_heads, int32_t head_dim,
                        std::span<const uint8_t> expected, std::span<const uint8_t> actual) {
  const auto [first, count] = byte_diff(expected, actual);
  if (count == 0) return "";
  const int64_t e = static_cast<int64_t>(first) / 2;
  const int64_t row = o.token_stride > 0 ? e / o.token_stride : 0;
  const int64_t in_row = e - row * o.token_stride;
  const int64_t head = o.head_stride > 0 ? std::min<int64_t>(in_row / o.head_stride, num_kv_heads - 1) : 0;
  const int64_t d = in_row - head * o.head_stride;
  std::string where;
  if (row >= o.rows) where = "past the last row (tail band)";
  else if (d >= head_dim) where = fmt::format("row {} padding after head {}", row, head);
  else where = fmt::format("row {} head {} element {}", row, head, d);
  const size_t start = first & ~size_t{1};
  return fmt::format("{}: first differing byte {} ({} bytes differ) at {}\n  expected: {}\n  actual:   {}", what, first,
                     count, where, show_kv_element(o.dtype, expected.data() + start),
                     show_kv_element(o.dtype, actual.data() + start));
}

}  // namespace kvcheck::props
