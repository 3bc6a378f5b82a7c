// What a backend can run (BackendCapabilities): the generator-facing side of the plugin
// ABI's kvcheck_capabilities. Core layer (docs/layers.md): the generators and the
// backends include this without the Backend interface.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "include/kvcheck/backend_abi.h"  // the KVCHECK_OP_* and KVCHECK_FORMAT_* bits
#include "impl/format.h"
#include "impl/kv_format.h"

namespace kvcheck {

/// The kvcheck_format (backend_abi.h) of a record: the named format whose fields it has
/// (the name itself is not compared), KVCHECK_FORMAT_BF16 for a plain BF16 record of
/// 8..4096 elements in steps of 8, else KVCHECK_FORMAT_OTHER.
int abi_format(const KVCacheFormat& f);
/// The SPEC §2 name of a named kvcheck_format id ("BF16(elements)" for BF16), "custom"
/// for OTHER or an unknown id.
std::string abi_format_name(int id, int32_t elements);

/// The capability bit of a paged format named as in kvcheck_format: "V41" ...
/// "MODEL1", "BF16" (any BF16(E)), "OTHER" (custom records); case-insensitive.
/// Throws kInvalidArgument naming the known names.
uint32_t format_bit_by_name(const std::string& name);
/// The capability bit (1 << KvDtype) of a K/V cache dtype: "bf16", "fp16", "e4m3",
/// "e5m2" (case-insensitive). Throws kInvalidArgument naming the known names.
uint32_t kv_dtype_bit_by_name(const std::string& name);
/// Whether the spec allows rows of `rows` with a cache of `cache` (SPEC §7.1: a bf16 /
/// fp16 cache takes rows of its own dtype, an FP8 cache bf16 or fp16 rows).
bool is_kv_dtype_pair(KvDtype cache, KvDtype rows);
/// The largest K/V token row (num_kv_heads x head_dim, elements) a contract may require
/// or the harness draws: 128 heads of the largest declarable head_dim, 16,384. A
/// declared minimum past it leaves nothing to draw (refused at load); a declared maximum
/// past it limits nothing the generators reach, and a row one head past it is not drawn.
constexpr int64_t kMaxDeclaredKvHeadDim = 16384;
constexpr int64_t kMaxKvRowElements = 128 * kMaxDeclaredKvHeadDim;

/// KVCHECK_KV_PAIR(cache, rows): the pair's bit in kvcheck_contract.kv_dtype_pairs.
constexpr uint32_t kv_dtype_pair_bit(KvDtype cache, KvDtype rows) {
  return KVCHECK_KV_PAIR(static_cast<uint32_t>(cache), static_cast<uint32_t>(rows));
}
/// "e4m3 cache with bf16 rows, bf16 cache with bf16 rows": the pairs of `bits`.
std::string describe_kv_dtype_pairs(uint32_t bits);

/// What a backend can run; properties skip (and report) what it cannot, and the
/// generators draw only formats, K/V dtypes and block sizes inside it (the fields
/// mirror kvcheck_capabilities of include/kvcheck/backend_abi.h).
struct BackendCapabilities {
  /// KVCHECK_OP_* bits (backend_abi.h): the one record of which operations run. The
  /// default is every operation but the optional K/V family (SPEC §7), which a backend
  /// opts into (Backend::store_kv / gather_kv default to kUnsupported).
  uint32_t ops = ~0u & ~(KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV);
  uint32_t formats = ~0u;          // KVCHECK_FORMAT_BIT(kvcheck_format) bits
  /// Valid custom records (SPEC §2 fields no named format has) where `formats` is not
  /// every bit: a writer x reader contract scoped to OTHER (`kvcheck contract --format
  /// OTHER`) of two backends that take every format. The OTHER bit alone never meant
  /// them (backend_abi.h: drawn only for formats ~0u).
  bool scoped_custom_records = false;
  /// Whether valid custom records are drawn and run: every format, or such a scope.
  bool takes_custom_records() const { return formats == ~0u || scoped_custom_records; }
  uint32_t kv_dtypes = ~0u;        // 1 << KvDtype bits
  int32_t block_size_multiple = 1; // block sizes are multiples of this
  int32_t max_block_size = 0;      // 0 = no limit
  /// (1 << KvRecipe) bits: the recipes the FP8 store_kv implements (SPEC §7.3.1); the
  /// generators draw a case's recipe among them. In-process backends implement all; a
  /// plugin without a contract declares kSpec only.
  uint32_t kv_recipes = ~0u;
  /// Whether the backend reads kvcheck_kv_cache.recipe at all (in-process backends, and
  /// plugins with a contract): only these are handed a store with another recipe than
  /// spec, or an unknown recipe value to refuse. A plugin built before contracts has it
  /// as reserved0 and is handed 0.
  bool recipe_aware = true;
  /// The head_dims store_kv and gather_kv take (SPEC §7.2 caches); empty = any. The
  /// match properties draw only these; prop_store_kv_undeclared_shape_is_refused draws
  /// the others and requires a kUnsupported refusal.
  std::vector<int32_t> head_dims;
  /// Limits on num_kv_heads * head_dim (0 = none), declared as head_dims are.
  int64_t min_heads_x_head_dim = 0, max_heads_x_head_dim = 0;
  /// Bytes every K/V address and byte stride of store_kv / gather_kv is a multiple of
  /// (kvcheck_contract.kv_alignment; 1 = none): the generators align what they draw,
  /// the refusal property draws one address or stride off it.
  int64_t kv_alignment = 1;
  /// KVCHECK_KV_PAIR(cache, rows) bits of the (cache dtype, row dtype) pairs store_kv
  /// takes and gather_kv writes (kvcheck_contract.kv_dtype_pairs; 0 = every valid pair).
  uint32_t kv_dtype_pairs = 0;
  /// Buffers are the caller's host memory, used in place (HOST plugins, in-process
  /// backends); false for device plugins, whose adapter copies every buffer. The
  /// generators draw sparse multi-GiB inputs only for host-memory backends.
  bool host_memory = true;

  /// Whether f's kvcheck_format bit is set. A format no name matches: true when every
  /// format is supported or when f is invalid (so invalid-format inputs still reach
  /// the backend's validation), false for a valid format outside the table.
  bool supports_format(const KVCacheFormat& f) const;
  /// Whether the K/V cache dtype's bit is set; e2m1 also needs KVCHECK_OP_KV_NVFP4 (its
  /// scale caches travel in fields a table without it does not read).
  bool supports_kv_dtype(KvDtype d) const {
    if (d == KvDtype::kE2M1 && !(ops & KVCHECK_OP_KV_NVFP4)) return false;
    return (kv_dtypes >> static_cast<int>(d)) & 1u;
  }
  bool supports_kv_recipe(KvRecipe r) const {
    return is_kv_recipe(r) && ((kv_recipes >> static_cast<int>(r)) & 1u);
  }
  /// Whether a store_kv into a cache of `dtype` under `recipe` is inside the
  /// capabilities: an FP8 store with a known recipe needs it declared; bf16/fp16 caches
  /// ignore the recipe, and an unknown value is invalid input, not a capability
  /// question (SPEC §7.3.1). The plugin gate and the checks' judgement of a
  /// kUnsupported refusal both use this.
  bool supports_kv_store_recipe(KvDtype dtype, KvRecipe recipe) const {
    return !is_fp8(dtype) || !is_kv_recipe(recipe) || supports_kv_recipe(recipe);
  }
  /// Whether rows of `rows` into (or out of) a cache of `cache` are declared. A pair the
  /// spec rejects (fp16 rows into a bf16 cache, FP8 rows) is invalid input, not a
  /// capability question: true, so that it still reaches the backend's validation.
  bool supports_kv_dtype_pair(KvDtype cache, KvDtype rows) const;
  /// The recipes of kv_recipes, in enum order (never empty: kSpec when none is set).
  std::vector<KvRecipe> supported_kv_recipes() const;
  /// Whether head_dims is empty or holds d. A head_dim below 1 is invalid input, not a
  /// capability question: true.
  bool supports_head_dim(int64_t d) const;
  /// supports_head_dim(head_dim), and num_kv_heads * head_dim inside the declared
  /// limits. Heads or head_dim below 1 are invalid input: true.
  bool supports_kv_shape(int64_t num_kv_heads, int64_t head_dim) const;
  /// The num_kv_heads a head_dim of d may have under the row limits: [lo, hi], empty
  /// when lo > hi (hi INT32_MAX without a maximum).
  std::pair<int64_t, int64_t> kv_heads_range(int64_t d) const {
    const int64_t lo = std::max<int64_t>(1, (min_heads_x_head_dim + d - 1) / d);
    return {lo, max_heads_x_head_dim > 0 ? max_heads_x_head_dim / d : INT32_MAX};
  }
  /// Whether the row limits leave a head_dim of d some whole number of heads
  /// (kv_heads_range(d) not empty).
  bool kv_head_dim_fits_rows(int64_t d) const {
    const std::pair<int64_t, int64_t> heads = kv_heads_range(d);
    return heads.first <= heads.second;
  }
  /// Whether an e2m1 cache (head_dim a multiple of 16: one scale per 16 elements, SPEC
  /// §7.9) has a head_dim here: a declared one that is a multiple of 16 and meets the
  /// row limits, or, none declared, 16 (whose multiples fit only where 16 does).
  bool e2m1_head_dim_fits() const {
    const auto fits = [this](int64_t d) { return d % 16 == 0 && kv_head_dim_fits_rows(d); };
    return head_dims.empty() ? fits(16) : std::any_of(head_dims.begin(), head_dims.end(), fits);
  }
  /// Whether the contract limits the K/V shapes at all (head_dims or the limits).
  bool limits_kv_shapes() const {
    return !head_dims.empty() || min_heads_x_head_dim > 0 || max_heads_x_head_dim > 0;
  }
  /// "head_dims {128}, num_kv_heads x head_dim <= 1024, addresses and strides multiples
  /// of 16 bytes": the declared K/V limits.
  std::string describe_kv_shapes() const;
  /// Block sizes below 1 are invalid input, not a capability question: true.
  bool supports_block_size(int64_t bs) const {
    return bs < 1 || (bs % block_size_multiple == 0 && (max_block_size == 0 || bs <= max_block_size));
  }
  /// Whether a paged cache of this format, block size and block stride (bytes) is
  /// inside the capabilities: a valid stride above the packed one needs
  /// KVCHECK_OP_ANY_BLOCK_STRIDE; an invalid one is true, so that it still reaches the
  /// backend's validation (SPEC §3). The plugin gate and the checks' judgement of a
  /// kUnsupported refusal both use this.
  bool supports_block_stride(const KVCacheFormat& format, int64_t block_size, int64_t block_stride) const;
  /// Whether every property of `op` (a Property::op name) can run; else *why says
  /// which operation is missing.
  bool supports_property_op(const std::string& op, std::string* why) const;
  /// "" when nothing is restricted, else one line per restriction ("formats: BF16
  /// only", "block_size: multiples of 16", "ops: no load_paged_kv_cache, ...").
  std::string restrictions() const;
};

}  // namespace kvcheck
