// libkvcheck_cuda.so: the production CUDA kernels (impl/cuda, device_api.h) as a
// CUDA_DEVICE plugin. Every entry runs the CHECKED device entry point on the harness's
// stream (validation on the device, nothing written on bad input) and waits for its
// verdict (PendingCheck::throw_if_error: the one wait), so a refusal comes back with
// the cpu backend's code and message. The K/V family is forwarded the same way
// (store_kv_checked, gather_kv_checked): no metadata or scale leaves the device.
#include <span>

#include "impl/cuda/device_api.h"
#include "impl/error.h"
#include "impl/validate_cache.h"
#include "impl/validate_store_load.h"
#include "impl/plugin/device_memory.h"
#include "include/kvcheck/backend_abi.h"
#include "plugins/guard.h"

namespace {

using namespace kvcheck;
using cuda::DeviceBuffer;
using cuda::DeviceStatus;
using cuda::LaunchOptions;
using plugin::from_abi;
using plugin::guarded;

LaunchOptions opts(void* stream) { return {stream, true}; }  // PDL on, as engines launch

int probe(void*, char* msg, size_t size) {
  const std::string why = cuda::probe_device();
  if (why.empty()) return KVCHECK_STATUS_OK;
  plugin::write_message(why, msg, size);
  return KVCHECK_STATUS_UNSUPPORTED;
}

/// Every entry: `workspace_bytes()` (it may throw the op's first refusal), a fresh
/// status word and workspace, the checked device entry `call(status, workspace)`, and
/// the one wait for its verdict.
template <class Bytes, class Call>
int checked(void* stream, char* msg, size_t size, Bytes&& workspace_bytes, Call&& call) {
  return guarded(msg, size, [&] {
    DeviceBuffer status(sizeof(DeviceStatus)), workspace(workspace_bytes());
    call(status.as<DeviceStatus>(), workspace.get()).throw_if_error(stream);
  });
}
size_t none() { return 0; }

size_t entries(int64_t n) { return n > 0 ? static_cast<size_t>(n) : size_t{0}; }

/// A cache's device layout, after step 1 of docs/spec.md §5.2 (its layout, then its
/// buffer's size): a format whose fields break §2 (elements_per_sf 0 with scales) is
/// refused before anything derives offsets from it (num_scales divides by
/// elements_per_sf), so a direct caller gets INVALID_FORMAT, not a SIGFPE. The
/// harness's calls were checked already (op_decl.cpp's bound()).
PagedLayout checked_paged(const kvcheck_paged_cache& c) {
  const CacheLayout layout = from_abi(c);
  validate_layout(layout);
  validate_cache_bytes(layout, c.base, c.size_bytes);
  return layout.paged();
}

int store_kv_cache(void*, const kvcheck_store_args* a, void* stream, char* msg, size_t size) {
  PagedLayout layout;
  return checked(
      stream, msg, size, [&] { return cuda::store_workspace_bytes(layout = checked_paged(a->cache)); },
      [&](DeviceStatus* st, void* ws) {
        const cuda::StoreArgs s{a->kv, a->kv_rows, a->kv_row_stride, a->slot_mapping, a->num_tokens};
        return cuda::store_kv_cache_checked({a->cache.base, layout, a->cache.size_bytes}, s, st, ws, opts(stream));
      });
}

int concat_and_cache_mla(void*, const kvcheck_concat_and_cache_mla_args* a, void* stream, char* msg, size_t size) {
  PagedLayout layout;
  cuda::DeviceCache pe;  // split caches: k_pe's own (this table declares KVCHECK_OP_CONCAT_MLA_PE_CACHE)
  return checked(
      stream, msg, size,
      [&] {
        layout = checked_paged(a->cache);
        if (a->has_pe_cache) {
          try {
            pe = {a->pe_cache.base, checked_paged(a->pe_cache), a->pe_cache.size_bytes};
          } catch (const Error& e) {
            rethrow_for_pe_cache(e);
          }
        }
        return cuda::store_workspace_bytes(layout);
      },
      [&](DeviceStatus* st, void* ws) {
        const RopeArgs rope = from_abi(a->rope);  // read only with has_rope (the table declares the bit)
        const cuda::ConcatArgs c{a->kv_c,         a->kv_c_rows,  a->kv_c_row_stride, a->k_pe,
                                 a->k_pe_rows,    a->k_pe_row_stride, a->kv_lora_rank,  a->rope_dim,
                                 a->slot_mapping, a->num_tokens, a->has_pe_cache ? &pe : nullptr,
                                 a->has_rope ? &rope : nullptr};
        return cuda::concat_and_cache_mla_checked({a->cache.base, layout, a->cache.size_bytes}, c, st, ws,
                                                  opts(stream));
      });
}

int load_paged_kv_cache(void*, const kvcheck_load_args* a, void* stream, char* msg, size_t size) {
  PagedLayout layout;
  return checked(
      stream, msg, size,
      [&] {
        layout = checked_paged(a->cache);
        return cuda::load_workspace_bytes(a->total_k);
      },
      [&](DeviceStatus* st, void* ws) {
        const cuda::LoadArgs l{a->load_segments, a->num_segment_ints / 4, a->total_k,        a->out_data,
                               a->out_data_stride, a->out_scales,            a->out_scale_stride, a->out_rows};
        return cuda::load_paged_kv_cache_checked({a->cache.base, layout, a->cache.size_bytes}, l, st, ws,
                                                 opts(stream));
      });
}

int convert_kv_index(void*, const kvcheck_convert_kv_index_args* a, void* stream, char* msg, size_t size) {
  return checked(stream, msg, size, none, [&](DeviceStatus* st, void*) {
    const cuda::ConvertArgs c{a->topk,       a->num_q,   a->k,            a->block_table, a->block_table_entries,
                              a->max_blocks, a->seq_ids, a->context_lens, a->block_size,  a->out};
    return cuda::convert_kv_index(c, true, st, opts(stream));
  });
}

int kv_index_cat(void*, const kvcheck_kv_index_cat_args* a, void* stream, char* msg, size_t size) {
  return checked(stream, msg, size, none, [&](DeviceStatus* st, void*) {
    return cuda::kv_index_cat(a->left, a->wl, a->right, a->wr, a->num_q, a->total_k_swa_cached, a->total_k_swa_cur,
                              a->out, true, st, opts(stream));
  });
}

int expand_swa_index(void*, const kvcheck_expand_swa_index_args* a, void* stream, char* msg, size_t size) {
  return checked(stream, msg, size, none, [&](DeviceStatus* st, void*) {
    return cuda::expand_swa_index(a->pivots, a->num_q, a->width, a->out, true, st, opts(stream));
  });
}

int swa_decode_index(void*, const kvcheck_swa_decode_index_args* a, void* stream, char* msg, size_t size) {
  return checked(stream, msg, size, none, [&](DeviceStatus* st, void*) {
    return cuda::swa_decode_index(a->start_len, a->num_q, a->width, a->ring_size, a->out, true, st, opts(stream));
  });
}

// The K/V family: ABI -> views, then the checked device entries (device_api.h), which
// validate on the host what reads no device memory and the rest on the device.
int store_kv(void*, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t size) {
  KvCacheView cache;
  return checked(
      stream, msg, size,
      [&] {
        cache = from_abi(a->cache);
        plugin::block_scales_from_abi(a->block_scales, cache);  // e2m1 only (the table declares KVCHECK_OP_KV_NVFP4)
        return cuda::store_kv_workspace_bytes(cache.layout);
      },
      [&](DeviceStatus* st, void* ws) {
        const RopeArgs rope = from_abi(a->rope);  // read only with has_rope (the table declares the bit)
        return cuda::store_kv_checked(from_abi(a->key), from_abi(a->value), {a->slot_mapping, entries(a->num_tokens)},
                                      cache, st, ws, opts(stream), a->has_rope ? &rope : nullptr);
      });
}

int gather_kv(void*, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t size) {
  return checked(stream, msg, size, none, [&](DeviceStatus* st, void*) {
    return cuda::gather_kv_checked(from_abi(*a), st, opts(stream));
  });
}

int copy_blocks(void*, const kvcheck_copy_blocks_args* a, void* stream, char* msg, size_t size) {
  CopyBlocksArgs c;  // views: host memory (the ABI says so)
  return checked(
      stream, msg, size, [&] { return cuda::copy_blocks_workspace_bytes(c = from_abi(*a)); },
      [&](DeviceStatus* st, void* ws) { return cuda::copy_blocks_checked(c, st, ws, opts(stream)); });
}

int swap_blocks(void*, const kvcheck_swap_blocks_args* a, void* stream, char* msg, size_t size) {
  SwapBlocksArgs c;  // views: host memory; src / dst where their *_host flags say
  return checked(
      stream, msg, size, [&] { return cuda::swap_blocks_workspace_bytes(c = from_abi(*a)); },
      [&](DeviceStatus* st, void* ws) { return cuda::swap_blocks_checked(c, st, ws, opts(stream)); });
}

kvcheck_backend_v1_t make_table() {
  kvcheck_backend_v1_t t{};
  t.abi_version = KVCHECK_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = "cuda";
  t.memory_space = KVCHECK_MEMORY_CUDA_DEVICE;
  t.capabilities = {plugin::kAllOps, ~0u, ~0u, 1, 0};
  t.probe = probe;
  KVCHECK_PLUGIN_FILL_ENTRIES(t);  // every op of KVCHECK_OPS, by its name
  t.contract = &plugin::kEveryRecipe;
  return t;
}

const kvcheck_backend_v1_t table = make_table();

}  // namespace

extern "C" KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t, const kvcheck_backend_v1_t** out, char*, size_t) {
  *out = &table;
  return KVCHECK_STATUS_OK;
}
