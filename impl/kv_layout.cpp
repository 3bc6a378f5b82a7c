#include "impl/kv_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "impl/error.h"

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

std::vector<KvAxis> axes_of(const KvCacheLayout& l) {
  return {{l.stride_page, l.num_blocks}, {l.stride_token, l.block_size},
          {l.stride_head, l.num_kv_heads}, {1, l.head_dim}};
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

int64_t kv_span_elements(const KvCacheLayout& l) {
  const auto axes = axes_of(l);
  return span_or_overflow(axes);
}

bool kv_axes_non_overlapping(std::span<const KvAxis> axes) {
  std::vector<KvAxis> sorted(axes.begin(), axes.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const KvAxis& a, const KvAxis& b) { return a.stride < b.stride; });
  int64_t inner = 1;  // 1 + span of the axes before: the smallest stride the next may have
  for (const KvAxis& a : sorted) {
    if (a.extent <= 1) continue;
    if (a.stride < inner) return false;
    if (a.extent - 1 > (kInt64Max - inner) / a.stride) return false;  // overflows: reject
    inner += (a.extent - 1) * a.stride;
  }
  return true;
}

void validate_kv_layout(const KvCacheLayout& l) {
  if (l.num_blocks < 1 || l.block_size < 1 || l.num_kv_heads < 1 || l.head_dim < 1)
    fail(ErrorCode::kInvalidArgument,
         "num_blocks, block_size, num_kv_heads and head_dim must be >= 1: " + geometry(l));
  if (l.num_blocks > std::numeric_limits<int32_t>::max() / l.block_size)
    fail(ErrorCode::kInvalidArgument, "num_blocks * block_size must fit in int32 (slots are int32): " +
                                          geometry(l));
  if (l.stride_page < 0 || l.stride_token < 0 || l.stride_head < 0)
    fail(ErrorCode::kInvalidArgument, "negative stride: " + geometry(l));
  const auto axes = axes_of(l);
  if (!kv_axes_non_overlapping(axes))
    fail(ErrorCode::kInvalidArgument,
         "the view overlaps itself (two (block, token, head, d) share an element; SPEC §7.2): " +
             geometry(l));
  const int64_t span = span_or_overflow(axes);
  if (span < 0 || span > kInt64Max / kv_dtype_bytes(l.dtype))
    fail(ErrorCode::kInvalidArgument, "the view's byte span overflows int64: " + geometry(l));
}

void validate_kv_cache(const ConstKvCacheView& c) {
  const KvCacheLayout& l = c.layout;
  validate_kv_layout(l);
  const int64_t bytes = kv_dtype_bytes(l.dtype), span = kv_span_elements(l);
  const struct { const uint8_t* p; int64_t capacity; const char* name; } sides[] = {
      {c.k, c.k_capacity, "k_cache"}, {c.v, c.v_capacity, "v_cache"}};
  for (const auto& s : sides) {
    if (s.p == nullptr) fail(ErrorCode::kShapeMismatch, std::string(s.name) + " is null");
    if (!aligned(s.p, bytes))
      fail(ErrorCode::kInvalidArgument, std::string(s.name) + " is not aligned to its " +
                                            to_string(bytes) + "-byte " + to_string(l.dtype) +
                                            " elements");
    if (s.capacity < span)
      fail(ErrorCode::kShapeMismatch, std::string(s.name) + " view spans " + to_string(span) +
                                          " elements but its buffer holds " +
                                          to_string(s.capacity) + ": " + geometry(l));
  }
  // K and V: disjoint byte ranges, or one strided view with a K/V axis (FlashInfer).
  const uintptr_t k = reinterpret_cast<uintptr_t>(c.k), v = reinterpret_cast<uintptr_t>(c.v);
  const uintptr_t lo = std::min(k, v), hi = std::max(k, v);
  const uintptr_t span_bytes = static_cast<uintptr_t>(span * bytes);
  if (lo + span_bytes <= hi) return;
  const uintptr_t distance = hi - lo;
  if (distance % static_cast<uintptr_t>(bytes) == 0 && distance > 0) {
    auto axes = axes_of(l);
    axes.push_back({static_cast<int64_t>(distance / static_cast<uintptr_t>(bytes)), 2});
    if (kv_axes_non_overlapping(axes)) return;
  }
  fail(ErrorCode::kInvalidArgument, "k_cache and v_cache views share elements (v - k = " +
                                        std::to_string(static_cast<int64_t>(v - k)) +
                                        " bytes): " + geometry(l));
}

void validate_kv_scales(const KvCacheLayout& l, const KvScales& s) {
  if (!is_fp8(l.dtype)) return;  // bf16/fp16 caches ignore scales (SPEC §7.3)
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
  for (const auto& side : sides)
    for (size_t h = 0; h < side.v.size(); ++h)
      if (!(side.v[h] > 0.0f) || std::isinf(side.v[h]))
        fail(ErrorCode::kInvalidArgument, std::string(side.name) + "[" + to_string(h) + "] = " +
                                              std::to_string(side.v[h]) +
                                              ": a scale must be positive and finite");
}

}  // namespace kvcheck
