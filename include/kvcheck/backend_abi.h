/* kvcheck backend plugin ABI, version 1 (C99; no C++ types).
 *
 * A backend library (a shared object) exports ONE symbol:
 *
 *     int kvcheck_backend_v1(uint32_t harness_abi_version,
 *                            const kvcheck_backend_v1_t** out, char* msg, size_t msg_size);
 *
 * which fills *out with a table that stays valid until the library is unloaded and
 * returns KVCHECK_STATUS_OK, or returns KVCHECK_STATUS_UNSUPPORTED with a reason in
 * msg ("no CUDA device") when it cannot run on this machine. The harness calls it once,
 * right after dlopen. It must not initialise CUDA (the harness forks after loading);
 * put device probing in `probe`, which the harness calls in a child process.
 *
 * Every operation entry (SPEC §5, §7 of docs/spec.md) takes the table's `context`, one
 * argument struct, a stream and a caller-owned message buffer, and returns a status:
 *   - KVCHECK_STATUS_OK: done. A device plugin may leave work queued on `stream`; the
 *     harness synchronises the stream before it reads anything back.
 *   - one of the refusal codes (KVCHECK_STATUS_INVALID_FORMAT ...): the input is
 *     invalid (or, UNSUPPORTED, valid but not supported); the plugin has written NO byte
 *     of any output or cache (the harness checks). The code must be the one the
 *     reference gives for the same input (docs/spec.md §5.2 / §7.4 validation order).
 *   - KVCHECK_STATUS_INTERNAL: the plugin itself failed (a CUDA error, ...); reported
 *     as a failure of the backend, never as a refusal.
 * msg/msg_size: a buffer of msg_size bytes the HARNESS owns (msg_size >= 256); on any
 * status but OK the plugin writes a NUL-terminated, human-readable reason (truncated
 * to fit). Plugins must not keep the pointer.
 *
 * Memory (ownership): every pointer in an argument struct is owned by the harness and
 * valid only during the call; plugins must not free, keep or reallocate it. Host
 * plugins (memory_space HOST) get host pointers and stream == NULL; device plugins
 * (CUDA_DEVICE) get device pointers (cudaMalloc'd, at least 256-byte aligned for whole
 * buffers) and a cudaStream_t as `void*` on which to enqueue their work. Buffers the
 * harness uploads are exactly as large as the sizes below say, between guard bands it
 * checks after the call. Units: *_bytes and *_stride fields named "bytes" are bytes;
 * everything named "elements" or "entries" counts elements of the stated type; counts
 * of tokens/rows/blocks are counts. Integers are little-endian.
 *
 * Stability: the harness accepts any table whose abi_version is KVCHECK_ABI_VERSION
 * (1) and reads an optional entry only when struct_size covers it, so a library built
 * against this header keeps loading when later headers append entries. Fields are
 * never reordered or removed within version 1.
 */
#ifndef KVCHECK_BACKEND_ABI_H
#define KVCHECK_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVCHECK_ABI_VERSION 1u
#define KVCHECK_ENTRY_SYMBOL "kvcheck_backend_v1"

/* Status codes: 0 = OK; 1..15 = kvcheck::ErrorCode + 1 (impl/error.h, same order);
 * 64 = the plugin failed. */
typedef enum kvcheck_status {
  KVCHECK_STATUS_OK = 0,
  KVCHECK_STATUS_INVALID_FORMAT = 1,
  KVCHECK_STATUS_UNKNOWN_FORMAT = 2,
  KVCHECK_STATUS_AMBIGUOUS_FORMAT = 3,
  KVCHECK_STATUS_INVALID_ARGUMENT = 4,
  KVCHECK_STATUS_SHAPE_MISMATCH = 5,
  KVCHECK_STATUS_SLOT_OUT_OF_RANGE = 6,
  KVCHECK_STATUS_DUPLICATE_SLOT = 7,
  KVCHECK_STATUS_SEGMENT_BLOCK_OUT_OF_RANGE = 8,
  KVCHECK_STATUS_SEGMENT_RANGE_INVALID = 9,
  KVCHECK_STATUS_SEGMENT_DESTINATION_OUT_OF_RANGE = 10,
  KVCHECK_STATUS_SEGMENT_OVERLAP = 11,
  KVCHECK_STATUS_RANGE_OUT_OF_TABLE = 12,
  KVCHECK_STATUS_UNSUPPORTED = 13,
  KVCHECK_STATUS_BLOCK_OUT_OF_RANGE = 14,
  KVCHECK_STATUS_BLOCK_CONFLICT = 15,
  KVCHECK_STATUS_INTERNAL = 64
} kvcheck_status;

typedef enum kvcheck_memory_space {
  KVCHECK_MEMORY_HOST = 0,        /* host pointers, stream NULL */
  KVCHECK_MEMORY_CUDA_DEVICE = 1  /* CUDA device pointers, stream = cudaStream_t */
} kvcheck_memory_space;

/* Operation bits of kvcheck_capabilities.ops. */
#define KVCHECK_OP_STORE_KV_CACHE (1u << 0)      /* SPEC §5.1 */
#define KVCHECK_OP_LOAD_PAGED_KV_CACHE (1u << 1) /* SPEC §5.2 */
#define KVCHECK_OP_CONVERT_KV_INDEX (1u << 2)    /* SPEC §5.5 */
#define KVCHECK_OP_KV_INDEX_CAT (1u << 3)
#define KVCHECK_OP_EXPAND_SWA_INDEX (1u << 4)
#define KVCHECK_OP_SWA_DECODE_INDEX (1u << 5)
#define KVCHECK_OP_STORE_KV (1u << 6)  /* SPEC §7.4 */
#define KVCHECK_OP_GATHER_KV (1u << 7) /* SPEC §7.5 */
#define KVCHECK_OP_COPY_BLOCKS (1u << 8) /* SPEC §8.1 */
/* A feature bit, not an entry: the gather_kv entry honours seq_starts (its args'
 * seq_starts_unit, SPEC §7.5). Needs KVCHECK_OP_GATHER_KV. Without it the harness never
 * passes seq_starts (a plugin built before them would ignore them and gather from
 * position 0) and reports the seq_starts properties not exercised. */
#define KVCHECK_OP_GATHER_KV_SEQ_STARTS (1u << 9)
/* A feature bit: store_kv_cache and load_paged_kv_cache take any block_stride of SPEC
 * §3 (a multiple of 32 at least the packed stride: other layers' blocks or padding
 * between this cache's). Needs one of their bits. Without it the harness passes packed
 * strides only (the generators draw no other; a call with one is UNSUPPORTED before
 * the plugin runs). */
#define KVCHECK_OP_ANY_BLOCK_STRIDE (1u << 10)
#define KVCHECK_OP_CONCAT_AND_CACHE_MLA (1u << 11) /* docs/spec.md §8.2 */
#define KVCHECK_OP_SWAP_BLOCKS (1u << 12)          /* docs/spec.md §8.3 */
/* A feature bit: the concat_and_cache_mla entry takes split caches (its args'
 * has_pe_cache, docs/spec.md §8.2 "Split caches": kv_c into `cache`, k_pe into
 * `pe_cache`, FlashInfer's ckv / kpe caches). Needs KVCHECK_OP_CONCAT_AND_CACHE_MLA.
 * Without it the harness never passes a pe_cache (a plugin built before it would store
 * joined rows into `cache`) and reports the split-cache properties not exercised. */
#define KVCHECK_OP_CONCAT_MLA_PE_CACHE (1u << 13)
/* A feature bit: the concat_and_cache_mla entry takes a fused RoPE of k_pe (its args'
 * has_rope, docs/spec.md §8.4: vLLM's concat_and_cache_mla_rope_fused without q_pe).
 * Needs KVCHECK_OP_CONCAT_AND_CACHE_MLA. Without it the harness never passes has_rope = 1
 * and reports the RoPE properties not exercised. */
#define KVCHECK_OP_CONCAT_MLA_ROPE (1u << 14)
/* A feature bit: the store_kv entry takes a fused RoPE of the key rows (its args'
 * has_rope, docs/spec.md §8.4). Needs KVCHECK_OP_STORE_KV. Without it the harness never
 * passes has_rope = 1 and reports the RoPE properties not exercised. */
#define KVCHECK_OP_STORE_KV_ROPE (1u << 15)
/* A feature bit: the paged entries (store_kv_cache, load_paged_kv_cache,
 * concat_and_cache_mla) read kvcheck_paged_cache.record_flags (KVCHECK_RECORD_*:
 * NVFP4_DS_MLA's e4m3 rope and transposed scales, SPEC §2). Without it the harness never
 * sends a record with flags: the generators draw none, a direct call with one is
 * UNSUPPORTED before the plugin runs, and a table naming KVCHECK_FORMAT_NVFP4_DS_MLA in
 * formats (other than ~0u) is refused when loaded. */
#define KVCHECK_OP_RECORD_FLAGS (1u << 16)
/* A feature bit: store_kv and gather_kv take NVFP4 K/V caches (dtype KVCHECK_KV_E2M1,
 * docs/spec.md §7.9) and read their argument struct's `block_scales`. Without it the
 * harness never sends an e2m1 cache: the generators draw none, a direct call with one is
 * UNSUPPORTED before the plugin runs, and a table naming KVCHECK_KV_E2M1 in kv_dtypes
 * (other than ~0u) is refused when loaded. */
#define KVCHECK_OP_KV_NVFP4 (1u << 17)
/* Every bit this header defines: a table naming another bit is refused when loaded (a
 * plugin built against a newer header than the harness's). */
#define KVCHECK_OPS_KNOWN ((1u << 18) - 1u)

/* Paged MLA/indexer cache formats (SPEC §2), bits of kvcheck_capabilities.formats and
 * values of kvcheck_paged_cache.format. BF16 is BF16(E) for every E. */
typedef enum kvcheck_format {
  KVCHECK_FORMAT_V41 = 0,
  KVCHECK_FORMAT_V41_FP4 = 1,
  KVCHECK_FORMAT_FP4_INDEX = 2,
  KVCHECK_FORMAT_FP8_FP32SF_INDEX = 3,
  KVCHECK_FORMAT_MXFP8_INDEX = 4,
  KVCHECK_FORMAT_BF16 = 5,
  KVCHECK_FORMAT_FP8_DS_MLA = 6, /* vLLM fp8_ds_mla / FlashMLA V32, 656 B (SPEC §2, §4.6) */
  KVCHECK_FORMAT_FP8_POW2SF_INDEX = 7, /* vLLM's DSA indexer, ue8m0 option: fp32 2^k scales (§4.7) */
  KVCHECK_FORMAT_MODEL1 = 8, /* FlashMLA MODEL1, 584 B block-planar: [448 e4m3 | 64 bf16] rows, then
                                7 ue8m0 tile scales + 1 pad byte per token (§2, §3, §4.8) */
  KVCHECK_FORMAT_NVFP4_DS_MLA = 9, /* vLLM nvfp4_ds_mla / FlashMLA V32_NVFP4_FP8ROPE, 352 B: 512 e2m1, 64
                                      unscaled e4m3 rope, 32 transposed e4m3 scales (§2, §4.9) */
  KVCHECK_FORMAT_OTHER = 31 /* a record no named format has: an invalid one (refuse it with
                               INVALID_FORMAT only when its fields break SPEC §2), or a valid
                               custom record, drawn only for a plugin whose formats is ~0u */
} kvcheck_format;
#define KVCHECK_FORMAT_BIT(f) (1u << (f))

/* K/V family element dtypes (SPEC §7.1), bits of kvcheck_capabilities.kv_dtypes. */
typedef enum kvcheck_kv_dtype {
  KVCHECK_KV_BF16 = 0,
  KVCHECK_KV_FP16 = 1,
  KVCHECK_KV_E4M3 = 2,
  KVCHECK_KV_E5M2 = 3,
  KVCHECK_KV_E2M1 = 4  /* NVFP4 (docs/spec.md §7.9): 4-bit codes, element 2i in the low nibble, one
                          e4m3 scale per 16 elements in a block-scale cache, k_scale / v_scale the
                          per-tensor global decode scale; only with KVCHECK_OP_KV_NVFP4 */
} kvcheck_kv_dtype;

/* Numerics recipes of the FP8 K/V store (docs/spec.md §7.3.1): values of
 * kvcheck_kv_cache.recipe, bits (1u << recipe) of kvcheck_contract.kv_fp8_recipes.
 *   SPEC, VLLM: q = cvt_satfinite(x / scale), IEEE division (vLLM reshape_and_cache_flash);
 *   SGLANG:     q = cvt_satfinite(clamp(x * RN(1 / scale), +-max)), fminf/fmaxf clamp,
 *               so NaN -> +max (SGLang store_cache_quant). */
typedef enum kvcheck_recipe {
  KVCHECK_RECIPE_SPEC = 0,
  KVCHECK_RECIPE_VLLM = 1,
  KVCHECK_RECIPE_SGLANG = 2
} kvcheck_recipe;

/* What a plugin supports. The generators draw only inputs inside it; `kvcheck run`
 * reports what was left out. Zero masks mean "nothing"; use ~0u for "all". */
typedef struct kvcheck_capabilities {
  uint32_t ops;                /* KVCHECK_OP_* bits; an op without a bit is never called */
  uint32_t formats;            /* KVCHECK_FORMAT_BIT(...) of the paged cache formats */
  uint32_t kv_dtypes;          /* (1u << kvcheck_kv_dtype) of K/V cache dtypes */
  int32_t block_size_multiple; /* every block_size is a multiple of this; 0 or 1 = any */
  int32_t max_block_size;      /* largest block_size; 0 = no limit */
} kvcheck_capabilities;

/* A paged MLA/indexer cache (SPEC §2, §3): `base` holds size_bytes bytes. Record fields
 * describe one token; geometry gives every address:
 *   data of (block b, token t)   at b*block_stride + t*data_token_stride
 *   scales of (block b, token t) at b*block_stride + scale_region + t*scale_token_stride
 * slot s = b*block_size + t. All offsets and strides in BYTES. */
typedef struct kvcheck_paged_cache {
  uint8_t* base;       /* harness-owned; host or device per memory_space */
  int64_t size_bytes;  /* bytes the buffer at base holds; a call whose
                          (num_blocks - 1) * block_stride + the packed stride exceeds
                          it is refused with KVCHECK_STATUS_SHAPE_MISMATCH (SPEC §5.2
                          validation order) */
  int32_t format;      /* kvcheck_format */
  int32_t elements;    /* logical elements per token */
  int32_t quantized_dtype;   /* 0 none (BF16 elements), 1 e4m3, 2 e2m1 */
  int32_t sf_format;         /* 0 none, 1 ue8m0, 2 e4m3, 3 fp32, 4 fp32 power of two
                                (floor after the division), 5 the same, floor first,
                                6 ue8m0 written by 4's rule (MODEL1, SPEC §4.8), 7 e4m3
                                written by vLLM's nvfp4_ds_mla rule (SPEC §4.9) */
  int32_t elements_per_sf;   /* scale group size; 0 for BF16 */
  int32_t do_cast;           /* 1: load dequantises to BF16 */
  int32_t token_interleaved; /* 1: record = [data | scales | tail] per token (record_flags
                                SCALES_LAST: [data | tail | scales]); 0: block-planar,
                                each token's [data | tail] row at data_token_stride, its
                                scales at scale_token_stride (do_cast: sf_bytes padded to 8) */
  int32_t bf16_tail_elements;/* the last of `elements`, stored as BF16 (record_flags
                                E4M3_TAIL: as e4m3 bytes) at data + quantized_bytes +
                                sf_bytes (interleaved) or data + quantized_bytes
                                (block-planar or SCALES_LAST; do_cast formats only).
                                Was always 0 before FP8_DS_MLA: a plugin declaring formats
                                ~0u receives it, and sf_format 4/5, and should answer
                                UNSUPPORTED for a record it does not implement */
  int64_t quantized_bytes;   /* data bytes per token (BF16: 2*elements) */
  int64_t sf_bytes;          /* scale bytes per token */
  int64_t num_blocks;
  int32_t block_size;        /* tokens per block */
  int32_t record_flags;      /* KVCHECK_RECORD_* bits: sent non-zero only to a plugin declaring
                                KVCHECK_OP_RECORD_FLAGS (was reserved0, always 0); one that
                                sees a bit it does not implement answers UNSUPPORTED */
  int64_t block_stride;      /* bytes */
  int64_t data_token_stride; /* bytes */
  int64_t scale_region;      /* bytes: first scale byte of a block */
  int64_t scale_token_stride;/* bytes */
} kvcheck_paged_cache;

/* kvcheck_paged_cache.record_flags (SPEC §2):
 *   E4M3_TAIL:   the bf16_tail_elements are stored as unscaled e4m3 casts, one byte each;
 *   SCALES_LAST: an interleaved record [data | tail | scales] (not [data | scales | tail]),
 *                scale s of n at byte (n/4)*(s%4) + s/4 of the scale field (transposed). */
#define KVCHECK_RECORD_E4M3_TAIL (1 << 0)
#define KVCHECK_RECORD_SCALES_LAST (1 << 1)

/* store_kv_cache (SPEC §5.1): for i < num_tokens with slot_mapping[i] != -1, quantise
 * row i (BF16 bit patterns, kv + i*kv_row_stride) into slot slot_mapping[i]. */
typedef struct kvcheck_store_args {
  const uint16_t* kv;         /* [kv_rows][kv_row_stride] BF16 bits */
  int64_t kv_rows;            /* rows the buffer holds (>= num_tokens when valid) */
  int64_t kv_row_stride;      /* ELEMENTS between rows (>= elements when valid) */
  const int32_t* slot_mapping;/* [num_tokens] */
  int64_t num_tokens;
  kvcheck_paged_cache cache;  /* written */
} kvcheck_store_args;

/* load_paged_kv_cache (SPEC §5.2): segments [num_segments][4] int32 = (src_block_id,
 * src_begin, src_end, dst_offset); output rows of load_row_bytes (BF16 2*E for
 * BF16/do_cast, quantized_bytes for index formats) at out_data_stride bytes apart;
 * index formats also sf_bytes scale rows at out_scale_stride bytes apart. Rows no
 * segment covers keep their bytes. */
typedef struct kvcheck_load_args {
  kvcheck_paged_cache cache;     /* read only */
  const int32_t* load_segments;  /* [num_segments][4] */
  int64_t num_segment_ints;      /* entries of load_segments (4 per segment when valid) */
  int32_t total_k;               /* output rows the segments address */
  int32_t reserved0;
  uint8_t* out_data;             /* [out_rows] rows */
  int64_t out_data_stride;       /* bytes */
  uint8_t* out_scales;           /* index formats; else NULL */
  int64_t out_scale_stride;      /* bytes */
  int64_t out_rows;              /* rows the output buffers hold */
} kvcheck_load_args;

/* convert_kv_index (SPEC §5.5). */
typedef struct kvcheck_convert_kv_index_args {
  const int32_t* topk;          /* [num_q][k] logical token indices or -1 */
  int64_t topk_entries;
  int32_t num_q, k;
  const int32_t* block_table;   /* [num_seqs][max_blocks] */
  int64_t block_table_entries;
  int32_t max_blocks, block_size;
  const int32_t* seq_ids;       /* [num_q], or NULL: row q uses table row q */
  int64_t seq_ids_entries;      /* 0 with NULL */
  const int32_t* context_lens;  /* [num_q], tokens */
  int64_t context_lens_entries;
  int32_t* out;                 /* [num_q][k], written */
  int64_t out_entries;
} kvcheck_convert_kv_index_args;

/* kv_index_cat (SPEC §5.5): out[q] = left[q] ++ (right[q] + shift), -1 kept,
 * shift = total_k_swa_cached + total_k_swa_cur. */
typedef struct kvcheck_kv_index_cat_args {
  const int32_t* left; int64_t left_entries; int32_t wl;  /* [num_q][wl] */
  const int32_t* right; int64_t right_entries; int32_t wr; /* [num_q][wr] */
  int32_t num_q, total_k_swa_cached, total_k_swa_cur;
  int32_t* out; int64_t out_entries;                     /* [num_q][wl+wr] */
} kvcheck_kv_index_cat_args;

/* expand_swa_index (SPEC §5.5): pivots[num_q][4] = off1, len1, off2, len2. */
typedef struct kvcheck_expand_swa_index_args {
  const int32_t* pivots; int64_t pivots_entries;
  int32_t num_q, width;
  int32_t* out; int64_t out_entries; /* [num_q][width] */
} kvcheck_expand_swa_index_args;

/* SWA decode index (SPEC §5.5): start_len[num_q][2] = start_slot, valid_len. */
typedef struct kvcheck_swa_decode_index_args {
  const int32_t* start_len; int64_t start_len_entries;
  int32_t num_q, width, ring_size, reserved0;
  int32_t* out; int64_t out_entries; /* [num_q][width] */
} kvcheck_swa_decode_index_args;

/* A layer's K and V caches (SPEC §7.2): element (b, t, h, d) at
 * b*stride_page + t*stride_token + h*stride_head + d ELEMENTS from k / v. */
typedef struct kvcheck_kv_cache {
  uint8_t* k; int64_t k_capacity; /* elements of `dtype` that belong to the K buffer */
  uint8_t* v; int64_t v_capacity;
  int32_t dtype;                  /* kvcheck_kv_dtype */
  int32_t block_size, num_kv_heads, head_dim;
  int64_t num_blocks;
  int64_t stride_page, stride_token, stride_head; /* elements */
  int32_t scale_kind;             /* 0 none, 1 per tensor, 2 per KV head (SPEC §7.3) */
  int32_t num_scales;             /* floats at k_scale (1 per tensor, H per head, 0) */
  const float* k_scale;           /* memory space of the plugin; NULL when none */
  const float* v_scale;
  int32_t num_v_scales;           /* floats at v_scale */
  int32_t recipe;                 /* kvcheck_recipe of an FP8 store (was reserved0, always
                                     0 = SPEC); the harness sets another value only for a
                                     plugin whose contract declares that recipe */
} kvcheck_kv_cache;

/* The block-scale caches of an e2m1 K/V cache (docs/spec.md §7.9): the e4m3 scale of
 * group g (elements [16g, 16g + 16)) of head h of token t in block b is the byte
 *   b*sf_stride_page + h*sf_stride_head + t*sf_stride_token + g        (sf_layout 0, linear)
 *   b*sf_stride_page + h*sf_stride_head + (t/4)*4S + 4g + t%4          (sf_layout 1, interleave4)
 * from k_sf (K's scales) or v_sf (V's), S = head_dim / 16. Strides and capacities in
 * BYTES; the plugin's memory space. Zeroed for every other dtype. */
typedef struct kvcheck_kv_block_scales {
  uint8_t* k_sf; int64_t k_sf_capacity;
  uint8_t* v_sf; int64_t v_sf_capacity;
  int64_t sf_stride_page, sf_stride_token, sf_stride_head;
  int32_t sf_layout;  /* 0 linear (FlashInfer's append), 1 interleave4 (vLLM, TRT-LLM V scales) */
  int32_t reserved0;
} kvcheck_kv_block_scales;

/* Token rows [rows][H][D] (store_kv input, gather_kv output): token i, head h at
 * element i*token_stride + h*head_stride; D contiguous. */
typedef struct kvcheck_kv_tokens {
  uint8_t* data;       /* const for store_kv input */
  int32_t dtype;       /* kvcheck_kv_dtype (model dtypes bf16/fp16) */
  int32_t reserved0;
  int64_t rows;        /* rows the buffer holds */
  int64_t token_stride, head_stride; /* elements */
} kvcheck_kv_tokens;

/* A fused rotary embedding (docs/spec.md §8.4): a row (concat_and_cache_mla's k_pe row;
 * each head of a store_kv key row) is rotated at p = positions[i] before it is stored
 * (its buffer is only read): with h = rot_dim / 2 and o = rope_offset, pair j < h is
 * (o + j, o + j + h) (is_neox 1) or (o + 2j, o + 2j + 1) (0); with c =
 * cos_sin_cache[p][j], s = cos_sin_cache[p][h + j] and x, y the pair's values as fp32,
 * the pair becomes fl(fl(x*c) - fl(y*s)), fl(fl(y*c) + fl(x*s)): fp32 products and sums
 * rounded to nearest even, NO FMA, then rounded to nearest even to the row's dtype
 * (bf16 or fp16, NaN -> 0x7FFF). positions and cos_sin_cache live in the plugin's memory
 * space, like slot_mapping. */
typedef struct kvcheck_rope {
  int32_t is_neox;
  int32_t rot_dim;             /* elements rotated: even, >= 2 */
  int32_t rope_offset;         /* >= 0, rope_offset + rot_dim <= the row's width */
  int32_t reserved0;
  const float* cos_sin_cache;  /* [max_position][rot_dim] fp32: cos at [0, h), sin at [h, rot_dim) */
  int64_t max_position;        /* >= 1 */
  const int64_t* positions;    /* [positions_rows] int64, each < num_tokens in [0, max_position) */
  int64_t positions_rows;      /* rows the buffer holds (>= num_tokens when valid) */
} kvcheck_rope;

/* store_kv (SPEC §7.4). */
typedef struct kvcheck_store_kv_args {
  kvcheck_kv_tokens key, value;  /* read only */
  const int32_t* slot_mapping; int64_t num_tokens;
  kvcheck_kv_cache cache;        /* written */
  /* Fused RoPE of the key rows (docs/spec.md §8.4): read these two fields only when the
   * table declares KVCHECK_OP_STORE_KV_ROPE (a harness passes has_rope = 1 only then).
   * has_rope 1: every head of key row i is rotated (kvcheck_rope, the head's head_dim
   * elements its row) before it is stored; value rows are stored as they are. */
  int32_t has_rope;
  int32_t reserved1;
  kvcheck_rope rope;
  /* An e2m1 cache's scale caches (written with its data): read only when the table
   * declares KVCHECK_OP_KV_NVFP4 (the harness sends an e2m1 cache only then). */
  kvcheck_kv_block_scales block_scales;
} kvcheck_store_kv_args;

/* gather_kv (SPEC §7.5): sequence i's tokens through block_table row i, from table
 * position seq_starts[i] when given, to rows [cu_seqlens_k[i], cu_seqlens_k[i+1]) of
 * out_k / out_v.
 * seq_starts_unit: 0 = no seq_starts (every sequence starts at position 0; the two
 * seq_starts fields are then absent from the struct of older harnesses: read them only
 * when the unit is not 0); 1 = tokens (position seq_starts[i] + t, vLLM
 * cp_gather_cache); 2 = blocks (seq_starts[i] rounded down to a multiple of
 * block_size, vLLM gather_and_maybe_dequant_cache). The harness sets it only for a
 * plugin whose capabilities have KVCHECK_OP_GATHER_KV_SEQ_STARTS. */
typedef struct kvcheck_gather_kv_args {
  kvcheck_kv_cache cache;        /* read only */
  const int32_t* block_table; int64_t block_table_entries; int32_t max_blocks;
  int32_t seq_starts_unit;       /* was reserved0 (always 0) */
  const int32_t* cu_seqlens_k; int64_t cu_seqlens_entries; /* num_seqs + 1 */
  kvcheck_kv_tokens out_k, out_v; /* written */
  const int32_t* seq_starts; int64_t seq_starts_entries; /* [num_seqs] tokens; the plugin's memory */
  /* An e2m1 cache's scale caches (read): only with KVCHECK_OP_KV_NVFP4, as store_kv's. */
  kvcheck_kv_block_scales block_scales;
} kvcheck_gather_kv_args;

/* copy_blocks (SPEC §8.1): in place in one allocation, for every view (offset,
 * block_bytes) and every pair (src, dst) of block_mapping that is not padding (-1):
 * bytes [offset + src*block_stride, +block_bytes) copied to [offset + dst*block_stride,
 * +block_bytes). views: HOST memory for every plugin (the host launches per view);
 * block_mapping: the plugin's memory space. No views: nothing is read or written. */
typedef struct kvcheck_copy_blocks_args {
  uint8_t* base; int64_t size_bytes;            /* the allocation, written */
  const int64_t* views; int64_t views_entries;  /* [num_views][2] = offset, block_bytes (bytes) */
  int64_t num_blocks;                           /* blocks of every view */
  int64_t block_stride;                         /* bytes between a view's blocks */
  const int64_t* block_mapping; int64_t block_mapping_entries; /* [num_pairs][2] = src, dst */
} kvcheck_copy_blocks_args;

/* concat_and_cache_mla (docs/spec.md §8.2): for i < num_tokens with slot_mapping[i] !=
 * -1, the row kv_c[i] (kv_lora_rank BF16) followed by k_pe[i] (rope_dim BF16) is stored
 * into slot slot_mapping[i] exactly as store_kv_cache stores a row of kv_lora_rank +
 * rope_dim = E elements (any format: FP8_DS_MLA quantises kv_c and keeps k_pe as its BF16
 * tail; a split inside a scale group mixes both sources in one group). kv_c and k_pe
 * may be views of one tensor (k_pe = kv_c + kv_lora_rank with the same stride). */
typedef struct kvcheck_concat_and_cache_mla_args {
  const uint16_t* kv_c;     /* [kv_c_rows][kv_c_row_stride] BF16 bits */
  int64_t kv_c_rows;        /* rows the buffer holds (>= num_tokens when valid) */
  int64_t kv_c_row_stride;  /* ELEMENTS between rows (>= kv_lora_rank when valid) */
  const uint16_t* k_pe;     /* [k_pe_rows][k_pe_row_stride] BF16 bits */
  int64_t k_pe_rows;
  int64_t k_pe_row_stride;  /* ELEMENTS (>= rope_dim when valid) */
  int32_t kv_lora_rank;     /* elements of a kv_c row */
  int32_t rope_dim;         /* elements of a k_pe row */
  const int32_t* slot_mapping; /* [num_tokens] */
  int64_t num_tokens;
  kvcheck_paged_cache cache;   /* written */
  /* Split caches (docs/spec.md §8.2): read these two fields only when the table declares
   * KVCHECK_OP_CONCAT_MLA_PE_CACHE (a harness passes has_pe_cache = 1 only then).
   * has_pe_cache 1: kv_c row i is stored into `cache` as a row of kv_lora_rank elements
   * and k_pe row i into pe_cache as a row of rope_dim elements, both at slot_mapping[i];
   * the two caches have one num_blocks and block_size and share no byte. */
  int32_t has_pe_cache;
  int32_t reserved1;
  kvcheck_paged_cache pe_cache; /* written */
  /* Fused RoPE of k_pe (docs/spec.md §8.4): read these two fields only when the table
   * declares KVCHECK_OP_CONCAT_MLA_ROPE (a harness passes has_rope = 1 only then).
   * has_rope 1: k_pe row i (rope_dim BF16, only read) is rotated (kvcheck_rope) before
   * it is stored. */
  int32_t has_rope;
  int32_t reserved2;
  kvcheck_rope rope;
} kvcheck_concat_and_cache_mla_args;

/* swap_blocks (docs/spec.md §8.3): blocks moved between two allocations, src only read.
 * For every view (src_offset, dst_offset, block_bytes) and every pair (s, d) of
 * block_mapping that is not padding (-1): bytes [src_offset + s*src_block_stride,
 * +block_bytes) of src copied to [dst_offset + d*dst_block_stride, +block_bytes) of dst.
 * Where src and dst live: a pool whose *_host is 1 is PAGE-LOCKED HOST memory
 * (cudaMallocHost / cudaHostRegister) for a device plugin, else the plugin's memory
 * space (device↔device, host→device, device→host moves); a host plugin ignores the
 * flags. views: HOST memory for every plugin; block_mapping: the plugin's memory space.
 * No views: nothing is read or written. */
typedef struct kvcheck_swap_blocks_args {
  const uint8_t* src; int64_t src_size_bytes, src_num_blocks, src_block_stride; /* read */
  uint8_t* dst; int64_t dst_size_bytes, dst_num_blocks, dst_block_stride;       /* written */
  int32_t src_host, dst_host;                   /* 1: page-locked host memory (see above) */
  const int64_t* views; int64_t views_entries;  /* [num_views][3] = src_offset, dst_offset, block_bytes */
  const int64_t* block_mapping; int64_t block_mapping_entries; /* [num_pairs][2] = src, dst */
} kvcheck_swap_blocks_args;

/* A plugin's contract (docs/plugins.md "Declaring a contract"): what its kernels
 * implement and the limits they were built with, beyond kvcheck_capabilities. The
 * match properties draw only cases inside it; the refusal property
 * prop_store_kv_undeclared_shape_is_refused hands store_kv cases outside its shape
 * limits, which the plugin must refuse with KVCHECK_STATUS_UNSUPPORTED writing nothing
 * (a kernel built for head_dim 128 that runs a head_dim 64 call corrupts an engine's
 * cache). Optional: a table without one (or a NULL pointer) declares recipe SPEC and no
 * limit. Read only as far as struct_size covers it; fields are appended, never moved. */
#define KVCHECK_MAX_DECLARED_HEAD_DIMS 16
typedef struct kvcheck_contract {
  uint32_t struct_size;     /* sizeof(kvcheck_contract) the plugin was built with */
  uint32_t kv_fp8_recipes;  /* (1u << kvcheck_recipe) bits the FP8 store_kv implements,
                               honouring kvcheck_kv_cache.recipe when it declares several;
                               0 = SPEC only. A plugin judged against a recipe it does not
                               implement is told which recipe its bytes match. */
  int32_t num_head_dims;    /* 0 = any head_dim; else store_kv and gather_kv take only
                               head_dims[0 .. num_head_dims) (at most 16) */
  int32_t head_dims[KVCHECK_MAX_DECLARED_HEAD_DIMS];
  /* Limits on num_kv_heads * head_dim, the elements of one token's row across its KV
   * heads (0 = none), for store_kv and gather_kv: a kernel that gives each element of a
   * token a thread (heads * head_dim / vector width <= 1024 threads per CTA) has a
   * maximum, one that splits a row into fixed tiles a minimum. Read only when
   * struct_size covers them. */
  int32_t min_heads_x_head_dim;
  int32_t max_heads_x_head_dim;
  /* Bytes (a power of two, at most 256; 0 or 1 = none) that every K/V address and
   * byte stride store_kv and gather_kv are handed is a multiple of: key, value, the K
   * and V cache views, out_k and out_v, and each of their token/head/page strides
   * (the fp32 scales excepted). A kernel with unchecked 16-byte vector accesses
   * declares 16: a misaligned access is a sticky CUDA error that poisons the context.
   * The match properties hand only aligned calls; prop_store_kv_undeclared_shape_is_refused
   * hands misaligned ones, which the plugin must refuse as it refuses other shapes.
   * Read only when struct_size covers it. */
  int32_t kv_alignment;
  /* The (cache dtype, row dtype) pairs store_kv takes and gather_kv writes out, as bits
   * KVCHECK_KV_PAIR(cache, rows) of kvcheck_kv_dtype values; 0 = every pair the spec
   * allows (a bf16 / fp16 cache with rows of its own dtype, an e4m3 / e5m2 cache with
   * bf16 or fp16 rows). A kernel instantiated for bf16 activations only declares
   * KVCHECK_KV_PAIR(KVCHECK_KV_E4M3, KVCHECK_KV_BF16) (and its bf16 pair): the match
   * properties draw only declared pairs, prop_store_kv_undeclared_shape_is_refused
   * the others, which it must refuse. Read only when struct_size covers it. */
  uint32_t kv_dtype_pairs;
} kvcheck_contract;
#define KVCHECK_KV_PAIR(cache, rows) (1u << (4 * (cache) + (rows)))

#define KVCHECK_OP_FN(name, args_t) \
  int (*name)(void* context, const args_t* args, void* stream, char* msg, size_t msg_size)

/* Every operation, once: X(entry, ops bit, argument struct), in table order. These
 * lists make the table's entries below, and on the harness side the loader's checks,
 * the op names in reports and the adapters (impl/plugin/op_decl.h declares each op's
 * argument roles). A new operation is appended to KVCHECK_OPS_ADDED, with its bit and
 * argument struct above: its entry then follows every field of earlier tables, so
 * tables built before it keep loading (struct_size; the loader reads an entry only
 * when struct_size covers it). KVCHECK_OPS_V1 is frozen. */
#define KVCHECK_OPS_V1(X)                                               \
  X(store_kv_cache, KVCHECK_OP_STORE_KV_CACHE, kvcheck_store_args)      \
  X(load_paged_kv_cache, KVCHECK_OP_LOAD_PAGED_KV_CACHE, kvcheck_load_args) \
  X(convert_kv_index, KVCHECK_OP_CONVERT_KV_INDEX, kvcheck_convert_kv_index_args) \
  X(kv_index_cat, KVCHECK_OP_KV_INDEX_CAT, kvcheck_kv_index_cat_args)   \
  X(expand_swa_index, KVCHECK_OP_EXPAND_SWA_INDEX, kvcheck_expand_swa_index_args) \
  X(swa_decode_index, KVCHECK_OP_SWA_DECODE_INDEX, kvcheck_swa_decode_index_args) \
  X(store_kv, KVCHECK_OP_STORE_KV, kvcheck_store_kv_args)               \
  X(gather_kv, KVCHECK_OP_GATHER_KV, kvcheck_gather_kv_args)
#define KVCHECK_OPS_ADDED(X)                                            \
  X(copy_blocks, KVCHECK_OP_COPY_BLOCKS, kvcheck_copy_blocks_args)
/* Operations appended after the table's `contract` field. */
#define KVCHECK_OPS_AFTER_CONTRACT(X) \
  X(concat_and_cache_mla, KVCHECK_OP_CONCAT_AND_CACHE_MLA, kvcheck_concat_and_cache_mla_args) \
  X(swap_blocks, KVCHECK_OP_SWAP_BLOCKS, kvcheck_swap_blocks_args)
#define KVCHECK_OPS(X) KVCHECK_OPS_V1(X) KVCHECK_OPS_ADDED(X) KVCHECK_OPS_AFTER_CONTRACT(X)

/* The table a plugin hands to the harness (see the top of this file). */
typedef struct kvcheck_backend_v1_t {
  uint32_t abi_version;  /* KVCHECK_ABI_VERSION */
  uint32_t struct_size;  /* sizeof(kvcheck_backend_v1_t) the plugin was built with */
  const char* name;      /* backend name in reports: [a-z0-9_-]+, unique per run, without
                            "-to-" (the separator of writer x reader pairs) */
  int32_t memory_space;  /* kvcheck_memory_space */
  int32_t reserved0;
  kvcheck_capabilities capabilities;
  void* context;         /* passed back to every entry; plugin-owned */
  /* Optional (may be NULL): called once, in a child process, before any operation.
   * Returns OK or UNSUPPORTED with the reason in msg (e.g. "no CUDA device"). */
  int (*probe)(void* context, char* msg, size_t msg_size);
  /* One entry per operation of KVCHECK_OPS_V1, in its order; NULL = not supported
   * (its ops bit must be clear). Entries from store_kv on are optional in version 1:
   * read only when struct_size covers them. */
#define KVCHECK_OP_ENTRY(entry, bit, args_t) KVCHECK_OP_FN(entry, args_t);
  KVCHECK_OPS_V1(KVCHECK_OP_ENTRY)
  /* Optional test hook of version 1 (NULL = none; no ops bit): the plugin's later calls
   * made on the CALLING thread split their work as if the machine had `max_threads`
   * threads and a thread paid for itself at `min_bytes_per_thread` bytes of output;
   * 0, 0 restores the plugin's defaults. The properties vary it per case so that
   * multi-threaded paths run on machines of any core count. Returns OK, or
   * INVALID_ARGUMENT for values it does not take. */
  int (*set_test_parallelism)(void* context, int32_t max_threads, int64_t min_bytes_per_thread);
  /* The operations added since (KVCHECK_OPS_ADDED, in its order), each optional: read
   * only when struct_size covers it. */
  KVCHECK_OPS_ADDED(KVCHECK_OP_ENTRY)
  /* Optional (NULL = none): the plugin's contract, read only when struct_size covers
   * this field. It must stay valid until the library is unloaded. Operations added
   * after this field go to KVCHECK_OPS_AFTER_CONTRACT, so that this offset never moves. */
  const kvcheck_contract* contract;
  KVCHECK_OPS_AFTER_CONTRACT(KVCHECK_OP_ENTRY)
#undef KVCHECK_OP_ENTRY
} kvcheck_backend_v1_t;

/* The entry symbol's type (KVCHECK_ENTRY_SYMBOL). */
typedef int (*kvcheck_backend_v1_fn)(uint32_t harness_abi_version, const kvcheck_backend_v1_t** out,
                                     char* msg, size_t msg_size);

#if defined(_WIN32)
#define KVCHECK_PLUGIN_EXPORT __declspec(dllexport)
#else
#define KVCHECK_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* KVCHECK_BACKEND_ABI_H */
