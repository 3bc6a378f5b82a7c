// Reference gather_kv (SPEC §7.5): validate everything, then copy or dequantise one
// element at a time, token by token in sequence order.
#include "reference/gather_kv.h"

#include <string>

#include "impl/error.h"
#include "reference/kv_layout.h"
#include "reference/kv_numerics.h"

namespace kvcheck::ref {
namespace {

using std::to_string;

void check_out(const KvTokensOut& o, int64_t total, const KvCacheLayout& l, const char* what) {
  if (o.rows < total)
    throw Error(ErrorCode::kShapeMismatch, std::string(what) + " holds " + to_string(o.rows) +
                                               " rows, needs " + to_string(total));
  if (o.data == nullptr) throw Error(ErrorCode::kShapeMismatch, std::string(what) + " is null");
  if (reinterpret_cast<uintptr_t>(o.data) % 2 != 0)
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is misaligned");
  const int64_t strides[3] = {o.token_stride, o.head_stride, 1};
  const int64_t extents[3] = {total, l.num_kv_heads, l.head_dim};
  if (o.token_stride < 0 || o.head_stride < 0 || !non_overlapping(strides, extents, 3))
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " rows overlap");
}

}  // namespace

void gather_kv(const GatherKvArgs& a) {
  const ConstKvCacheView& cache = a.cache;
  const std::span<const int32_t> block_table = a.block_table, cu_seqlens_k = a.cu_seqlens_k;
  const int32_t max_blocks = a.max_blocks;
  const KvTokensOut &out_k = a.out_k, &out_v = a.out_v;
  const KvCacheLayout& l = cache.layout;
  check_kv_cache(cache);
  check_model_dtype(l.dtype, out_k.dtype, "out_k");
  check_model_dtype(l.dtype, out_v.dtype, "out_v");
  check_same_model_dtype(out_k.dtype, out_v.dtype, "out_k", "out_v");
  if (cu_seqlens_k.empty()) throw Error(ErrorCode::kShapeMismatch, "cu_seqlens_k is empty");
  const int64_t b = static_cast<int64_t>(cu_seqlens_k.size()) - 1;
  // Messages name the entry and its value (SPEC §5.2), as the blame checks compare.
  if (cu_seqlens_k[0] != 0)
    throw Error(ErrorCode::kInvalidArgument, "cu_seqlens_k[0] = " + to_string(cu_seqlens_k[0]) + " is not 0");
  for (int64_t i = 0; i < b; ++i)
    if (cu_seqlens_k[static_cast<size_t>(i + 1)] < cu_seqlens_k[static_cast<size_t>(i)])
      throw Error(ErrorCode::kInvalidArgument,
                  "cu_seqlens_k[" + to_string(i + 1) + "] = " + to_string(cu_seqlens_k[static_cast<size_t>(i + 1)]) +
                      " < cu_seqlens_k[" + to_string(i) + "]");
  if (max_blocks < 0) throw Error(ErrorCode::kInvalidArgument, "max_blocks < 0");
  if (static_cast<int64_t>(block_table.size()) != b * max_blocks)
    throw Error(ErrorCode::kShapeMismatch, "block_table is not num_seqs x max_blocks");
  if (!a.seq_starts.empty() && static_cast<int64_t>(a.seq_starts.size()) != b)
    throw Error(ErrorCode::kShapeMismatch, "seq_starts is not num_seqs long");
  const int64_t total = cu_seqlens_k[static_cast<size_t>(b)];
  if (total > 0) {
    check_out(out_k, total, l, "out_k");
    check_out(out_v, total, l, "out_v");
  }
  // Table position of sequence i's token 0.
  const auto start_of = [&](int64_t i) -> int64_t {
    if (a.seq_starts.empty()) return 0;
    const int64_t s = a.seq_starts[static_cast<size_t>(i)];
    return a.seq_start_unit == SeqStartUnit::kBlock ? s / l.block_size * l.block_size : s;
  };
  for (int64_t i = 0; i < b; ++i) {
    const int64_t len = int64_t{cu_seqlens_k[static_cast<size_t>(i + 1)]} - cu_seqlens_k[static_cast<size_t>(i)];
    if (!a.seq_starts.empty() && a.seq_starts[static_cast<size_t>(i)] < 0)
      throw Error(ErrorCode::kInvalidArgument, "seq_starts[" + to_string(i) + "] = " +
                                                   to_string(a.seq_starts[static_cast<size_t>(i)]) + " is negative");
    const int64_t start = start_of(i);
    if (len > 0 && start + len > int64_t{max_blocks} * l.block_size)
      throw Error(ErrorCode::kRangeOutOfTable,
                  "sequence " + to_string(i) + " reaches past its table row" +
                      (a.seq_starts.empty() ? std::string()
                                            : " from seq_starts[" + to_string(i) + "] = " +
                                                  to_string(a.seq_starts[static_cast<size_t>(i)])));
    // Every token's column, in token order: the first token of each column reports it.
    for (int64_t t = 0; t < len; ++t) {
      const int64_t p = start + t;
      if (t > 0 && p % l.block_size != 0) continue;
      const int32_t block = block_table[static_cast<size_t>(i * max_blocks + p / l.block_size)];
      if (block == -1)
        throw Error(ErrorCode::kRangeOutOfTable, "block_table[" + to_string(i) + "][" +
                                                     to_string(p / l.block_size) + "] = -1 is needed by token " +
                                                     to_string(t) + " of sequence " + to_string(i));
      if (block < 0 || block >= l.num_blocks)
        throw Error(ErrorCode::kBlockOutOfRange, "block_table[" + to_string(i) + "][" +
                                                     to_string(p / l.block_size) + "] = " +
                                                     to_string(block) + " is out of range");
    }
  }

  const bool fp8 = l.dtype == KvDtype::kE4M3 || l.dtype == KvDtype::kE5M2;
  const int64_t in_bytes = fp8 ? 1 : 2;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t begin = cu_seqlens_k[static_cast<size_t>(i)];
    const int64_t len = cu_seqlens_k[static_cast<size_t>(i + 1)] - begin;
    const int64_t start = start_of(i);
    for (int64_t t = 0; t < len; ++t) {
      const int64_t p = start + t;  // table position
      const int64_t block = block_table[static_cast<size_t>(i * max_blocks + p / l.block_size)];
      const int64_t token = p % l.block_size;
      for (int side = 0; side < 2; ++side) {
        const KvTokensOut& o = side == 0 ? out_k : out_v;
        const uint8_t* base = side == 0 ? cache.k : cache.v;
        for (int64_t h = 0; h < l.num_kv_heads; ++h) {
          for (int64_t d = 0; d < l.head_dim; ++d) {
            uint8_t* dst = o.data + 2 * ((begin + t) * o.token_stride + h * o.head_stride + d);
            uint16_t y;
            if (l.dtype == KvDtype::kE2M1) {  // SPEC §7.9
              const int64_t el = kv_element_offset(l, block, token, h, d);
              const uint8_t byte = base[el / 2];
              const uint8_t code = el % 2 == 0 ? byte & 0x0F : byte >> 4;
              const uint8_t* sf_base = side == 0 ? cache.k_sf : cache.v_sf;
              const uint8_t sf = sf_base[kv_sf_byte_offset(cache, block, token, h, d / 16)];
              const float g = side == 0 ? cache.scales.k_scale[0] : cache.scales.v_scale[0];
              y = float_to_model(o.dtype, dequantize_nvfp4(code, sf, g));
              dst[0] = static_cast<uint8_t>(y & 0xFF);
              dst[1] = static_cast<uint8_t>(y >> 8);
              continue;
            }
            const uint8_t* src = base + in_bytes * kv_element_offset(l, block, token, h, d);
            if (!fp8) {
              y = static_cast<uint16_t>(src[0] | (src[1] << 8));
            } else {
              y = float_to_model(o.dtype, dequantize_kv(l.dtype, src[0], head_scale(cache.scales, side == 1, h)));
            }
            dst[0] = static_cast<uint8_t>(y & 0xFF);
            dst[1] = static_cast<uint8_t>(y >> 8);
          }
        }
      }
    }
  }
}

}  // namespace kvcheck::ref
