// Calls outside a backend's declared K/V contract (kvcheck_contract, docs/plugins.md
// "Declaring a contract": head_dims, limits on num_kv_heads x head_dim, dtype pairs,
// kv_alignment), for the refusal properties of store_kv and gather_kv: what to break,
// the capabilities the generators draw such a call under, and what of a call is outside.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "impl/capabilities.h"
#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/harness.h"

namespace kvcheck::props {

/// The kinds of declared limit a valid K/V call can break.
enum class KvLimit : int { kShape, kAlignment, kDtypePair };

/// The kinds `c` declares (empty: nothing to refuse, the refusal rows are not exercised).
std::vector<KvLimit> declared_kv_limits(const BackendCapabilities& c);
/// A refusal property's `needs` (registry.h): "" when the backend runs `op` (else
/// `missing`) and declares a limit a valid call can break (else why not exercised).
std::function<std::string(const BackendCapabilities&)> needs_declared_kv_limit(uint32_t op, std::string missing);
/// One of them, each alike (RapidCheck draws; discards when there is none).
KvLimit draw_kv_limit(const BackendCapabilities& c);
/// Capabilities under which the generators draw a call that breaks `limit` of `c` and
/// nothing else: kShape a head_dim outside head_dims or a declared head_dim one head
/// past a row limit, kDtypePair an undeclared (cache, rows) pair (RapidCheck draws).
/// kAlignment: `c` itself (the caller misaligns a drawn call, misalign_cache; every
/// misaligned stride is one of an axis of extent > 1, which a kernel uses).
BackendCapabilities caps_breaking(const BackendCapabilities& c, KvLimit limit);
/// The strides of `cache` that misalign_cache can put half the alignment off and a
/// kernel uses: those of axes of extent > 1 (0: the page, 1: the innermost
/// per-token/per-head stride, 2: the outer one); none when half the alignment is less
/// than one element.
std::vector<int> misalignable_cache_strides(const KvCacheShape& cache, int64_t alignment);
/// Adds alignment/2 bytes to stride `target` of the cache (as above); false (nothing
/// changed) when that is less than one element.
bool misalign_cache(KvCacheShape& cache, int64_t alignment, int target);
/// Puts one stride of a drawn call half the alignment off, each alike (RapidCheck
/// draws): a misalignable stride of `cache` (0-2), or one of the caller's `more` (3 and
/// up: row or output strides a kernel uses, which the caller then moves). A call on one
/// block, one token and one head gets a second block, so the page stride is used.
/// Returns the target: < 3 done here, >= 3 for the caller; -1 when there is none
/// (half the alignment is less than one cache element and `more` is empty).
int misalign_one(KvCacheShape& cache, int64_t alignment, std::vector<int> more);
/// "" when a call on `cache` with rows (or outputs) of `rows` and the given
/// misalignment (kv_misalignment) is inside `c`, else what is outside: "head_dim 64
/// outside the declared head_dims {128}", "fp16 rows into an e4m3 cache outside the
/// declared dtype pairs {...}", the misalignment.
std::string kv_outside_contract(const BackendCapabilities& c, const KvCacheShape& cache, KvDtype rows,
                                const std::string& misaligned);

/// The verdict of a refusal property on a call outside the contract (`what`, from
/// kv_outside_contract; "" = a file replayed on a backend that now declares the call:
/// skipped): the backend must have refused it with kUnsupported, and `changed` (a
/// decoded diff of every buffer the call may touch, "" when none changed) be empty.
Verdict judge_declared_refusal(const char* op, std::string_view backend, const std::string& context,
                               const std::string& what, const Outcome& be, const std::string& changed);

}  // namespace kvcheck::props
