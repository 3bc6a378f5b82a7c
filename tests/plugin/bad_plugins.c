/* Plugins that must NOT load, one per loader error (tests/plugin/CMakeLists.txt builds
 * each with one -D): a wrong ABI version, no entry symbol, an ops bit without its
 * function (or with it past the table's end), a feature bit without its operation, an
 * ops bit this harness does not know, a contract out of range (and one past the table's
 * end, which loads: never read), a reserved name (host, cuda), block-size limits no
 * case can meet or that are negative, a paged op with no format, a K/V op with no dtype. */
#include <string.h>

#include "include/kvcheck/backend_abi.h"

#ifdef NO_ENTRY
KVCHECK_PLUGIN_EXPORT int not_the_entry_symbol(void) { return 0; }
#else
static kvcheck_backend_v1_t table;

#if defined(NAME_HOST) || defined(STORE_WITHOUT_FORMATS) || defined(STORE_UNKNOWN_FORMATS_ONLY)
/* Never called: each of these plugins is refused, or never handed a case. */
static int store(void* ctx, const kvcheck_store_args* a, void* stream, char* msg, size_t n) {
  (void)ctx, (void)a, (void)stream, (void)msg, (void)n;
  return KVCHECK_STATUS_OK;
}
#endif
#if defined(STORE_KV_WITHOUT_DTYPES) || defined(STORE_KV_UNKNOWN_DTYPES_ONLY) || defined(CONTRACT_E2M1_HEAD_DIM_8) || \
    defined(CONTRACT_HEAD_DIMS_REPEATED) || defined(CONTRACT_E2M1_AMONG_OTHERS_HEAD_DIM_72)
static int store_kv(void* ctx, const kvcheck_store_kv_args* a, void* stream, char* msg, size_t n) {
  (void)ctx, (void)a, (void)stream, (void)msg, (void)n;
  return KVCHECK_STATUS_OK;
}
#endif

KVCHECK_PLUGIN_EXPORT int kvcheck_backend_v1(uint32_t v, const kvcheck_backend_v1_t** out, char* msg, size_t n) {
  (void)v;
  (void)msg;
  (void)n;
  memset(&table, 0, sizeof table);
  table.abi_version = KVCHECK_ABI_VERSION;
  table.struct_size = sizeof table;
  table.name = "bad";
  table.memory_space = KVCHECK_MEMORY_HOST;
#ifdef NAME_WITH_TO
  table.name = "cpu-to-gpu"; /* "-to-" names writer x reader pairs */
#endif
#ifdef NAME_NULL
  table.name = NULL; /* read by the loader before its name check once: a segfault */
#endif
#ifdef NAME_HOST
  table.name = "host"; /* --backend host selects the host properties */
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = ~0u;
  table.store_kv_cache = store;
#endif
#ifdef NAME_CUDA
  table.name = "cuda"; /* the built-in device backend's, built here or not */
#endif
#ifdef BLOCK_SIZE_MULTIPLE_HUGE
  table.capabilities.block_size_multiple = 1 << 30; /* no case could be drawn, or allocated */
#endif
#ifdef BLOCK_SIZE_MULTIPLE_NEGATIVE
  table.capabilities.block_size_multiple = -16;
#endif
#ifdef MAX_BLOCK_SIZE_NEGATIVE
  table.capabilities.max_block_size = -8;
#endif
#ifdef BLOCK_SIZE_MULTIPLE_ABOVE_MAX
  table.capabilities.block_size_multiple = 16; /* no multiple of 16 is at most 8 */
  table.capabilities.max_block_size = 8;
#endif
#ifdef STORE_WITHOUT_FORMATS
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = 0; /* a store of no format */
  table.store_kv_cache = store;
#endif
#ifdef STORE_KV_WITHOUT_DTYPES
  table.capabilities.ops = KVCHECK_OP_STORE_KV;
  table.capabilities.kv_dtypes = 0; /* a store_kv of no dtype */
  table.store_kv = store_kv;
#endif
#ifdef STORE_UNKNOWN_FORMATS_ONLY
  table.capabilities.ops = KVCHECK_OP_STORE_KV_CACHE;
  table.capabilities.formats = 1u << 30; /* no format this harness knows: as good as 0 */
  table.store_kv_cache = store;
#endif
#ifdef STORE_KV_UNKNOWN_DTYPES_ONLY
  table.capabilities.ops = KVCHECK_OP_STORE_KV;
  table.capabilities.kv_dtypes = 1u << 7; /* no K/V dtype this harness knows: as good as 0 */
  table.store_kv = store_kv;
#endif
#ifdef WRONG_VERSION
  table.abi_version = 2;
#endif
#ifdef MISSING_FUNCTION
  table.capabilities.ops = KVCHECK_OP_LOAD_PAGED_KV_CACHE;
#endif
#ifdef COPY_BLOCKS_PAST_END
  /* copy_blocks named, but the table (an older build) ends before its entry. */
  table.capabilities.ops = KVCHECK_OP_COPY_BLOCKS;
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, copy_blocks);
#endif
#ifdef CONCAT_PAST_END
  /* concat_and_cache_mla named, but the table (built before it) ends at its contract. */
  table.capabilities.ops = KVCHECK_OP_CONCAT_AND_CACHE_MLA;
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, concat_and_cache_mla);
#endif
#ifdef SWAP_PAST_END
  /* swap_blocks named, but the table (built before it) ends at concat_and_cache_mla. */
  table.capabilities.ops = KVCHECK_OP_SWAP_BLOCKS;
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, swap_blocks);
#endif
#ifdef SEQ_STARTS_WITHOUT_GATHER
  /* The seq_starts feature bit qualifies gather_kv: alone it names nothing. */
  table.capabilities.ops = KVCHECK_OP_GATHER_KV_SEQ_STARTS;
#endif
#ifdef PE_CACHE_WITHOUT_CONCAT
  /* The split-cache feature bit qualifies concat_and_cache_mla: alone it names nothing. */
  table.capabilities.ops = KVCHECK_OP_CONCAT_MLA_PE_CACHE;
#endif
#ifdef UNKNOWN_OP_BIT
  /* A bit no header of this harness defines: a plugin newer than the harness. */
  table.capabilities.ops = 1u << 30;
#endif
#ifdef NVFP4_WITHOUT_RECORD_FLAGS
  /* NVFP4_DS_MLA named, but not the record_flags that say its record's layout. */
  table.capabilities.ops = 0;
  table.capabilities.formats = KVCHECK_FORMAT_BIT(KVCHECK_FORMAT_NVFP4_DS_MLA);
#endif
#ifdef ANY_STRIDE_WITHOUT_PAGED
  /* The stride feature bit qualifies the paged-cache entries: alone it names nothing. */
  table.capabilities.ops = KVCHECK_OP_ANY_BLOCK_STRIDE;
#endif
#if defined(CONTRACT_UNKNOWN_RECIPE) || defined(CONTRACT_BAD_HEAD_DIM) || defined(CONTRACT_PAST_END) || \
    defined(CONTRACT_ROW_LIMITS_CROSSED) || defined(CONTRACT_ROW_LIMIT_UNMET) || defined(CONTRACT_BAD_ALIGNMENT) || \
    defined(CONTRACT_BAD_DTYPE_PAIRS) || defined(CONTRACT_DTYPE_PAIRS_SHORT) || defined(CONTRACT_PAIRS_EVERY_DTYPE) || \
    defined(CONTRACT_E2M1_HEAD_DIM_8) || defined(CONTRACT_ROW_MIN_HUGE) || defined(CONTRACT_HEAD_DIMS_REPEATED) || \
    defined(CONTRACT_E2M1_AMONG_OTHERS_HEAD_DIM_72)
  {
    /* A contract with a recipe bit no recipe has, a head_dim of 0, row limits that cross
     * or that no declared head_dim meets, an alignment that is not a power of two, dtype
     * pairs the spec rejects or that leave a named cache dtype none, or one whose field the table (an older build)
     * does not cover: never read, so it loads. */
    static kvcheck_contract contract;
    memset(&contract, 0, sizeof contract);
    contract.struct_size = sizeof contract;
#ifdef CONTRACT_UNKNOWN_RECIPE
    contract.kv_fp8_recipes = 1u << 5;
#endif
#ifdef CONTRACT_BAD_HEAD_DIM
    contract.num_head_dims = 2;
    contract.head_dims[0] = 128;
#endif
#ifdef CONTRACT_ROW_LIMITS_CROSSED
    contract.min_heads_x_head_dim = 2048;
    contract.max_heads_x_head_dim = 1024;
#endif
#ifdef CONTRACT_ROW_LIMIT_UNMET
    contract.num_head_dims = 1;
    contract.head_dims[0] = 128;
    contract.min_heads_x_head_dim = 129;
    contract.max_heads_x_head_dim = 255; /* 1 head is too few, 2 too many */
#endif
#ifdef CONTRACT_HEAD_DIMS_REPEATED
    /* 128 and 64, each declared twice: loads, each listed (and drawn) once. */
    table.capabilities.ops = KVCHECK_OP_STORE_KV;
    table.capabilities.kv_dtypes = ~0u;
    table.store_kv = store_kv;
    contract.num_head_dims = 4;
    contract.head_dims[0] = contract.head_dims[2] = 128;
    contract.head_dims[1] = contract.head_dims[3] = 64;
#endif
#ifdef CONTRACT_ROW_MIN_HUGE
    contract.min_heads_x_head_dim = 2147483647; /* no row the harness draws: hung the generators */
#endif
#ifdef CONTRACT_BAD_ALIGNMENT
    contract.kv_alignment = 24;
#endif
#ifdef CONTRACT_BAD_DTYPE_PAIRS
    /* fp16 rows into a bf16 cache: a pair the spec rejects. */
    contract.kv_dtype_pairs = KVCHECK_KV_PAIR(KVCHECK_KV_BF16, KVCHECK_KV_FP16) | KVCHECK_KV_PAIR(KVCHECK_KV_FP16, KVCHECK_KV_FP16);
#endif
#ifdef CONTRACT_DTYPE_PAIRS_SHORT
    /* e4m3 caches named in the capabilities, but no row dtype paired with them. */
    table.capabilities.kv_dtypes = (1u << KVCHECK_KV_BF16) | (1u << KVCHECK_KV_E4M3);
    contract.kv_dtype_pairs = KVCHECK_KV_PAIR(KVCHECK_KV_BF16, KVCHECK_KV_BF16);
#endif
#ifdef CONTRACT_PAIRS_EVERY_DTYPE
    /* Every K/V dtype (~0u) without KVCHECK_OP_KV_NVFP4: never sent an e2m1 cache, so
     * pairs for the other four dtypes cover every cache it gets (it loads). */
    table.capabilities.kv_dtypes = ~0u;
    contract.kv_dtype_pairs = KVCHECK_KV_PAIR(KVCHECK_KV_BF16, KVCHECK_KV_BF16) |
                              KVCHECK_KV_PAIR(KVCHECK_KV_FP16, KVCHECK_KV_FP16) |
                              KVCHECK_KV_PAIR(KVCHECK_KV_E4M3, KVCHECK_KV_BF16) |
                              KVCHECK_KV_PAIR(KVCHECK_KV_E5M2, KVCHECK_KV_BF16);
#endif
#ifdef CONTRACT_E2M1_HEAD_DIM_8
    /* Only e2m1 caches, whose head_dim is a multiple of 16, and head_dim 8 only. */
    table.capabilities.ops = KVCHECK_OP_STORE_KV | KVCHECK_OP_KV_NVFP4;
    table.store_kv = store_kv;
    table.capabilities.kv_dtypes = 1u << KVCHECK_KV_E2M1;
    contract.num_head_dims = 1;
    contract.head_dims[0] = 8;
#endif
#ifdef CONTRACT_E2M1_AMONG_OTHERS_HEAD_DIM_72
    /* bf16 and e2m1 caches, head_dim 72 only: no e2m1 case can be drawn. */
    table.capabilities.ops = KVCHECK_OP_STORE_KV | KVCHECK_OP_KV_NVFP4;
    table.store_kv = store_kv;
    table.capabilities.kv_dtypes = 1u << KVCHECK_KV_BF16 | 1u << KVCHECK_KV_E2M1;
    contract.num_head_dims = 1;
    contract.head_dims[0] = 72;
#endif
#ifdef CONTRACT_PAST_END
    contract.kv_fp8_recipes = 1u << 5;
    table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, contract);
#endif
    table.contract = &contract;
  }
#endif
#ifdef V1_PREFIX_ONLY
  /* A library built before the K/V family entries were appended. */
  table.struct_size = (uint32_t)offsetof(kvcheck_backend_v1_t, store_kv);
#endif
  *out = &table;
  return KVCHECK_STATUS_OK;
}
#endif
