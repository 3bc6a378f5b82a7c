/* "bad-reader": the cpu backend (its plugin, loaded from KVCHECK_CPU_PLUGIN) whose
 * load_paged_kv_cache and gather_kv flip bit 0 of the first byte they write. It stores
 * as the reference does and reads back what it stored but one bit: a reader to pair
 * with a good writer in `kvcheck contract`, over every format and dtype the cpu takes
 * (so a --format scope draws other cases than the whole pair: the reproduce line must
 * carry the scope). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "include/kvcheck/backend_abi.h"

static kvcheck_backend_v1_t table;
static const kvcheck_backend_v1_t* cpu;

static int bad_load(void* ctx, const kvcheck_load_args* a, void* stream, char* msg, size_t n) {
  const int rc = cpu->load_paged_kv_cache(ctx, a, stream, msg, n);
  if (rc == KVCHECK_STATUS_OK && a->total_k > 0 && a->out_data) a->out_data[0] ^= 1;
  return rc;
}

static int bad_gather(void* ctx, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t n) {
  const int rc = cpu->gather_kv(ctx, a, stream, msg, n);
  if (rc == KVCHECK_STATUS_OK && a->cu_seqlens_entries > 1 && a->cu_seqlens_k[a->cu_seqlens_entries - 1] > 0 &&
      a->out_k.data)
    a->out_k.data[0] ^= 1;
  return rc;
}

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t version, const kvcheck_backend_v1_t** out, char* msg,
                                             size_t n) {
  void* lib = dlopen(KVCHECK_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  void* sym = lib ? dlsym(lib, "kvcheck_backend_v1") : NULL;
  kvcheck_backend_v1_fn entry;
  int rc;
  if (!sym) {
    snprintf(msg, n, "cannot load the cpu plugin %s: %s", KVCHECK_CPU_PLUGIN, dlerror());
    return KVCHECK_STATUS_UNSUPPORTED;
  }
  memcpy(&entry, &sym, sizeof entry); /* ISO C has no object-to-function pointer cast */
  rc = entry(version, &cpu, msg, n);
  if (rc != KVCHECK_STATUS_OK) return rc;
  memcpy(&table, cpu, sizeof table);
  table.name = "bad-reader";
  table.load_paged_kv_cache = bad_load;
  table.gather_kv = bad_gather;
  *out = &table;
  return KVCHECK_STATUS_OK;
}
