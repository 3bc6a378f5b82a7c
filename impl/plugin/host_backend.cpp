// The host adapter: a HOST plugin gets the harness's host buffers as they are (the
// properties and fuzzers own them, fill them with patterns and compare them whole).
#include <memory>

#include "impl/plugin/call.h"
#include "impl/plugin/plugin_backend.h"

namespace kvcheck::plugin {
namespace {

class HostPluginBackend final : public PluginBackend {
 public:
  using PluginBackend::PluginBackend;

  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                      const CacheView& cache) const override {
    require_op(KVCHECK_OP_STORE_KV_CACHE, "store_kv_cache");
    require_paged(cache.layout, "store_kv_cache");
    kvcheck_store_args a{};
    a.kv = kv.data;
    a.kv_rows = kv.rows;
    a.kv_row_stride = kv.row_stride;
    a.slot_mapping = slot_mapping.data();
    a.num_tokens = static_cast<int64_t>(slot_mapping.size());
    a.cache = to_abi(cache.layout, cache.base, cache.size_bytes);
    call_plugin(name_, "store_kv_cache", table().store_kv_cache, table().context, a, nullptr);
  }

  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                           int32_t total_k, const LoadOutput& out) const override {
    require_op(KVCHECK_OP_LOAD_PAGED_KV_CACHE, "load_paged_kv_cache");
    require_paged(cache.layout, "load_paged_kv_cache");
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
    call_plugin(name_, "load_paged_kv_cache", table().load_paged_kv_cache, table().context, a, nullptr);
  }

  void convert_kv_index(const ConvertKvIndexArgs& c, std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_CONVERT_KV_INDEX, "convert_kv_index");
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
    call_plugin(name_, "convert_kv_index", table().convert_kv_index, table().context, a, nullptr);
  }

  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right, int32_t wr,
                    int32_t num_q, int32_t cached, int32_t cur, std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_KV_INDEX_CAT, "kv_index_cat");
    const kvcheck_kv_index_cat_args a{left.data(), static_cast<int64_t>(left.size()), wl,
                                      right.data(), static_cast<int64_t>(right.size()), wr,
                                      num_q, cached, cur, out.data(), static_cast<int64_t>(out.size())};
    call_plugin(name_, "kv_index_cat", table().kv_index_cat, table().context, a, nullptr);
  }

  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_EXPAND_SWA_INDEX, "expand_swa_index");
    const kvcheck_expand_swa_index_args a{pivots.data(), static_cast<int64_t>(pivots.size()), num_q, width,
                                          out.data(), static_cast<int64_t>(out.size())};
    call_plugin(name_, "expand_swa_index", table().expand_swa_index, table().context, a, nullptr);
  }

  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width, int32_t ring_size,
                        std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_SWA_DECODE_INDEX, "swa_decode_index");
    const kvcheck_swa_decode_index_args a{start_len.data(), static_cast<int64_t>(start_len.size()), num_q, width,
                                          ring_size, 0, out.data(), static_cast<int64_t>(out.size())};
    call_plugin(name_, "swa_decode_index", table().swa_decode_index, table().context, a, nullptr);
  }

  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache) const override {
    require_op(KVCHECK_OP_STORE_KV, "store_kv");
    require_kv(cache.layout, "store_kv");
    kvcheck_store_kv_args a{};
    a.key = to_abi(key);
    a.value = to_abi(value);
    a.slot_mapping = slot_mapping.data();
    a.num_tokens = static_cast<int64_t>(slot_mapping.size());
    a.cache = to_abi(cache, cache.scales.k_scale.data(), cache.scales.v_scale.data());
    call_plugin(name_, "store_kv", table().store_kv, table().context, a, nullptr);
  }

  void gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table, int32_t max_blocks,
                 std::span<const int32_t> cu_seqlens_k, const KvTokensOut& out_k,
                 const KvTokensOut& out_v) const override {
    require_op(KVCHECK_OP_GATHER_KV, "gather_kv");
    require_kv(cache.layout, "gather_kv");
    kvcheck_gather_kv_args a{};
    a.cache = to_abi(cache, cache.scales.k_scale.data(), cache.scales.v_scale.data());
    a.block_table = block_table.data();
    a.block_table_entries = static_cast<int64_t>(block_table.size());
    a.max_blocks = max_blocks;
    a.cu_seqlens_k = cu_seqlens_k.data();
    a.cu_seqlens_entries = static_cast<int64_t>(cu_seqlens_k.size());
    a.out_k = to_abi(KvTokensIn(out_k));
    a.out_v = to_abi(KvTokensIn(out_v));
    call_plugin(name_, "gather_kv", table().gather_kv, table().context, a, nullptr);
  }
};

}  // namespace

std::shared_ptr<const Backend> make_host_backend(std::shared_ptr<Library> lib) {
  return std::make_shared<HostPluginBackend>(std::move(lib));
}

}  // namespace kvcheck::plugin
