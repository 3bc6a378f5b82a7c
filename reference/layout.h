// The reference's own cache-layout formulas (SPEC §3), written out independently of
// impl/layout.h so an offset bug cannot hide on both sides.
#pragma once

#include <cstdint>

#include "impl/format.h"

namespace kvcheck::ref {

/// SPEC §3 block_stride in bytes.
int64_t block_stride(const KVCacheFormat& format, int32_t block_size);
/// Byte offset of token `token`'s data in block `block`.
int64_t data_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token);
/// Byte offset of token `token`'s first scale byte in block `block` (quantised only).
int64_t scale_offset(const KVCacheFormat& format, int32_t block_size, int64_t block, int64_t token);

}  // namespace kvcheck::ref
