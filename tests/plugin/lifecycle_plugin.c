/* Plugins that misbehave around the calls rather than in them, one per -D
 * (tests/plugin/CMakeLists.txt): a library constructor that ends the process
 * (CTOR_EXIT0: exit(0), CTOR__EXIT0: _exit(0)) or never returns (CTOR_HANG); a probe that
 * ends the process (PROBE_EXIT0), never returns (PROBE_HANG) or fills its whole message
 * buffer with no NUL (PROBE_FULL_MSG); an entry that declines with a message filling its
 * whole buffer (ENTRY_FULL_MSG). Each is otherwise a store-only plugin ("lifecycle"). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/kvcheck/backend_abi.h"

#if defined(CTOR_EXIT0) || defined(CTOR__EXIT0) || defined(CTOR_HANG)
__attribute__((constructor)) static void misbehave_on_load(void) {
#if defined(CTOR_EXIT0)
  exit(0);
#elif defined(CTOR__EXIT0)
  _exit(0);
#else
  for (;;) sleep(1);
#endif
}
#endif

#ifndef ENTRY_FULL_MSG
static int store(void* ctx, const kvcheck_store_args* a, void* stream, char* msg, size_t n) {
  (void)ctx, (void)a, (void)stream, (void)msg, (void)n;
  return KVCHECK_STATUS_OK;
}
#endif

#if defined(PROBE_EXIT0) || defined(PROBE_HANG) || defined(PROBE_FULL_MSG)
static int probe(void* ctx, char* msg, size_t n) {
  (void)ctx;
#if defined(PROBE_EXIT0)
  (void)msg, (void)n;
  exit(0);
#elif defined(PROBE_HANG)
  (void)msg, (void)n;
  for (;;) sleep(1);
#else
  memset(msg, 'A', n); /* every byte, no NUL */
#endif
  return KVCHECK_STATUS_UNSUPPORTED;
}
#endif

#ifndef ENTRY_FULL_MSG
static kvcheck_backend_v1_t table;
#endif

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t v, const kvcheck_backend_v1_t** out, char* msg, size_t n) {
  (void)v;
#ifdef ENTRY_FULL_MSG
  memset(msg, 'B', n); /* every byte, no NUL */
  (void)out;
  return KVCHECK_STATUS_UNSUPPORTED;
#else
  (void)msg;
  (void)n;
  memset(&table, 0, sizeof table);
  table.abi_version = KVCHECK_ABI_VERSION;
  table.struct_size = sizeof table;
  table.name = "lifecycle";
  table.memory_space = KVCHECK_MEMORY_HOST;
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = ~0u;
  table.store_kv_cache = store;
#if defined(PROBE_EXIT0) || defined(PROBE_HANG) || defined(PROBE_FULL_MSG)
  table.probe = probe;
#endif
  *out = &table;
  return KVCHECK_STATUS_OK;
#endif
}
