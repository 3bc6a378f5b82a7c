// swap_blocks validation (docs/spec.md §8.3). The dst rule is copy_blocks' (SPEC §8.1)
// on dst's stride, in closed form (views_straddle), plus one: views sharing a dst byte
// in the same block must fill it from the same src byte, i.e. have the same
// dst_offset - src_offset. Then the result is independent of the order of the copies.
#include "impl/validate_swap_blocks.h"

#include <algorithm>
#include <climits>
#include <string>
#include <utility>

#include "impl/error.h"
#include "impl/validate_copy_blocks.h"

namespace kvcheck {
namespace {

using std::to_string;

std::string view_name(std::span<const int64_t> views, size_t v) {
  return "views[" + to_string(v) + "] = [" + to_string(views[3 * v]) + ", " + to_string(views[3 * v + 1]) + ", " +
         to_string(views[3 * v + 2]) + "]";
}

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorCode::kInvalidArgument, what); }

void check_pool(const BlockPool& p, const char* name) {
  const std::string n = name;
  if (p.size_bytes < 0) bad(n + ".size_bytes = " + to_string(p.size_bytes) + " < 0");
  if (p.num_blocks < 0) bad(n + ".num_blocks = " + to_string(p.num_blocks) + " < 0");
  if (p.block_stride < 1) bad(n + ".block_stride = " + to_string(p.block_stride) + " < 1");
}

/// The view's blocks in one pool: past its allocation, or a null pool.
void check_extent(std::span<const int64_t> views, size_t v, int64_t offset, const BlockPool& p, const void* base,
                  const char* name) {
  const int64_t bytes = views[3 * v + 2];
  if (p.num_blocks == 0) return;
  if (static_cast<__int128>(p.num_blocks - 1) * p.block_stride + offset + bytes > p.size_bytes)
    throw Error(ErrorCode::kShapeMismatch, view_name(views, v) + ": its last block ends past " + name +
                                               "'s allocation of " + to_string(p.size_bytes) + " bytes");
  if (base == nullptr) throw Error(ErrorCode::kShapeMismatch, std::string(name) + " is null");
}

bool padding(int64_t src, int64_t dst) { return src == -1 || dst == -1; }

}  // namespace

void validate_swap_blocks_shape(const SwapBlocksArgs& a) {
  check_pool(a.src_pool, "src");
  check_pool(a.dst_pool, "dst");
  if (a.views.size() % 3 != 0) bad("views has " + to_string(a.views.size()) + " entries, not [num_views][3]");
  if (a.block_mapping.size() % 2 != 0)
    bad("block_mapping has " + to_string(a.block_mapping.size()) + " entries, not [num_pairs][2]");
  if (!a.views.empty() && a.views.data() == nullptr) bad("views is null");
  if (!a.block_mapping.empty() && a.block_mapping.data() == nullptr) bad("block_mapping is null");
  const std::span<const int64_t> views = a.views;
  const size_t n = views.size() / 3;
  for (size_t v = 0; v < n; ++v) {
    const int64_t so = views[3 * v], d = views[3 * v + 1], bytes = views[3 * v + 2];
    if (so < 0) bad(view_name(views, v) + ": src_offset < 0");
    if (d < 0) bad(view_name(views, v) + ": dst_offset < 0");
    if (bytes < 1) bad(view_name(views, v) + ": block_bytes < 1");
    if (bytes > a.src_pool.block_stride)
      bad(view_name(views, v) + ": block_bytes > src.block_stride = " + to_string(a.src_pool.block_stride));
    if (bytes > a.dst_pool.block_stride)
      bad(view_name(views, v) + ": block_bytes > dst.block_stride = " + to_string(a.dst_pool.block_stride));
    check_extent(views, v, so, a.src_pool, a.src, "src");
    check_extent(views, v, d, a.dst_pool, a.dst, "dst");
  }
  if (n == 0) return;
  // Addresses compared as integers (two allocations: no pointer order is defined), wide
  // enough that an allocation claimed to end past the address space cannot wrap.
  const auto s0 = reinterpret_cast<uintptr_t>(a.src), d0 = reinterpret_cast<uintptr_t>(a.dst);
  if (a.src && a.dst && a.src_pool.size_bytes > 0 && a.dst_pool.size_bytes > 0 &&
      static_cast<__int128>(s0) < static_cast<__int128>(d0) + a.dst_pool.size_bytes &&
      static_cast<__int128>(d0) < static_cast<__int128>(s0) + a.src_pool.size_bytes)
    bad(d0 >= s0 ? "dst starts " + to_string(d0 - s0) + " bytes into src: the allocations overlap (copy_blocks "
                   "moves blocks within one allocation)"
                 : "src starts " + to_string(s0 - d0) + " bytes into dst: the allocations overlap (copy_blocks "
                   "moves blocks within one allocation)");
  if (a.dst_pool.num_blocks == 0) return;
  for (size_t w = 1; w < n; ++w)
    for (size_t v = 0; v < w; ++v) {
      const int64_t ov = views[3 * v + 1], bv = views[3 * v + 2], ow = views[3 * w + 1], bw = views[3 * w + 2];
      if (views_straddle(ov, bv, ow, bw, a.dst_pool.block_stride, a.dst_pool.num_blocks))
        bad(view_name(views, w) + " and " + view_name(views, v) + " put a byte of dst in different blocks");
      const bool share = ow < ov + bv && ov < ow + bw;  // in block 0, hence in every block
      if (share && ow - views[3 * w] != ov - views[3 * v])
        bad(view_name(views, w) + " and " + view_name(views, v) + " fill a byte of dst from different bytes of src");
    }
}

void validate_swap_blocks_mapping(const SwapBlocksArgs& a) {
  const std::span<const int64_t> m = a.block_mapping;
  const int64_t pairs = static_cast<int64_t>(m.size()) / 2;
  if (pairs == 0 || a.views.empty()) return;  // no views: no entry is read
  const auto in = [](int64_t b, const BlockPool& p) { return b >= 0 && b < p.num_blocks; };
  // (dst block, pair) of every in-range destination, sorted: a block's first entry is
  // the first pair writing it. No table of num_blocks entries.
  std::vector<std::pair<int64_t, int64_t>> to;
  for (int64_t p = 0; p < pairs; ++p)
    if (!padding(m[2 * p], m[2 * p + 1]) && in(m[2 * p + 1], a.dst_pool)) to.emplace_back(m[2 * p + 1], p);
  std::sort(to.begin(), to.end());
  for (int64_t p = 0; p < pairs; ++p) {
    const int64_t src = m[2 * p], dst = m[2 * p + 1];
    if (padding(src, dst)) continue;
    if (!in(src, a.src_pool)) throw copy_blocks_range_error(p, 0, src, a.src_pool.num_blocks, "src.");
    if (!in(dst, a.dst_pool)) throw copy_blocks_range_error(p, 1, dst, a.dst_pool.num_blocks, "dst.");
    const auto it = std::lower_bound(to.begin(), to.end(), std::pair<int64_t, int64_t>{dst, INT64_MIN});
    if (it->second != p) throw copy_blocks_duplicate_error(p, dst, it->second);
  }
}

void validate_swap_blocks(const SwapBlocksArgs& a) {
  validate_swap_blocks_shape(a);
  validate_swap_blocks_mapping(a);
}

std::vector<std::array<int64_t, 3>> merge_swap_views(std::span<const int64_t> views) {
  // Valid views share dst bytes only within one block and with one shift, so their
  // block-0 dst extents overlap exactly when some block of theirs does (as
  // merge_aliased_views), and the union reads src at that shift.
  std::vector<std::array<int64_t, 3>> extents;  // dst begin, dst end, shift
  for (size_t v = 0; v + 2 < views.size(); v += 3)
    extents.push_back({views[v + 1], views[v + 1] + views[v + 2], views[v + 1] - views[v]});
  std::sort(extents.begin(), extents.end());
  std::vector<std::array<int64_t, 3>> out;  // src_offset, dst_offset, bytes
  for (const auto& [begin, end, shift] : extents) {
    if (!out.empty() && begin < out.back()[1] + out.back()[2])
      out.back()[2] = std::max(out.back()[2], end - out.back()[1]);
    else
      out.push_back({begin - shift, begin, end - begin});
  }
  return out;
}

}  // namespace kvcheck
