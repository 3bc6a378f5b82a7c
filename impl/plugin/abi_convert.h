// Conversions between the C plugin ABI (include/kvcheck/backend_abi.h) and kvcheck's
// C++ types: status codes <-> ErrorCode, layouts and views -> ABI structs (harness
// side), ABI structs -> layouts and views (plugin side, plugins/cpu).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "impl/capabilities.h"  // BackendCapabilities; abi_format, the kvcheck_format of a record
#include "impl/error.h"
#include "impl/kv_format.h"
#include "impl/op_args.h"
#include "include/kvcheck/backend_abi.h"

namespace kvcheck::plugin {

/// ErrorCode e <-> status int(e) + 1 (backend_abi.h); OK and INTERNAL have no code.
int to_status(ErrorCode code);
/// The ErrorCode of a refusal status; false for OK, INTERNAL and unknown values.
bool to_error_code(int status, ErrorCode* code);

/// The ABI cache of `layout` at `base` (harness-owned memory in the plugin's space)
/// whose buffer holds `size_bytes` bytes.
kvcheck_paged_cache to_abi(const CacheLayout& layout, const uint8_t* base, int64_t size_bytes);
/// The CacheLayout an ABI cache describes (plugin side; fields copied as given, so an
/// invalid layout stays invalid for the plugin's own validation to reject).
CacheLayout from_abi(const kvcheck_paged_cache& c);

kvcheck_kv_cache to_abi(const ConstKvCacheView& v, const float* k_scale, const float* v_scale);
/// A view of an ABI K/V cache; scales become spans of num_scales floats.
KvCacheView from_abi(const kvcheck_kv_cache& c);
/// An e2m1 view's block-scale caches (SPEC §7.9) in the ABI's struct; zeroed for every
/// other dtype.
kvcheck_kv_block_scales block_scales_to_abi(const ConstKvCacheView& v);
/// The block-scale caches of an ABI call into `v` (plugin side, e2m1 caches only: the
/// fields are read only then, and only by a table declaring KVCHECK_OP_KV_NVFP4).
void block_scales_from_abi(const kvcheck_kv_block_scales& b, KvCacheView& v);
kvcheck_kv_tokens to_abi(const KvTokensIn& t);
KvTokensOut from_abi(const kvcheck_kv_tokens& t);

/// copy_blocks arguments <-> views. from_abi throws kInvalidArgument for a negative
/// entry count or a null pointer with entries (no span can hold them).
kvcheck_copy_blocks_args to_abi(const CopyBlocksArgs& a);
CopyBlocksArgs from_abi(const kvcheck_copy_blocks_args& a);

/// swap_blocks arguments <-> views (docs/spec.md §8.3); from_abi refuses as copy_blocks'.
kvcheck_swap_blocks_args to_abi(const SwapBlocksArgs& a);
SwapBlocksArgs from_abi(const kvcheck_swap_blocks_args& a);

/// concat_and_cache_mla arguments <-> views (docs/spec.md §8.2); from_abi reads
/// has_pe_cache and has_rope, so only a table that declares KVCHECK_OP_CONCAT_MLA_PE_CACHE
/// and KVCHECK_OP_CONCAT_MLA_ROPE may call it (a harness sets each only then).
kvcheck_concat_and_cache_mla_args to_abi(const ConcatMlaArgs& a);
ConcatMlaArgs from_abi(const kvcheck_concat_and_cache_mla_args& a);
/// A fused RoPE (docs/spec.md §8.4) <-> its ABI struct (read an args' rope only when its
/// has_rope is 1).
kvcheck_rope to_abi(const RopeArgs& r);
RopeArgs from_abi(const kvcheck_rope& r);

/// gather_kv arguments <-> views. from_abi reads seq_starts only for a unit of 1 or 2
/// (0: none) and throws kInvalidArgument for another unit.
kvcheck_gather_kv_args to_abi(const GatherKvArgs& a);
GatherKvArgs from_abi(const kvcheck_gather_kv_args& a);

/// BackendCapabilities <-> kvcheck_capabilities.
BackendCapabilities from_abi(const kvcheck_capabilities& c);
kvcheck_capabilities to_abi(const BackendCapabilities& c);
/// Sets b's kv_recipes and head_dims from a plugin's contract (the loader validated
/// it; NULL = no contract: kSpec only, any head_dim). Reads only what struct_size covers.
void apply_contract(const kvcheck_contract* c, BackendCapabilities& b);

/// The `n` int32 entries at `p` as a span; empty for a null pointer or n <= 0. The
/// pointer may be a device pointer: the host side uses only the extent (and the
/// validators read host copies).
std::span<const int32_t> ints(const int32_t* p, int64_t n);
std::span<int32_t> ints(int32_t* p, int64_t n);

/// Writes `text` NUL-terminated and truncated into msg[msg_size] (nothing when null).
void write_message(const std::string& text, char* msg, size_t msg_size);

}  // namespace kvcheck::plugin
