// CPU index transforms (SPEC §5.5). Each validates all of its input first
// (impl/validate_index.h, shared with the cuda backend), then writes; the loops are
// branch-light so the compiler vectorises them.
#include "impl/cpu/cpu_backend.h"
#include "impl/validate_index.h"

namespace kvcheck::cpu {

void CpuBackend::convert_kv_index(const ConvertKvIndexArgs& a, std::span<int32_t> out) const {
  validate_convert_kv_index(a, out.size());  // all of it first: out may alias topk
  for (int32_t q = 0; q < a.num_q; ++q) {
    const int64_t seq = a.seq_ids.empty() ? q : a.seq_ids[static_cast<size_t>(q)];
    const int32_t ctx = a.context_lens[static_cast<size_t>(q)];
    const int32_t* table = a.block_table.data() + seq * a.max_blocks;
    const int64_t base = int64_t{q} * a.k;
    for (int32_t c = 0; c < a.k; ++c) {
      const int32_t x = a.topk[static_cast<size_t>(base + c)];
      out[static_cast<size_t>(base + c)] =
          (x >= 0 && x < ctx) ? table[x / a.block_size] * a.block_size + x % a.block_size : -1;
    }
  }
}

void CpuBackend::kv_index_cat(std::span<const int32_t> left, int32_t wl,
                              std::span<const int32_t> right, int32_t wr, int32_t num_q,
                              int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                              std::span<int32_t> out) const {
  const int32_t s = validate_kv_index_cat(left, wl, right, wr, num_q, total_k_swa_cached,
                                          total_k_swa_cur, out.size());
  for (int64_t q = 0; q < num_q; ++q) {
    int32_t* o = out.data() + q * (int64_t{wl} + wr);
    const int32_t* l = left.data() + q * wl;
    const int32_t* r = right.data() + q * wr;
    for (int32_t c = 0; c < wl; ++c) o[c] = l[c];
    for (int32_t c = 0; c < wr; ++c) o[wl + c] = r[c] == -1 ? -1 : r[c] + s;
  }
}

void CpuBackend::expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                                  std::span<int32_t> out) const {
  validate_expand_swa_index(pivots, num_q, width, out.size());
  for (int64_t q = 0; q < num_q; ++q) {
    const int32_t* p = pivots.data() + q * 4;
    int32_t* o = out.data() + q * width;
    const int32_t off1 = p[0], len1 = p[1], off2 = p[2], len2 = p[3];
    for (int32_t c = 0; c < width; ++c)
      o[c] = c < len1 ? off1 + c : (c < len1 + len2 ? off2 + (c - len1) : -1);
  }
}

void CpuBackend::swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width,
                                  int32_t ring_size, std::span<int32_t> out) const {
  validate_swa_decode_index(start_len, num_q, width, ring_size, out.size());
  for (int64_t q = 0; q < num_q; ++q) {
    const int32_t start = start_len[static_cast<size_t>(q) * 2];
    const int32_t len = start_len[static_cast<size_t>(q) * 2 + 1];
    int32_t* o = out.data() + q * width;
    const int32_t ring_base = len > 0 ? start - start % ring_size : 0;
    const int32_t offset = len > 0 ? start % ring_size : 0;
    for (int32_t c = 0; c < width; ++c) {
      int32_t r = offset + c;
      if (r >= ring_size) r -= ring_size;  // c < len <= ring_size: one wrap at most
      o[c] = c < len ? ring_base + r : -1;
    }
  }
}

}  // namespace kvcheck::cpu
