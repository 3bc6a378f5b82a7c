// cpu swap_blocks (docs/spec.md §8.3): validated first (impl/validate_swap_blocks.h),
// then copy_blocks' loop (block_copy.h) between the two pools: src and dst share no
// byte, no dst block is written twice and views filling one dst byte are merged into
// one copy, so any split over threads gives one result. The pools' `host` flags mean
// nothing here: all memory is host memory.
#include "impl/cpu/block_copy.h"
#include "impl/cpu/cpu_backend.h"
#include "impl/validate_swap_blocks.h"

namespace kvcheck::cpu {

void CpuBackend::swap_blocks(const SwapBlocksArgs& a) const {
  validate_swap_blocks(a);
  // A pool without blocks: no pair can be real (step 3), and its offsets were never
  // checked against an allocation, so they are not summed (merge_swap_views).
  if (a.views.empty() || a.src_pool.num_blocks == 0 || a.dst_pool.num_blocks == 0) return;
  copy_block_views(a.src, a.src_pool.block_stride, a.dst, a.dst_pool.block_stride, merge_swap_views(a.views),
                   a.block_mapping);
}

}  // namespace kvcheck::cpu
