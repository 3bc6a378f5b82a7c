#include "impl/contract_backend.h"

#include <algorithm>
#include <numeric>

#include "impl/error.h"

namespace kvcheck {
namespace {

constexpr uint32_t kWriterOps = KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_STORE_KV | KVCHECK_OP_ANY_BLOCK_STRIDE;
constexpr uint32_t kReaderOps = KVCHECK_OP_LOAD_PAGED_KV_CACHE | KVCHECK_OP_GATHER_KV |
                                KVCHECK_OP_GATHER_KV_SEQ_STARTS | KVCHECK_OP_ANY_BLOCK_STRIDE;

// `gaps` gets why a family is left out: "the K/V family: no (cache, rows) dtype pair both take".
BackendCapabilities both(const BackendCapabilities& w, const BackendCapabilities& r, const ContractScope& scope,
                         std::string& gaps) {
  BackendCapabilities c;
  c.ops = (w.ops & kWriterOps) | (r.ops & kReaderOps);
  // Record features both sides must read: NVFP4_DS_MLA's flagged records, NVFP4 K/V caches.
  c.ops |= w.ops & r.ops & (KVCHECK_OP_RECORD_FLAGS | KVCHECK_OP_KV_NVFP4);
  if (!(w.ops & KVCHECK_OP_ANY_BLOCK_STRIDE) || !(r.ops & KVCHECK_OP_ANY_BLOCK_STRIDE))
    c.ops &= ~KVCHECK_OP_ANY_BLOCK_STRIDE;  // a stride both must take
  c.formats = w.formats & r.formats & scope.formats;
  constexpr uint32_t kOther = 1u << KVCHECK_FORMAT_OTHER;
  c.scoped_custom_records =
      c.formats != ~0u && (scope.formats & kOther) && w.takes_custom_records() && r.takes_custom_records();
  // The scope's OTHER bit alone is no format: custom records are drawn only as above.
  const bool any_format = (c.formats & ~kOther) != 0 || c.takes_custom_records();
  const uint32_t shared_kv_dtypes = w.kv_dtypes & r.kv_dtypes & scope.kv_dtypes;
  const uint32_t e2m1_bit = 1u << static_cast<int>(KvDtype::kE2M1);
  c.kv_dtypes = shared_kv_dtypes;
  if (!(c.ops & KVCHECK_OP_KV_NVFP4)) c.kv_dtypes &= ~e2m1_bit;  // one side lacks it
  c.block_size_multiple = std::lcm(std::max(w.block_size_multiple, 1), std::max(r.block_size_multiple, 1));
  c.max_block_size = w.max_block_size == 0   ? r.max_block_size
                     : r.max_block_size == 0 ? w.max_block_size
                                             : std::min(w.max_block_size, r.max_block_size);
  c.kv_recipes = w.kv_recipes;  // the recipe is the store's; every recipe loads alike (SPEC §7.3.1)
  c.recipe_aware = w.recipe_aware;
  bool kv_shapes = true;  // a head_dim both take
  if (w.head_dims.empty()) {
    c.head_dims = r.head_dims;
  } else if (r.head_dims.empty()) {
    c.head_dims = w.head_dims;
  } else {
    for (int32_t d : w.head_dims)
      if (std::find(r.head_dims.begin(), r.head_dims.end(), d) != r.head_dims.end()) c.head_dims.push_back(d);
    kv_shapes = !c.head_dims.empty();
  }
  // The row limits both declare: the larger minimum, the smaller maximum.
  c.min_heads_x_head_dim = std::max(w.min_heads_x_head_dim, r.min_heads_x_head_dim);
  c.max_heads_x_head_dim = w.max_heads_x_head_dim == 0   ? r.max_heads_x_head_dim
                           : r.max_heads_x_head_dim == 0 ? w.max_heads_x_head_dim
                                                         : std::min(w.max_heads_x_head_dim, r.max_heads_x_head_dim);
  if (c.max_heads_x_head_dim > 0 && c.min_heads_x_head_dim > c.max_heads_x_head_dim) kv_shapes = false;
  // Each side's loader checked its own head_dims against its own row limits; the pair's
  // head_dims under the pair's limits may leave no whole number of heads (writer {128},
  // reader at most 100 elements a row), and the generators would then draw 0 heads.
  if (kv_shapes && !c.head_dims.empty())
    kv_shapes = std::any_of(c.head_dims.begin(), c.head_dims.end(),
                            [&c](int32_t d) { return c.kv_head_dim_fits_rows(d); });
  // Each side's loader found a head_dim for its own e2m1 caches; the pair's head_dims and
  // limits may leave none (writer {72, 128}, reader {72, 96}): e2m1 then leaves the
  // pair's dtypes, so its generators never draw it (they drew bf16 cases instead, and
  // `kvcheck contract --kv-dtype e2m1` reported e2m1 as covered).
  const bool e2m1_shapes = c.e2m1_head_dim_fits();
  if (!e2m1_shapes) c.kv_dtypes &= ~e2m1_bit;
  // Powers of two: the larger alignment is a multiple of the smaller.
  c.kv_alignment = std::max(w.kv_alignment, r.kv_alignment);
  // The dtype pairs both take (0 = every pair).
  c.kv_dtype_pairs = w.kv_dtype_pairs == 0   ? r.kv_dtype_pairs
                     : r.kv_dtype_pairs == 0 ? w.kv_dtype_pairs
                                             : w.kv_dtype_pairs & r.kv_dtype_pairs;
  if (w.kv_dtype_pairs != 0 && r.kv_dtype_pairs != 0) {
    // Cache dtypes with no pair left go; none left: the K/V family goes (below).
    for (KvDtype d : kv_dtypes()) {
      bool any = false;
      for (KvDtype rows : kv_row_dtypes()) any |= (c.kv_dtype_pairs & kv_dtype_pair_bit(d, rows)) != 0;
      if (!any) c.kv_dtypes &= ~(1u << static_cast<int>(d));
    }
  }
  c.host_memory = w.host_memory && r.host_memory;
  // A family whose cases no side-by-side draw can satisfy is dropped, so its rows are
  // "not exercised" (a zero mask would read as "everything" to the generators).
  const bool block_sizes = c.max_block_size == 0 || c.block_size_multiple <= c.max_block_size;
  const auto family = [&](const char* name, uint32_t store, const char* store_name, uint32_t load,
                          const char* load_name, std::string why) {
    if (!(w.ops & store)) why = std::string("the writer has no ") + store_name;
    else if (!(r.ops & load)) why = std::string("the reader has no ") + load_name;
    if (!why.empty()) gaps += (gaps.empty() ? "the " : "; the ") + std::string(name) + " family: " + why;
  };
  const char* no_block = "no block size both take";
  family("paged", KVCHECK_OP_STORE_KV_CACHE, "store_kv_cache", KVCHECK_OP_LOAD_PAGED_KV_CACHE, "load_paged_kv_cache",
         !block_sizes ? no_block : !any_format ? "no format both take (and the scope asks for)" : "");
  family("K/V", KVCHECK_OP_STORE_KV, "store_kv", KVCHECK_OP_GATHER_KV, "gather_kv",
         !block_sizes      ? no_block
         : !kv_shapes      ? "no head_dim or row shape both declare"
         : c.kv_dtypes == 0 && !e2m1_shapes && shared_kv_dtypes == e2m1_bit
             ? "no head_dim that is a multiple of 16 for the e2m1 caches both take"
         : c.kv_dtypes == 0 ? "no cache dtype with a (cache, rows) pair both take (and the scope asks for)"
                            : "");
  if (!block_sizes || !any_format)
    c.ops &= ~(KVCHECK_OP_STORE_KV_CACHE | KVCHECK_OP_LOAD_PAGED_KV_CACHE | KVCHECK_OP_ANY_BLOCK_STRIDE);
  if (!block_sizes || c.kv_dtypes == 0 || !kv_shapes)
    c.ops &= ~(KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV | KVCHECK_OP_GATHER_KV_SEQ_STARTS);
  if (!(c.ops & KVCHECK_OP_GATHER_KV)) c.ops &= ~KVCHECK_OP_GATHER_KV_SEQ_STARTS;
  return c;
}

[[noreturn]] void not_a_contract_op(std::string_view name, const char* op) {
  throw Error(ErrorCode::kUnsupported, std::string(name) + " has no " + op + " (a writer x reader contract)");
}

}  // namespace

std::string contract_name(std::string_view w, std::string_view r) {
  return std::string(w) + "-to-" + std::string(r);
}

bool is_contract_op(std::string_view op) { return op == "round_trip" || op == "kv_step"; }

ContractBackend::ContractBackend(std::shared_ptr<const Backend> writer, std::shared_ptr<const Backend> reader,
                                 ContractScope scope)
    : writer_(std::move(writer)),
      reader_(std::move(reader)),
      name_(contract_name(writer_->name(), reader_->name())),
      scope_(scope),
      caps_(both(writer_->capabilities(), reader_->capabilities(), scope_, gaps_)) {}

bool ContractBackend::set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const {
  const bool w = writer_->set_test_parallelism(max_threads, min_bytes_per_thread);
  const bool r = reader_->set_test_parallelism(max_threads, min_bytes_per_thread);
  return w && r;
}

void ContractBackend::store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                                     const CacheView& cache) const {
  writer_->store_kv_cache(kv, slot_mapping, cache);
}

void ContractBackend::load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                                          int32_t total_k, const LoadOutput& out) const {
  reader_->load_paged_kv_cache(cache, load_segments, total_k, out);
}

void ContractBackend::store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                               const KvCacheView& cache, const RopeArgs* rope) const {
  writer_->store_kv(key, value, slot_mapping, cache, rope);
}

void ContractBackend::gather_kv(const GatherKvArgs& args) const { reader_->gather_kv(args); }

void ContractBackend::convert_kv_index(const ConvertKvIndexArgs&, std::span<int32_t>) const {
  not_a_contract_op(name_, "convert_kv_index");
}
void ContractBackend::kv_index_cat(std::span<const int32_t>, int32_t, std::span<const int32_t>, int32_t, int32_t,
                                   int32_t, int32_t, std::span<int32_t>) const {
  not_a_contract_op(name_, "kv_index_cat");
}
void ContractBackend::expand_swa_index(std::span<const int32_t>, int32_t, int32_t, std::span<int32_t>) const {
  not_a_contract_op(name_, "expand_swa_index");
}
void ContractBackend::swa_decode_index(std::span<const int32_t>, int32_t, int32_t, int32_t,
                                       std::span<int32_t>) const {
  not_a_contract_op(name_, "swa_decode_index");
}

}  // namespace kvcheck
