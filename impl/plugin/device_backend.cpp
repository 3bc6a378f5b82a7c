// The device adapter: a CUDA_DEVICE plugin runs on buffers the HARNESS owns. Each call
// checks the sizes on the host (the checks that read no metadata, so the uploads below
// stay inside the host buffers), uploads the inputs and the WHOLE cache and output
// buffers into guarded device allocations (GuardedBuffer: sentinel bands on both
// sides), calls the plugin on the harness's stream, synchronises, downloads the whole
// buffers (also after a refusal: a write despite it must show), checks the guards and
// that a load left its cache unchanged, and only then reports the plugin's status.
// Guard hits and CUDA failures throw std::runtime_error (never a kvcheck::Error: the
// harnesses treat kUnsupported as a skip).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "impl/validate_store_load.h"
#include "impl/kv_layout.h"
#include "impl/plugin/abi_convert.h"
#include "impl/plugin/call.h"
#include "impl/plugin/device_memory.h"
#include "impl/plugin/plugin_backend.h"
#include "impl/validate_index.h"
#include "impl/validate_kv.h"

namespace kvcheck::plugin {
namespace {

using cuda::DeviceBuffer;
using cuda::DeviceViews;
using cuda::GuardedBuffer;
using cuda::guard_for;
using cuda::synchronize;
using cuda::to_device;

/// Bytes spanned by `rows` rows of `row_bytes` at `stride` apart.
size_t span_bytes(int64_t rows, int64_t stride, int64_t row_bytes) {
  return rows <= 0 ? 0 : static_cast<size_t>((rows - 1) * stride + row_bytes);
}

/// A device copy of a host int32 span (inputs are only read: no guard, so
/// compute-sanitizer memcheck sees an overread).
struct DeviceInts {
  DeviceInts(std::span<const int32_t> host, void* stream) : buf(host.size() * 4) {
    to_device(buf.get(), host.data(), host.size() * 4, stream);
  }
  int32_t* get() const { return buf.as<int32_t>(); }
  DeviceBuffer buf;
};

/// A device copy of a host float span (K/V scales; read only).
struct DeviceFloats {
  DeviceFloats(std::span<const float> host, void* stream) : buf(host.size() * 4) {
    to_device(buf.get(), host.data(), host.size() * 4, stream);
  }
  const float* get() const { return buf.as<float>(); }
  DeviceBuffer buf;
};

/// Bytes the first `rows` rows of a [rows][H][D] K/V token view span from its base:
/// 0 for a null view; one element for a shape whose extent the harness cannot trust
/// (no rows, a negative stride, or — for outputs — rows that overlap), so the plugin
/// still sees a non-null pointer and must refuse with the reference's code, writing
/// nothing. The host buffer behind a view is only known to hold what a VALID view
/// needs, so nothing past that is ever copied.
size_t kv_rows_bytes(const KvTokensIn& t, int64_t rows, const KvCacheLayout& l, bool output) {
  if (t.data == nullptr) return 0;
  const auto stub = static_cast<size_t>(kv_dtype_bytes(t.dtype));
  if (rows <= 0 || t.token_stride < 0 || t.head_stride < 0) return stub;
  const KvAxis axes[] = {{t.token_stride, rows}, {t.head_stride, l.num_kv_heads}, {1, l.head_dim}};
  if (output && !kv_axes_non_overlapping(axes)) return stub;
  const int64_t elements = (rows - 1) * t.token_stride + int64_t{l.num_kv_heads - 1} * t.head_stride + l.head_dim;
  return static_cast<size_t>(elements * kv_dtype_bytes(t.dtype));
}

/// The K and V caches as two views (whole capacities; one copy when they overlap).
std::vector<std::pair<const void*, size_t>> kv_cache_views(const ConstKvCacheView& c) {
  const auto es = static_cast<size_t>(kv_dtype_bytes(c.layout.dtype));
  return {{c.k, static_cast<size_t>(c.k_capacity) * es}, {c.v, static_cast<size_t>(c.v_capacity) * es}};
}

/// The ABI view of `cache` with its buffers and scales on the device.
kvcheck_kv_cache device_kv_cache(const ConstKvCacheView& cache, const DeviceViews& caches, const DeviceFloats& k_scale,
                                 const DeviceFloats& v_scale) {
  ConstKvCacheView d = cache;
  d.k = caches.map(cache.k);
  d.v = caches.map(cache.v);
  return to_abi(d, k_scale.get(), v_scale.get());
}

kvcheck_kv_tokens device_kv_tokens(const KvTokensIn& t, const DeviceViews& views) {
  kvcheck_kv_tokens r = to_abi(t);
  r.data = views.map<uint8_t>(t.data);
  return r;
}

class DevicePluginBackend final : public PluginBackend {
 public:
  explicit DevicePluginBackend(std::shared_ptr<Library> lib) : PluginBackend(std::move(lib)) {}
  ~DevicePluginBackend() override {
    if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }

  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping,
                      const CacheView& cache) const override {
    require_op(KVCHECK_OP_STORE_KV_CACHE, "store_kv_cache");
    require_paged(cache.layout, "store_kv_cache");
    const int64_t n = static_cast<int64_t>(slot_mapping.size());
    validate_store_shape(kv, n, cache);  // before reading host buffers to upload them
    if (n == 0) return;
    void* s = stream();
    const CacheLayout& layout = cache.layout;
    const int64_t row_bytes = int64_t{layout.format.elements} * 2;
    const size_t kv_bytes = span_bytes(kv.rows, kv.row_stride * 2, row_bytes);
    DeviceBuffer d_kv(kv_bytes);
    to_device(d_kv.get(), kv.data, kv_bytes, s);
    const DeviceInts d_slots(slot_mapping, s);
    const GuardedBuffer d_cache(cache.base, static_cast<size_t>(layout.size_bytes()),
                                guard_for(layout.block_stride), "the cache", s);
    kvcheck_store_args a{};
    a.kv = d_kv.as<uint16_t>();
    a.kv_rows = kv.rows;
    a.kv_row_stride = kv.row_stride;
    a.slot_mapping = d_slots.get();
    a.num_tokens = n;
    a.cache = to_abi(layout, d_cache.get(), layout.size_bytes());
    const std::exception_ptr refusal = call(table().store_kv_cache, "store_kv_cache", a);
    d_cache.download(cache.base);
    if (refusal) std::rethrow_exception(refusal);
  }

  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments,
                           int32_t total_k, const LoadOutput& out) const override {
    require_op(KVCHECK_OP_LOAD_PAGED_KV_CACHE, "load_paged_kv_cache");
    require_paged(cache.layout, "load_paged_kv_cache");
    validate_load_shape(cache, static_cast<int64_t>(load_segments.size()), total_k, out);
    if (load_segments.size() / 4 == 0) return;
    void* s = stream();
    const CacheLayout& layout = cache.layout;
    const KVCacheFormat& f = layout.format;
    const size_t cache_bytes = cache.base ? static_cast<size_t>(layout.size_bytes()) : 0;
    const GuardedBuffer d_cache(cache.base, cache_bytes, guard_for(layout.block_stride), "the cache", s);
    const DeviceInts d_segs(load_segments, s);
    // Output rows no segment covers keep their bytes: the whole span goes both ways.
    const GuardedBuffer d_data(out.data, span_bytes(total_k, out.data_row_stride, f.load_row_bytes()),
                               guard_for(out.data_row_stride), "out.data", s);
    const GuardedBuffer d_scales(
        f.is_index() ? out.scales : nullptr,
        f.is_index() ? span_bytes(total_k, out.scale_row_stride, f.load_scale_row_bytes()) : 0,
        guard_for(out.scale_row_stride), "out.scales", s);
    kvcheck_load_args a{};
    a.cache = to_abi(layout, d_cache.get(), layout.size_bytes());
    a.load_segments = d_segs.get();
    a.num_segment_ints = static_cast<int64_t>(load_segments.size());
    a.total_k = total_k;
    a.out_data = d_data.get();
    a.out_data_stride = out.data_row_stride;
    a.out_scales = d_scales.get();
    a.out_scale_stride = out.scale_row_stride;
    a.out_rows = out.rows;
    const std::exception_ptr refusal = call(table().load_paged_kv_cache, "load_paged_kv_cache", a);
    d_data.download(out.data);
    d_scales.download(f.is_index() ? out.scales : nullptr);
    if (cache_bytes) {  // a load reads the cache: it must come back unchanged, byte for byte
      std::vector<uint8_t> after(cache_bytes);
      d_cache.download(after.data());
      if (std::memcmp(after.data(), cache.base, cache_bytes) != 0)
        throw std::runtime_error("plugin '" + name_ + "' load_paged_kv_cache wrote into the cache it read");
    }
    if (refusal) std::rethrow_exception(refusal);
  }

  void convert_kv_index(const ConvertKvIndexArgs& c, std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_CONVERT_KV_INDEX, "convert_kv_index");
    validate_convert_kv_index_shape(c, out.size());
    void* s = stream();
    const DeviceInts topk(c.topk, s), table_(c.block_table, s), seq_ids(c.seq_ids, s), ctx(c.context_lens, s);
    const GuardedBuffer d_out(out.data(), out.size() * 4, guard_for(0), "out", s);
    kvcheck_convert_kv_index_args a{};
    a.topk = topk.get();
    a.topk_entries = static_cast<int64_t>(c.topk.size());
    a.num_q = c.num_q;
    a.k = c.k;
    a.block_table = table_.get();
    a.block_table_entries = static_cast<int64_t>(c.block_table.size());
    a.max_blocks = c.max_blocks;
    a.block_size = c.block_size;
    a.seq_ids = c.seq_ids.empty() ? nullptr : seq_ids.get();
    a.seq_ids_entries = static_cast<int64_t>(c.seq_ids.size());
    a.context_lens = ctx.get();
    a.context_lens_entries = static_cast<int64_t>(c.context_lens.size());
    a.out = reinterpret_cast<int32_t*>(d_out.get());
    a.out_entries = static_cast<int64_t>(out.size());
    finish(call(table().convert_kv_index, "convert_kv_index", a), d_out, out);
  }

  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right, int32_t wr,
                    int32_t num_q, int32_t cached, int32_t cur, std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_KV_INDEX_CAT, "kv_index_cat");
    validate_kv_index_cat_shape(left.size(), wl, right.size(), wr, num_q, cached, cur, out.size());
    void* s = stream();
    const DeviceInts d_left(left, s), d_right(right, s);
    const GuardedBuffer d_out(out.data(), out.size() * 4, guard_for(0), "out", s);
    const kvcheck_kv_index_cat_args a{d_left.get(), static_cast<int64_t>(left.size()), wl,
                                      d_right.get(), static_cast<int64_t>(right.size()), wr,
                                      num_q, cached, cur, reinterpret_cast<int32_t*>(d_out.get()),
                                      static_cast<int64_t>(out.size())};
    finish(call(table().kv_index_cat, "kv_index_cat", a), d_out, out);
  }

  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_EXPAND_SWA_INDEX, "expand_swa_index");
    validate_expand_swa_index_shape(pivots.size(), num_q, width, out.size());
    void* s = stream();
    const DeviceInts d_pivots(pivots, s);
    const GuardedBuffer d_out(out.data(), out.size() * 4, guard_for(0), "out", s);
    const kvcheck_expand_swa_index_args a{d_pivots.get(), static_cast<int64_t>(pivots.size()), num_q, width,
                                          reinterpret_cast<int32_t*>(d_out.get()), static_cast<int64_t>(out.size())};
    finish(call(table().expand_swa_index, "expand_swa_index", a), d_out, out);
  }

  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width, int32_t ring_size,
                        std::span<int32_t> out) const override {
    require_op(KVCHECK_OP_SWA_DECODE_INDEX, "swa_decode_index");
    validate_swa_decode_index_shape(start_len.size(), num_q, width, ring_size, out.size());
    void* s = stream();
    const DeviceInts d_start_len(start_len, s);
    const GuardedBuffer d_out(out.data(), out.size() * 4, guard_for(0), "out", s);
    const kvcheck_swa_decode_index_args a{d_start_len.get(), static_cast<int64_t>(start_len.size()), num_q, width,
                                          ring_size, 0, reinterpret_cast<int32_t*>(d_out.get()),
                                          static_cast<int64_t>(out.size())};
    finish(call(table().swa_decode_index, "swa_decode_index", a), d_out, out);
  }

  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache) const override {
    require_op(KVCHECK_OP_STORE_KV, "store_kv");
    require_kv(cache.layout, "store_kv");
    const int64_t n = static_cast<int64_t>(slot_mapping.size());
    // The checks that read no slot bound the uploads; the slots are the plugin's to check.
    validate_store_kv_shape(key, value, n, cache);
    if (n == 0) return;
    void* s = stream();
    const KvCacheLayout& l = cache.layout;
    const DeviceViews rows({{key.data, kv_rows_bytes(key, n, l, false)}, {value.data, kv_rows_bytes(value, n, l, false)}},
                           guard_for(0), "the key/value rows", s);
    const DeviceViews caches(kv_cache_views(cache), guard_for(l.stride_page * kv_dtype_bytes(l.dtype)), "the K/V caches",
                             s);
    const DeviceFloats k_scale(cache.scales.k_scale, s), v_scale(cache.scales.v_scale, s);
    const DeviceInts d_slots(slot_mapping, s);
    kvcheck_store_kv_args a{};
    a.key = device_kv_tokens(key, rows);
    a.value = device_kv_tokens(value, rows);
    a.slot_mapping = d_slots.get();
    a.num_tokens = n;
    a.cache = device_kv_cache(cache, caches, k_scale, v_scale);
    const std::exception_ptr refusal = call(table().store_kv, "store_kv", a);
    caches.download();  // also after a refusal: a write despite it must show
    rows.expect_unchanged("store_kv");
    if (refusal) std::rethrow_exception(refusal);
  }

  void gather_kv(const ConstKvCacheView& cache, std::span<const int32_t> block_table, int32_t max_blocks,
                 std::span<const int32_t> cu_seqlens_k, const KvTokensOut& out_k,
                 const KvTokensOut& out_v) const override {
    require_op(KVCHECK_OP_GATHER_KV, "gather_kv");
    require_kv(cache.layout, "gather_kv");
    // The cache bounds the upload; everything else (cu_seqlens_k, the table, the
    // outputs) is the plugin's to check. Outputs travel as the rows cu_seqlens_k[b]
    // addresses (at most the rows they hold), guard bands after them.
    validate_kv_cache(cache);
    const int64_t needed = cu_seqlens_k.empty() ? 0 : std::max<int64_t>(cu_seqlens_k.back(), 0);
    void* s = stream();
    const KvCacheLayout& l = cache.layout;
    const DeviceViews caches(kv_cache_views(cache), guard_for(l.stride_page * kv_dtype_bytes(l.dtype)), "the K/V caches",
                             s);
    const DeviceFloats k_scale(cache.scales.k_scale, s), v_scale(cache.scales.v_scale, s);
    const DeviceInts d_table(block_table, s), d_cu(cu_seqlens_k, s);
    const KvTokensIn outs_in[] = {KvTokensIn(out_k), KvTokensIn(out_v)};
    const DeviceViews outs({{out_k.data, kv_rows_bytes(outs_in[0], std::min(out_k.rows, needed), l, true)},
                            {out_v.data, kv_rows_bytes(outs_in[1], std::min(out_v.rows, needed), l, true)}},
                           guard_for(int64_t{l.num_kv_heads} * l.head_dim * 2), "out_k/out_v", s);
    kvcheck_gather_kv_args a{};
    a.cache = device_kv_cache(cache, caches, k_scale, v_scale);
    a.block_table = d_table.get();
    a.block_table_entries = static_cast<int64_t>(block_table.size());
    a.max_blocks = max_blocks;
    a.cu_seqlens_k = d_cu.get();
    a.cu_seqlens_entries = static_cast<int64_t>(cu_seqlens_k.size());
    a.out_k = device_kv_tokens(outs_in[0], outs);
    a.out_v = device_kv_tokens(outs_in[1], outs);
    const std::exception_ptr refusal = call(table().gather_kv, "gather_kv", a);
    outs.download();
    caches.expect_unchanged("gather_kv");
    if (refusal) std::rethrow_exception(refusal);
  }

 private:
  /// The harness's stream, created on first use (never in a process that only loads
  /// plugins and forks: the campaign's parent).
  void* stream() const {
    std::call_once(stream_once_, [this] {
      cudaStream_t s = nullptr;
      const cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      if (e != cudaSuccess)
        throw std::runtime_error(std::string("cuda cudaStreamCreateWithFlags: ") + cudaGetErrorString(e));
      stream_ = s;
    });
    return stream_;
  }

  /// Calls the plugin and waits for its stream; returns its refusal (to rethrow after
  /// the downloads) or nullptr. Plugin failures and CUDA errors throw at once.
  template <typename Fn, typename Args>
  std::exception_ptr call(Fn fn, const char* op, const Args& a) const {
    std::exception_ptr refusal;
    try {
      call_plugin(name_, op, fn, table().context, a, stream());
    } catch (const Error&) {
      refusal = std::current_exception();
    }
    {
      // A device plugin may return before its kernels finish: the wait for them is
      // under the same limit, or a hung kernel would hang the harness unbounded.
      const std::string waiting = std::string(op) + "'s kernels (still running after the call returned)";
      const WatchdogScope watchdog(name_, waiting.c_str());
      synchronize(stream(), op);
    }
    return refusal;
  }

  void finish(std::exception_ptr refusal, const GuardedBuffer& d_out, std::span<int32_t> out) const {
    d_out.download(out.data());
    if (refusal) std::rethrow_exception(refusal);
  }

  mutable std::once_flag stream_once_;
  mutable void* stream_ = nullptr;
};

}  // namespace

std::shared_ptr<const Backend> make_device_backend(std::shared_ptr<Library> lib) {
  return std::make_shared<DevicePluginBackend>(std::move(lib));
}

}  // namespace kvcheck::plugin
