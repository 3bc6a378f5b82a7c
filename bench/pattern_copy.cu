// The access-pattern floor (bench/pattern_copy.h). A token's accesses, the same for every
// token but for its addresses, are flattened once on the host into tables of elements (a
// 16-byte chunk, a 4-byte word or a single byte: which base, the offset from it, the
// token's coefficient); lane l takes elements l, l + 32, ... of each table, read from the
// CTA's copy in shared memory. A warp moves one (token, side) after another, 1, 2 or 4 per
// loop trip (every load of them issued before any store, as the stores' kernels do); a slot's block
// by SlotDivider as they do. The values written are the XOR of everything the warp read
// (one shuffle reduction), so no load can be dropped; they mean nothing.
#include <cuda_runtime.h>

#include <stdexcept>
#include <vector>

#include "bench/pattern_copy.h"
#include "impl/paged_layout.h"

namespace kvcheck::bench {
namespace {

// Per lane and direction: 16-byte chunks, 4-byte words, single bytes.
constexpr int kChunks = 4, kWords = 1, kBytes = 2;
constexpr int kTableLen[3] = {32 * kChunks, 32 * kWords, 32 * kBytes};  // the tables' entries
constexpr int kTableTotal = 2 * (kTableLen[0] + kTableLen[1] + kTableLen[2]);

/// One access: base `sel` (0, 1: the side's caches at the token's block; 2, 3: its flat
/// rows at the token) + offset + the token's part (token * stride, or the 4-token
/// interleave's (token / 4) * 4 * stride + token % 4; flat rows have none).
struct Elem {
  int32_t offset = -1;  // -1: no element
  uint32_t meta = 0;    // bits 0-23 stride (interleave: groups), 24-25 sel, 26 interleave
};
constexpr uint32_t meta(int64_t stride, int sel, bool interleave4) {
  return static_cast<uint32_t>(stride) | (uint32_t(sel) << 24) | (uint32_t{interleave4} << 26);
}

struct KernelArgs {
  uint8_t* cache[2][2];  // [side][cache]
  uint8_t* flat[2][2];   // [side][flat row]
  int64_t block_stride[2];
  int32_t flat_bytes[2];
  int64_t n;
  int32_t sides, block_size;
  const int32_t* slots;
  const int32_t* blocks;
  bool store;
  int32_t groups[6];  // of 32 entries each table uses
  const Elem* table;  // read chunks, words, bytes, then write chunks, words, bytes (kTableLen each)
};

__device__ __forceinline__ uint8_t* address(Elem e, uint8_t* const (&base)[4], int64_t token) {
  const uint32_t sel = (e.meta >> 24) & 3u;
  uint8_t* b = sel == 0 ? base[0] : sel == 1 ? base[1] : sel == 2 ? base[2] : base[3];
  if (sel >= 2) return b + e.offset;
  const int64_t stride = e.meta & 0xFFFFFFu;
  return b + e.offset + ((e.meta >> 26) & 1u ? (token >> 2) * 4 * stride + (token & 3) : token * stride);
}

// Resident CTAs asked of ptxas per unroll (registers: 48, 80, 128; spills of at most
// 8, 8 and 236 bytes): more warps, or more tokens a warp, in flight, the fastest taken.
constexpr int kMinCtas[5] = {0, 5, 3, 0, 2};
template <int kUnroll>  // (token, side)s per warp per loop trip
__global__ void __launch_bounds__(256, kMinCtas[kUnroll]) pattern_kernel(const KernelArgs a, const SlotDivider div) {
  // The tables in shared memory, not registers: a lane's 14 entries held in registers
  // took 128 registers and so 16 warps an SM, too few loads in flight for a floor.
  __shared__ Elem tables[kTableTotal];
  for (int i = static_cast<int>(threadIdx.x); i < kTableTotal; i += static_cast<int>(blockDim.x)) tables[i] = a.table[i];
  __syncthreads();
  const int lane = static_cast<int>(threadIdx.x & 31);
  const Elem* rc = tables + lane;  // entry k of this lane: rc[32 * k]
  const Elem* rw = rc + kTableLen[0];
  const Elem* rb = rw + kTableLen[1];
  const Elem* wc = rb + kTableLen[2];
  const Elem* ww = wc + kTableLen[0];
  const Elem* wb = ww + kTableLen[1];
  // Groups of 32 entries a table uses (warp-uniform): the unused ones are not read.
  const int nrc = a.groups[0], nrw = a.groups[1], nrb = a.groups[2], nwc = a.groups[3], nww = a.groups[4],
            nwb = a.groups[5];

  const int64_t warp = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (int64_t{gridDim.x} * blockDim.x) >> 5;
  const int64_t items = a.n * a.sides;
  for (int64_t i0 = warp * kUnroll; i0 < items; i0 += warps * kUnroll) {
    uint8_t* base[kUnroll][4];
    int64_t token[kUnroll];
    uint4 vc[kUnroll][kChunks];
    uint32_t vw[kUnroll][kWords];
    uint32_t vb[kUnroll][kBytes];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = i0 + u < items ? i0 + u : i0;  // past the end: a copy of the first, never written
      const int64_t tk = i / a.sides;
      const int sd = static_cast<int>(i % a.sides);
      int64_t block;
      if (a.store) {
        const int32_t slot = a.slots[tk];
        block = div.block(slot);
        token[u] = div.token(slot, static_cast<int32_t>(block));
      } else {
        block = a.blocks[tk / a.block_size];
        token[u] = tk % a.block_size;
      }
      base[u][0] = (sd ? a.cache[1][0] : a.cache[0][0]) + block * a.block_stride[0];
      base[u][1] = (sd ? a.cache[1][1] : a.cache[0][1]) + block * a.block_stride[1];
      base[u][2] = (sd ? a.flat[1][0] : a.flat[0][0]) + tk * a.flat_bytes[0];
      base[u][3] = (sd ? a.flat[1][1] : a.flat[0][1]) + tk * a.flat_bytes[1];
#pragma unroll
      for (int k = 0; k < kChunks; ++k)
        vc[u][k] = k < nrc && rc[32 * k].offset >= 0
                       ? __ldcs(reinterpret_cast<const uint4*>(address(rc[32 * k], base[u], token[u])))
                       : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int k = 0; k < kWords; ++k)
        vw[u][k] = k < nrw && rw[32 * k].offset >= 0
                       ? __ldcs(reinterpret_cast<const uint32_t*>(address(rw[32 * k], base[u], token[u])))
                       : 0u;
#pragma unroll
      for (int k = 0; k < kBytes; ++k)
        vb[u][k] = k < nrb && rb[32 * k].offset >= 0 ? __ldcs(address(rb[32 * k], base[u], token[u])) : 0u;
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      uint32_t v = 0;
#pragma unroll
      for (int k = 0; k < kChunks; ++k) v ^= vc[u][k].x ^ vc[u][k].y ^ vc[u][k].z ^ vc[u][k].w;
#pragma unroll
      for (int k = 0; k < kWords; ++k) v ^= vw[u][k];
#pragma unroll
      for (int k = 0; k < kBytes; ++k) v ^= vb[u][k];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) v ^= __shfl_xor_sync(0xFFFFFFFFu, v, off);
      if (i0 + u >= items) continue;
#pragma unroll
      for (int k = 0; k < kChunks; ++k)
        if (k < nwc && wc[32 * k].offset >= 0)
          *reinterpret_cast<uint4*>(address(wc[32 * k], base[u], token[u])) = make_uint4(v, v ^ 1u, v ^ 2u, v ^ 3u);
#pragma unroll
      for (int k = 0; k < kWords; ++k)
        if (k < nww && ww[32 * k].offset >= 0) *reinterpret_cast<uint32_t*>(address(ww[32 * k], base[u], token[u])) = v;
#pragma unroll
      for (int k = 0; k < kBytes; ++k)
        if (k < nwb && wb[32 * k].offset >= 0) *address(wb[32 * k], base[u], token[u]) = static_cast<uint8_t>(v);
    }
  }
}

__global__ void footprint_kernel(const uint8_t* a_aa, const uint8_t* a_55, const uint8_t* b_aa, const uint8_t* b_55,
                                 size_t bytes, unsigned long long* first) {
  for (size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x; i < bytes; i += size_t{gridDim.x} * blockDim.x)
    if ((a_aa[i] != 0xAA || a_55[i] != 0x55) != (b_aa[i] != 0xAA || b_55[i] != 0x55))
      atomicMin(first, static_cast<unsigned long long>(i));
}

/// The six tables of `a` (read chunks, words, bytes; write chunks, words, bytes), or why
/// `a` does not fit them.
std::string flatten(const PatternArgs& a, std::vector<Elem> (&tables)[6]) {
  if (a.sides < 1 || a.sides > 2 || a.pieces < 1 || a.pieces > 16 || a.n < 1 || a.block_size < 1)
    return "sides 1-2, pieces 1-16, n and block_size >= 1";
  if ((a.store ? a.slots : a.blocks) == nullptr) return "no slots (store) or blocks (load)";
  const int cache_dir = a.store ? 3 : 0, flat_dir = a.store ? 0 : 3;  // table index of the direction
  for (int f = 0; f < 2; ++f) {
    const int32_t b = a.flat_bytes[f];
    if (b < 0 || b % 4 != 0 || (b >= 16 && b % 16 != 0)) return "a flat row not a multiple of 16 (or of 4 under 16)";
    for (int32_t c = 0; c < b / 16; ++c) tables[flat_dir].push_back({16 * c, meta(0, 2 + f, false)});
    for (int32_t w = b / 16 * 16; w < b; w += 4) tables[flat_dir + 1].push_back({w, meta(0, 2 + f, false)});
  }
  for (int p = 0; p < a.pieces; ++p) {
    const PatternPiece& q = a.piece[p];
    if (q.cache < 0 || q.cache > 1) return "a piece of no cache";
    if (q.offset < 0 || q.offset + 4 * int64_t{q.bytes} > (int64_t{1} << 30) || q.token_stride < 0 ||
        q.token_stride >= (1 << 24) || q.interleave4 < 0 || q.interleave4 >= (1 << 24))
      return "a piece's offset or stride past the tables' fields";
    if (q.interleave4 > 0) {
      for (int32_t g = 0; g < q.bytes; ++g)
        tables[cache_dir + 2].push_back({static_cast<int32_t>(q.offset + 4 * g), meta(q.interleave4, q.cache, true)});
      continue;
    }
    if (q.bytes < 4 || q.bytes % 4 != 0) return "a piece of bytes % 4 != 0";
    const int64_t align = q.bytes >= 16 ? 16 : 4;
    if (q.offset % align || q.token_stride % align || a.block_stride[q.cache] % align)
      return "a piece not aligned to its access width";
    for (int32_t c = 0; c < q.bytes / 16; ++c)
      tables[cache_dir].push_back({static_cast<int32_t>(q.offset + 16 * c), meta(q.token_stride, q.cache, false)});
    for (int32_t w = q.bytes / 16 * 16; w < q.bytes; w += 4)
      tables[cache_dir + 1].push_back({static_cast<int32_t>(q.offset + w), meta(q.token_stride, q.cache, false)});
  }
  for (int i = 0; i < 6; ++i)
    if (static_cast<int>(tables[i].size()) > kTableLen[i % 3])
      return "more than 2,048 bytes of 16-byte accesses, 32 4-byte or 64 single bytes a token in one direction";
  if (tables[0].empty() && tables[1].empty() && tables[2].empty()) return "nothing read";
  return "";
}

}  // namespace

std::string PatternCopy::refusal(const PatternArgs& a) {
  std::vector<Elem> tables[6];
  return flatten(a, tables);
}

PatternCopy::PatternCopy(const PatternArgs& a) : args_(a) {
  std::vector<Elem> tables[6];
  if (const std::string why = flatten(a, tables); !why.empty()) throw std::invalid_argument("pattern copy: " + why);
  std::vector<Elem> all;
  for (int i = 0; i < 6; ++i) {
    counts_[i] = static_cast<int32_t>(tables[i].size());
    tables[i].resize(static_cast<size_t>(kTableLen[i % 3]));  // Elem{} = no element
    all.insert(all.end(), tables[i].begin(), tables[i].end());
  }
  if (cudaMalloc(&table_, all.size() * sizeof(Elem)) != cudaSuccess ||
      cudaMemcpy(table_, all.data(), all.size() * sizeof(Elem), cudaMemcpyHostToDevice) != cudaSuccess)
    throw std::runtime_error("pattern copy: no device memory for its tables");
}

PatternCopy::~PatternCopy() { cudaFree(table_); }

void PatternCopy::launch(void* stream, int unroll) const {
  const PatternArgs& a = args_;
  KernelArgs k{};
  for (int s = 0; s < 2; ++s)
    for (int i = 0; i < 2; ++i) {
      k.cache[s][i] = a.side[s].cache[i];
      k.flat[s][i] = a.side[s].flat[i];
    }
  k.block_stride[0] = a.block_stride[0];
  k.block_stride[1] = a.block_stride[1];
  k.flat_bytes[0] = a.flat_bytes[0];
  k.flat_bytes[1] = a.flat_bytes[1];
  k.n = a.n;
  k.sides = a.sides;
  k.block_size = a.block_size;
  k.slots = a.slots;
  k.blocks = a.blocks;
  k.store = a.store;
  k.table = static_cast<const Elem*>(table_);
  for (int i = 0; i < 6; ++i) k.groups[i] = (counts_[i] + 31) / 32;
  const int64_t ctas = (a.n * a.sides + 8 * unroll - 1) / (8 * unroll);
  const auto grid = static_cast<unsigned>(ctas < (1 << 30) ? ctas : (1 << 30));
  const auto s = static_cast<cudaStream_t>(stream);
  const SlotDivider div = SlotDivider::of(a.block_size);
  if (unroll == 1)
    pattern_kernel<1><<<grid, 256, 0, s>>>(k, div);
  else if (unroll == 2)
    pattern_kernel<2><<<grid, 256, 0, s>>>(k, div);
  else
    pattern_kernel<4><<<grid, 256, 0, s>>>(k, div);
}

int64_t first_footprint_difference(const uint8_t* a_aa, const uint8_t* a_55, const uint8_t* b_aa, const uint8_t* b_55,
                                   size_t bytes, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  unsigned long long* d = nullptr;
  unsigned long long first = ~0ull;
  if (cudaMalloc(&d, sizeof first) != cudaSuccess) return 0;
  cudaMemcpyAsync(d, &first, sizeof first, cudaMemcpyHostToDevice, s);
  footprint_kernel<<<4096, 256, 0, s>>>(a_aa, a_55, b_aa, b_55, bytes, d);
  cudaMemcpyAsync(&first, d, sizeof first, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  cudaFree(d);
  return first == ~0ull ? -1 : static_cast<int64_t>(first);
}

}  // namespace kvcheck::bench
