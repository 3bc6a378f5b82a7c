// CudaBackend index transforms (SPEC §5.5): shared host validation
// (impl/validate_index.h), then copy in, one kernel, copy out.
#include <vector>

#include "impl/cuda/cuda_backend.h"
#include "impl/cuda/device_memory.h"
#include "impl/cuda/kernels.h"
#include "impl/validate_index.h"

namespace kvcheck::cuda {
namespace {

/// A device copy of a host int32 span.
struct DeviceInts {
  explicit DeviceInts(std::span<const int32_t> host) : buf(host.size() * 4) {
    to_device(buf.get(), host.data(), host.size() * 4);
  }
  explicit DeviceInts(size_t n) : buf(n * 4) {}
  int32_t* get() const { return buf.as<int32_t>(); }
  DeviceBuffer buf;
};

void finish(const std::string& launch_err, const char* what, std::span<int32_t> out,
            const DeviceInts& d_out) {
  check(launch_err, what);
  synchronize(what);
  to_host(out.data(), d_out.get(), out.size() * 4);
}

}  // namespace

void CudaBackend::convert_kv_index(const ConvertKvIndexArgs& a, std::span<int32_t> out) const {
  validate_convert_kv_index(a, out.size());
  if (out.empty()) return;
  // Everything is read to the device before out is written, so out may alias topk.
  const DeviceInts topk(a.topk), table(a.block_table), seq_ids(a.seq_ids), ctx(a.context_lens);
  const DeviceInts d_out(out.size());
  finish(launch_convert_kv_index(topk.get(), a.num_q, a.k, table.get(), a.max_blocks,
                                 a.seq_ids.empty() ? nullptr : seq_ids.get(), ctx.get(), a.block_size,
                                 d_out.get(), nullptr),
         "convert_kv_index", out, d_out);
}

void CudaBackend::kv_index_cat(std::span<const int32_t> left, int32_t wl,
                               std::span<const int32_t> right, int32_t wr, int32_t num_q,
                               int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                               std::span<int32_t> out) const {
  const int32_t shift = validate_kv_index_cat(left, wl, right, wr, num_q, total_k_swa_cached,
                                              total_k_swa_cur, out.size());
  if (out.empty()) return;
  const DeviceInts d_left(left), d_right(right), d_out(out.size());
  finish(launch_kv_index_cat(d_left.get(), wl, d_right.get(), wr, num_q, shift, d_out.get(), nullptr),
         "kv_index_cat", out, d_out);
}

void CudaBackend::expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                                   std::span<int32_t> out) const {
  validate_expand_swa_index(pivots, num_q, width, out.size());
  if (out.empty()) return;
  const DeviceInts d_pivots(pivots), d_out(out.size());
  finish(launch_expand_swa_index(d_pivots.get(), num_q, width, d_out.get(), nullptr),
         "expand_swa_index", out, d_out);
}

void CudaBackend::swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                                   int32_t ring_size, std::span<int32_t> out) const {
  validate_swa_decode_index(start_len, num_q, width, ring_size, out.size());
  if (out.empty()) return;
  const DeviceInts d_start_len(start_len), d_out(out.size());
  finish(launch_swa_decode_index(d_start_len.get(), num_q, width, ring_size, d_out.get(), nullptr),
         "swa_decode_index", out, d_out);
}

}  // namespace kvcheck::cuda
