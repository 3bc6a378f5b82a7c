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
  const bool fp8 = cache_dtype == KvDtype::kE4M3 || cache_dtype == KvDtype::kE5M2 || cache_dtype == KvDtype::kE2M1;
  if (!model || (!fp8 && rows_dtype != cache_dtype))
    fail(ErrorCode::kInvalidArgument, std::string(what) + " dtype " + to_string(rows_dtype) +
                                          " does not go with a " + to_string(cache_dtype) + " cache");
}

void check_same_model_dtype(KvDtype k, KvDtype v, const char* what_k, const char* what_v) {
  if (k != v)
    fail(ErrorCode::kInvalidArgument, std::string(what_k) + " dtype " + to_string(k) + " differs from " + what_v +
                                          " dtype " + to_string(v));
}

namespace {

/// SPEC §7.9's rule for two views that may share pages: the byte intervals of the
/// two views' pages, reduced modulo the common page size, do not meet.
bool bytes_apart(uintptr_t a, int64_t a_page, int64_t a_window, int64_t a_span, uintptr_t b, int64_t b_page,
                 int64_t b_window, int64_t b_span) {
  if (a + static_cast<uintptr_t>(a_span) <= b || b + static_cast<uintptr_t>(b_span) <= a) return true;
  if (a_page != b_page || a_page < 1) return false;
  if (a_window > a_page || b_window > b_page) return false;
  const __int128 diff = static_cast<__int128>(b) - static_cast<__int128>(a);
  __int128 r = diff % a_page;
  if (r < 0) r += a_page;
  // b's window starts r bytes into a's page: it must start after a's window and end
  // inside the page.
  return r >= a_window && r + b_window <= a_page;
}

/// 1 + sum (extent-1)*stride.
int64_t span_of(const int64_t* strides, const int64_t* extents, int n) {
  __int128 s = 1;
  for (int i = 0; i < n; ++i) s += static_cast<__int128>(extents[i] - 1) * strides[i];
  return s > std::numeric_limits<int64_t>::max() ? -1 : static_cast<int64_t>(s);
}

void check_block_scales(const ConstKvCacheView& c) {
  const KvCacheLayout& l = c.layout;
  const KvSfGeometry& g = c.sf;
  const int64_t groups = l.head_dim / 16;
  if (g.layout != KvSfLayout::kLinear && g.layout != KvSfLayout::kInterleave4)
    fail(ErrorCode::kInvalidArgument, "unknown scale layout");
  if (g.stride_page < 0 || g.stride_token < 0 || g.stride_head < 0)
    fail(ErrorCode::kInvalidArgument, "a scale-cache stride is negative");
  const bool inter = g.layout == KvSfLayout::kInterleave4;
  if (inter && (l.block_size % 4 != 0 || g.stride_token != groups))
    fail(ErrorCode::kInvalidArgument, "interleave4 scales need block_size % 4 == 0 and a token stride of D/16");
  int64_t strides[4], extents[4];
  int n = 0;
  if (inter) {
    const int64_t st[3] = {g.stride_page, g.stride_head, 1}, ex[3] = {l.num_blocks, l.num_kv_heads, l.block_size * groups};
    for (int i = 0; i < 3; ++i) strides[n] = st[i], extents[n++] = ex[i];
  } else {
    const int64_t st[4] = {g.stride_page, g.stride_token, g.stride_head, 1};
    const int64_t ex[4] = {l.num_blocks, l.block_size, l.num_kv_heads, groups};
    for (int i = 0; i < 4; ++i) strides[n] = st[i], extents[n++] = ex[i];
  }
  if (!non_overlapping(strides, extents, n)) fail(ErrorCode::kInvalidArgument, "the scale-cache view overlaps itself");
  const int64_t span = span_of(strides, extents, n);
  if (span < 0) fail(ErrorCode::kInvalidArgument, "the scale-cache span overflows int64");
  if (c.k_sf == nullptr) fail(ErrorCode::kShapeMismatch, "k_sf is null");
  if (c.k_sf_capacity < span) fail(ErrorCode::kShapeMismatch, "k_sf buffer is smaller than the view");
  if (c.v_sf == nullptr) fail(ErrorCode::kShapeMismatch, "v_sf is null");
  if (c.v_sf_capacity < span) fail(ErrorCode::kShapeMismatch, "v_sf buffer is smaller than the view");
  extents[0] = 1;
  const int64_t sf_window = span_of(strides, extents, n);
  const int64_t dstr[4] = {l.stride_page, l.stride_token, l.stride_head, 1};
  int64_t dext[4] = {l.num_blocks, l.block_size, l.num_kv_heads, l.head_dim};
  const int64_t data_span = (span_of(dstr, dext, 4) + 1) / 2;
  dext[0] = 1;
  const int64_t data_window = (span_of(dstr, dext, 4) + 1) / 2;
  struct View { uintptr_t base; int64_t page, window, span; };
  const View v[4] = {{reinterpret_cast<uintptr_t>(c.k_sf), g.stride_page, sf_window, span},
                     {reinterpret_cast<uintptr_t>(c.v_sf), g.stride_page, sf_window, span},
                     {reinterpret_cast<uintptr_t>(c.k), l.stride_page / 2, data_window, data_span},
                     {reinterpret_cast<uintptr_t>(c.v), l.stride_page / 2, data_window, data_span}};
  for (int i = 0; i < 2; ++i)
    for (int j = i + 1; j < 4; ++j)
      if (!bytes_apart(v[i].base, v[i].page, v[i].window, v[i].span, v[j].base, v[j].page, v[j].window, v[j].span))
        fail(ErrorCode::kInvalidArgument, "a scale cache shares bytes with another cache view");
}

}  // namespace

int64_t kv_sf_byte_offset(const ConstKvCacheView& c, int64_t block, int64_t token, int64_t head, int64_t group) {
  const KvSfGeometry& g = c.sf;
  const int64_t groups = c.layout.head_dim / 16;
  const int64_t pos = g.layout == KvSfLayout::kInterleave4
                          ? (token / 4) * (4 * groups) + group * 4 + token % 4
                          : token * g.stride_token + group;
  return block * g.stride_page + head * g.stride_head + pos;
}

void check_kv_cache(const ConstKvCacheView& c) {
  const KvCacheLayout& l = c.layout;
  const bool e2m1 = l.dtype == KvDtype::kE2M1;
  if (l.num_blocks < 1 || l.block_size < 1 || l.num_kv_heads < 1 || l.head_dim < 1)
    fail(ErrorCode::kInvalidArgument, "num_blocks, block_size, num_kv_heads, head_dim must be >= 1");
  if (l.num_blocks * int64_t{l.block_size} > std::numeric_limits<int32_t>::max())
    fail(ErrorCode::kInvalidArgument, "num_blocks * block_size exceeds INT32_MAX");
  if (e2m1 && l.head_dim % 16 != 0) fail(ErrorCode::kInvalidArgument, "e2m1 needs head_dim % 16 == 0");
  if (e2m1 && (l.stride_page % 2 != 0 || l.stride_token % 2 != 0 || l.stride_head % 2 != 0))
    fail(ErrorCode::kInvalidArgument, "e2m1 needs even strides");
  if (l.stride_page < 0 || l.stride_token < 0 || l.stride_head < 0)
    fail(ErrorCode::kInvalidArgument, "a cache stride is negative");
  int64_t strides[5] = {l.stride_page, l.stride_token, l.stride_head, 1, 0};
  int64_t extents[5] = {l.num_blocks, l.block_size, l.num_kv_heads, l.head_dim, 1};
  if (!non_overlapping(strides, extents, 4))
    fail(ErrorCode::kInvalidArgument, "the cache view overlaps itself");
  // Bytes: 2 (bf16/fp16), 1 (FP8); e2m1 elements are half bytes, counted as
  // elements / 2 below.
  const int64_t bytes = (l.dtype == KvDtype::kBF16 || l.dtype == KvDtype::kFP16) ? 2 : 1;
  __int128 span = 1;
  for (int i = 0; i < 4; ++i) span += static_cast<__int128>(extents[i] - 1) * strides[i];
  const __int128 span_bytes = e2m1 ? (span + 1) / 2 : span * bytes;
  if (span_bytes > std::numeric_limits<int64_t>::max() || span * bytes > std::numeric_limits<int64_t>::max())
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
  if (gap >= span_bytes) {
    // fine
  } else {
    strides[4] = static_cast<int64_t>(e2m1 ? gap * 2 : gap / bytes);
    extents[4] = 2;
    if (gap == 0 || gap % bytes != 0 || !non_overlapping(strides, extents, 5))
      fail(ErrorCode::kInvalidArgument, "k_cache and v_cache share elements");
  }
  if (e2m1) check_block_scales(c);
  if (l.dtype == KvDtype::kBF16 || l.dtype == KvDtype::kFP16) return;  // scales ignored
  const KvScales& sc = c.scales;
  if (sc.kind == KvScaleKind::kNone) fail(ErrorCode::kInvalidArgument, "FP8 cache without scales");
  if (e2m1 && sc.kind != KvScaleKind::kPerTensor)
    fail(ErrorCode::kInvalidArgument, "an e2m1 cache takes one global scale per side");
  const size_t want = sc.kind == KvScaleKind::kPerHead ? static_cast<size_t>(l.num_kv_heads) : 1;
  if (sc.k_scale.size() != want) fail(ErrorCode::kShapeMismatch, "k_scale has the wrong size");
  if (sc.v_scale.size() != want) fail(ErrorCode::kShapeMismatch, "v_scale has the wrong size");
  const int32_t recipe = static_cast<int32_t>(sc.recipe);
  if (!e2m1 && (recipe < 0 || recipe > 2)) fail(ErrorCode::kInvalidArgument, "unknown recipe " + std::to_string(recipe));
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
