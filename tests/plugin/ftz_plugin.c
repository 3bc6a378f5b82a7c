/* kvcheck's own cpu plugin, re-exported by a library that turns on flush-to-zero and
 * denormals-are-zero (x86 MXCSR bits 15 and 6) and leaves them on, as a -ffast-math /
 * -Ofast shared library does (gcc links crtfastmath.o, whose constructor sets them):
 *   libftz_at_load.so   sets them in a constructor, at dlopen;
 *   libftz_in_call.so   -DFTZ_IN_CALL: sets them in concat_and_cache_mla, then calls
 *                       the cpu's.
 * The cpu kernels then flush subnormal results. Before the harness kept the plugin's
 * floating-point mode apart from its own (impl/plugin/fp_mode.h), the reference ran
 * under the same mode and flushed alike, so both passed; the suite asserts they fail
 * on a concat_and_cache_mla RoPE case with a subnormal result. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
static void set_ftz_daz(void) { _mm_setcsr(_mm_getcsr() | 0x8040u); }
#else
static void set_ftz_daz(void) {}
#endif

#include "include/kvcheck/backend_abi.h"

static kvcheck_backend_v1_t table;
static const kvcheck_backend_v1_t* cpu;

#ifdef FTZ_IN_CALL
static int concat(void* context, const kvcheck_concat_and_cache_mla_args* a, void* stream, char* msg, size_t n) {
  set_ftz_daz();
  return cpu->concat_and_cache_mla(context, a, stream, msg, n);
}
#else
__attribute__((constructor)) static void at_load(void) { set_ftz_daz(); }
#endif

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t abi_version, const kvcheck_backend_v1_t** out, char* msg,
                                             size_t msg_size) {
  void* h = dlopen(KVCHECK_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  kvcheck_backend_v1_fn entry;
  void* sym;
  int st;
  if (h == NULL) {
    snprintf(msg, msg_size, "cannot load %s: %s", KVCHECK_CPU_PLUGIN, dlerror());
    return KVCHECK_STATUS_INTERNAL;
  }
  sym = dlsym(h, KVCHECK_ENTRY_SYMBOL);
  memcpy(&entry, &sym, sizeof entry);
  st = entry(abi_version, &cpu, msg, msg_size);
  if (st != KVCHECK_STATUS_OK) return st;
  table = *cpu;
#ifdef FTZ_IN_CALL
  table.name = "ftz-in-call";
  table.concat_and_cache_mla = concat;
#else
  table.name = "ftz-at-load";
#endif
  *out = &table;
  return KVCHECK_STATUS_OK;
}
