/* A plugin whose store crashes (CRASH: SIGSEGV), hangs (HANG), ends the process with
 * exit(0) (EXIT0, a plugin "finishing" a test run for its caller) or closes every file
 * descriptor past stderr, the harness's channel among them (CLOSE_FDS), on every call
 * with a token: the campaign must report it, with the reproduce command, and go on. Every case
 * with a row crashes, so the minimal crashing case has exactly one row: the report must
 * show that one (n=1 ... slot_mapping=[s]), shrunk from the chunk. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/kvcheck/backend_abi.h"

/* What every call with a token does. */
static int misbehave(int64_t num_tokens) {
  if (num_tokens > 0) {
#if defined(HANG)
    for (;;) sleep(1);
#elif defined(EXIT0)
    exit(0);
#elif defined(CLOSE_FDS)
    int fd;
    for (fd = 3; fd < 1024; ++fd) close(fd);
#else
    volatile int* p = NULL;
    *p = 1;
#endif
  }
  return KVCHECK_STATUS_OK;
}

static int store(void* ctx, const kvcheck_store_args* a, void* stream, char* msg, size_t n) {
  (void)ctx, (void)stream, (void)msg, (void)n;
  return misbehave(a->num_tokens);
}

#ifdef CRASH_KV
/* CRASH_KV: the K/V family's store and gather crash instead (a plugin of store_kv and
 * gather_kv only); gather_kv on every call that gathers a row. */
static int store_kv(void* ctx, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t n) {
  (void)ctx, (void)stream, (void)msg, (void)n;
  return misbehave(a->num_tokens);
}

static int gather_kv(void* ctx, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t n) {
  (void)ctx, (void)stream, (void)msg, (void)n;
  return misbehave(a->cu_seqlens_entries > 1 ? a->cu_seqlens_k[a->cu_seqlens_entries - 1] : 0);
}
#endif

static kvcheck_backend_v1_t table;

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t v, const kvcheck_backend_v1_t** out, char* msg, size_t n) {
  (void)v;
  (void)msg;
  (void)n;
  memset(&table, 0, sizeof table);
  table.abi_version = KVCHECK_ABI_VERSION;
  table.struct_size = sizeof table;
#if defined(HANG)
  table.name = "hang";
#elif defined(EXIT0)
  table.name = "exit0";
#elif defined(CLOSE_FDS)
  table.name = "close-fds";
#elif defined(CRASH_KV)
  table.name = "crash-kv";
#else
  table.name = "crash";
#endif
  table.memory_space = KVCHECK_MEMORY_HOST;
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = ~0u;
  table.store_kv_cache = store;
#ifdef CRASH_KV
  table.capabilities.ops = KVCHECK_OP_STORE_KV | KVCHECK_OP_GATHER_KV; /* its store_kv_cache is never called */
  table.capabilities.kv_dtypes = ~0u;
  table.store_kv = store_kv;
  table.gather_kv = gather_kv;
#endif
  *out = &table;
  return KVCHECK_STATUS_OK;
}
