// libkvcheck_cpu.so: the production CPU backend (impl/cpu) as a HOST plugin. Every
// entry turns its ABI arguments back into the Backend views and calls CpuBackend,
// which validates everything itself (SPEC §5, §7 order and codes).
#include "impl/cpu/cpu_backend.h"
#include "include/kvcheck/backend_abi.h"
#include "plugins/guard.h"

namespace {

using namespace kvcheck;
using plugin::from_abi;
using plugin::guarded;
using plugin::ints;

const cpu::CpuBackend backend;

int store_kv_cache(void*, const kvcheck_store_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    backend.store_kv_cache({a->kv, a->kv_rows, a->kv_row_stride}, ints(a->slot_mapping, a->num_tokens),
                           {a->cache.base, from_abi(a->cache), a->cache.size_bytes});
  });
}

int load_paged_kv_cache(void*, const kvcheck_load_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    backend.load_paged_kv_cache({a->cache.base, from_abi(a->cache), a->cache.size_bytes}, ints(a->load_segments, a->num_segment_ints),
                                a->total_k,
                                {a->out_data, a->out_data_stride, a->out_scales, a->out_scale_stride, a->out_rows});
  });
}

int convert_kv_index(void*, const kvcheck_convert_kv_index_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    ConvertKvIndexArgs c;
    c.topk = ints(a->topk, a->topk_entries);
    c.num_q = a->num_q;
    c.k = a->k;
    c.block_table = ints(a->block_table, a->block_table_entries);
    c.max_blocks = a->max_blocks;
    c.seq_ids = ints(a->seq_ids, a->seq_ids_entries);
    c.context_lens = ints(a->context_lens, a->context_lens_entries);
    c.block_size = a->block_size;
    backend.convert_kv_index(c, ints(a->out, a->out_entries));
  });
}

int kv_index_cat(void*, const kvcheck_kv_index_cat_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    backend.kv_index_cat(ints(a->left, a->left_entries), a->wl, ints(a->right, a->right_entries), a->wr, a->num_q,
                         a->total_k_swa_cached, a->total_k_swa_cur, ints(a->out, a->out_entries));
  });
}

int expand_swa_index(void*, const kvcheck_expand_swa_index_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    backend.expand_swa_index(ints(a->pivots, a->pivots_entries), a->num_q, a->width, ints(a->out, a->out_entries));
  });
}

int swa_decode_index(void*, const kvcheck_swa_decode_index_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    backend.swa_decode_index(ints(a->start_len, a->start_len_entries), a->num_q, a->width, a->ring_size,
                             ints(a->out, a->out_entries));
  });
}

int store_kv(void*, const kvcheck_store_kv_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    const RopeArgs rope = from_abi(a->rope);  // read only with has_rope (the table declares the bit)
    KvCacheView cache = from_abi(a->cache);
    plugin::block_scales_from_abi(a->block_scales, cache);  // e2m1 only (the table declares KVCHECK_OP_KV_NVFP4)
    backend.store_kv(KvTokensIn(from_abi(a->key)), KvTokensIn(from_abi(a->value)),
                     ints(a->slot_mapping, a->num_tokens), cache, a->has_rope ? &rope : nullptr);
  });
}

int gather_kv(void*, const kvcheck_gather_kv_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] {
    backend.gather_kv(from_abi(*a));
  });
}

int swap_blocks(void*, const kvcheck_swap_blocks_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] { backend.swap_blocks(from_abi(*a)); });
}

int concat_and_cache_mla(void*, const kvcheck_concat_and_cache_mla_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] { backend.concat_and_cache_mla(from_abi(*a)); });
}

int copy_blocks(void*, const kvcheck_copy_blocks_args* a, void*, char* msg, size_t size) {
  return guarded(msg, size, [&] { backend.copy_blocks(from_abi(*a)); });
}

int set_test_parallelism(void*, int32_t max_threads, int64_t min_bytes_per_thread) {
  return backend.set_test_parallelism(max_threads, min_bytes_per_thread) ? KVCHECK_STATUS_OK
                                                                         : KVCHECK_STATUS_INVALID_ARGUMENT;
}

kvcheck_backend_v1_t make_table() {
  kvcheck_backend_v1_t t{};
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = "cpu";
  t.memory_space = KVCHECK_MEMORY_HOST;
  t.capabilities = {plugin::kAllOps, ~0u, ~0u, 1, 0};
  KVCHECK_PLUGIN_FILL_ENTRIES(t);  // every op of KVCHECK_OPS, by its name
  t.contract = &plugin::kEveryRecipe;
  t.set_test_parallelism = set_test_parallelism;
  return t;
}

const kvcheck_backend_v1_t table = make_table();

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char*, size_t) {
  *out = &table;
  return KVCHECK_STATUS_OK;
}
