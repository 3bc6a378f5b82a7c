#include "impl/plugin/abi_convert.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>

namespace kvcheck::plugin {

int to_status(ErrorCode code) { return static_cast<int>(code) + 1; }

bool to_error_code(int status, ErrorCode* code) {
  if (status < KVCHECK_STATUS_INVALID_FORMAT || status > to_status(kLastErrorCode)) return false;
  *code = static_cast<ErrorCode>(status - 1);
  return true;
}

kvcheck_paged_cache to_abi(const CacheLayout& layout, const uint8_t* base, int64_t size_bytes) {
  const KVCacheFormat& f = layout.format;
  kvcheck_paged_cache c{};
  c.base = const_cast<uint8_t*>(base);
  c.size_bytes = size_bytes;
  c.format = abi_format(f);
  c.elements = f.elements;
  c.quantized_dtype = static_cast<int32_t>(f.quantized_dtype);
  c.sf_format = static_cast<int32_t>(f.sf_format);
  c.elements_per_sf = f.elements_per_sf;
  c.do_cast = f.do_cast;
  c.token_interleaved = f.token_interleaved;
  c.bf16_tail_elements = f.bf16_tail_elements;
  c.record_flags = (f.e4m3_tail ? KVCHECK_RECORD_E4M3_TAIL : 0) | (f.scales_last ? KVCHECK_RECORD_SCALES_LAST : 0);
  c.num_blocks = layout.num_blocks;
  c.block_size = layout.block_size;
  c.block_stride = layout.block_stride;
  try {  // derived fields of an invalid format are meaningless: left 0
    const PagedLayout p = layout.paged();
    c.quantized_bytes = p.quantized_bytes;
    c.sf_bytes = p.sf_bytes;
    c.data_token_stride = p.data_token_stride;
    c.scale_region = p.scale_region;
    c.scale_token_stride = p.scale_token_stride;
  } catch (const std::exception&) {
  }
  return c;
}

CacheLayout from_abi(const kvcheck_paged_cache& c) {
  CacheLayout l;
  KVCacheFormat& f = l.format;
  f.name = abi_format_name(c.format, c.elements);
  f.quantized_dtype = static_cast<QuantizedDtype>(c.quantized_dtype);
  f.elements = c.elements;
  f.elements_per_sf = c.elements_per_sf;
  f.sf_format = static_cast<SfFormat>(c.sf_format);
  f.do_cast = c.do_cast != 0;
  f.token_interleaved = c.token_interleaved != 0;
  f.bf16_tail_elements = c.bf16_tail_elements;
  if (const int32_t unknown = c.record_flags & ~(KVCHECK_RECORD_E4M3_TAIL | KVCHECK_RECORD_SCALES_LAST))
    throw Error(ErrorCode::kUnsupported,
                "record_flags bits " + std::to_string(unknown) + " are unknown to this build (a newer harness's record)");
  f.e4m3_tail = (c.record_flags & KVCHECK_RECORD_E4M3_TAIL) != 0;
  f.scales_last = (c.record_flags & KVCHECK_RECORD_SCALES_LAST) != 0;
  l.num_blocks = c.num_blocks;
  l.block_size = c.block_size;
  l.block_stride = c.block_stride;
  return l;
}

kvcheck_kv_cache to_abi(const ConstKvCacheView& v, const float* k_scale, const float* v_scale) {
  kvcheck_kv_cache c{};
  c.k = const_cast<uint8_t*>(v.k);
  c.k_capacity = v.k_capacity;
  c.v = const_cast<uint8_t*>(v.v);
  c.v_capacity = v.v_capacity;
  c.dtype = static_cast<int32_t>(v.layout.dtype);
  c.block_size = v.layout.block_size;
  c.num_kv_heads = v.layout.num_kv_heads;
  c.head_dim = v.layout.head_dim;
  c.num_blocks = v.layout.num_blocks;
  c.stride_page = v.layout.stride_page;
  c.stride_token = v.layout.stride_token;
  c.stride_head = v.layout.stride_head;
  c.scale_kind = static_cast<int32_t>(v.scales.kind);
  // Both spans travel; validation compares their sizes, so keep k's and v's apart.
  c.num_scales = static_cast<int32_t>(v.scales.k_scale.size());
  c.num_v_scales = static_cast<int32_t>(v.scales.v_scale.size());
  c.k_scale = k_scale;
  c.v_scale = v_scale;
  c.recipe = static_cast<int32_t>(v.scales.recipe);
  return c;
}

KvCacheView from_abi(const kvcheck_kv_cache& c) {
  KvCacheView v;
  v.k = c.k;
  v.k_capacity = c.k_capacity;
  v.v = c.v;
  v.v_capacity = c.v_capacity;
  v.layout.dtype = static_cast<KvDtype>(c.dtype);
  v.layout.num_blocks = c.num_blocks;
  v.layout.block_size = c.block_size;
  v.layout.num_kv_heads = c.num_kv_heads;
  v.layout.head_dim = c.head_dim;
  v.layout.stride_page = c.stride_page;
  v.layout.stride_token = c.stride_token;
  v.layout.stride_head = c.stride_head;
  v.scales.kind = static_cast<KvScaleKind>(c.scale_kind);
  if (c.k_scale) v.scales.k_scale = {c.k_scale, static_cast<size_t>(c.num_scales)};
  if (c.v_scale) v.scales.v_scale = {c.v_scale, static_cast<size_t>(c.num_v_scales)};
  v.scales.recipe = static_cast<KvRecipe>(c.recipe);
  return v;
}

kvcheck_kv_block_scales block_scales_to_abi(const ConstKvCacheView& v) {
  kvcheck_kv_block_scales b{};
  if (!is_nvfp4(v.layout.dtype)) return b;
  b.k_sf = const_cast<uint8_t*>(v.k_sf);
  b.k_sf_capacity = v.k_sf_capacity;
  b.v_sf = const_cast<uint8_t*>(v.v_sf);
  b.v_sf_capacity = v.v_sf_capacity;
  b.sf_stride_page = v.sf.stride_page;
  b.sf_stride_token = v.sf.stride_token;
  b.sf_stride_head = v.sf.stride_head;
  b.sf_layout = static_cast<int32_t>(v.sf.layout);
  return b;
}

void block_scales_from_abi(const kvcheck_kv_block_scales& b, KvCacheView& v) {
  if (!is_nvfp4(v.layout.dtype)) return;
  v.k_sf = b.k_sf;
  v.k_sf_capacity = b.k_sf_capacity;
  v.v_sf = b.v_sf;
  v.v_sf_capacity = b.v_sf_capacity;
  v.sf = {static_cast<KvSfLayout>(b.sf_layout), b.sf_stride_page, b.sf_stride_token, b.sf_stride_head};
}

kvcheck_kv_tokens to_abi(const KvTokensIn& t) {
  kvcheck_kv_tokens r{};
  r.data = const_cast<uint8_t*>(t.data);
  r.dtype = static_cast<int32_t>(t.dtype);
  r.rows = t.rows;
  r.token_stride = t.token_stride;
  r.head_stride = t.head_stride;
  return r;
}

KvTokensOut from_abi(const kvcheck_kv_tokens& t) {
  return {t.data, static_cast<KvDtype>(t.dtype), t.rows, t.token_stride, t.head_stride};
}

kvcheck_concat_and_cache_mla_args to_abi(const ConcatMlaArgs& c) {
  kvcheck_concat_and_cache_mla_args a{};
  a.kv_c = c.kv_c.data;
  a.kv_c_rows = c.kv_c.rows;
  a.kv_c_row_stride = c.kv_c.row_stride;
  a.k_pe = c.k_pe.data;
  a.k_pe_rows = c.k_pe.rows;
  a.k_pe_row_stride = c.k_pe.row_stride;
  a.kv_lora_rank = c.kv_lora_rank;
  a.rope_dim = c.rope_dim;
  a.slot_mapping = c.slot_mapping.data();
  a.num_tokens = static_cast<int64_t>(c.slot_mapping.size());
  a.cache = to_abi(c.cache.layout, c.cache.base, c.cache.size_bytes);
  if (c.pe_cache) {
    a.has_pe_cache = 1;
    a.pe_cache = to_abi(c.pe_cache->layout, c.pe_cache->base, c.pe_cache->size_bytes);
  }
  if (c.rope) {
    a.has_rope = 1;
    a.rope = to_abi(*c.rope);
  }
  return a;
}

kvcheck_rope to_abi(const RopeArgs& r) {
  return {r.is_neox ? 1 : 0, r.rot_dim, r.rope_offset, 0, r.cos_sin_cache, r.max_position, r.positions,
          r.positions_rows};
}

RopeArgs from_abi(const kvcheck_rope& r) {
  return {r.cos_sin_cache, r.max_position, r.positions, r.positions_rows, r.rot_dim, r.rope_offset, r.is_neox != 0};
}

ConcatMlaArgs from_abi(const kvcheck_concat_and_cache_mla_args& a) {
  ConcatMlaArgs c{{a.kv_c, a.kv_c_rows, a.kv_c_row_stride},
                  {a.k_pe, a.k_pe_rows, a.k_pe_row_stride},
                  a.kv_lora_rank,
                  a.rope_dim,
                  ints(a.slot_mapping, a.num_tokens),
                  {a.cache.base, from_abi(a.cache), a.cache.size_bytes},
                  std::nullopt,
                  std::nullopt};
  if (a.has_pe_cache) c.pe_cache = CacheView{a.pe_cache.base, from_abi(a.pe_cache), a.pe_cache.size_bytes};
  if (a.has_rope) c.rope = from_abi(a.rope);
  return c;
}

kvcheck_copy_blocks_args to_abi(const CopyBlocksArgs& c) {
  return {c.base, c.size_bytes, c.views.data(), static_cast<int64_t>(c.views.size()), c.num_blocks, c.block_stride,
          c.block_mapping.data(), static_cast<int64_t>(c.block_mapping.size())};
}

namespace {

/// No span holds a negative count or a null pointer with entries: refused here, with
/// the validators' code and wording (SPEC §8.1 / docs/spec.md §8.3 step 1).
std::span<const int64_t> int64_entries(const int64_t* p, int64_t n, const char* what, int width) {
  if (n < 0)
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + " has " + std::to_string(n) + " entries, not [n][" + std::to_string(width) + "]");
  if (p == nullptr && n > 0) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is null");
  return n > 0 ? std::span<const int64_t>(p, static_cast<size_t>(n)) : std::span<const int64_t>();
}

}  // namespace

CopyBlocksArgs from_abi(const kvcheck_copy_blocks_args& a) {
  return {a.base,         a.size_bytes, int64_entries(a.views, a.views_entries, "views", 2), a.num_blocks,
          a.block_stride, int64_entries(a.block_mapping, a.block_mapping_entries, "block_mapping", 2)};
}

kvcheck_swap_blocks_args to_abi(const SwapBlocksArgs& c) {
  kvcheck_swap_blocks_args a{};
  a.src = c.src;
  a.src_size_bytes = c.src_pool.size_bytes;
  a.src_num_blocks = c.src_pool.num_blocks;
  a.src_block_stride = c.src_pool.block_stride;
  a.dst = c.dst;
  a.dst_size_bytes = c.dst_pool.size_bytes;
  a.dst_num_blocks = c.dst_pool.num_blocks;
  a.dst_block_stride = c.dst_pool.block_stride;
  a.src_host = c.src_pool.host ? 1 : 0;
  a.dst_host = c.dst_pool.host ? 1 : 0;
  a.views = c.views.data();
  a.views_entries = static_cast<int64_t>(c.views.size());
  a.block_mapping = c.block_mapping.data();
  a.block_mapping_entries = static_cast<int64_t>(c.block_mapping.size());
  return a;
}

SwapBlocksArgs from_abi(const kvcheck_swap_blocks_args& a) {
  SwapBlocksArgs s;
  s.src = a.src;
  s.src_pool = {a.src_size_bytes, a.src_num_blocks, a.src_block_stride, a.src_host != 0};
  s.dst = a.dst;
  s.dst_pool = {a.dst_size_bytes, a.dst_num_blocks, a.dst_block_stride, a.dst_host != 0};
  s.views = int64_entries(a.views, a.views_entries, "views", 3);
  s.block_mapping = int64_entries(a.block_mapping, a.block_mapping_entries, "block_mapping", 2);
  return s;
}

kvcheck_gather_kv_args to_abi(const GatherKvArgs& g) {
  kvcheck_gather_kv_args a{};
  a.cache = to_abi(g.cache, g.cache.scales.k_scale.data(), g.cache.scales.v_scale.data());
  a.block_table = g.block_table.data();
  a.block_table_entries = static_cast<int64_t>(g.block_table.size());
  a.max_blocks = g.max_blocks;
  a.cu_seqlens_k = g.cu_seqlens_k.data();
  a.cu_seqlens_entries = static_cast<int64_t>(g.cu_seqlens_k.size());
  a.out_k = to_abi(KvTokensIn(g.out_k));
  a.out_v = to_abi(KvTokensIn(g.out_v));
  a.block_scales = block_scales_to_abi(g.cache);
  if (!g.seq_starts.empty()) {
    a.seq_starts_unit = static_cast<int32_t>(g.seq_start_unit);
    a.seq_starts = g.seq_starts.data();
    a.seq_starts_entries = static_cast<int64_t>(g.seq_starts.size());
  }
  return a;
}

std::span<const int32_t> ints(const int32_t* p, int64_t n) {
  return p != nullptr && n > 0 ? std::span<const int32_t>(p, static_cast<size_t>(n)) : std::span<const int32_t>();
}

std::span<int32_t> ints(int32_t* p, int64_t n) {
  return p != nullptr && n > 0 ? std::span<int32_t>(p, static_cast<size_t>(n)) : std::span<int32_t>();
}

GatherKvArgs from_abi(const kvcheck_gather_kv_args& a) {
  // A span's pointer may be a device pointer (CUDA plugins): only its extent is used here.
  GatherKvArgs g;
  KvCacheView cache = from_abi(a.cache);
  block_scales_from_abi(a.block_scales, cache);
  g.cache = cache;
  g.block_table = ints(a.block_table, a.block_table_entries);
  g.max_blocks = a.max_blocks;
  g.cu_seqlens_k = ints(a.cu_seqlens_k, a.cu_seqlens_entries);
  g.out_k = from_abi(a.out_k);
  g.out_v = from_abi(a.out_v);
  if (a.seq_starts_unit != 0) {
    if (a.seq_starts_unit != static_cast<int32_t>(SeqStartUnit::kToken) &&
        a.seq_starts_unit != static_cast<int32_t>(SeqStartUnit::kBlock))
      throw Error(ErrorCode::kInvalidArgument, "seq_starts_unit " + std::to_string(a.seq_starts_unit) +
                                                   " is not 0 (none), 1 (tokens) or 2 (blocks)");
    // An empty span means "no seq_starts" on this side: a unit with no entries for
    // some sequence (or a null pointer) is refused here, as the shape check would.
    const int64_t num_seqs = a.cu_seqlens_entries - 1;
    if ((a.seq_starts_entries <= 0 && num_seqs > 0) || (a.seq_starts_entries > 0 && a.seq_starts == nullptr))
      throw Error(ErrorCode::kShapeMismatch, "seq_starts has " + std::to_string(a.seq_starts_entries) +
                                                 " entries (at " + (a.seq_starts ? "a buffer" : "null") +
                                                 "), not num_seqs " + std::to_string(num_seqs));
    g.seq_starts = ints(a.seq_starts, a.seq_starts_entries);
    g.seq_start_unit = static_cast<SeqStartUnit>(a.seq_starts_unit);
  }
  return g;
}

BackendCapabilities from_abi(const kvcheck_capabilities& c) {
  BackendCapabilities b;
  b.ops = c.ops;
  b.formats = c.formats;
  b.kv_dtypes = c.kv_dtypes;
  b.block_size_multiple = c.block_size_multiple > 1 ? c.block_size_multiple : 1;
  b.max_block_size = c.max_block_size > 0 ? c.max_block_size : 0;
  return b;
}

void apply_contract(const kvcheck_contract* c, BackendCapabilities& b) {
  b.kv_recipes = 1u << static_cast<int>(KvRecipe::kSpec);  // no contract: the spec's recipe
  b.head_dims.clear();
  b.min_heads_x_head_dim = b.max_heads_x_head_dim = 0;
  b.kv_alignment = 1;
  b.kv_dtype_pairs = 0;
  b.recipe_aware = c != nullptr;
  if (c == nullptr) return;
  if (c->struct_size >= offsetof(kvcheck_contract, num_head_dims) && c->kv_fp8_recipes != 0)
    b.kv_recipes = c->kv_fp8_recipes;
  if (c->struct_size >= offsetof(kvcheck_contract, head_dims) + sizeof c->head_dims)
    for (int32_t i = 0; i < c->num_head_dims; ++i)  // once each: a repeat would weight the draw
      if (std::find(b.head_dims.begin(), b.head_dims.end(), c->head_dims[i]) == b.head_dims.end())
        b.head_dims.push_back(c->head_dims[i]);
  if (c->struct_size >= offsetof(kvcheck_contract, max_heads_x_head_dim) + sizeof c->max_heads_x_head_dim) {
    b.min_heads_x_head_dim = c->min_heads_x_head_dim > 1 ? c->min_heads_x_head_dim : 0;  // >= 1 always holds
    b.max_heads_x_head_dim = c->max_heads_x_head_dim;
  }
  if (c->struct_size >= offsetof(kvcheck_contract, kv_alignment) + sizeof c->kv_alignment && c->kv_alignment > 1)
    b.kv_alignment = c->kv_alignment;
  if (c->struct_size >= offsetof(kvcheck_contract, kv_dtype_pairs) + sizeof c->kv_dtype_pairs)
    b.kv_dtype_pairs = c->kv_dtype_pairs;
}

kvcheck_capabilities to_abi(const BackendCapabilities& b) {
  return {b.ops, b.formats, b.kv_dtypes, b.block_size_multiple, b.max_block_size};
}

void write_message(const std::string& text, char* msg, size_t msg_size) {
  if (msg == nullptr || msg_size == 0) return;
  const size_t n = std::min(text.size(), msg_size - 1);
  std::memcpy(msg, text.data(), n);
  msg[n] = '\0';
}

}  // namespace kvcheck::plugin
