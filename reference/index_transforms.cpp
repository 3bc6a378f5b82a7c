#include "reference/index_transforms.h"

namespace kvcheck::ref {

std::vector<int64_t> convert_kv_index(const ConvertKvIndexArgs& a) {
  std::vector<int64_t> out;
  for (int32_t q = 0; q < a.num_q; ++q) {
    const int64_t seq = a.seq_ids.empty() ? q : a.seq_ids[static_cast<size_t>(q)];
    for (int32_t c = 0; c < a.k; ++c) {
      const int64_t x = a.topk[static_cast<size_t>(int64_t{q} * a.k + c)];
      if (x < 0 || x >= a.context_lens[static_cast<size_t>(q)]) {
        out.push_back(-1);
        continue;
      }
      const int64_t block = a.block_table[static_cast<size_t>(seq * a.max_blocks + x / a.block_size)];
      out.push_back(block * a.block_size + x % a.block_size);
    }
  }
  return out;
}

std::vector<int64_t> kv_index_cat(std::span<const int32_t> left, int32_t wl,
                                  std::span<const int32_t> right, int32_t wr, int32_t num_q,
                                  int32_t total_k_swa_cached, int32_t total_k_swa_cur) {
  std::vector<int64_t> out;
  for (int64_t q = 0; q < num_q; ++q) {
    for (int64_t c = 0; c < wl; ++c) out.push_back(left[static_cast<size_t>(q * wl + c)]);
    for (int64_t c = 0; c < wr; ++c) {
      const int64_t x = right[static_cast<size_t>(q * wr + c)];
      out.push_back(x == -1 ? -1 : x + total_k_swa_cached + total_k_swa_cur);
    }
  }
  return out;
}

std::vector<int64_t> expand_swa_index(std::span<const int32_t> pivots, int32_t num_q,
                                      int32_t width) {
  std::vector<int64_t> out;
  for (int64_t q = 0; q < num_q; ++q) {
    const int64_t off1 = pivots[static_cast<size_t>(q * 4)], len1 = pivots[static_cast<size_t>(q * 4 + 1)];
    const int64_t off2 = pivots[static_cast<size_t>(q * 4 + 2)], len2 = pivots[static_cast<size_t>(q * 4 + 3)];
    for (int64_t c = 0; c < width; ++c) {
      if (c < len1)
        out.push_back(off1 + c);
      else if (c < len1 + len2)
        out.push_back(off2 + (c - len1));
      else
        out.push_back(-1);
    }
  }
  return out;
}

std::vector<int64_t> swa_decode_index(std::span<const int32_t> start_len, int32_t num_q,
                                      int32_t width, int32_t ring_size) {
  std::vector<int64_t> out;
  for (int64_t q = 0; q < num_q; ++q) {
    const int64_t start = start_len[static_cast<size_t>(q * 2)];
    const int64_t len = start_len[static_cast<size_t>(q * 2 + 1)];
    const int64_t ring = start / ring_size;
    for (int64_t c = 0; c < width; ++c)
      out.push_back(c < len ? ring * ring_size + (start % ring_size + c) % ring_size : -1);
  }
  return out;
}

}  // namespace kvcheck::ref
