// Reference swap_blocks (docs/spec.md §8.3). Independent of impl/validate_swap_blocks.cpp
// on purpose: the dst rule is decided per byte (which earlier view fills it, in which
// block, from which src byte) instead of in closed form, the pair rules pair by pair.
#include "reference/swap_blocks.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "impl/error.h"

namespace kvcheck::ref {
namespace {

using std::to_string;

std::string view_name(std::span<const int64_t> views, int64_t v) {
  return "views[" + to_string(v) + "] = [" + to_string(views[3 * v]) + ", " + to_string(views[3 * v + 1]) + ", " +
         to_string(views[3 * v + 2]) + "]";
}

std::string entry_name(std::span<const int64_t> m, int64_t p, int k) {
  return "block_mapping[" + to_string(p) + "][" + to_string(k) + "] = " + to_string(m[2 * p + k]);
}

bool padding(std::span<const int64_t> m, int64_t p) { return m[2 * p] == -1 || m[2 * p + 1] == -1; }

void invalid(const std::string& what) { throw Error(ErrorCode::kInvalidArgument, what); }

void check_sizes(const SwapBlocksArgs& a) {
  // Step 1, in its order: src's fields, dst's, the entry counts, null lists.
  const std::pair<const BlockPool*, const char*> pools[] = {{&a.src_pool, "src"}, {&a.dst_pool, "dst"}};
  for (const auto& [p, name] : pools) {
    const std::string n = name;
    if (p->size_bytes < 0) invalid(n + ".size_bytes = " + to_string(p->size_bytes) + " < 0");
    if (p->num_blocks < 0) invalid(n + ".num_blocks = " + to_string(p->num_blocks) + " < 0");
    if (p->block_stride < 1) invalid(n + ".block_stride = " + to_string(p->block_stride) + " < 1");
  }
  if (a.views.size() % 3 != 0) invalid("views has " + to_string(a.views.size()) + " entries, not [num_views][3]");
  if (a.block_mapping.size() % 2 != 0)
    invalid("block_mapping has " + to_string(a.block_mapping.size()) + " entries, not [num_pairs][2]");
  if (!a.views.empty() && a.views.data() == nullptr) invalid("views is null");
  if (!a.block_mapping.empty() && a.block_mapping.data() == nullptr) invalid("block_mapping is null");
}

void check_views(const SwapBlocksArgs& a) {
  const auto views = a.views;
  const int64_t n = static_cast<int64_t>(views.size()) / 3;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t bytes = views[3 * v + 2];
    if (views[3 * v] < 0) invalid(view_name(views, v) + ": src_offset < 0");
    if (views[3 * v + 1] < 0) invalid(view_name(views, v) + ": dst_offset < 0");
    if (bytes < 1) invalid(view_name(views, v) + ": block_bytes < 1");
    if (bytes > a.src_pool.block_stride)
      invalid(view_name(views, v) + ": block_bytes > src.block_stride = " + to_string(a.src_pool.block_stride));
    if (bytes > a.dst_pool.block_stride)
      invalid(view_name(views, v) + ": block_bytes > dst.block_stride = " + to_string(a.dst_pool.block_stride));
    for (int side = 0; side < 2; ++side) {
      const BlockPool& p = side == 0 ? a.src_pool : a.dst_pool;
      const char* name = side == 0 ? "src" : "dst";
      if (p.num_blocks == 0) continue;
      // Wider than int64 on purpose: a huge view must fail here, not wrap.
      const __int128 end = __int128{views[3 * v + side]} + __int128{p.num_blocks - 1} * p.block_stride + bytes;
      if (end > p.size_bytes)
        throw Error(ErrorCode::kShapeMismatch, view_name(views, v) + ": its last block ends past " + name +
                                                   "'s allocation of " + to_string(p.size_bytes) + " bytes");
      if ((side == 0 ? static_cast<const void*>(a.src) : a.dst) == nullptr)
        throw Error(ErrorCode::kShapeMismatch, std::string(name) + " is null");
    }
  }
  if (n == 0) return;
  if (a.src != nullptr && a.dst != nullptr && a.src_pool.size_bytes > 0 && a.dst_pool.size_bytes > 0) {
    // Byte by byte: is any byte of dst's allocation one of src's?
    const auto s0 = reinterpret_cast<uintptr_t>(a.src), d0 = reinterpret_cast<uintptr_t>(a.dst);
    for (int64_t i = 0; i < a.dst_pool.size_bytes; ++i) {
      const __int128 at = static_cast<__int128>(d0) + i;
      if (at >= s0 && at < static_cast<__int128>(s0) + a.src_pool.size_bytes) {
        invalid(d0 >= s0 ? "dst starts " + to_string(d0 - s0) +
                               " bytes into src: the allocations overlap (copy_blocks moves blocks within one "
                               "allocation)"
                         : "src starts " + to_string(s0 - d0) +
                               " bytes into dst: the allocations overlap (copy_blocks moves blocks within one "
                               "allocation)");
      }
    }
  }
  if (a.dst_pool.num_blocks == 0 || n < 2) return;
  // owner[dst byte]: the first view filling it, the block it lies in there and the src
  // byte (relative to that block) it is filled from.
  struct Owner {
    int64_t view = -1, block = 0;
    __int128 from = 0;  // src offsets are unchecked when src has no blocks: no int64 sum
  };
  std::vector<Owner> owner(static_cast<size_t>(a.dst_pool.size_bytes));
  for (int64_t w = 0; w < n; ++w) {
    int64_t straddle = -1, shifted = -1;  // the earliest view w breaks each rule with
    for (int64_t b = 0; b < a.dst_pool.num_blocks; ++b)
      for (int64_t i = 0; i < views[3 * w + 2]; ++i) {
        Owner& o = owner[static_cast<size_t>(views[3 * w + 1] + b * a.dst_pool.block_stride + i)];
        const __int128 from = __int128{views[3 * w]} + i;
        if (o.view < 0) {
          o = {w, b, from};
        } else if (o.block != b) {
          if (straddle < 0 || o.view < straddle) straddle = o.view;
        } else if (o.from != from && (shifted < 0 || o.view < shifted)) {
          shifted = o.view;
        }
      }
    // Against each earlier view in order: the first one w breaks a rule with, the
    // straddle rule before the shift rule for that view.
    for (int64_t v = 0; v < w; ++v) {
      if (v == straddle)
        invalid(view_name(views, w) + " and " + view_name(views, v) + " put a byte of dst in different blocks");
      if (v == shifted)
        invalid(view_name(views, w) + " and " + view_name(views, v) + " fill a byte of dst from different bytes of src");
    }
  }
}

void check_pairs(const SwapBlocksArgs& a) {
  const auto m = a.block_mapping;
  const int64_t n = static_cast<int64_t>(m.size()) / 2;
  for (int64_t p = 0; p < n; ++p) {
    if (padding(m, p)) continue;
    for (int k = 0; k < 2; ++k) {
      const BlockPool& pool = k == 0 ? a.src_pool : a.dst_pool;
      if (m[2 * p + k] < 0 || m[2 * p + k] >= pool.num_blocks)
        throw Error(ErrorCode::kBlockOutOfRange, entry_name(m, p, k) + " is not in [0, " + (k == 0 ? "src" : "dst") +
                                                     ".num_blocks = " + to_string(pool.num_blocks) + ")");
    }
    const int64_t dst = m[2 * p + 1];
    for (int64_t q = 0; q < p; ++q)
      if (!padding(m, q) && m[2 * q + 1] == dst)
        throw Error(ErrorCode::kBlockConflict, entry_name(m, p, 1) + ": block " + to_string(dst) +
                                                   " is already the destination of block_mapping[" + to_string(q) + "]");
  }
}

}  // namespace

void swap_blocks(const SwapBlocksArgs& a) {
  check_sizes(a);
  check_views(a);
  if (a.views.empty()) return;  // nothing to move: the mapping is not read
  check_pairs(a);
  const int64_t pairs = static_cast<int64_t>(a.block_mapping.size()) / 2;
  for (size_t v = 0; v < a.views.size(); v += 3)
    for (int64_t p = 0; p < pairs; ++p) {
      if (padding(a.block_mapping, p)) continue;
      const int64_t from = a.views[v] + a.block_mapping[2 * p] * a.src_pool.block_stride;
      const int64_t to = a.views[v + 1] + a.block_mapping[2 * p + 1] * a.dst_pool.block_stride;
      for (int64_t i = 0; i < a.views[v + 2]; ++i) a.dst[to + i] = a.src[from + i];
    }
}

}  // namespace kvcheck::ref
