// KvPagedLayout: the K/V family's geometry (SPEC §7.2) as plain values, the ONE place
// that turns a slot, or (block, token, head), into an element offset of the K or the
// V cache. C++17 and trivially copyable, as impl/paged_layout.h is for the paged MLA
// cache, so host code (the cpu kernels, the validators of impl/kv_layout.h and
// impl/validate_kv.h) and the CUDA kernels (impl/cuda/kv_family.cu, passed by value)
// share one formula. K and V carry their own strides: the v1 ABI and the views'
// KvCacheLayout give both the same (kv_paged_layout(), impl/kv_layout.h); a later ABI
// may not. reference/ writes the formula out on its own; a property checks the two
// agree (properties/ops/kv/kv_layout_props.cpp).
#pragma once

#include <cstdint>

#include "impl/host_device.h"

namespace kvcheck {

/// kvcheck::KvDtype as a plain integer, same values (impl/kv_layout.cpp asserts it),
/// for code that cannot include impl/kv_format.h (C++20: std::span).
enum class KvDevDtype : int32_t { kBF16 = 0, kFP16 = 1, kE4M3 = 2, kE5M2 = 3, kE2M1 = 4 };

KVCHECK_HD constexpr bool kv_dev_is_fp8(KvDevDtype d) { return d == KvDevDtype::kE4M3 || d == KvDevDtype::kE5M2; }
/// Bytes per element: 1 (e4m3, e5m2) or 2 (bf16, fp16); e2m1 (half a byte): 1, its
/// alignment unit; byte offsets go through kv_dev_byte_offset.
KVCHECK_HD constexpr int64_t kv_dev_bytes(KvDevDtype d) { return d == KvDevDtype::kBF16 || d == KvDevDtype::kFP16 ? 2 : 1; }
/// The byte offset of element offset `elements` (even for e2m1: a valid e2m1 layout's
/// strides are, SPEC §7.9).
KVCHECK_HD constexpr int64_t kv_dev_byte_offset(KvDevDtype d, int64_t elements) {
  return d == KvDevDtype::kE2M1 ? elements / 2 : elements * kv_dev_bytes(d);
}

/// The NVFP4 block-scale caches' geometry (SPEC §7.9; impl/kv_format.h's KvSfGeometry as
/// plain values): the byte of the e4m3 scale of group g of head h of token t in block b,
/// from the side's scale-cache base. The one formula of both scale layouts.
struct KvSfDevLayout {
  int32_t interleave4 = 0;  // KvSfLayout: 0 linear, 1 the 4-token interleave
  int32_t groups = 0;       // S = head_dim / 16
  int64_t stride_page = 0, stride_token = 0, stride_head = 0;  // bytes

  KVCHECK_HD int64_t offset(int64_t block, int64_t token, int64_t head, int64_t group) const {
    const int64_t tile = block * stride_page + head * stride_head;
    if (interleave4) return tile + (token / 4) * 4 * groups + 4 * group + token % 4;
    return tile + token * stride_token + group;
  }
};

/// One cache's strides, in elements: element (block b, token t, head h, d) at
/// b*stride_page + t*stride_token + h*stride_head + d from that cache's base.
struct KvStrides {
  int64_t stride_page = 0, stride_token = 0, stride_head = 0;

  /// Element offset of (block, token, head, 0).
  KVCHECK_HD int64_t offset(int64_t block, int64_t token, int64_t head) const {
    return block * stride_page + token * stride_token + head * stride_head;
  }
  KVCHECK_HD bool operator==(const KvStrides& o) const {
    return stride_page == o.stride_page && stride_token == o.stride_token && stride_head == o.stride_head;
  }
};

/// A slot split at block_size (slot = block*block_size + token, SPEC §5.4 / §7.2), or
/// a sequence's token t split into (block_table column, token in that block) (§7.5).
struct KvSlotPos {
  int64_t block = 0, token = 0;
};

/// Which cache of the pair: K (0) or V (1); kernels index their per-side arrays by it.
enum KvSide : int { kKvSideK = 0, kKvSideV = 1 };

struct KvPagedLayout {
  KvDevDtype dtype = KvDevDtype::kBF16;
  int64_t num_blocks = 0;
  int32_t block_size = 0;    // tokens per block, >= 1 once validated
  int32_t num_kv_heads = 0;  // H
  int32_t head_dim = 0;      // D, contiguous
  KvStrides k, v;            // K cache's and V cache's strides (elements)

  KVCHECK_HD int64_t num_slots() const { return num_blocks * block_size; }
  KVCHECK_HD int64_t element_bytes() const { return kv_dev_bytes(dtype); }
  KVCHECK_HD const KvStrides& strides(int side) const { return side == kKvSideV ? v : k; }

  /// The slot formula inverted: slot -> (slot / block_size, slot % block_size), one
  /// division. Also splits gather's sequence position t into (table column, token).
  KVCHECK_HD KvSlotPos split(int64_t slot) const {
    const int64_t block = slot / block_size;
    return {block, slot - block * block_size};
  }
  /// Element offset of (block, token, head, 0) in cache `side`.
  KVCHECK_HD int64_t offset(int side, int64_t block, int64_t token, int64_t head) const {
    return strides(side).offset(block, token, head);
  }
  /// Element offset of head `head` of slot `slot` in cache `side` (the record store_kv
  /// writes, SPEC §7.4).
  KVCHECK_HD int64_t slot_offset(int side, int64_t slot, int64_t head) const {
    const KvSlotPos p = split(slot);
    return offset(side, p.block, p.token, head);
  }
};

/// One axis of a strided view: stride and extent, in elements.
struct KvAxis {
  int64_t stride = 0, extent = 1;
};
/// The most axes kv_axes_non_overlapping takes (a cache view with a K/V axis has 5).
constexpr int kKvMaxAxes = 8;

/// SPEC §7.2 non-overlap rule: sorted by stride, every axis of extent > 1 has a stride
/// >= 1 + sum (extent-1)*stride of the axes before it (computed without overflow; an
/// overflow is a rejection). Sufficient for every index tuple to address a distinct
/// element. False for n > kKvMaxAxes. Host and device: gather_kv's output views are
/// checked against cu_seqlens_k's total, which the CUDA validation reads on the device.
KVCHECK_HD bool kv_axes_non_overlapping(const KvAxis* axes, int n) {
  if (n > kKvMaxAxes) return false;
  KvAxis sorted[kKvMaxAxes];
  for (int i = 0; i < n; ++i) {  // insertion sort by stride (no std:: on the device)
    int j = i;
    while (j > 0 && sorted[j - 1].stride > axes[i].stride) {
      sorted[j] = sorted[j - 1];
      --j;
    }
    sorted[j] = axes[i];
  }
  constexpr int64_t kMax = 0x7FFFFFFFFFFFFFFF;
  int64_t inner = 1;  // 1 + span of the axes before: the smallest stride the next may have
  for (int i = 0; i < n; ++i) {
    const KvAxis& a = sorted[i];
    if (a.extent <= 1) continue;
    if (a.stride < inner) return false;
    if (a.extent - 1 > (kMax - inner) / a.stride) return false;
    inner += (a.extent - 1) * a.stride;
  }
  return true;
}

}  // namespace kvcheck
