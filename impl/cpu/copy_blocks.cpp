// cpu copy_blocks (SPEC §8.1): validated first (impl/validate_copy_blocks.h), then one
// memcpy per (view, pair), split over threads by (view, pair). The rules make the
// copies independent (no destination is a source, none is written twice, views that
// alias are merged into one copy), so no snapshot is needed and any split gives one
// result.
#include <cstring>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/validate_copy_blocks.h"

namespace kvcheck::cpu {

void CpuBackend::copy_blocks(const CopyBlocksArgs& a) const {
  validate_copy_blocks(a);
  if (a.views.empty()) return;
  std::vector<int64_t> pairs;  // the non-padding pairs, as (src, dst)
  for (size_t p = 0; p + 1 < a.block_mapping.size(); p += 2)
    if (a.block_mapping[p] != -1 && a.block_mapping[p + 1] != -1) {
      pairs.push_back(a.block_mapping[p]);
      pairs.push_back(a.block_mapping[p + 1]);
    }
  const int64_t num_pairs = static_cast<int64_t>(pairs.size()) / 2;
  const auto views = merge_aliased_views(a.views);
  const auto num_views = static_cast<int64_t>(views.size());
  if (num_pairs == 0 || num_views == 0) return;
  int64_t total = 0;
  for (const auto& [offset, bytes] : views) total += bytes * num_pairs;
  parallel_for(num_views * num_pairs, total, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t p = i % num_pairs;
      const auto [offset, bytes] = views[static_cast<size_t>(i / num_pairs)];
      std::memcpy(a.base + offset + pairs[2 * p + 1] * a.block_stride, a.base + offset + pairs[2 * p] * a.block_stride,
                  static_cast<size_t>(bytes));
    }
  });
}

}  // namespace kvcheck::cpu
