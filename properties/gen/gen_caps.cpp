#include "properties/gen/gen_caps.h"

#include <algorithm>

namespace kvcheck::props {
namespace {

BackendCapabilities& current() {
  thread_local BackendCapabilities caps;
  return caps;
}

}  // namespace

const BackendCapabilities& generator_caps() { return current(); }

ScopedGeneratorCaps::ScopedGeneratorCaps(const BackendCapabilities& caps) : previous_(current()) {
  current() = caps;
}

ScopedGeneratorCaps::~ScopedGeneratorCaps() { current() = previous_; }

int32_t fit_block_size(int32_t bs) {
  const BackendCapabilities& c = current();
  const int32_t m = std::max(1, c.block_size_multiple);
  int32_t out = std::max(m, bs / m * m);
  if (c.max_block_size > 0) out = std::min(out, std::max(m, c.max_block_size / m * m));
  return out;
}

int64_t kv_aligned_elements(int64_t n, int64_t elem_bytes) {
  const int64_t a = current().kv_alignment;
  if (a <= elem_bytes) return n;  // powers of two: every element count is aligned
  const int64_t unit = a / elem_bytes;
  return (n + unit - 1) / unit * unit;
}

}  // namespace kvcheck::props
