/* A HOST plugin written in plain C99 against include/kvcheck/backend_abi.h only: a
 * BF16 slot_mapping store (SPEC §5.1) with block sizes that are multiples of 16.
 *
 * Built twice by tests/plugin/CMakeLists.txt:
 *   libgood_bf16_store.so   correct; the suite asserts every store property holds;
 *   libfaulty_bf16_store.so -DKVCHECK_FAULTY: clamps a padding slot (-1) to slot 0, the
 *                           way a kernel that "sanitises" its index writes padding rows
 *                           over slot 0; the suite asserts the campaign and the store
 *                           fuzz replay catch it and print the decoded first difference;
 *   librefusing_bf16_store.so -DKVCHECK_REFUSES_PADDING: answers UNSUPPORTED for a batch
 *                           with a padding row, inside the capabilities it declares: a
 *                           replay must call that a failure, not "not supported". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/kvcheck/backend_abi.h"
#include "tests/plugin/store_checks.h"

#if defined(KVCHECK_FAULTY)
#define PLUGIN_NAME "faulty-bf16-store"
#elif defined(KVCHECK_REFUSES_PADDING)
#define PLUGIN_NAME "refusing-bf16-store"
#else
#define PLUGIN_NAME "good-bf16-store"
#endif


/* SPEC §5.1 with the validation order of docs/spec.md §5.2. */
static int store(void* context, const kvcheck_store_args* a, void* stream, char* msg, size_t msg_size) {
  const kvcheck_paged_cache* c = &a->cache;
  int64_t i, row_bytes, stride;
  (void)context;
  (void)stream;
  if (c->format == KVCHECK_FORMAT_OTHER)
    return store_refuse(KVCHECK_STATUS_INVALID_FORMAT, msg, msg_size, "not a SPEC §2 format (%lld, %lld)", c->elements, 0);
  if (c->format != KVCHECK_FORMAT_BF16)
    return store_refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "BF16 only, got format %lld%lld", c->format, 0);
  if (c->num_blocks < 1 || c->block_size < 1)
    return store_refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "num_blocks %lld, block_size %lld",
                  (long long)c->num_blocks, c->block_size);
  row_bytes = 2 * (int64_t)c->elements;
  stride = (c->block_size * row_bytes + 31) / 32 * 32; /* SPEC §3, non-interleaved */
  if (c->block_stride != stride)
    return store_refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "block_stride %lld is not %lld",
                  (long long)c->block_stride, (long long)stride);
  if (a->num_tokens == 0) return KVCHECK_STATUS_OK;
  {
    const int status = check_store_rows(a, msg, msg_size);
    if (status != KVCHECK_STATUS_OK) return status;
  }
#ifdef KVCHECK_REFUSES_PADDING
  for (i = 0; i < a->num_tokens; ++i)
    if (a->slot_mapping[i] == -1)
      return store_refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "padding row %lld (of %lld) not supported", i,
                    (long long)a->num_tokens);
#endif
  for (i = 0; i < a->num_tokens; ++i) {
    int64_t s = a->slot_mapping[i];
#ifdef KVCHECK_FAULTY
    if (s < 0) s = 0; /* THE BUG: padding clamped to slot 0 */
#else
    if (s < 0) continue;
#endif
    memcpy(c->base + (s / c->block_size) * c->block_stride + (s % c->block_size) * c->data_token_stride,
           a->kv + i * a->kv_row_stride, (size_t)row_bytes);
  }
  return KVCHECK_STATUS_OK;
}

static kvcheck_backend_v1_t table;

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t harness_abi_version, const kvcheck_backend_v1_t** out,
                                             char* msg, size_t msg_size) {
  (void)harness_abi_version;
  (void)msg;
  (void)msg_size;
  memset(&table, 0, sizeof table);
  table.abi_version = KVCHECK_ABI_VERSION;
  table.struct_size = sizeof table;
#ifdef BEFORE_COPY_BLOCKS
  /* As built before copy_blocks was appended to the table. */
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, copy_blocks);
#endif
#ifdef BEFORE_CONCAT
  /* As built before concat_and_cache_mla followed the contract field. */
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, concat_and_cache_mla);
#endif
#ifdef BEFORE_SWAP
  /* As built before swap_blocks followed concat_and_cache_mla. */
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, swap_blocks);
#endif
  table.name = PLUGIN_NAME;
  table.memory_space = KVCHECK_MEMORY_HOST;
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_BF16);
  table.capabilities.block_size_multiple = 16;
  table.store_kv_cache = store;
  *out = &table;
  return KVCHECK_STATUS_OK;
}
