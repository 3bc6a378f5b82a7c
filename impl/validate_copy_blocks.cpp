// copy_blocks validation (SPEC §8.1). The view rule in closed form: with one stride S,
// block k of view (o1, b1) and block j of view (o2, b2) share a byte iff
// d - b1 < m*S < d + b2 for d = o2 - o1, m = k - j. The rule allows only m = 0 (a
// shared byte lies in the same block of both, so every copy moves it by the same
// (dst - src)*S): the views break it iff a nonzero m in [-(N-1), N-1] lies in that
// open interval.
#include "impl/validate_copy_blocks.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

namespace kvcheck {
namespace {

using std::to_string;

std::string view_name(std::span<const int64_t> views, size_t v) {
  return "views[" + to_string(v) + "] = [" + to_string(views[2 * v]) + ", " + to_string(views[2 * v + 1]) + "]";
}

std::string entry_name(int64_t p, int k, int64_t value) {
  return "block_mapping[" + to_string(p) + "][" + to_string(k) + "] = " + to_string(value);
}

int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a / b - (a % b != 0 && a < 0 ? 1 : 0);
}

}  // namespace

bool views_straddle(int64_t o1, int64_t b1, int64_t o2, int64_t b2, int64_t stride, int64_t n) {
  const int64_t d = o2 - o1;  // both offsets are inside the allocation: no overflow
  const int64_t lo = std::max(floor_div(d - b1, stride) + 1, -(n - 1));  // smallest m > (d - b1) / S
  const int64_t hi = std::min(-floor_div(-(d + b2), stride) - 1, n - 1);  // largest m < (d + b2) / S
  return lo <= hi && (lo != 0 || hi != 0);
}

namespace {

bool padding(int64_t src, int64_t dst) { return src == -1 || dst == -1; }

}  // namespace

Error copy_blocks_range_error(int64_t p, int k, int64_t value, int64_t num_blocks, const char* pool) {
  return Error(ErrorCode::kBlockOutOfRange, entry_name(p, k, value) + " is not in [0, " + pool +
                                                "num_blocks = " + to_string(num_blocks) + ")");
}

Error copy_blocks_duplicate_error(int64_t p, int64_t dst, int64_t q) {
  return Error(ErrorCode::kBlockConflict, entry_name(p, 1, dst) + ": block " + to_string(dst) +
                                              " is already the destination of block_mapping[" + to_string(q) + "]");
}

Error copy_blocks_source_error(int64_t p, int64_t dst, int64_t q) {
  return Error(ErrorCode::kBlockConflict, entry_name(p, 1, dst) + ": block " + to_string(dst) +
                                              " is also the source of block_mapping[" + to_string(q) + "]");
}

void validate_copy_blocks_shape(const CopyBlocksArgs& a) {
  const auto bad = [](const std::string& what) { throw Error(ErrorCode::kInvalidArgument, what); };
  if (a.size_bytes < 0) bad("size_bytes = " + to_string(a.size_bytes) + " < 0");
  if (a.num_blocks < 0) bad("num_blocks = " + to_string(a.num_blocks) + " < 0");
  if (a.block_stride < 1) bad("block_stride = " + to_string(a.block_stride) + " < 1");
  if (a.views.size() % 2 != 0) bad("views has " + to_string(a.views.size()) + " entries, not [num_views][2]");
  if (a.block_mapping.size() % 2 != 0)
    bad("block_mapping has " + to_string(a.block_mapping.size()) + " entries, not [num_pairs][2]");
  if (!a.views.empty() && a.views.data() == nullptr) bad("views is null");
  if (!a.block_mapping.empty() && a.block_mapping.data() == nullptr) bad("block_mapping is null");
  const std::span<const int64_t> views = a.views;
  const size_t n = views.size() / 2;
  for (size_t v = 0; v < n; ++v) {
    const int64_t offset = views[2 * v], bytes = views[2 * v + 1];
    if (offset < 0) bad(view_name(views, v) + ": offset < 0");
    if (bytes < 1 || bytes > a.block_stride)
      bad(view_name(views, v) + ": block_bytes not in [1, block_stride = " + to_string(a.block_stride) + "]");
    if (a.num_blocks == 0) continue;
    if (static_cast<__int128>(a.num_blocks - 1) * a.block_stride + offset + bytes > a.size_bytes)
      throw Error(ErrorCode::kShapeMismatch, view_name(views, v) + ": its last block ends past the allocation of " +
                                                 to_string(a.size_bytes) + " bytes");
    if (a.base == nullptr) throw Error(ErrorCode::kShapeMismatch, "the cache is null");
  }
  if (a.num_blocks == 0) return;
  for (size_t w = 1; w < n; ++w)
    for (size_t v = 0; v < w; ++v)
      if (views_straddle(views[2 * v], views[2 * v + 1], views[2 * w], views[2 * w + 1], a.block_stride, a.num_blocks))
        bad(view_name(views, w) + " and " + view_name(views, v) + " put a byte in different blocks");
}

void validate_copy_blocks_mapping(const CopyBlocksArgs& a) {
  const std::span<const int64_t> m = a.block_mapping;
  const int64_t pairs = static_cast<int64_t>(m.size()) / 2;
  if (pairs == 0 || a.views.empty()) return;  // no views: no entry is read (SPEC §8.1)
  const auto in_range = [&](int64_t b) { return b >= 0 && b < a.num_blocks; };
  // (block, pair) of every in-range source and destination, sorted: a block's first
  // entry is the first pair copying from / writing it. O(pairs log pairs) and no table
  // of num_blocks entries, however large num_blocks is.
  std::vector<std::pair<int64_t, int64_t>> from, to;
  for (int64_t p = 0; p < pairs; ++p) {
    if (padding(m[2 * p], m[2 * p + 1])) continue;
    if (in_range(m[2 * p])) from.emplace_back(m[2 * p], p);
    if (in_range(m[2 * p + 1])) to.emplace_back(m[2 * p + 1], p);
  }
  std::sort(from.begin(), from.end());
  std::sort(to.begin(), to.end());
  const auto first = [](const std::vector<std::pair<int64_t, int64_t>>& v, int64_t block) -> int64_t {
    const auto it = std::lower_bound(v.begin(), v.end(), std::pair<int64_t, int64_t>{block, INT64_MIN});
    return it != v.end() && it->first == block ? it->second : -1;
  };
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t src = m[2 * p], dst = m[2 * p + 1];
    if (padding(src, dst)) continue;
    if (!in_range(src)) throw copy_blocks_range_error(p, 0, src, a.num_blocks);
    if (!in_range(dst)) throw copy_blocks_range_error(p, 1, dst, a.num_blocks);
    const int64_t writer = first(to, dst);
    if (writer != p) throw copy_blocks_duplicate_error(p, dst, writer);
    const int64_t reader = first(from, dst);
    if (reader >= 0) throw copy_blocks_source_error(p, dst, reader);
  }
}

std::vector<std::pair<int64_t, int64_t>> merge_aliased_views(std::span<const int64_t> views) {
  // Valid views share bytes only within one block: their block-0 extents overlap
  // exactly when some block of theirs does, and the union of overlapping extents is
  // the bytes of that block they cover.
  std::vector<std::pair<int64_t, int64_t>> extents;  // [begin, end) of block 0
  for (size_t v = 0; v + 1 < views.size(); v += 2) extents.emplace_back(views[v], views[v] + views[v + 1]);
  std::sort(extents.begin(), extents.end());
  std::vector<std::pair<int64_t, int64_t>> out;  // (offset, bytes)
  for (const auto& [begin, end] : extents) {
    if (!out.empty() && begin < out.back().first + out.back().second)
      out.back().second = std::max(out.back().second, end - out.back().first);
    else
      out.emplace_back(begin, end - begin);
  }
  return out;
}

void validate_copy_blocks(const CopyBlocksArgs& a) {
  validate_copy_blocks_shape(a);
  validate_copy_blocks_mapping(a);
}

}  // namespace kvcheck
