// cpu copy_blocks (SPEC §8.1): validated first (impl/validate_copy_blocks.h), then one
// memcpy per (view, pair), split over threads by (view, pair). The rules make the
// copies independent (no destination is a source, none is written twice, views that
// alias are merged into one copy), so no snapshot is needed and any split gives one
// result. The copy loop is swap_blocks' too (block_copy.h).
#include <cstring>
#include <vector>

#include "impl/cpu/block_copy.h"
#include "impl/cpu/cpu_backend.h"
#include "impl/validate_copy_blocks.h"

namespace kvcheck::cpu {

void copy_block_views(const uint8_t* src, int64_t src_stride, uint8_t* dst, int64_t dst_stride,
                      std::span<const std::array<int64_t, 3>> views, std::span<const int64_t> block_mapping) {
  std::vector<int64_t> pairs;  // the non-padding pairs, as (src, dst)
  for (size_t p = 0; p + 1 < block_mapping.size(); p += 2)
    if (block_mapping[p] != -1 && block_mapping[p + 1] != -1) {
      pairs.push_back(block_mapping[p]);
      pairs.push_back(block_mapping[p + 1]);
    }
  const int64_t num_pairs = static_cast<int64_t>(pairs.size()) / 2;
  const auto num_views = static_cast<int64_t>(views.size());
  if (num_pairs == 0 || num_views == 0) return;
  int64_t total = 0;
  for (const auto& v : views) total += v[2] * num_pairs;
  parallel_for(num_views * num_pairs, total, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t p = i % num_pairs;
      const auto& [src_offset, dst_offset, bytes] = views[static_cast<size_t>(i / num_pairs)];
      std::memcpy(dst + dst_offset + pairs[2 * p + 1] * dst_stride, src + src_offset + pairs[2 * p] * src_stride,
                  static_cast<size_t>(bytes));
    }
  });
}

void CpuBackend::copy_blocks(const CopyBlocksArgs& a) const {
  validate_copy_blocks(a);
  // Without blocks no pair is real, and the views' offsets were never checked against
  // the allocation: not summed (merge_aliased_views).
  if (a.views.empty() || a.num_blocks == 0) return;
  std::vector<std::array<int64_t, 3>> views;
  for (const auto& [offset, bytes] : merge_aliased_views(a.views)) views.push_back({offset, offset, bytes});
  copy_block_views(a.base, a.block_stride, a.base, a.block_stride, views, a.block_mapping);
}

}  // namespace kvcheck::cpu
