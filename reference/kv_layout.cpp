// SPEC §7.2 / §7.3 spelled out again (never via impl/kv_layout.h).
#include "reference/kv_layout.h"

#include <cmath>
#include <limits>
#include <string>

#include "impl/error.h"

namespace kvcheck::ref {
namespace {

using std::to_string;

void fail(ErrorCode code, const std::string& what) { throw Error(code, what); }

}  // namespace

int64_t kv_element_offset(const KvCacheLayout& l, int64_t block, int64_t token, int64_t head,
                          int64_t d) {
  return block * l.stride_page + token * l.stride_token + head * l.stride_head + d;
}

bool non_overlapping(const int64_t* strides, const int64_t* extents, int n) {
  // Selection order by stride; each axis must step past everything the smaller-stride
  // axes can reach. __int128 keeps the sums exact.
  bool used[5] = {false, false, false, false, false};
  __int128 reach = 0;  // largest offset the axes taken so far can reach
  for (int k = 0; k < n; ++k) {
    int pick = -1;
    for (int i = 0; i < n; ++i)
      if (!used[i] && (pick < 0 || strides[i] < strides[pick])) pick = i;
    used[pick] = true;
    if (extents[pick] <= 1) continue;
    if (strides[pick] <= reach) return false;
    reach += static_cast<__int128>(extents[pick] - 1) * strides[pick];
    if (reach > std::numeric_limits<int64_t>::max()) return false;
  }
  return true;
}

void check_model_dtype(KvDtype cache_dtype, KvDtype rows_dtype, const char* what) {
  const bool model = rows_dtype == KvDtype::kBF16 || rows_dtype == KvDtype::kFP16;
  const bool fp8 = cache_dtype == KvDtype::kE4M3 || cache_dtype == KvDtype::kE5M2;
  if (!model || (!fp8 && rows_dtype != cache_dtype))
    fail(ErrorCode::kInvalidArgument, std::string(what) + " dtype " + to_string(rows_dtype) +
                                          " does not go with a " + to_string(cache_dtype) + " cache");
}

void check_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v) {
  if (k != v)
    fail(ErrorCode::kInvalidArgument, std::string(what_k) + " dtype " + to_string(k) + " differs from " + what_v +
                                          " dtype " + to_string(v));
}

void check_kv_cache(const ConstKvCacheView& c) {
  const KvCacheLayout& l = c.layout;
  if (l.num_blocks < 1 || l.block_size < 1 || l.num_kv_heads < 1 || l.head_dim < 1)
    fail(ErrorCode::kInvalidArgument, "num_blocks, block_size, num_kv_heads, head_dim must be >= 1");
  if (l.num_blocks * int64_t{l.block_size} > std::numeric_limits<int32_t>::max())
    fail(ErrorCode::kInvalidArgument, "num_blocks * block_size exceeds INT32_MAX");
  if (l.stride_page < 0 || l.stride_token < 0 || l.stride_head < 0)
    fail(ErrorCode::kInvalidArgument, "a cache stride is negative");
  int64_t strides[5] = {l.stride_page, l.stride_token, l.stride_head, 1, 0};
  int64_t extents[5] = {l.num_blocks, l.block_size, l.num_kv_heads, l.head_dim, 1};
  if (!non_overlapping(strides, extents, 4))
    fail(ErrorCode::kInvalidArgument, "the cache view overlaps itself");
  const int64_t bytes = (l.dtype == KvDtype::kE4M3 || l.dtype == KvDtype::kE5M2) ? 1 : 2;
  __int128 span = 1;
  for (int i = 0; i < 4; ++i) span += static_cast<__int128>(extents[i] - 1) * strides[i];
  if (span * bytes > std::numeric_limits<int64_t>::max())
    fail(ErrorCode::kInvalidArgument, "the cache view's byte span overflows int64");
  const uint8_t* bases[2] = {c.k, c.v};
  const int64_t capacities[2] = {c.k_capacity, c.v_capacity};
  for (int s = 0; s < 2; ++s) {
    if (bases[s] == nullptr) fail(ErrorCode::kShapeMismatch, s ? "v_cache is null" : "k_cache is null");
    if (reinterpret_cast<uintptr_t>(bases[s]) % static_cast<uintptr_t>(bytes) != 0)
      fail(ErrorCode::kInvalidArgument, s ? "v_cache is misaligned" : "k_cache is misaligned");
    if (capacities[s] < span)
      fail(ErrorCode::kShapeMismatch, std::string(s ? "v_cache" : "k_cache") + " buffer of " +
                                          to_string(capacities[s]) + " elements is smaller than the view");
  }
  // K and V: no shared element. Disjoint byte ranges, or a 5th (K/V) axis.
  const __int128 k = static_cast<__int128>(reinterpret_cast<uintptr_t>(c.k));
  const __int128 v = static_cast<__int128>(reinterpret_cast<uintptr_t>(c.v));
  const __int128 gap = v > k ? v - k : k - v;
  if (gap >= span * bytes) {
    // fine
  } else {
    strides[4] = static_cast<int64_t>(gap / bytes);
    extents[4] = 2;
    if (gap == 0 || gap % bytes != 0 || !non_overlapping(strides, extents, 5))
      fail(ErrorCode::kInvalidArgument, "k_cache and v_cache share elements");
  }
  if (l.dtype != KvDtype::kE4M3 && l.dtype != KvDtype::kE5M2) return;  // scales ignored
  const KvScales& sc = c.scales;
  if (sc.kind == KvScaleKind::kNone) fail(ErrorCode::kInvalidArgument, "FP8 cache without scales");
  const size_t want = sc.kind == KvScaleKind::kPerHead ? static_cast<size_t>(l.num_kv_heads) : 1;
  if (sc.k_scale.size() != want) fail(ErrorCode::kShapeMismatch, "k_scale has the wrong size");
  if (sc.v_scale.size() != want) fail(ErrorCode::kShapeMismatch, "v_scale has the wrong size");
  const int32_t recipe = static_cast<int32_t>(sc.recipe);
  if (recipe < 0 || recipe > 2) fail(ErrorCode::kInvalidArgument, "unknown recipe " + std::to_string(recipe));
  for (size_t h = 0; h < want; ++h)
    if (!std::isfinite(sc.k_scale[h]) || sc.k_scale[h] <= 0)
      fail(ErrorCode::kInvalidArgument,
           "k_scale[" + to_string(h) + "] = " + std::to_string(sc.k_scale[h]) + " is not positive and finite");
  for (size_t h = 0; h < want; ++h)
    if (!std::isfinite(sc.v_scale[h]) || sc.v_scale[h] <= 0)
      fail(ErrorCode::kInvalidArgument,
           "v_scale[" + to_string(h) + "] = " + std::to_string(sc.v_scale[h]) + " is not positive and finite");
}

float head_scale(const KvScales& scales, bool is_v, int64_t h) {
  const std::span<const float> s = is_v ? scales.v_scale : scales.k_scale;
  return scales.kind == KvScaleKind::kPerHead ? s[static_cast<size_t>(h)] : s[0];
}

}  // namespace kvcheck::ref
