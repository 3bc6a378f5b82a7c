// Reference copy_blocks (SPEC §8.1). Independent of impl/validate_copy_blocks.cpp on
// purpose: the view rule is decided per byte (which earlier view owns it, in which
// block) instead of in closed form, the pair rules pair by pair.
#include "reference/copy_blocks.h"

#include <string>
#include <utility>
#include <vector>

#include "impl/error.h"

namespace kvcheck::ref {
namespace {

using std::to_string;

std::string view_name(std::span<const int64_t> views, int64_t v) {
  return "views[" + to_string(v) + "] = [" + to_string(views[2 * v]) + ", " + to_string(views[2 * v + 1]) + "]";
}

std::string entry_name(std::span<const int64_t> m, int64_t p, int k) {
  return "block_mapping[" + to_string(p) + "][" + to_string(k) + "] = " + to_string(m[2 * p + k]);
}

bool padding(std::span<const int64_t> m, int64_t p) { return m[2 * p] == -1 || m[2 * p + 1] == -1; }

void check_sizes(const CopyBlocksArgs& a) {
  // SPEC §8.1 step 1, in its order: the first broken rule's message.
  const std::pair<bool, std::string> rules[] = {
      {a.size_bytes < 0, "size_bytes = " + to_string(a.size_bytes) + " < 0"},
      {a.num_blocks < 0, "num_blocks = " + to_string(a.num_blocks) + " < 0"},
      {a.block_stride < 1, "block_stride = " + to_string(a.block_stride) + " < 1"},
      {a.views.size() % 2 != 0, "views has " + to_string(a.views.size()) + " entries, not [num_views][2]"},
      {a.block_mapping.size() % 2 != 0,
       "block_mapping has " + to_string(a.block_mapping.size()) + " entries, not [num_pairs][2]"},
      {!a.views.empty() && a.views.data() == nullptr, "views is null"},
      {!a.block_mapping.empty() && a.block_mapping.data() == nullptr, "block_mapping is null"},
  };
  for (const auto& [broken, message] : rules)
    if (broken) throw Error(ErrorCode::kInvalidArgument, message);
}

void check_views(const CopyBlocksArgs& a) {
  const auto views = a.views;
  const int64_t n = static_cast<int64_t>(views.size()) / 2;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t offset = views[2 * v], bytes = views[2 * v + 1];
    if (offset < 0) throw Error(ErrorCode::kInvalidArgument, view_name(views, v) + ": offset < 0");
    if (bytes < 1 || bytes > a.block_stride)
      throw Error(ErrorCode::kInvalidArgument, view_name(views, v) + ": block_bytes not in [1, block_stride = " +
                                                   to_string(a.block_stride) + "]");
    if (a.num_blocks == 0) continue;
    // Wider than int64 on purpose: a huge view must fail here, not wrap.
    const __int128 end = __int128{offset} + __int128{a.num_blocks - 1} * a.block_stride + bytes;
    if (end > a.size_bytes)
      throw Error(ErrorCode::kShapeMismatch, view_name(views, v) + ": its last block ends past the allocation of " +
                                                 to_string(a.size_bytes) + " bytes");
    if (a.base == nullptr) throw Error(ErrorCode::kShapeMismatch, "the cache is null");
  }
  if (a.num_blocks == 0 || n < 2) return;
  // owner[byte]: the first view holding it, and the block it lies in there. Earlier
  // views agree on every byte they share (else one of them failed), so the first
  // owner stands for all of them.
  struct Owner {
    int64_t view = -1, block = 0;
  };
  std::vector<Owner> owner(static_cast<size_t>(a.size_bytes));
  for (int64_t w = 0; w < n; ++w) {
    int64_t worst = -1;  // the earliest view w shares a byte with in another block
    for (int64_t b = 0; b < a.num_blocks; ++b)
      for (int64_t i = 0; i < views[2 * w + 1]; ++i) {
        Owner& o = owner[static_cast<size_t>(views[2 * w] + b * a.block_stride + i)];
        if (o.view < 0) {
          o = {w, b};
        } else if (o.block != b && (worst < 0 || o.view < worst)) {
          worst = o.view;
        }
      }
    if (worst >= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  view_name(views, w) + " and " + view_name(views, worst) + " put a byte in different blocks");
  }
}

void check_pairs(const CopyBlocksArgs& a) {
  const auto m = a.block_mapping;
  const int64_t n = static_cast<int64_t>(m.size()) / 2;
  for (int64_t p = 0; p < n; ++p) {
    if (padding(m, p)) continue;
    for (int k = 0; k < 2; ++k)
      if (m[2 * p + k] < 0 || m[2 * p + k] >= a.num_blocks)
        throw Error(ErrorCode::kBlockOutOfRange,
                    entry_name(m, p, k) + " is not in [0, num_blocks = " + to_string(a.num_blocks) + ")");
    const int64_t dst = m[2 * p + 1];
    for (int64_t q = 0; q < p; ++q)
      if (!padding(m, q) && m[2 * q + 1] == dst)
        throw Error(ErrorCode::kBlockConflict, entry_name(m, p, 1) + ": block " + to_string(dst) +
                                                   " is already the destination of block_mapping[" + to_string(q) + "]");
    for (int64_t q = 0; q < n; ++q)
      if (!padding(m, q) && m[2 * q] == dst)
        throw Error(ErrorCode::kBlockConflict, entry_name(m, p, 1) + ": block " + to_string(dst) +
                                                   " is also the source of block_mapping[" + to_string(q) + "]");
  }
}

}  // namespace

void copy_blocks(const CopyBlocksArgs& a) {
  check_sizes(a);
  check_views(a);
  if (a.views.empty()) return;  // no cache to copy in: the mapping is not read
  check_pairs(a);
  const int64_t pairs = static_cast<int64_t>(a.block_mapping.size()) / 2;
  if (pairs == 0 || a.views.empty()) return;
  const std::vector<uint8_t> before(a.base, a.base + a.size_bytes);
  for (size_t v = 0; v < a.views.size(); v += 2)
    for (int64_t p = 0; p < pairs; ++p) {
      if (padding(a.block_mapping, p)) continue;
      const int64_t src = a.views[v] + a.block_mapping[2 * p] * a.block_stride;
      const int64_t dst = a.views[v] + a.block_mapping[2 * p + 1] * a.block_stride;
      for (int64_t i = 0; i < a.views[v + 1]; ++i) a.base[dst + i] = before[static_cast<size_t>(src + i)];
    }
}

}  // namespace kvcheck::ref
