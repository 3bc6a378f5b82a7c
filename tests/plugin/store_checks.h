/* The metadata checks of a slot_mapping store (SPEC §5.1) in the validation order of
 * docs/spec.md §5.2, after the format and geometry: kv rows and stride, null buffers,
 * then each slot's range and repeats. Plain C99 for the test plugins, which are
 * written against include/kvcheck/backend_abi.h only. Returns a KVCHECK_STATUS_* with
 * the reason in msg. */
#ifndef KVCHECK_TESTS_PLUGIN_STORE_CHECKS_H
#define KVCHECK_TESTS_PLUGIN_STORE_CHECKS_H

#include <stdio.h>
#include <stdlib.h>

#include "include/kvcheck/backend_abi.h"

static int store_refuse(int status, char* msg, size_t msg_size, const char* text, long long a, long long b) {
  snprintf(msg, msg_size, text, a, b);
  return status;
}

static int check_store_rows(const kvcheck_store_args* a, char* msg, size_t msg_size) {
  const kvcheck_paged_cache* c = &a->cache;
  int64_t i, num_slots;
  unsigned char* seen;
  if (a->kv_rows < a->num_tokens)
    return store_refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "kv has %lld rows, slot_mapping %lld",
                        (long long)a->kv_rows, (long long)a->num_tokens);
  if (a->kv_row_stride < c->elements)
    return store_refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "kv_row_stride %lld < %lld elements",
                        (long long)a->kv_row_stride, c->elements);
  if (a->kv == NULL || c->base == NULL)
    return store_refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "null kv (%lld) or cache (%lld)", a->kv == NULL,
                        c->base == NULL);
  num_slots = c->num_blocks * c->block_size;
  seen = (unsigned char*)calloc((size_t)(num_slots + 7) / 8, 1);
  if (seen == NULL) return store_refuse(KVCHECK_STATUS_INTERNAL, msg, msg_size, "out of memory (%lld%lld)", 0, 0);
  for (i = 0; i < a->num_tokens; ++i) {
    const int64_t s = a->slot_mapping[i];
    if (s == -1) continue;
    if (s < 0 || s >= num_slots) {
      free(seen);
      return store_refuse(KVCHECK_STATUS_SLOT_OUT_OF_RANGE, msg, msg_size, "slot_mapping[%lld] = %lld", (long long)i,
                          (long long)s);
    }
    if (seen[s / 8] & (1u << (s % 8))) {
      free(seen);
      return store_refuse(KVCHECK_STATUS_DUPLICATE_SLOT, msg, msg_size, "slot_mapping[%lld] = %lld again",
                          (long long)i, (long long)s);
    }
    seen[s / 8] |= (unsigned char)(1u << (s % 8));
  }
  free(seen);
  return KVCHECK_STATUS_OK;
}

#endif
