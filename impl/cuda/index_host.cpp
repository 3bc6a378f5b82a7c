// CudaBackend index transforms (SPEC §5.5) on host buffers over the checked device
// entry points: inputs uploaded, the output uploaded whole into a guarded buffer,
// the device validation and kernel run, the output downloaded and guards checked.
#include <cstring>
#include <vector>

#include "impl/cuda/cuda_backend.h"
#include "impl/cuda/device_memory.h"
#include "impl/validate_index.h"

namespace kvcheck::cuda {
namespace {

/// A device copy of a host int32 span (no guard: inputs are only read).
struct DeviceInts {
  DeviceInts(std::span<const int32_t> host, void* stream) : buf(host.size() * 4) {
    to_device(buf.get(), host.data(), host.size() * 4, stream);
  }
  int32_t* get() const { return buf.as<int32_t>(); }
  DeviceBuffer buf;
};

/// The output of one call: uploaded whole, guarded.
struct DeviceOut {
  DeviceOut(std::span<int32_t> host, void* stream)
      : host(host), buf(host.data(), host.size() * 4, guard_for(0), "out", stream) {}
  int32_t* get() const { return reinterpret_cast<int32_t*>(buf.get()); }
  std::span<int32_t> host;
  GuardedBuffer buf;
};

/// Runs one checked device call (call(status) -> PendingCheck), waits, downloads the
/// output (also on error: a write despite the error must show), then reports the
/// device's verdict.
template <typename Call>
void run_checked(const char* what, const LaunchOptions& o, DeviceOut& out, Call call) {
  DeviceBuffer status(sizeof(DeviceStatus));
  const PendingCheck pc = call(status.as<DeviceStatus>());
  synchronize(o.stream, what);
  out.buf.download(out.host.data());
  pc.throw_if_error(o.stream);
}

}  // namespace

void CudaBackend::convert_kv_index(const ConvertKvIndexArgs& a, std::span<int32_t> out) const {
  validate_convert_kv_index_shape(a, out.size());  // the sizes the uploads below rely on
  const DeviceInts topk(a.topk, opts_.stream), table(a.block_table, opts_.stream), seq_ids(a.seq_ids, opts_.stream),
      ctx(a.context_lens, opts_.stream);
  DeviceOut d_out(out, opts_.stream);
  ConvertArgs d;
  d.topk = topk.get();
  d.num_q = a.num_q;
  d.k = a.k;
  d.block_table = table.get();
  d.block_table_entries = static_cast<int64_t>(a.block_table.size());
  d.max_blocks = a.max_blocks;
  d.seq_ids = a.seq_ids.empty() ? nullptr : seq_ids.get();
  d.context_lens = ctx.get();
  d.block_size = a.block_size;
  d.out = d_out.get();
  run_checked("convert_kv_index", opts_, d_out,
              [&](DeviceStatus* st) { return cuda::convert_kv_index(d, true, st, opts_); });
}

void CudaBackend::kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right,
                               int32_t wr, int32_t num_q, int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                               std::span<int32_t> out) const {
  validate_kv_index_cat_shape(left.size(), wl, right.size(), wr, num_q, total_k_swa_cached, total_k_swa_cur,
                              out.size());
  const DeviceInts d_left(left, opts_.stream), d_right(right, opts_.stream);
  DeviceOut d_out(out, opts_.stream);
  run_checked("kv_index_cat", opts_, d_out, [&](DeviceStatus* st) {
    return cuda::kv_index_cat(d_left.get(), wl, d_right.get(), wr, num_q, total_k_swa_cached, total_k_swa_cur,
                              d_out.get(), true, st, opts_);
  });
}

void CudaBackend::expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                                   std::span<int32_t> out) const {
  validate_expand_swa_index_shape(pivots.size(), num_q, width, out.size());
  const DeviceInts d_pivots(pivots, opts_.stream);
  DeviceOut d_out(out, opts_.stream);
  run_checked("expand_swa_index", opts_, d_out, [&](DeviceStatus* st) {
    return cuda::expand_swa_index(d_pivots.get(), num_q, width, d_out.get(), true, st, opts_);
  });
}

void CudaBackend::swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                                   int32_t ring_size, std::span<int32_t> out) const {
  validate_swa_decode_index_shape(start_len.size(), num_q, width, ring_size, out.size());
  const DeviceInts d_start_len(start_len, opts_.stream);
  DeviceOut d_out(out, opts_.stream);
  run_checked("swa_decode_index", opts_, d_out, [&](DeviceStatus* st) {
    return cuda::swa_decode_index(d_start_len.get(), num_q, width, ring_size, d_out.get(), true, st, opts_);
  });
}

}  // namespace kvcheck::cuda
