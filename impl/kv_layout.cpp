#include "impl/kv_layout.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "impl/error.h"
#include "impl/kv_rules.h"
#include "impl/validate_errors.h"

namespace kvcheck {
namespace {

using std::to_string;
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

[[noreturn]] void fail(ErrorCode code, const std::string& message) { throw Error(code, message); }

std::string geometry(const KvCacheLayout& l) {
  return to_string(l.dtype) + " cache of " + to_string(l.num_blocks) + " blocks x " +
         to_string(l.block_size) + " tokens x " + to_string(l.num_kv_heads) + " heads x " +
         to_string(l.head_dim) + ", strides page " + to_string(l.stride_page) + " token " +
         to_string(l.stride_token) + " head " + to_string(l.stride_head);
}

static_assert(static_cast<int>(KvDevDtype::kBF16) == static_cast<int>(KvDtype::kBF16) &&
                  static_cast<int>(KvDevDtype::kFP16) == static_cast<int>(KvDtype::kFP16) &&
                  static_cast<int>(KvDevDtype::kE4M3) == static_cast<int>(KvDtype::kE4M3) &&
                  static_cast<int>(KvDevDtype::kE5M2) == static_cast<int>(KvDtype::kE5M2) &&
                  static_cast<int>(KvDevDtype::kE2M1) == static_cast<int>(KvDtype::kE2M1),
              "KvDevDtype mirrors KvDtype: backends cast between them");

/// The page, token, head and element axes of cache `side`.
std::vector<KvAxis> axes_of(const KvPagedLayout& l, int side) {
  const KvStrides& s = l.strides(side);
  return {{s.stride_page, l.num_blocks}, {s.stride_token, l.block_size},
          {s.stride_head, l.num_kv_heads}, {1, l.head_dim}};
}

// 1 + sum (extent-1)*stride, or -1 on int64 overflow.
int64_t span_or_overflow(std::span<const KvAxis> axes) {
  int64_t span = 1;
  for (const KvAxis& a : axes) {
    if (a.extent <= 1) continue;
    if (a.stride != 0 && a.extent - 1 > (kInt64Max - span) / a.stride) return -1;
    span += (a.extent - 1) * a.stride;
  }
  return span;
}

bool aligned(const uint8_t* p, int64_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes) == 0;
}

}  // namespace

KvCacheLayout kv_dense_layout(KvDtype dtype, KvHeadLayout order, int64_t num_blocks,
                              int32_t block_size, int32_t num_kv_heads, int32_t head_dim) {
  KvCacheLayout l{dtype, num_blocks, block_size, num_kv_heads, head_dim, 0, 0, 0};
  const int64_t d = head_dim, h = num_kv_heads, bs = block_size;
  if (order == KvHeadLayout::kNHD) {
    l.stride_head = d;
    l.stride_token = h * d;
  } else {
    l.stride_token = d;
    l.stride_head = bs * d;
  }
  l.stride_page = bs * h * d;
  return l;
}

KvPagedLayout kv_paged_layout(const KvCacheLayout& l) {
  const KvStrides s{l.stride_page, l.stride_token, l.stride_head};
  return {static_cast<KvDevDtype>(l.dtype), l.num_blocks, l.block_size, l.num_kv_heads, l.head_dim, s, s};
}

int64_t kv_span_elements(const KvPagedLayout& l, int side) { return span_or_overflow(axes_of(l, side)); }

int64_t kv_span_elements(const KvCacheLayout& l) { return kv_span_elements(kv_paged_layout(l), kKvSideK); }

void validate_kv_layout(const KvCacheLayout& l) {
  if (l.num_blocks < 1 || l.block_size < 1 || l.num_kv_heads < 1 || l.head_dim < 1)
    fail(ErrorCode::kInvalidArgument,
         "num_blocks, block_size, num_kv_heads and head_dim must be >= 1: " + geometry(l));
  if (l.num_blocks > std::numeric_limits<int32_t>::max() / l.block_size)
    fail(ErrorCode::kInvalidArgument, "num_blocks * block_size must fit in int32 (slots are int32): " +
                                          geometry(l));
  // e2m1 (SPEC §7.9): whole 16-element scale groups, and every record on a byte.
  if (is_nvfp4(l.dtype) && l.head_dim % 16 != 0)
    fail(ErrorCode::kInvalidArgument, "an e2m1 cache needs head_dim a multiple of 16 (one e4m3 scale per 16 "
                                      "elements): " + geometry(l));
  if (is_nvfp4(l.dtype) && (l.stride_page % 2 != 0 || l.stride_token % 2 != 0 || l.stride_head % 2 != 0))
    fail(ErrorCode::kInvalidArgument, "an e2m1 cache needs even strides (two elements a byte, each head's "
                                      "record on a byte): " + geometry(l));
  // Each cache's strides, K's first (with one stride set, as here, V's repeat K's).
  const KvPagedLayout p = kv_paged_layout(l);
  for (const int side : {kKvSideK, kKvSideV}) {
    const KvStrides& s = p.strides(side);
    if (s.stride_page < 0 || s.stride_token < 0 || s.stride_head < 0)
      fail(ErrorCode::kInvalidArgument, "negative stride: " + geometry(l));
    const auto axes = axes_of(p, side);
    if (!kv_axes_non_overlapping(axes))
      fail(ErrorCode::kInvalidArgument,
           "the view overlaps itself (two (block, token, head, d) share an element; SPEC §7.2): " +
               geometry(l));
    const int64_t span = span_or_overflow(axes);
    if (span < 0 || span > kInt64Max / p.element_bytes())
      fail(ErrorCode::kInvalidArgument, "the view's byte span overflows int64: " + geometry(l));
  }
}

void validate_kv_cache(const ConstKvCacheView& c) {
  const KvCacheLayout& l = c.layout;
  validate_kv_layout(l);
  const KvPagedLayout p = kv_paged_layout(l);
  const int64_t bytes = p.element_bytes();
  const struct { const uint8_t* p; int64_t capacity; const char* name; int64_t span; } sides[] = {
      {c.k, c.k_capacity, "k_cache", kv_span_elements(p, kKvSideK)},
      {c.v, c.v_capacity, "v_cache", kv_span_elements(p, kKvSideV)}};
  for (const auto& s : sides) {
    if (s.p == nullptr) fail(ErrorCode::kShapeMismatch, std::string(s.name) + " is null");
    if (!aligned(s.p, bytes))
      fail(ErrorCode::kInvalidArgument, std::string(s.name) + " is not aligned to its " +
                                            to_string(bytes) + "-byte " + to_string(l.dtype) +
                                            " elements");
    if (s.capacity < s.span)
      fail(ErrorCode::kShapeMismatch, std::string(s.name) + " view spans " + to_string(s.span) +
                                          " elements but its buffer holds " +
                                          to_string(s.capacity) + ": " + geometry(l));
  }
  // K and V: disjoint byte ranges, or (same strides) one strided view with a K/V axis
  // (FlashInfer).
  const uintptr_t k = reinterpret_cast<uintptr_t>(c.k), v = reinterpret_cast<uintptr_t>(c.v);
  const uintptr_t lo = std::min(k, v), hi = std::max(k, v);
  const uintptr_t lo_span_bytes = static_cast<uintptr_t>(kv_bytes(l.dtype, k <= v ? sides[0].span : sides[1].span));
  const auto kv_axis_apart = [&] {  // the 5-axis view with K/V `distance` apart (in elements) overlaps nothing
    const uintptr_t distance = hi - lo;
    if (p.k != p.v || distance % static_cast<uintptr_t>(bytes) != 0 || distance == 0) return false;
    auto axes = axes_of(p, kKvSideK);
    axes.push_back({static_cast<int64_t>(is_nvfp4(l.dtype) ? distance * 2 : distance / static_cast<uintptr_t>(bytes)), 2});
    return kv_axes_non_overlapping(axes);
  };
  if (lo + lo_span_bytes > hi && !kv_axis_apart())
    fail(ErrorCode::kInvalidArgument, "k_cache and v_cache views share elements (v - k = " +
                                          std::to_string(static_cast<int64_t>(v - k)) +
                                          " bytes): " + geometry(l));
  validate_kv_sf(c);
}

namespace {

/// A view's bytes as pages (SPEC §7.9's sharing rule): base, page stride, the bytes one
/// page's records span (window) and the whole span.
struct PagedBytes {
  uintptr_t base;
  int64_t page, window, span;
  const char* name;
};

/// No byte in common: disjoint spans, or one page stride P with each page's window
/// inside P and the two windows apart modulo P (vLLM's [K data | K scales | V data | V
/// scales] pages).
bool share_no_byte(const PagedBytes& a, const PagedBytes& b) {
  const PagedBytes& lo = a.base <= b.base ? a : b;
  const PagedBytes& hi = a.base <= b.base ? b : a;
  if (lo.base + static_cast<uintptr_t>(lo.span) <= hi.base) return true;
  if (a.page != b.page || a.page <= 0 || a.window > a.page || b.window > b.page) return false;
  // b's window from a's, modulo the page; in 128 bits: a page stride near INT64_MAX (any
  // stride is valid on an axis of one block) must not wrap the sums.
  const __int128 diff = static_cast<__int128>(b.base) - static_cast<__int128>(a.base);
  const __int128 d = (diff % a.page + a.page) % a.page;
  return d >= a.window && d + b.window <= a.page;
}

}  // namespace

KvSfDevLayout kv_sf_layout(const KvCacheLayout& l, const KvSfGeometry& g) {
  return {g.layout == KvSfLayout::kInterleave4 ? 1 : 0, l.head_dim / 16, g.stride_page, g.stride_token, g.stride_head};
}

namespace {

/// The axes of a scale-cache view (SPEC §7.9), page axis first: page, token, head and
/// group (linear), or page, head and the dense block_size x S tile (interleave4).
std::vector<KvAxis> sf_axes_of(const KvCacheLayout& l, const KvSfGeometry& g) {
  const int64_t groups = l.head_dim / 16;
  if (g.layout == KvSfLayout::kInterleave4)
    return {{g.stride_page, l.num_blocks}, {g.stride_head, l.num_kv_heads}, {1, int64_t{l.block_size} * groups}};
  return {{g.stride_page, l.num_blocks}, {g.stride_token, l.block_size}, {g.stride_head, l.num_kv_heads}, {1, groups}};
}

}  // namespace

int64_t kv_sf_span_bytes(const KvCacheLayout& l, const KvSfGeometry& g) { return span_or_overflow(sf_axes_of(l, g)); }

void validate_kv_sf(const ConstKvCacheView& c) {
  const KvCacheLayout& l = c.layout;
  if (!is_nvfp4(l.dtype)) return;  // only e2m1 caches have scale caches
  const KvSfGeometry& g = c.sf;
  const int64_t groups = l.head_dim / 16;
  const std::string where = " (SPEC §7.9): scale caches of a " + geometry(l) + ", " + to_string(g.layout) +
                            " scales, strides page " + to_string(g.stride_page) + " token " +
                            to_string(g.stride_token) + " head " + to_string(g.stride_head) + " bytes";
  if (g.layout != KvSfLayout::kLinear && g.layout != KvSfLayout::kInterleave4)
    fail(ErrorCode::kInvalidArgument, "unknown scale layout " + to_string(g.layout) + where);
  if (g.stride_page < 0 || g.stride_token < 0 || g.stride_head < 0)
    fail(ErrorCode::kInvalidArgument, "a negative scale-cache stride" + where);
  if (g.layout == KvSfLayout::kInterleave4 && (l.block_size % 4 != 0 || g.stride_token != groups))
    fail(ErrorCode::kInvalidArgument, "interleave4 scales need block_size a multiple of 4 and a token stride of "
                                      "head_dim / 16 = " + to_string(groups) + " bytes" + where);
  const std::vector<KvAxis> axes = sf_axes_of(l, g);
  if (!kv_axes_non_overlapping(axes))
    fail(ErrorCode::kInvalidArgument, "the scale-cache view overlaps itself" + where);
  const int64_t span = span_or_overflow(axes);
  if (span < 0) fail(ErrorCode::kInvalidArgument, "the scale-cache view's span overflows int64" + where);
  const struct { const uint8_t* p; int64_t capacity; const char* name; } sides[] = {
      {c.k_sf, c.k_sf_capacity, "k_sf"}, {c.v_sf, c.v_sf_capacity, "v_sf"}};
  for (const auto& s : sides) {
    if (s.p == nullptr) fail(ErrorCode::kShapeMismatch, std::string(s.name) + " (the K/V block-scale cache) is null");
    if (s.capacity < span)
      fail(ErrorCode::kShapeMismatch, std::string(s.name) + " view spans " + to_string(span) +
                                          " bytes but its buffer holds " + to_string(s.capacity) + where);
  }
  // No byte in common: the scale caches with each other and with K's and V's data.
  auto one_page_sf = axes;
  one_page_sf[0].extent = 1;
  const int64_t sf_window = span_or_overflow(one_page_sf);
  const KvPagedLayout p = kv_paged_layout(l);
  auto one_page = axes_of(p, kKvSideK);
  one_page[0].extent = 1;
  const int64_t data_window = kv_bytes(l.dtype, span_or_overflow(one_page));
  const int64_t data_span = kv_bytes(l.dtype, kv_span_elements(p, kKvSideK));
  const PagedBytes views[] = {
      {reinterpret_cast<uintptr_t>(c.k_sf), g.stride_page, sf_window, span, "k_sf"},
      {reinterpret_cast<uintptr_t>(c.v_sf), g.stride_page, sf_window, span, "v_sf"},
      {reinterpret_cast<uintptr_t>(c.k), l.stride_page / 2, data_window, data_span, "k_cache"},
      {reinterpret_cast<uintptr_t>(c.v), l.stride_page / 2, data_window, data_span, "v_cache"}};
  for (int i = 0; i < 2; ++i)
    for (int j = i + 1; j < 4; ++j)
      if (!share_no_byte(views[i], views[j]))
        fail(ErrorCode::kInvalidArgument, std::string(views[i].name) + " and " + views[j].name +
                                              " share bytes (" + views[j].name + " - " + views[i].name + " = " +
                                              std::to_string(static_cast<int64_t>(views[j].base - views[i].base)) +
                                              " bytes)" + where);
}

void validate_kv_scales_shape(const KvCacheLayout& l, const KvScales& s) {
  if (!is_quantized_kv(l.dtype)) return;  // bf16/fp16 caches ignore scales (SPEC §7.3)
  if (is_nvfp4(l.dtype) && s.kind != KvScaleKind::kPerTensor)
    fail(ErrorCode::kInvalidArgument, "an e2m1 cache needs one global decode scale per side (k_scale/v_scale "
                                      "per-tensor, SPEC §7.9), not " + to_string(s.kind));
  if (s.kind == KvScaleKind::kNone)
    fail(ErrorCode::kInvalidArgument,
         "an " + to_string(l.dtype) + " cache needs k_scale/v_scale (per-tensor or per-head)");
  const size_t want = s.kind == KvScaleKind::kPerHead ? static_cast<size_t>(l.num_kv_heads) : 1;
  const struct { std::span<const float> v; const char* name; } sides[] = {
      {s.k_scale, "k_scale"}, {s.v_scale, "v_scale"}};
  for (const auto& side : sides)
    if (side.v.size() != want)
      fail(ErrorCode::kShapeMismatch, std::string(side.name) + " has " +
                                          to_string(side.v.size()) + " floats; " +
                                          to_string(s.kind) + " needs " + to_string(want));
  if (!is_nvfp4(l.dtype) && !is_kv_recipe(s.recipe))  // e2m1 has one recipe (§7.9)
    fail(ErrorCode::kInvalidArgument, "recipe " + to_string(static_cast<int64_t>(s.recipe)) +
                                          " is not a K/V recipe (spec, vllm, sglang: SPEC §7.3.1)");
}

void validate_kv_scales(const KvCacheLayout& l, const KvScales& s) {
  validate_kv_scales_shape(l, s);
  if (!is_quantized_kv(l.dtype)) return;
  const std::span<const float> values[] = {s.k_scale, s.v_scale};
  for (const int side : {kKvSideK, kKvSideV})
    for (size_t h = 0; h < values[side].size(); ++h)
      if (!kv_scale_ok(values[side][h])) throw kv_scale_value_error(side, static_cast<int64_t>(h), values[side][h]);
}

}  // namespace kvcheck
