#include "impl/validate_cache.h"

#include <string>

#include "impl/error.h"

namespace kvcheck {

void validate_cache_bytes(const CacheLayout& layout, const void* base, int64_t size_bytes) {
  if (base == nullptr || size_bytes >= layout.size_bytes()) return;
  throw Error(ErrorCode::kShapeMismatch,
              "cache view claims " + std::to_string(layout.num_blocks) + " blocks of " +
                  std::to_string(layout.block_size) + " tokens (" + std::to_string(layout.num_blocks - 1) + " x " +
                  std::to_string(layout.block_stride) + " + " + std::to_string(layout.packed_stride()) + " = " +
                  std::to_string(layout.size_bytes()) + " bytes) but its buffer holds " +
                  std::to_string(size_bytes) + " bytes");
}

}  // namespace kvcheck
