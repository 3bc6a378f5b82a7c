/* A HOST plugin written in plain C99 against include/kvcheck/backend_abi.h only: an
 * E4M3 store_kv (SPEC §7.4) that implements exactly ONE FP8 recipe (docs/spec.md
 * §7.3.1) and declares a contract (kvcheck_contract) that may or may not say so.
 * It ignores kvcheck_kv_cache.recipe (beyond validating its value).
 *
 * Compile-time switches:
 *   KVCHECK_SGLANG_MATH       the SGLang recipe: inv = RN(1 / s), y = RN(x * inv),
 *                             y = fmaxf(fminf(y, 448), -448), cvt (NaN -> +448);
 *                             without it the SPEC/vLLM recipe: cvt(x / s), IEEE division;
 *   KVCHECK_DECLARE_VLLM      the contract declares recipe vllm;
 *   KVCHECK_DECLARE_SGLANG    the contract declares recipe sglang (neither: spec);
 *   KVCHECK_HEAD_DIM_128      the contract declares head_dims {128}, and a call with any
 *                             other head_dim is refused with KVCHECK_STATUS_UNSUPPORTED;
 *   KVCHECK_IGNORES_HEAD_DIM  ... except that the guard is missing (the plugin runs any
 *                             head_dim): the refusal property must catch it;
 *   KVCHECK_MAX_ROW_1024      the contract declares max_heads_x_head_dim 1024 (a thread per
 *                             element of a token's row, 1024 threads per CTA), and a call
 *                             with num_kv_heads * head_dim > 1024 is refused (UNSUPPORTED);
 *   KVCHECK_IGNORES_ROW_LIMIT ... except that the guard is missing;
 *   KVCHECK_ALIGN_16          the contract declares kv_alignment 16 (a kernel of 16-byte
 *                             vector accesses), and a valid call with an address or a
 *                             byte stride that is not a multiple of 16 is refused
 *                             (UNSUPPORTED) before anything is written;
 *   KVCHECK_IGNORES_ALIGNMENT ... except that the guard is missing: such a call aborts the
 *                             process, as a misaligned vector access poisons a CUDA
 *                             context (the match properties must never hand one; the
 *                             refusal property must catch it);
 *   KVCHECK_BF16_ROWS         the contract declares one dtype pair, bf16 rows with the e4m3
 *                             cache (a kernel instantiated for bf16 activations), and a
 *                             call with fp16 rows (or outputs) is refused (UNSUPPORTED);
 *   KVCHECK_IGNORES_ROW_DTYPE ... except that the guard is missing: fp16 rows are read and
 *                             written as bf16 bits, as the one instantiation would;
 *   KVCHECK_WITH_GATHER       also a gather_kv (SPEC §7.5) reading the e4m3 cache back:
 *                             RN(e4m3(code) * scale) (one float multiply), then RNE to
 *                             the outputs' bf16 / fp16. No seq_starts (the feature bit
 *                             KVCHECK_OP_GATHER_KV_SEQ_STARTS is not declared);
 *   KVCHECK_GATHER_DIVIDES    ... whose reader divides by the scale instead (a reader
 *                             that disagrees with the writer on the scale's direction):
 *                             the gather match property must catch it.
 *
 * Built by tests/plugin/CMakeLists.txt as
 *   librecipe_sglang_as_vllm.so        SGLang math declared as vllm: the match property
 *                                      fails and names the recipe the bytes match;
 *   librecipe_sglang.so                SGLang math declared as sglang: every property holds;
 *   librecipe_vllm_hd128.so            vLLM math, head_dim 128 only, guarded;
 *   librecipe_vllm_hd128_unguarded.so  the same without the guard;
 *   librecipe_vllm_row1024.so          vLLM math, num_kv_heads x head_dim <= 1024, guarded;
 *   librecipe_vllm_row1024_unguarded.so the same without the guard;
 *   librecipe_vllm_rw.so               vLLM math with a gather_kv: every property holds;
 *   librecipe_vllm_rw_divides.so       the same with the dividing reader;
 *   librecipe_vllm_align16.so          vLLM math with a gather_kv, 16-byte alignment, guarded;
 *   librecipe_vllm_align16_unguarded.so the same without the guard;
 *   librecipe_vllm_align256_unguarded.so 256 bytes (KVCHECK_ALIGNMENT=256), unguarded;
 *   librecipe_vllm_bf16_rows.so        vLLM math with a gather_kv, bf16 rows only, guarded;
 *   librecipe_vllm_bf16_rows_unguarded.so the same without the guard. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "include/kvcheck/backend_abi.h"

#if defined(KVCHECK_IGNORES_ROW_DTYPE)
#define PLUGIN_NAME "vllm-bf16-rows-unguarded"
#elif defined(KVCHECK_BF16_ROWS)
#define PLUGIN_NAME "vllm-bf16-rows"
#elif defined(KVCHECK_IGNORES_ALIGNMENT) && defined(KVCHECK_ALIGNMENT)
#define PLUGIN_NAME "vllm-align256-unguarded"
#elif defined(KVCHECK_IGNORES_ALIGNMENT)
#define PLUGIN_NAME "vllm-align16-unguarded"
#elif defined(KVCHECK_ALIGN_16)
#define PLUGIN_NAME "vllm-align16"
#elif defined(KVCHECK_WITH_GATHER) && defined(KVCHECK_GATHER_DIVIDES)
#define PLUGIN_NAME "vllm-rw-divides"
#elif defined(KVCHECK_WITH_GATHER)
#define PLUGIN_NAME "vllm-rw"
#elif defined(KVCHECK_IGNORES_ROW_LIMIT)
#define PLUGIN_NAME "vllm-row1024-unguarded"
#elif defined(KVCHECK_MAX_ROW_1024)
#define PLUGIN_NAME "vllm-row1024"
#elif defined(KVCHECK_IGNORES_HEAD_DIM)
#define PLUGIN_NAME "vllm-hd128-unguarded"
#elif defined(KVCHECK_HEAD_DIM_128)
#define PLUGIN_NAME "vllm-hd128"
#elif defined(KVCHECK_SGLANG_MATH) && defined(KVCHECK_DECLARE_VLLM)
#define PLUGIN_NAME "sglang-as-vllm"
#elif defined(KVCHECK_SGLANG_MATH)
#define PLUGIN_NAME "sglang-e4m3"
#else
#define PLUGIN_NAME "recipe-e4m3"
#endif

#if defined(KVCHECK_DECLARE_VLLM)
#define PLUGIN_RECIPES (1u << KVCHECK_RECIPE_VLLM)
#elif defined(KVCHECK_DECLARE_SGLANG)
#define PLUGIN_RECIPES (1u << KVCHECK_RECIPE_SGLANG)
#else
#define PLUGIN_RECIPES (1u << KVCHECK_RECIPE_SPEC)
#endif

/* Exact sums of products of int64 values (the layout rules of SPEC §7.2). */
__extension__ typedef __int128 wide;
#define INT64_MAX_WIDE ((wide)INT64_MAX)

static int refuse(int status, char* msg, size_t msg_size, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(int status, char* msg, size_t msg_size, const char* format, ...) {
  va_list args;
  if (msg == NULL || msg_size == 0) return status;
  va_start(args, format);
  vsnprintf(msg, msg_size, format, args);
  va_end(args);
  return status;
}

/* ---- numerics (SPEC §7.1, §7.3, §7.3.1) ------------------------------------------ */

static float bf16_to_float(uint16_t bits) {
  const uint32_t u = (uint32_t)bits << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float fp16_to_float(uint16_t bits) {
  const int e = (bits >> 10) & 0x1F, m = bits & 0x3FF;
  double v;
  if (e == 0x1F)
    v = m == 0 ? (double)INFINITY : (double)NAN;
  else if (e == 0)
    v = ldexp((double)m, -24); /* subnormal: m * 2^-24, exact */
  else
    v = ldexp((double)(1024 + m), e - 25);
  return (float)((bits & 0x8000) ? -v : v);
}

/* q >= 0 rounded to the nearest integer, ties to even (q has few significant bits). */
static long round_half_even(double q) {
  double fl = floor(q);
  const double frac = q - fl; /* exact */
  if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0)) fl += 1.0;
  return (long)fl;
}

/* OCP E4M3 "fn" (bias 7, max 448 = 0x7E, NaN 0x7F), round to nearest even on the exact
 * value, SATFINITE: beyond +-448 (Inf too) -> 0x7E / 0xFE; NaN -> 0x7F; zero keeps its
 * sign; subnormal step 2^-9. Codes of one sign are in value order, so a rounding carry
 * out of the mantissa (or out of the subnormals) lands on the next exponent's code. */
static uint8_t cvt_e4m3_satfinite(float y) {
  uint8_t sign;
  double mag;
  long code;
  if (isnan(y)) return 0x7F;
  sign = signbit(y) ? 0x80 : 0x00;
  mag = fabs((double)y);
  if (mag >= 448.0) return (uint8_t)(sign | 0x7E);
  if (mag < ldexp(1.0, -6)) {
    code = round_half_even(ldexp(mag, 9)); /* subnormals: m * 2^-9, m = 0..7 (8 = 2^-6) */
  } else {
    int e2;
    (void)frexp(mag, &e2); /* mag = f * 2^e2, f in [0.5, 1): exponent E = e2 - 1 */
    code = (long)(e2 - 1 + 7) * 8 + round_half_even(ldexp(mag, 3 - (e2 - 1)) - 8.0);
  }
  if (code > 0x7E) code = 0x7E; /* (unreachable: mag < 448 rounds to at most 448) */
  return (uint8_t)(sign | (uint8_t)code);
}

static uint8_t quantize(float x, float scale) {
#if defined(KVCHECK_SGLANG_MATH)
  const float inv = 1.0f / scale; /* RN(1 / s), once */
  float y = x * inv;              /* RN(x * inv) */
  y = fmaxf(fminf(y, 448.0f), -448.0f); /* NaN -> +448 */
  return cvt_e4m3_satfinite(y);
#else
  const float y = x / scale; /* IEEE division */
  return cvt_e4m3_satfinite(y);
#endif
}

/* ---- validation (SPEC §7.2, §7.3, §7.4 in order) ------------------------------------- */

/* SPEC §7.2's non-overlap rule: axes by increasing stride, each of extent > 1 steps past
 * everything the axes before it reach. */
static int non_overlapping(const int64_t* strides, const int64_t* extents, int n) {
  int used[5] = {0, 0, 0, 0, 0};
  wide reach = 0;
  int k, i;
  for (k = 0; k < n; ++k) {
    int pick = -1;
    for (i = 0; i < n; ++i)
      if (!used[i] && (pick < 0 || strides[i] < strides[pick])) pick = i;
    used[pick] = 1;
    if (extents[pick] <= 1) continue;
    if ((wide)strides[pick] <= reach) return 0;
    reach += (wide)(extents[pick] - 1) * strides[pick];
    if (reach > INT64_MAX_WIDE) return 0;
  }
  return 1;
}

static int check_cache(const kvcheck_kv_cache* c, char* msg, size_t msg_size) {
  int64_t strides[5], extents[5];
  wide span = 1, k, v, gap;
  int s, i;
  const int64_t bytes = 1; /* e4m3 */
  int64_t want, nk, nv;
  /* 1. The layout rules of SPEC §7.2, in the order written there. */
  if (c->num_blocks < 1 || c->block_size < 1 || c->num_kv_heads < 1 || c->head_dim < 1)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size,
                  "num_blocks %lld, block_size %d, num_kv_heads %d, head_dim %d: each must be >= 1",
                  (long long)c->num_blocks, (int)c->block_size, (int)c->num_kv_heads, (int)c->head_dim);
#if defined(KVCHECK_HEAD_DIM_128) && !defined(KVCHECK_IGNORES_HEAD_DIM)
  /* The kernel's build limit (the contract's head_dims): a valid call outside it. */
  if (c->head_dim != 128)
    return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "built for head_dim 128 only, got head_dim %d",
                  (int)c->head_dim);
#endif
#if defined(KVCHECK_MAX_ROW_1024) && !defined(KVCHECK_IGNORES_ROW_LIMIT)
  /* The kernel's launch limit (the contract's max_heads_x_head_dim): a thread per element. */
  if ((wide)c->num_kv_heads * c->head_dim > 1024)
    return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "built for num_kv_heads x head_dim <= 1024, got %d x %d",
                  (int)c->num_kv_heads, (int)c->head_dim);
#endif
  if ((wide)c->num_blocks * c->block_size > (wide)INT32_MAX)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "num_blocks %lld * block_size %d exceeds INT32_MAX",
                  (long long)c->num_blocks, (int)c->block_size);
  if (c->stride_page < 0 || c->stride_token < 0 || c->stride_head < 0)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size,
                  "a cache stride is negative (page %lld, token %lld, head %lld)", (long long)c->stride_page,
                  (long long)c->stride_token, (long long)c->stride_head);
  strides[0] = c->stride_page;
  extents[0] = c->num_blocks;
  strides[1] = c->stride_token;
  extents[1] = c->block_size;
  strides[2] = c->stride_head;
  extents[2] = c->num_kv_heads;
  strides[3] = 1;
  extents[3] = c->head_dim;
  strides[4] = 0;
  extents[4] = 1;
  if (!non_overlapping(strides, extents, 4))
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size,
                  "the cache view overlaps itself (strides page %lld, token %lld, head %lld)",
                  (long long)c->stride_page, (long long)c->stride_token, (long long)c->stride_head);
  for (i = 0; i < 4; ++i) span += (wide)(extents[i] - 1) * strides[i];
  if (span * bytes > INT64_MAX_WIDE)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "the cache view's byte span overflows int64");
  /* K, then V: null, (alignment: 1-byte elements always are), capacity. */
  for (s = 0; s < 2; ++s) {
    const uint8_t* base = s ? c->v : c->k;
    const int64_t capacity = s ? c->v_capacity : c->k_capacity;
    const char* what = s ? "v_cache" : "k_cache";
    if (base == NULL) return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "%s is null", what);
    if ((wide)capacity < span)
      return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size,
                    "%s buffer of %lld elements is smaller than the view's %lld", what, (long long)capacity,
                    (long long)span);
  }
  /* K and V share no element: disjoint byte ranges, or a valid 5th (K/V) axis. */
  k = (wide)(uintptr_t)c->k;
  v = (wide)(uintptr_t)c->v;
  gap = v > k ? v - k : k - v;
  if (gap < span * bytes) {
    strides[4] = (int64_t)(gap / bytes);
    extents[4] = 2;
    if (gap == 0 || gap % bytes != 0 || !non_overlapping(strides, extents, 5))
      return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size,
                    "k_cache and v_cache share elements (%lld bytes apart)", (long long)gap);
  }
  /* 2. Scales (SPEC §7.3): kind, the sizes of k_scale then v_scale, the recipe
   * (§7.3.1), then their values, all of k_scale first. */
  if (c->scale_kind == 0)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "FP8 cache without scales (scale_kind 0)");
  want = c->scale_kind == 2 ? c->num_kv_heads : 1;
  nk = c->k_scale != NULL ? c->num_scales : 0;
  nv = c->v_scale != NULL ? c->num_v_scales : 0;
  if (nk != want)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "k_scale holds %lld floats, expected %lld",
                  (long long)nk, (long long)want);
  if (nv != want)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "v_scale holds %lld floats, expected %lld",
                  (long long)nv, (long long)want);
  if (c->recipe < 0 || c->recipe > 2)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "unknown recipe %d", (int)c->recipe);
  for (s = 0; s < 2; ++s) {
    const float* sc = s ? c->v_scale : c->k_scale;
    int64_t h;
    for (h = 0; h < want; ++h)
      if (!isfinite(sc[h]) || !(sc[h] > 0.0f))
        return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "%s[%lld] = %f is not positive and finite",
                      s ? "v_scale" : "k_scale", (long long)h, (double)sc[h]); /* the reference's words */
  }
  return KVCHECK_STATUS_OK;
}

/* 3. Model dtype (SPEC §7.1): bf16 or fp16 for an FP8 cache. */
static int check_model_dtype(const kvcheck_kv_tokens* t, const char* what, char* msg, size_t msg_size) {
  if (t->dtype == KVCHECK_KV_BF16 || t->dtype == KVCHECK_KV_FP16) return KVCHECK_STATUS_OK;
  return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "%s dtype %d does not go with an e4m3 cache", what,
                (int)t->dtype);
}

/* 4. Rows (n > 0). */
static int check_rows(const kvcheck_kv_tokens* t, int64_t n, const char* what, char* msg, size_t msg_size) {
  if (t->rows < n)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "%s holds %lld rows, slot_mapping has %lld", what,
                  (long long)t->rows, (long long)n);
  if (t->token_stride < 0 || t->head_stride < 0)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "%s stride is negative (token %lld, head %lld)",
                  what, (long long)t->token_stride, (long long)t->head_stride);
  if (t->data == NULL) return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "%s is null", what);
  if ((uintptr_t)t->data % 2 != 0)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "%s is misaligned", what);
  return KVCHECK_STATUS_OK;
}

/* ---- the declared dtype pair (kvcheck_contract.kv_dtype_pairs) ----------------------- */

/* Whether rows of dtype t are bf16 to the kernel: its one instantiation reads and writes
 * bf16 bits, refusing fp16 rows unless the guard is missing. */
#if defined(KVCHECK_IGNORES_ROW_DTYPE)
#define ROWS_BF16(t) 1
#else
#define ROWS_BF16(t) ((t)->dtype == KVCHECK_KV_BF16)
#endif

static int row_dtype_guard(const kvcheck_kv_tokens* t, char* msg, size_t msg_size) {
#if defined(KVCHECK_BF16_ROWS) && !defined(KVCHECK_IGNORES_ROW_DTYPE)
  if (t->dtype != KVCHECK_KV_BF16)
    return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "built for bf16 rows only, got dtype %d", (int)t->dtype);
#else
  (void)t;
  (void)msg;
  (void)msg_size;
#endif
  return KVCHECK_STATUS_OK;
}

/* ---- the declared alignment (kvcheck_contract.kv_alignment) ------------------------- */

/* A kernel of 16-byte vector accesses needs every address and byte stride it is handed
 * to be a multiple of 16. Checked after validation, right before the first access: a
 * guarded build refuses such a call, an unguarded one runs into it (abort() here; on a
 * GPU a sticky misaligned-address error that fails every later call of the context). */
#if defined(KVCHECK_ALIGN_16)
#ifndef KVCHECK_ALIGNMENT
#define KVCHECK_ALIGNMENT 16 /* the bytes declared and checked (a wider build: -DKVCHECK_ALIGNMENT=256) */
#endif
static int aligned16(const uint8_t* p, int64_t token_stride_bytes, int64_t head_stride_bytes) {
  return (uintptr_t)p % KVCHECK_ALIGNMENT == 0 && token_stride_bytes % KVCHECK_ALIGNMENT == 0 &&
         head_stride_bytes % KVCHECK_ALIGNMENT == 0;
}
#endif

static int alignment_guard(const kvcheck_kv_cache* c, const kvcheck_kv_tokens* x, const kvcheck_kv_tokens* y,
                           char* msg, size_t msg_size) {
#if defined(KVCHECK_ALIGN_16)
  const char* what = NULL;
  if ((uintptr_t)c->k % KVCHECK_ALIGNMENT != 0 || (uintptr_t)c->v % KVCHECK_ALIGNMENT != 0 ||
      c->stride_page % KVCHECK_ALIGNMENT != 0 || c->stride_token % KVCHECK_ALIGNMENT != 0 ||
      c->stride_head % KVCHECK_ALIGNMENT != 0)
    what = "the cache"; /* e4m3: strides in bytes */
  else if (!aligned16(x->data, 2 * x->token_stride, 2 * x->head_stride))
    what = "the first rows (key / out_k)";
  else if (!aligned16(y->data, 2 * y->token_stride, 2 * y->head_stride))
    what = "the second rows (value / out_v)";
  if (what == NULL) return KVCHECK_STATUS_OK;
#if defined(KVCHECK_IGNORES_ALIGNMENT)
  (void)msg;
  (void)msg_size;
  abort();
#else
  return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size,
                "built for 16-byte aligned addresses and strides: %s is not", what);
#endif
#else
  (void)c;
  (void)x;
  (void)y;
  (void)msg;
  (void)msg_size;
  return KVCHECK_STATUS_OK;
#endif
}

/* ---- the op ------------------------------------------------------------------------ */

static float load_model(const kvcheck_kv_tokens* t, int64_t element) {
  const uint8_t* p = t->data + 2 * element;
  const uint16_t bits = (uint16_t)(p[0] | (p[1] << 8));
  return ROWS_BF16(t) ? bf16_to_float(bits) : fp16_to_float(bits);
}

static int store_kv(void* context, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t msg_size) {
  const kvcheck_kv_cache* c = &a->cache;
  const int64_t n = a->num_tokens;
  int64_t i, num_slots;
  unsigned char* seen;
  int st;
  (void)context;
  (void)stream;
  if (c->dtype != KVCHECK_KV_E4M3) /* never called so: e4m3 is all the capabilities name */
    return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "e4m3 caches only, got K/V dtype %d", (int)c->dtype);
  if ((st = check_cache(c, msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = check_model_dtype(&a->key, "key", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = check_model_dtype(&a->value, "value", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = row_dtype_guard(&a->key, msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if (a->key.dtype != a->value.dtype)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "key dtype %d differs from value dtype %d",
                  (int)a->key.dtype, (int)a->value.dtype);
  if (n <= 0) return KVCHECK_STATUS_OK;
  if ((st = check_rows(&a->key, n, "key", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = check_rows(&a->value, n, "value", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if (a->slot_mapping == NULL)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "slot_mapping is null with %lld rows",
                  (long long)n);

  /* 5. Rows in index order: range, then a repeat of an earlier row's slot. Messages as
   * the reference words them: the harness compares the entry they blame
   * ("slot_mapping[i] = v", "k_scale[h] = v"). */
  num_slots = c->num_blocks * c->block_size;
  seen = (unsigned char*)calloc((size_t)(num_slots + 7) / 8, 1);
  if (seen == NULL) return refuse(KVCHECK_STATUS_INTERNAL, msg, msg_size, "out of memory (%lld slots)",
                                  (long long)num_slots);
  for (i = 0; i < n; ++i) {
    const int64_t s = a->slot_mapping[i];
    if (s < -1 || s >= num_slots) {
      free(seen);
      return refuse(KVCHECK_STATUS_SLOT_OUT_OF_RANGE, msg, msg_size,
                    "slot_mapping[%lld] = %lld: valid are -1 and [0, %lld)", (long long)i, (long long)s,
                    (long long)num_slots);
    }
    if (s == -1) continue;
    if (seen[s / 8] & (1u << (s % 8))) {
      int64_t j = 0;
      while (a->slot_mapping[j] != s) ++j;
      free(seen);
      return refuse(KVCHECK_STATUS_DUPLICATE_SLOT, msg, msg_size,
                    "slot_mapping[%lld] = %lld repeats slot_mapping[%lld]", (long long)i, (long long)s, (long long)j);
    }
    seen[s / 8] |= (unsigned char)(1u << (s % 8));
  }
  free(seen);
  if ((st = alignment_guard(c, &a->key, &a->value, msg, msg_size)) != KVCHECK_STATUS_OK) return st;

  for (i = 0; i < n; ++i) {
    const int64_t s = a->slot_mapping[i];
    int64_t block, token, h, d;
    int side;
    if (s == -1) continue; /* padding: nothing written */
    block = s / c->block_size;
    token = s % c->block_size;
    for (side = 0; side < 2; ++side) {
      const kvcheck_kv_tokens* in = side ? &a->value : &a->key;
      uint8_t* base = side ? c->v : c->k;
      const float* scales = side ? c->v_scale : c->k_scale;
      for (h = 0; h < c->num_kv_heads; ++h) {
        const float scale = c->scale_kind == 2 ? scales[h] : scales[0];
        const int64_t src = i * in->token_stride + h * in->head_stride;
        const int64_t dst = block * c->stride_page + token * c->stride_token + h * c->stride_head;
        for (d = 0; d < c->head_dim; ++d) base[dst + d] = quantize(load_model(in, src + d), scale);
      }
    }
  }
  return KVCHECK_STATUS_OK;
}

#if defined(KVCHECK_WITH_GATHER)
/* ---- gather_kv (SPEC §7.5) ----------------------------------------------------------- */

static float e4m3_to_float(uint8_t code) {
  const int mag = code & 0x7F, e = mag >> 3, m = mag & 7;
  float v;
  if (mag == 0x7F) return NAN;
  v = e == 0 ? (float)ldexp((double)m, -9) : (float)ldexp((double)(8 + m), e - 10); /* exact */
  return (code & 0x80) ? -v : v;
}

/* RNE on the bit pattern (the carry out of the mantissa steps the exponent, up to Inf);
 * NaN -> 0x7FFF (reference/numerics.cpp float_to_bf16_rn). */
static uint16_t float_to_bf16_rn(float x) {
  uint32_t u;
  if (isnan(x)) return 0x7FFF;
  memcpy(&u, &x, sizeof u);
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* RNE; |x| >= 65520 (the midpoint of 65504 and 2^16) -> Inf; subnormals (step 2^-24)
 * kept; NaN -> 0x7FFF (reference/kv_numerics.cpp float_to_fp16_rn). */
static uint16_t float_to_fp16_rn(float x) {
  uint16_t sign;
  double mag;
  long code;
  if (isnan(x)) return 0x7FFF;
  sign = signbit(x) ? 0x8000 : 0x0000;
  mag = fabs((double)x);
  if (mag >= 65520.0) return (uint16_t)(sign | 0x7C00);
  if (mag < ldexp(1.0, -14)) {
    code = round_half_even(ldexp(mag, 24)); /* m * 2^-24, a carry to 0x400 = 2^-14 */
  } else {
    int e2;
    (void)frexp(mag, &e2); /* exponent E = e2 - 1 */
    code = (long)(e2 - 1 + 15) * 1024 + round_half_even(ldexp(mag, 10 - (e2 - 1)) - 1024.0);
  }
  return (uint16_t)(sign | (uint16_t)code);
}

static float dequantize(uint8_t code, float scale) {
#if defined(KVCHECK_GATHER_DIVIDES)
  return e4m3_to_float(code) / scale; /* the deliberate bug: the scale's direction */
#else
  return e4m3_to_float(code) * scale; /* one float multiply (the E4M3 value is exact) */
#endif
}

/* The outputs when cu[b] > 0, in the reference's order and words. */
static int check_out(const kvcheck_kv_tokens* o, int64_t total, const kvcheck_kv_cache* c, const char* what,
                     char* msg, size_t msg_size) {
  int64_t strides[3], extents[3];
  if (o->rows < total)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "%s holds %lld rows, needs %lld", what,
                  (long long)o->rows, (long long)total);
  if (o->data == NULL) return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "%s is null", what);
  if ((uintptr_t)o->data % 2 != 0)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "%s is misaligned", what);
  strides[0] = o->token_stride;
  extents[0] = total;
  strides[1] = o->head_stride;
  extents[1] = c->num_kv_heads;
  strides[2] = 1;
  extents[2] = c->head_dim;
  if (o->token_stride < 0 || o->head_stride < 0 || !non_overlapping(strides, extents, 3))
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "%s rows overlap", what);
  return KVCHECK_STATUS_OK;
}

static void store_model(const kvcheck_kv_tokens* t, int64_t element, float x) {
  uint8_t* p = t->data + 2 * element;
  const uint16_t y = ROWS_BF16(t) ? float_to_bf16_rn(x) : float_to_fp16_rn(x);
  p[0] = (uint8_t)(y & 0xFF);
  p[1] = (uint8_t)(y >> 8);
}

static int gather_kv(void* context, const kvcheck_gather_kv_args* a, void* stream, char* msg, size_t msg_size) {
  const kvcheck_kv_cache* c = &a->cache;
  const int32_t* cu = a->cu_seqlens_k;
  const int32_t max_blocks = a->max_blocks;
  const int64_t bs = c->block_size;
  int64_t b, i, total;
  int st;
  (void)context;
  (void)stream;
  if (a->seq_starts_unit != 0) /* never so: the feature bit is not declared */
    return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "no seq_starts (seq_starts_unit %d)",
                  (int)a->seq_starts_unit);
  if (c->dtype != KVCHECK_KV_E4M3)
    return refuse(KVCHECK_STATUS_UNSUPPORTED, msg, msg_size, "e4m3 caches only, got K/V dtype %d", (int)c->dtype);
  /* 1-3 as the store: the cache, its scales, the (outputs') model dtype. */
  if ((st = check_cache(c, msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = check_model_dtype(&a->out_k, "out_k", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = check_model_dtype(&a->out_v, "out_v", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if ((st = row_dtype_guard(&a->out_k, msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  if (a->out_k.dtype != a->out_v.dtype)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "out_k dtype %d differs from out_v dtype %d",
                  (int)a->out_k.dtype, (int)a->out_v.dtype);
  /* 4. cu_seqlens_k, max_blocks, the table's size, the outputs. Messages name the entry
   * and its value, as the reference words them (the harness compares the blamed entry). */
  if (a->cu_seqlens_entries < 1)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "cu_seqlens_k is empty");
  if (cu == NULL) return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "cu_seqlens_k is null");
  b = a->cu_seqlens_entries - 1;
  if (cu[0] != 0)
    return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "cu_seqlens_k[0] = %d is not 0", (int)cu[0]);
  for (i = 0; i < b; ++i)
    if (cu[i + 1] < cu[i])
      return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "cu_seqlens_k[%lld] = %d < cu_seqlens_k[%lld]",
                    (long long)(i + 1), (int)cu[i + 1], (long long)i);
  if (max_blocks < 0) return refuse(KVCHECK_STATUS_INVALID_ARGUMENT, msg, msg_size, "max_blocks < 0");
  if ((wide)a->block_table_entries != (wide)b * max_blocks)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "block_table is not num_seqs x max_blocks");
  if (a->block_table == NULL && a->block_table_entries > 0)
    return refuse(KVCHECK_STATUS_SHAPE_MISMATCH, msg, msg_size, "block_table is null");
  total = cu[b];
  if (total > 0) {
    if ((st = check_out(&a->out_k, total, c, "out_k", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
    if ((st = check_out(&a->out_v, total, c, "out_v", msg, msg_size)) != KVCHECK_STATUS_OK) return st;
  }
  /* 5. Sequences in order: the row's reach, then each needed column (the first token
   * of each column reports it). */
  for (i = 0; i < b; ++i) {
    const int64_t len = (int64_t)cu[i + 1] - cu[i];
    int64_t j;
    if (len > 0 && len > (int64_t)max_blocks * bs)
      return refuse(KVCHECK_STATUS_RANGE_OUT_OF_TABLE, msg, msg_size, "sequence %lld reaches past its table row",
                    (long long)i);
    for (j = 0; j * bs < len; ++j) {
      const int32_t block = a->block_table[i * max_blocks + j];
      if (block == -1)
        return refuse(KVCHECK_STATUS_RANGE_OUT_OF_TABLE, msg, msg_size,
                      "block_table[%lld][%lld] = -1 is needed by token %lld of sequence %lld", (long long)i,
                      (long long)j, (long long)(j * bs), (long long)i);
      if (block < 0 || block >= c->num_blocks)
        return refuse(KVCHECK_STATUS_BLOCK_OUT_OF_RANGE, msg, msg_size, "block_table[%lld][%lld] = %d is out of range",
                      (long long)i, (long long)j, (int)block);
    }
  }
  if (total > 0 && (st = alignment_guard(c, &a->out_k, &a->out_v, msg, msg_size)) != KVCHECK_STATUS_OK) return st;

  for (i = 0; i < b; ++i) {
    const int64_t begin = cu[i], len = (int64_t)cu[i + 1] - cu[i];
    int64_t t, h, d;
    int side;
    for (t = 0; t < len; ++t) {
      const int64_t block = a->block_table[i * max_blocks + t / bs], token = t % bs;
      for (side = 0; side < 2; ++side) {
        const kvcheck_kv_tokens* o = side ? &a->out_v : &a->out_k;
        const uint8_t* base = side ? c->v : c->k;
        const float* scales = side ? c->v_scale : c->k_scale;
        for (h = 0; h < c->num_kv_heads; ++h) {
          const float scale = c->scale_kind == 2 ? scales[h] : scales[0];
          const int64_t src = block * c->stride_page + token * c->stride_token + h * c->stride_head;
          const int64_t dst = (begin + t) * o->token_stride + h * o->head_stride;
          for (d = 0; d < c->head_dim; ++d) store_model(o, dst + d, dequantize(base[src + d], scale));
        }
      }
    }
  }
  return KVCHECK_STATUS_OK;
}
#endif /* KVCHECK_WITH_GATHER */

static kvcheck_contract contract;
static kvcheck_backend_v1_t table;

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t harness_abi_version, const kvcheck_backend_v1_t** out,
                                             char* msg, size_t msg_size) {
  (void)harness_abi_version;
  (void)msg;
  (void)msg_size;
  memset(&contract, 0, sizeof contract);
  contract.struct_size = (uint32_t)sizeof contract;
  contract.kv_fp8_recipes = PLUGIN_RECIPES;
#if defined(KVCHECK_HEAD_DIM_128)
  contract.num_head_dims = 1;
  contract.head_dims[0] = 128;
#else
  contract.num_head_dims = 0;
#endif
#if defined(KVCHECK_MAX_ROW_1024)
  contract.max_heads_x_head_dim = 1024;
#endif
#if defined(KVCHECK_ALIGN_16)
  contract.kv_alignment = KVCHECK_ALIGNMENT;
#endif
#if defined(KVCHECK_BF16_ROWS)
  contract.kv_dtype_pairs = KVCHECK_KV_PAIR(KVCHECK_KV_E4M3, KVCHECK_KV_BF16);
#endif
  memset(&table, 0, sizeof table);
  table.abi_version = KVCHECK_ABI_VERSION;
  table.struct_size = (uint32_t)sizeof table;
  table.name = PLUGIN_NAME;
  table.memory_space = KVCHECK_MEMORY_HOST;
  table.capabilities.ops = KVCHECK_OP_STORE_KV;
  table.capabilities.kv_dtypes = 1u << KVCHECK_KV_E4M3;
  table.capabilities.block_size_multiple = 0; /* any */
  table.capabilities.max_block_size = 0;      /* no limit */
  table.store_kv = store_kv;
#if defined(KVCHECK_WITH_GATHER)
  table.capabilities.ops |= KVCHECK_OP_GATHER_KV; /* not KVCHECK_OP_GATHER_KV_SEQ_STARTS */
  table.gather_kv = gather_kv;
#endif
  table.contract = &contract;
  *out = &table;
  return KVCHECK_STATUS_OK;
}
