// PluginBackend: each operation's views into its ABI argument struct (the only
// per-operation code here; the call itself is invoke(), plugin_backend.h).
#include "impl/plugin/plugin_backend.h"

#include <cstddef>

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"
#include "impl/plugin/loader.h"

namespace kvcheck::plugin {

PluginBackend::PluginBackend(std::shared_ptr<Library> lib)
    : lib_(std::move(lib)), name_(lib_->table->name), caps_(from_abi(lib_->table->capabilities)) {
  caps_.host_memory = lib_->table->memory_space == KVCHECK_MEMORY_HOST;
  apply_contract(table_contract(*lib_->table), caps_);
  if (!caps_.host_memory) device_ = make_device_transport();
}

bool PluginBackend::set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const {
  const kvcheck_backend_v1_t& t = table();
  const bool has = t.struct_size >= offsetof(kvcheck_backend_v1_t, set_test_parallelism) + sizeof(void*);
  if (!has || t.set_test_parallelism == nullptr) return false;
  const PluginFpScope fp(lib_->fp_mode);
  return t.set_test_parallelism(t.context, max_threads, min_bytes_per_thread) == KVCHECK_STATUS_OK;
}

void PluginBackend::store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                                   const CacheView& cache) const {
  kvcheck_store_args a{};
  a.kv = kv.data;
  a.kv_rows = kv.rows;
  a.kv_row_stride = kv.row_stride;
  a.slot_mapping = slot_mapping.data();
  a.num_tokens = static_cast<int64_t>(slot_mapping.size());
  a.cache = to_abi(cache.layout, cache.base, cache.size_bytes);
  invoke(a);
}

void PluginBackend::load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                                        int32_t total_k, const LoadOutput& out) const {
  kvcheck_load_args a{};
  a.cache = to_abi(cache.layout, cache.base, cache.size_bytes);
  a.load_segments = load_segments.data();
  a.num_segment_ints = static_cast<int64_t>(load_segments.size());
  a.total_k = total_k;
  a.out_data = out.data;
  a.out_data_stride = out.data_row_stride;
  a.out_scales = out.scales;
  a.out_scale_stride = out.scale_row_stride;
  a.out_rows = out.rows;
  invoke(a);
}

void PluginBackend::convert_kv_index(const ConvertKvIndexArgs& c, std::span<int32_t> out) const {
  kvcheck_convert_kv_index_args a{};
  a.topk = c.topk.data();
  a.topk_entries = static_cast<int64_t>(c.topk.size());
  a.num_q = c.num_q;
  a.k = c.k;
  a.block_table = c.block_table.data();
  a.block_table_entries = static_cast<int64_t>(c.block_table.size());
  a.max_blocks = c.max_blocks;
  a.block_size = c.block_size;
  a.seq_ids = c.seq_ids.empty() ? nullptr : c.seq_ids.data();
  a.seq_ids_entries = static_cast<int64_t>(c.seq_ids.size());
  a.context_lens = c.context_lens.data();
  a.context_lens_entries = static_cast<int64_t>(c.context_lens.size());
  a.out = out.data();
  a.out_entries = static_cast<int64_t>(out.size());
  invoke(a);
}

void PluginBackend::kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right,
                                 int32_t wr, int32_t num_q, int32_t cached, int32_t cur,
                                 std::span<int32_t> out) const {
  invoke(kvcheck_kv_index_cat_args{left.data(), static_cast<int64_t>(left.size()), wl, right.data(),
                                   static_cast<int64_t>(right.size()), wr, num_q, cached, cur, out.data(),
                                   static_cast<int64_t>(out.size())});
}

void PluginBackend::expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                                     std::span<int32_t> out) const {
  invoke(kvcheck_expand_swa_index_args{pivots.data(), static_cast<int64_t>(pivots.size()), num_q, width, out.data(),
                                       static_cast<int64_t>(out.size())});
}

void PluginBackend::swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                                     int32_t ring_size, std::span<int32_t> out) const {
  invoke(kvcheck_swa_decode_index_args{start_len.data(), static_cast<int64_t>(start_len.size()), num_q, width,
                                       ring_size, 0, out.data(), static_cast<int64_t>(out.size())});
}

void PluginBackend::store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                             const KvCacheView& cache, const RopeArgs* rope) const {
  // A plugin without the feature bit would store the key rows unrotated: never call it
  // with a RoPE.
  if (rope && !(capabilities().ops & KVCHECK_OP_STORE_KV_ROPE))
    throw Error(ErrorCode::kUnsupported,
                std::string(name()) + "'s store_kv takes no fused RoPE (no KVCHECK_OP_STORE_KV_ROPE)");
  kvcheck_store_kv_args a{};
  a.key = to_abi(key);
  a.value = to_abi(value);
  a.slot_mapping = slot_mapping.data();
  a.num_tokens = static_cast<int64_t>(slot_mapping.size());
  a.cache = to_abi(cache, cache.scales.k_scale.data(), cache.scales.v_scale.data());
  a.block_scales = block_scales_to_abi(cache);
  if (rope) {
    a.has_rope = 1;
    a.rope = to_abi(*rope);
  }
  invoke(a);
}

void PluginBackend::gather_kv(const GatherKvArgs& args) const {
  // A plugin without the feature bit would ignore seq_starts: never call it with them.
  if (!args.seq_starts.empty() && !(capabilities().ops & KVCHECK_OP_GATHER_KV_SEQ_STARTS))
    throw Error(ErrorCode::kUnsupported, std::string(name()) +
                                             "'s gather_kv takes no seq_starts (no KVCHECK_OP_GATHER_KV_SEQ_STARTS)");
  // A gather dequantises alike under every recipe (SPEC §7.3.1): it is handed none (0,
  // what reserved0 always was), whatever recipe the cache was written under.
  kvcheck_gather_kv_args a = to_abi(args);
  a.cache.recipe = 0;
  invoke(a);
}

void PluginBackend::copy_blocks(const CopyBlocksArgs& args) const { invoke(to_abi(args)); }
void PluginBackend::concat_and_cache_mla(const ConcatMlaArgs& args) const {
  // A plugin without the feature bit would store joined rows into `cache`: never call it
  // with a pe_cache.
  if (args.pe_cache && !(capabilities().ops & KVCHECK_OP_CONCAT_MLA_PE_CACHE))
    throw Error(ErrorCode::kUnsupported, std::string(name()) +
                                             "'s concat_and_cache_mla takes no pe_cache (no KVCHECK_OP_CONCAT_MLA_PE_CACHE)");
  if (args.rope && !(capabilities().ops & KVCHECK_OP_CONCAT_MLA_ROPE))
    throw Error(ErrorCode::kUnsupported, std::string(name()) +
                                             "'s concat_and_cache_mla takes no fused RoPE (no KVCHECK_OP_CONCAT_MLA_ROPE)");
  invoke(to_abi(args));
}
void PluginBackend::swap_blocks(const SwapBlocksArgs& args) const { invoke(to_abi(args)); }

}  // namespace kvcheck::plugin
