// Default implementations of the optional Backend operations: a backend that lacks
// the K/V family (no KVCHECK_OP_STORE_KV / KVCHECK_OP_GATHER_KV bit) says so with kUnsupported.
#include "impl/backend.h"

#include <string>

#include "impl/error.h"

namespace kvcheck {

void Backend::store_kv(const KvTokensIn&, const KvTokensIn&, std::span<const int32_t>,
                       const KvCacheView&, const RopeArgs*) const {
  throw Error(ErrorCode::kUnsupported, std::string(name()) + " has no store_kv (SPEC §7.4)");
}

void Backend::gather_kv(const GatherKvArgs&) const {
  throw Error(ErrorCode::kUnsupported, std::string(name()) + " has no gather_kv (SPEC §7.5)");
}

void Backend::copy_blocks(const CopyBlocksArgs&) const {
  throw Error(ErrorCode::kUnsupported, std::string(name()) + " has no copy_blocks (SPEC §8.1)");
}

void Backend::swap_blocks(const SwapBlocksArgs&) const {
  throw Error(ErrorCode::kUnsupported, std::string(name()) + " has no swap_blocks (docs/spec.md §8.3)");
}

void Backend::concat_and_cache_mla(const ConcatMlaArgs&) const {
  throw Error(ErrorCode::kUnsupported, std::string(name()) + " has no concat_and_cache_mla (docs/spec.md §8.2)");
}

}  // namespace kvcheck
