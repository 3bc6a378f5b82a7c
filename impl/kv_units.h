// The K/V family's work units (docs/spec.md §7): how a store or gather kernel numbers
// its threads' units over (token row, K or V, head[, chunk of a head]). Host and device
// code share these (KVCHECK_HD), so the orders are tested on the host without a GPU
// (tests/kv_units_test.cpp); impl/cuda/kv_family.cu is their user.
#pragma once

#include <cstdint>

#include "impl/host_device.h"

namespace kvcheck {

/// u = q * d + r (u >= 0, d > 0), in 32-bit arithmetic while u fits (the common case on
/// a GPU: a 64-bit division costs several times more).
struct QuotRem {
  int64_t q;
  int32_t r;
};
KVCHECK_HD QuotRem quot_rem(int64_t u, int32_t d) {
  if (u <= 0x7FFFFFFF) {
    const uint32_t q = static_cast<uint32_t>(u) / static_cast<uint32_t>(d);
    return {q, static_cast<int32_t>(static_cast<uint32_t>(u) - q * static_cast<uint32_t>(d))};
  }
  const int64_t q = u / d;
  return {q, static_cast<int32_t>(u - q * d)};
}

/// Unit u -> (row, side, head) with 2 * heads units a row: the row's K heads, then its
/// V heads (side 0 = K, 1 = V).
struct Unit {
  int64_t row;
  int side, head;
};
KVCHECK_HD Unit unit_of(int64_t u, int32_t heads) {
  const QuotRem qr = quot_rem(u, 2 * heads);
  return {qr.q, qr.r >= heads ? 1 : 0, qr.r >= heads ? qr.r - heads : qr.r};
}

/// Unit u -> (row, side, head, chunk) with `chunks` units a head, chunk fastest: unit_of's
/// order with every head split into its chunks.
struct ChunkUnit {
  int64_t row;
  int side, head, chunk;
};
KVCHECK_HD ChunkUnit chunk_unit_of(int64_t u, int32_t heads, int32_t chunks) {
  const QuotRem qr = quot_rem(u, chunks);
  const Unit w = unit_of(qr.q, heads);
  return {w.row, w.side, w.head, qr.r};
}

/// chunk_unit_of's units in tiles whose warps hold one side each, for kernels where K and
/// V units do different work (the e2m1 store's fused RoPE rotates K only; lanes of the
/// other side would idle through it). A side of a row holds U = heads * chunks units.
/// Where U divides 32, a tile is t = 32 / U rows (64 units): the K units of its rows,
/// then the same rows' V units, so every warp (units 32 k .. 32 k + 31) is one side; the
/// last tile holds the n - t * (n / t) rows left, K then V. Elsewhere t = 1, which is
/// chunk_unit_of's order exactly. Within a side, rows, heads and chunks run as in
/// chunk_unit_of (chunk fastest), and a head starts at a multiple of `chunks`. n: the
/// rows (units 0 .. 2 n U - 1).
KVCHECK_HD ChunkUnit chunk_unit_of_sides(int64_t u, int32_t heads, int32_t chunks, int64_t n) {
  const int32_t per_side = heads * chunks;
  const int32_t t = per_side <= 32 && 32 % per_side == 0 ? 32 / per_side : 1;
  const QuotRem tile = quot_rem(u, 2 * t * per_side);
  const int64_t first = tile.q * t;
  const int32_t rows = n - first < t ? static_cast<int32_t>(n - first) : t;
  const int side = tile.r >= rows * per_side ? 1 : 0;
  const int32_t r = tile.r - side * rows * per_side;
  const int32_t in_row = r % per_side;
  return {first + r / per_side, side, in_row / chunks, in_row % chunks};
}

}  // namespace kvcheck
