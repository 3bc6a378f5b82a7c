// Each operation's argument roles (op_decl.h), in KVCHECK_OPS order: the only
// per-operation code of the adapters. Extents are the bytes a VALID call may touch:
// bound() runs the checks that make them trustworthy first.
#include "impl/plugin/op_decl.h"

#include <algorithm>

#include "impl/validate_cache.h"
#include "impl/validate_store_load.h"
#include "impl/error.h"
#include "impl/kv_layout.h"
#include "impl/plugin/abi_convert.h"
#include "impl/plugin/device_memory.h"
#include "impl/validate_index.h"
#include "impl/validate_copy_blocks.h"
#include "impl/validate_swap_blocks.h"
#include "impl/validate_kv.h"

namespace kvcheck::plugin {
namespace {

using cuda::guard_for;

/// Bytes spanned by `rows` rows of `row_bytes` at `stride` apart.
size_t span_bytes(int64_t rows, int64_t stride, int64_t row_bytes) {
  return rows <= 0 ? 0 : static_cast<size_t>((rows - 1) * stride + row_bytes);
}

size_t entries_bytes(int64_t n) { return static_cast<size_t>(std::max<int64_t>(n, 0)) * 4; }

std::span<const int32_t> span(const int32_t* p, int64_t n) {
  return p ? std::span<const int32_t>(p, static_cast<size_t>(n)) : std::span<const int32_t>();
}

/// Bytes the first `rows` rows of a [rows][H][D] K/V token view span from its base:
/// 0 for a null view; one element for a shape whose extent the harness cannot trust
/// (no rows, a negative stride, or — for outputs — rows that overlap), so the plugin
/// still sees a non-null pointer and must refuse with the reference's code, writing
/// nothing. The host buffer behind a view is only known to hold what a VALID view
/// needs, so nothing past that is ever copied.
size_t kv_rows_bytes(const kvcheck_kv_tokens& t, int64_t rows, const kvcheck_kv_cache& c, bool output) {
  if (t.data == nullptr) return 0;
  const auto stub = static_cast<size_t>(kv_dtype_bytes(static_cast<KvDtype>(t.dtype)));  // model dtype rows
  if (rows <= 0 || t.token_stride < 0 || t.head_stride < 0) return stub;
  const KvAxis axes[] = {{t.token_stride, rows}, {t.head_stride, c.num_kv_heads}, {1, c.head_dim}};
  if (output && !kv_axes_non_overlapping(axes)) return stub;
  const int64_t elements = (rows - 1) * t.token_stride + int64_t{c.num_kv_heads - 1} * t.head_stride + c.head_dim;
  return static_cast<size_t>(elements) * stub;
}

/// The K and V caches, and an e2m1 cache's block-scale caches (SPEC §7.9): whole
/// capacities, which may alias (one allocation: vLLM's NVFP4 pages hold all four).
std::vector<ArgView> kv_caches(kvcheck_kv_cache& c, kvcheck_kv_block_scales& b) {
  const auto dtype = static_cast<KvDtype>(c.dtype);
  std::vector<ArgView> views{view(c.k, static_cast<size_t>(kv_bytes(dtype, c.k_capacity))),
                             view(c.v, static_cast<size_t>(kv_bytes(dtype, c.v_capacity)))};
  if (is_nvfp4(dtype)) {
    views.push_back(view(b.k_sf, static_cast<size_t>(std::max<int64_t>(b.k_sf_capacity, 0))));
    views.push_back(view(b.v_sf, static_cast<size_t>(std::max<int64_t>(b.v_sf_capacity, 0))));
  }
  return views;
}
size_t kv_cache_guard(const kvcheck_kv_cache& c) {
  return guard_for(kv_bytes(static_cast<KvDtype>(c.dtype), c.stride_page));
}

/// A fused RoPE's metadata (docs/spec.md §8.4) for n rows: the first n positions (what a
/// valid call reads) and the whole table, read.
void rope_metadata(kvcheck_rope& r, int64_t n, ArgDecl& d) {
  d.int64s("positions", r.positions, n);
  r.positions_rows = n;  // what the device copy holds (bound() checked positions_rows >= n)
  d.floats("cos_sin_cache", r.cos_sin_cache, r.max_position * r.rot_dim);
}

}  // namespace

void ArgDecl::paged_cache(const kvcheck_paged_cache& c) const {
  const CacheLayout layout = from_abi(c);
  const std::string where = backend_ + " " + op_ + ": ";
  if (!caps_.supports_format(layout.format))
    throw Error(ErrorCode::kUnsupported,
                where + "format " + layout.format.name + " is outside the plugin's capabilities");
  if (!caps_.supports_block_size(c.block_size))
    throw Error(ErrorCode::kUnsupported,
                where + "block_size " + std::to_string(c.block_size) + " is outside the plugin's capabilities");
  if (!caps_.supports_block_stride(layout.format, c.block_size, c.block_stride))
    throw Error(ErrorCode::kUnsupported, where + "block_stride " + std::to_string(c.block_stride) +
                                             " (packed " + std::to_string(layout.packed_stride()) +
                                             ") needs KVCHECK_OP_ANY_BLOCK_STRIDE");
}

void ArgDecl::kv_cache(const kvcheck_kv_cache& c) const {
  const auto dtype = static_cast<KvDtype>(c.dtype);
  const std::string where = backend_ + " " + op_ + ": ";
  if (!caps_.supports_kv_dtype(dtype))
    throw Error(ErrorCode::kUnsupported, where + "K/V dtype " + to_string(dtype) + " is outside the plugin's capabilities");
  if (!caps_.supports_block_size(c.block_size))
    throw Error(ErrorCode::kUnsupported,
                where + "block_size " + std::to_string(c.block_size) + " is outside the plugin's capabilities");
}

void ArgDecl::kv_store_recipe(const kvcheck_kv_cache& c) const {
  // A store under a recipe the plugin does not declare would be judged against bytes it
  // never meant to write; an unknown value still reaches its validation. Readers take
  // every recipe: they dequantise alike (SPEC §7.3.1).
  const auto recipe = static_cast<KvRecipe>(c.recipe);
  if (!caps_.supports_kv_store_recipe(static_cast<KvDtype>(c.dtype), recipe))
    throw Error(ErrorCode::kUnsupported, backend_ + " " + op_ + ": recipe " + to_string(recipe) +
                                             " is not one the plugin's contract declares");
}

void ArgDecl::ints(const char* what, const int32_t*& p, int64_t n) { read(what, 0, {view(p, entries_bytes(n))}); }
void ArgDecl::int64s(const char* what, const int64_t*& p, int64_t n) {
  read(what, 0, {view(p, entries_bytes(n) * 2)});
}
void ArgDecl::host_int64s(const char* what, const int64_t* p, int64_t n) {
  groups_.push_back({what, false, 0, {{p, entries_bytes(n) * 2, [](uint8_t*) {}}}, true});
}
void ArgDecl::floats(const char* what, const float*& p, int64_t n) {
  read(what, 0, {view(p, p ? entries_bytes(n) : 0)});
}

// store_kv_cache (SPEC §5.1): kv rows and slot_mapping read, the cache written.
void declare(kvcheck_store_args& a, ArgDecl& d) {
  d.paged_cache(a.cache);
  if (!d.bound([&] {
        validate_store_shape({a.kv, a.kv_rows, a.kv_row_stride}, a.num_tokens,
                                  {a.cache.base, from_abi(a.cache), a.cache.size_bytes});
        return a.num_tokens != 0;
      }))
    return;
  const CacheLayout layout = from_abi(a.cache);
  a.cache.size_bytes = layout.size_bytes();
  d.read("kv", 0, {view(a.kv, span_bytes(a.kv_rows, a.kv_row_stride * 2, int64_t{layout.format.elements} * 2))});
  d.ints("slot_mapping", a.slot_mapping, a.num_tokens);
  d.write("the cache", guard_for(layout.block_stride), {view(a.cache.base, static_cast<size_t>(a.cache.size_bytes))});
}

// concat_and_cache_mla (docs/spec.md §8.2): kv_c and k_pe read (one group: they may be
// views of one tensor), slot_mapping (and a fused RoPE's positions and cos_sin_cache, §8.4) read, the cache (and a split call's pe_cache)
// written — one group, so a call whose caches overlap reaches the plugin as it is.
void declare(kvcheck_concat_and_cache_mla_args& a, ArgDecl& d) {
  d.paged_cache(a.cache);
  if (a.has_pe_cache) d.paged_cache(a.pe_cache);
  if (!d.bound([&] {
        // n from num_tokens itself (from_abi's span is empty for a null slot_mapping).
        const CacheLayout layout = from_abi(a.cache);
        validate_layout(layout);
        validate_cache_bytes(layout, a.cache.base, a.cache.size_bytes);
        ConcatCacheExtents c{a.cache.base, a.cache.size_bytes, layout.format.elements};
        if (a.has_pe_cache) {
          const CacheLayout pe = from_abi(a.pe_cache);
          validate_concat_pe_cache(layout, pe, a.pe_cache.base, a.pe_cache.size_bytes);
          c.split = true;
          c.pe_base = a.pe_cache.base;
          c.pe_size_bytes = a.pe_cache.size_bytes;
          c.pe_elements = pe.format.elements;
        }
        const RopeArgs rope = from_abi(a.rope);
        validate_concat_mla_rows({a.kv_c, a.kv_c_rows, a.kv_c_row_stride}, {a.k_pe, a.k_pe_rows, a.k_pe_row_stride},
                                 a.kv_lora_rank, a.rope_dim, a.num_tokens, c, a.has_rope ? &rope : nullptr);
        return a.num_tokens != 0;
      }))
    return;
  const CacheLayout layout = from_abi(a.cache);
  a.cache.size_bytes = layout.size_bytes();
  d.read("kv_c/k_pe", 0,
         {view(a.kv_c, span_bytes(a.kv_c_rows, a.kv_c_row_stride * 2, int64_t{a.kv_lora_rank} * 2)),
          view(a.k_pe, span_bytes(a.k_pe_rows, a.k_pe_row_stride * 2, int64_t{a.rope_dim} * 2))});
  d.ints("slot_mapping", a.slot_mapping, a.num_tokens);
  if (a.has_rope) rope_metadata(a.rope, a.num_tokens, d);
  std::vector<ArgView> caches{view(a.cache.base, static_cast<size_t>(a.cache.size_bytes))};
  int64_t stride = layout.block_stride;
  if (a.has_pe_cache) {
    const CacheLayout pe = from_abi(a.pe_cache);
    a.pe_cache.size_bytes = pe.size_bytes();
    caches.push_back(view(a.pe_cache.base, static_cast<size_t>(a.pe_cache.size_bytes)));
    stride = std::max(stride, pe.block_stride);
  }
  d.write(a.has_pe_cache ? "the cache/pe_cache" : "the cache", guard_for(stride), std::move(caches));
}

// load_paged_kv_cache (SPEC §5.2): the cache and load_segments read; the WHOLE output
// spans written (rows no segment covers keep their bytes, so they travel both ways).
void declare(kvcheck_load_args& a, ArgDecl& d) {
  d.paged_cache(a.cache);
  if (!d.bound([&] {
        validate_load_shape({a.cache.base, from_abi(a.cache), a.cache.size_bytes}, a.num_segment_ints,
                                 a.total_k, {a.out_data, a.out_data_stride, a.out_scales, a.out_scale_stride, a.out_rows});
        return a.num_segment_ints / 4 != 0;
      }))
    return;
  const CacheLayout layout = from_abi(a.cache);
  const KVCacheFormat& f = layout.format;
  a.cache.size_bytes = layout.size_bytes();
  if (!f.is_index()) a.out_scales = nullptr;
  d.read("the cache", guard_for(layout.block_stride),
         {view(a.cache.base, a.cache.base ? static_cast<size_t>(a.cache.size_bytes) : 0)});
  d.ints("load_segments", a.load_segments, a.num_segment_ints);
  d.write("out.data", guard_for(a.out_data_stride),
          {view(a.out_data, span_bytes(a.total_k, a.out_data_stride, f.load_row_bytes()))});
  d.write("out.scales", guard_for(a.out_scale_stride),
          {view(a.out_scales, f.is_index() ? span_bytes(a.total_k, a.out_scale_stride, f.load_scale_row_bytes()) : 0)});
}

// The index transforms (SPEC §5.5): int32 metadata read, `out` written; no cache.
void declare(kvcheck_convert_kv_index_args& a, ArgDecl& d) {
  if (!d.bound([&] {
        validate_convert_kv_index_shape({span(a.topk, a.topk_entries), a.num_q, a.k,
                                         span(a.block_table, a.block_table_entries), a.max_blocks,
                                         span(a.seq_ids, a.seq_ids_entries),
                                         span(a.context_lens, a.context_lens_entries), a.block_size},
                                        static_cast<size_t>(a.out_entries));
        return true;
      }))
    return;
  d.ints("topk", a.topk, a.topk_entries);
  d.ints("block_table", a.block_table, a.block_table_entries);
  d.ints("seq_ids", a.seq_ids, a.seq_ids_entries);
  d.ints("context_lens", a.context_lens, a.context_lens_entries);
  d.write("out", guard_for(0), {view(a.out, entries_bytes(a.out_entries))});
}

void declare(kvcheck_kv_index_cat_args& a, ArgDecl& d) {
  if (!d.bound([&] {
        validate_kv_index_cat_shape(static_cast<size_t>(a.left_entries), a.wl, static_cast<size_t>(a.right_entries),
                                    a.wr, a.num_q, a.total_k_swa_cached, a.total_k_swa_cur,
                                    static_cast<size_t>(a.out_entries));
        return true;
      }))
    return;
  d.ints("left", a.left, a.left_entries);
  d.ints("right", a.right, a.right_entries);
  d.write("out", guard_for(0), {view(a.out, entries_bytes(a.out_entries))});
}

void declare(kvcheck_expand_swa_index_args& a, ArgDecl& d) {
  if (!d.bound([&] {
        validate_expand_swa_index_shape(static_cast<size_t>(a.pivots_entries), a.num_q, a.width,
                                        static_cast<size_t>(a.out_entries));
        return true;
      }))
    return;
  d.ints("pivots", a.pivots, a.pivots_entries);
  d.write("out", guard_for(0), {view(a.out, entries_bytes(a.out_entries))});
}

void declare(kvcheck_swa_decode_index_args& a, ArgDecl& d) {
  if (!d.bound([&] {
        validate_swa_decode_index_shape(static_cast<size_t>(a.start_len_entries), a.num_q, a.width, a.ring_size,
                                        static_cast<size_t>(a.out_entries));
        return true;
      }))
    return;
  d.ints("start_len", a.start_len, a.start_len_entries);
  d.write("out", guard_for(0), {view(a.out, entries_bytes(a.out_entries))});
}

// store_kv (SPEC §7.4): key/value rows (may alias: one packed tensor), scales and
// slot_mapping read; the K and V caches (may alias) written. The slots are the
// plugin's to check.
void declare(kvcheck_store_kv_args& a, ArgDecl& d) {
  d.kv_cache(a.cache);
  d.kv_store_recipe(a.cache);
  if (!d.bound([&] {
        const RopeArgs rope = from_abi(a.rope);
        KvCacheView cache = from_abi(a.cache);
        block_scales_from_abi(a.block_scales, cache);
        validate_store_kv_shape(KvTokensIn(from_abi(a.key)), KvTokensIn(from_abi(a.value)), a.num_tokens, cache,
                                a.has_rope ? &rope : nullptr);
        return a.num_tokens != 0;
      }))
    return;
  d.read("the key/value rows", guard_for(0),
         {view(a.key.data, kv_rows_bytes(a.key, a.num_tokens, a.cache, false)),
          view(a.value.data, kv_rows_bytes(a.value, a.num_tokens, a.cache, false))});
  d.write("the K/V caches", kv_cache_guard(a.cache), kv_caches(a.cache, a.block_scales));
  d.floats("k_scale", a.cache.k_scale, a.cache.num_scales);
  d.floats("v_scale", a.cache.v_scale, a.cache.num_v_scales);
  d.ints("slot_mapping", a.slot_mapping, a.num_tokens);
  if (a.has_rope) rope_metadata(a.rope, a.num_tokens, d);
}

// gather_kv (SPEC §7.5): the caches, scales, block_table and cu_seqlens_k read; the
// output rows cu_seqlens_k[b] addresses (at most the rows they hold) written. The
// cache bounds the upload; everything else is the plugin's to check.
void declare(kvcheck_gather_kv_args& a, ArgDecl& d) {
  d.kv_cache(a.cache);
  if (!d.bound([&] {
        KvCacheView cache = from_abi(a.cache);
        block_scales_from_abi(a.block_scales, cache);
        validate_kv_cache(cache);
        return true;
      }))
    return;
  const std::span<const int32_t> cu = span(a.cu_seqlens_k, a.cu_seqlens_entries);
  const int64_t needed = cu.empty() ? 0 : std::max<int64_t>(cu.back(), 0);
  d.read("the K/V caches", kv_cache_guard(a.cache), kv_caches(a.cache, a.block_scales));
  d.floats("k_scale", a.cache.k_scale, a.cache.num_scales);
  d.floats("v_scale", a.cache.v_scale, a.cache.num_v_scales);
  d.ints("block_table", a.block_table, a.block_table_entries);
  d.ints("cu_seqlens_k", a.cu_seqlens_k, a.cu_seqlens_entries);
  if (a.seq_starts_unit != 0) d.ints("seq_starts", a.seq_starts, a.seq_starts_entries);
  d.write("out_k/out_v", guard_for(int64_t{a.cache.num_kv_heads} * a.cache.head_dim * 2),
          {view(a.out_k.data, kv_rows_bytes(a.out_k, std::min(a.out_k.rows, needed), a.cache, true)),
           view(a.out_v.data, kv_rows_bytes(a.out_v, std::min(a.out_v.rows, needed), a.cache, true))});
}

// copy_blocks (SPEC §8.1): the allocation written in place (the bytes no copy touches
// travel both ways, so a stray write shows); block_mapping read in the plugin's
// memory; views in host memory for every plugin (the host launches per view, as an
// engine's list of layer caches). Nothing to do without a pair or a view.
void declare(kvcheck_copy_blocks_args& a, ArgDecl& d) {
  if (!d.bound([&] {
        validate_copy_blocks_shape(from_abi(a));
        return a.block_mapping_entries > 0 && a.views_entries > 0;
      }))
    return;
  d.host_int64s("views", a.views, a.views_entries);
  d.int64s("block_mapping", a.block_mapping, a.block_mapping_entries);
  d.write("the cache", guard_for(a.block_stride), {view(a.base, static_cast<size_t>(a.size_bytes))});
}

// swap_blocks (docs/spec.md §8.3): src read (it must come back unchanged), dst written
// whole (bytes no copy touches travel both ways, so a stray write shows), each in
// page-locked host memory when its pool says so (host->device, device->host moves);
// block_mapping read in the plugin's memory; views in host memory for every plugin.
// Nothing to do without a pair or a view.
void declare(kvcheck_swap_blocks_args& a, ArgDecl& d) {
  if (!d.bound([&] {
        validate_swap_blocks_shape(from_abi(a));
        return a.block_mapping_entries > 0 && a.views_entries > 0;
      }))
    return;
  d.host_int64s("views", a.views, a.views_entries);
  d.int64s("block_mapping", a.block_mapping, a.block_mapping_entries);
  d.read("src", guard_for(a.src_block_stride), {view(a.src, static_cast<size_t>(a.src_size_bytes))}, a.src_host != 0);
  d.write("dst", guard_for(a.dst_block_stride), {view(a.dst, static_cast<size_t>(a.dst_size_bytes))}, a.dst_host != 0);
}

}  // namespace kvcheck::plugin
