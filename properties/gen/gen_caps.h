// The capabilities the generators draw inside (SPEC §6, plugin ABI): run_property
// sets them from the backend under test for the duration of one property run, so a
// plugin that stores only BF16 with block sizes that are multiples of 16 gets every
// case inside that subset instead of discarded or refused cases.
#pragma once

#include <cstdint>

#include "impl/capabilities.h"

namespace kvcheck::props {

/// The capabilities of the property run on this thread (default: everything).
const BackendCapabilities& generator_caps();

/// Sets generator_caps() to `caps` until destroyed (then restores the previous).
class ScopedGeneratorCaps {
 public:
  explicit ScopedGeneratorCaps(const BackendCapabilities& caps);
  ~ScopedGeneratorCaps();
  ScopedGeneratorCaps(const ScopedGeneratorCaps&) = delete;
  ScopedGeneratorCaps& operator=(const ScopedGeneratorCaps&) = delete;

 private:
  BackendCapabilities previous_;
};

/// The supported block size nearest below `bs` (>= 1): rounded down to a multiple of
/// block_size_multiple (at least one multiple), capped at max_block_size.
int32_t fit_block_size(int32_t bs);

/// The least count >= n of `elem_bytes`-byte elements whose bytes are a multiple of the
/// backend's kv_alignment (kvcheck_contract): n itself when it declares none, or when
/// the alignment is at most one element. The K/V generators pass every stride, pad
/// and offset they draw through it, so a declared alignment holds for whole calls.
int64_t kv_aligned_elements(int64_t n, int64_t elem_bytes);

}  // namespace kvcheck::props
