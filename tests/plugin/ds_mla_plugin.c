/* A HOST plugin in plain C99 against include/kvcheck/backend_abi.h only: the 656-byte
 * FP8_DS_MLA store (vLLM fp8_ds_mla, FlashMLA V32; docs/spec.md §2, §4.6), written from
 * the ABI's record fields (data, scales, BF16 tail) as an engine team would.
 *
 * Built twice by tests/plugin/CMakeLists.txt:
 *   libds_mla_store.so         the tile scale of §4.6: 2^ceil_log2(max(amax / 448, 1e-4));
 *   libds_mla_legacy_store.so  -DKVCHECK_LEGACY_SCALE: vLLM before PR #49435,
 *                              max(amax / 448, FLT_MIN) stored as it is — fp32 scales
 *                              that are not powers of two, so a writer x reader contract
 *                              against a power-of-two reading fails at the writer. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/kvcheck/backend_abi.h"
#include "tests/plugin/store_checks.h"

#ifdef KVCHECK_LEGACY_SCALE
#define PLUGIN_NAME "ds-mla-legacy"
#else
#define PLUGIN_NAME "ds-mla"
#endif

enum { kData = 512, kTile = 128, kTail = 64, kRecord = 656 };


static float bf16_value(uint16_t b) {
  const uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* OCP e4m3 (fn), round to nearest even, saturating (SATFINITE), NaN -> 0x7F. */
static unsigned char e4m3(float x) {
  const unsigned char sign = signbit(x) ? 0x80 : 0x00;
  double mag = fabs((double)x), best = 0.0;
  int code, lo = 0;
  if (isnan(x)) return 0x7F;
  if (mag >= 448.0) return (unsigned char)(sign | 0x7E);
  for (code = 0; code < 127; ++code) { /* largest code with value <= mag */
    const int e = code >> 3, m = code & 7;
    const double v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    if (v <= mag) {
      lo = code;
      best = v;
    }
  }
  if (best != mag && lo < 126) {
    const int e = (lo + 1) >> 3, m = (lo + 1) & 7;
    const double up = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    if (mag - best > up - mag || (mag - best == up - mag && (lo & 1))) ++lo;
  }
  return (unsigned char)(sign | lo);
}

/* One 128-element tile: its scale (fp32 bits) and codes. */
static void quantize_tile(const uint16_t* x, unsigned char* codes, unsigned char* scale_bytes) {
  float amax = 0.0f, scale, t;
  int i;
  for (i = 0; i < kTile; ++i) {
    const float v = fabsf(bf16_value(x[i]));
    if (!isnan(v) && v > amax) amax = v;
  }
#ifdef KVCHECK_LEGACY_SCALE
  scale = amax / 448.0f > FLT_MIN ? amax / 448.0f : FLT_MIN;
  (void)t;
#else
  t = amax / 448.0f > 1e-4f ? amax / 448.0f : 1e-4f;
  if (isinf(t)) {
    scale = t;
  } else {
    int e = 0;
    const float m = frexpf(t, &e); /* t = m * 2^e, m in [0.5, 1) */
    scale = ldexpf(1.0f, m == 0.5f ? e - 1 : e);
  }
#endif
  memcpy(scale_bytes, &scale, 4);
  for (i = 0; i < kTile; ++i) codes[i] = e4m3(bf16_value(x[i]) / scale);
}

/* SPEC §5.1 with the validation order of docs/spec.md §5.2 (packed block strides). */
static int store(void* context, const kvcheck_store_args* a, void* stream, char* msg, size_t msg_size) {
  const kvcheck_paged_cache* c = &a->cache;
  int64_t i, stride;
  (void)context;
  (void)stream;
  if (c->format == KVCHECK_FORMAT_OTHER)
    return store_refuse(KVCHECK_STATUS_INVALID_FORMAT, msg, msg_size, "not a SPEC §2 format (%lld, %lld)", c->elements, 0);
  if (c->format != KVCHECK_FORMAT_FP8_DS_MLA)
    return store_refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "FP8_DS_MLA only, got format %lld%lld", c->format, 0);
  if (c->num_blocks < 1 || c->block_size < 1)
    return store_refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "num_blocks %lld, block_size %lld",
                  (long long)c->num_blocks, c->block_size);
  stride = (c->block_size * (int64_t)kRecord + 1311) / 1312 * 1312; /* SPEC §3: lcm(32, 656) */
  if (c->block_stride != stride)
    return store_refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "block_stride %lld is not %lld",
                  (long long)c->block_stride, (long long)stride);
  if (a->num_tokens == 0) return KVCHECK_STATUS_OK;
  {
    const int status = check_store_rows(a, msg, msg_size);
    if (status != KVCHECK_STATUS_OK) return status;
  }
  for (i = 0; i < a->num_tokens; ++i) {
    const int64_t s = a->slot_mapping[i];
    const uint16_t* x = a->kv + i * a->kv_row_stride;
    unsigned char* data;
    int tile;
    if (s < 0) continue;
    data = c->base + (s / c->block_size) * c->block_stride + (s % c->block_size) * c->data_token_stride;
    for (tile = 0; tile < kData / kTile; ++tile)
      quantize_tile(x + tile * kTile, data + tile * kTile, data + c->quantized_bytes + 4 * tile);
    memcpy(data + c->quantized_bytes + c->sf_bytes, x + kData, 2 * kTail); /* the rope tail, as it is */
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
  table.name = PLUGIN_NAME;
  table.memory_space = KVCHECK_MEMORY_HOST;
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_FP8_DS_MLA);
  table.store_kv_cache = store;
  *out = &table;
  return KVCHECK_STATUS_OK;
}
