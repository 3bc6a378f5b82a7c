// The access-pattern floor of bench_cuda (bench/pattern_copy.cu): a plain copy that moves
// a store's or a load's bytes between the same addresses as the kernel under test, with
// no arithmetic. A kernel's ratio to this copy separates what its own code costs from
// what the access pattern costs (scattered records, partial sectors, 4-byte scale
// pieces, single scale bytes): a row that reaches its floor cannot go faster by better
// code alone.
#pragma once

#include <cstdint>
#include <string>

namespace kvcheck::bench {

/// One piece of a token's record in a cache: bytes [offset + token * token_stride, + bytes)
/// of block `block`, i.e. at cache[piece] + block * block_stride + offset + token * token_stride;
/// moved by 16-byte accesses, its last bytes % 16 by 4-byte ones (bytes % 4 == 0, and
/// offset, token_stride and block_stride multiples of 16, or of 4 for a piece under 16 bytes).
/// interleave4 > 0 (the K/V e2m1 4-token scale interleave, docs/spec.md §7.9): instead
/// `bytes` single bytes 4 apart from offset + (token / 4) * 4 * interleave4 + token % 4
/// (interleave4 = scale groups per head; token_stride unused).
struct PatternPiece {
  int cache = 0;  // which of PatternSide::cache
  int64_t offset = 0, token_stride = 0;
  int32_t bytes = 0;
  int32_t interleave4 = 0;
};

/// One side of the move (a K/V store has two: K and V, each with its own caches).
struct PatternSide {
  uint8_t* cache[2] = {nullptr, nullptr};  // e.g. a K/V e2m1 cache and its scale cache
  uint8_t* flat[2] = {nullptr, nullptr};   // token t's rows at flat[i] + t * PatternArgs::flat_bytes[i]
};

/// Everything one launch moves. store: token t's flat rows (read) go to the pieces of
/// slot slots[t] (written). load: the pieces of token t % block_size of block
/// blocks[t / block_size] (read) go to its flat rows (written; e.g. a load's output row
/// and its scales). Each direction at most 2,048 bytes of 16-byte accesses, 32 4-byte
/// ones and 64 single bytes a token and side.
struct PatternArgs {
  PatternSide side[2];
  int sides = 1;
  int64_t n = 0;  // tokens
  int32_t block_size = 0;
  int64_t block_stride[2] = {0, 0};  // per cache index
  const int32_t* slots = nullptr;    // store
  const int32_t* blocks = nullptr;   // load
  int32_t flat_bytes[2] = {0, 0};    // % 16 == 0, or % 4 == 0 under 16
  PatternPiece piece[16];
  int pieces = 0;
  bool store = true;
};

/// A pattern copy ready to launch: every token's accesses flattened once into per-lane
/// tables on the device (each lane's addresses are then a few integer operations per
/// access, and all of a loop trip's loads are in flight before its first store).
class PatternCopy {
 public:
  /// Why `a` is not one a PatternCopy can move (the limits above), or "".
  static std::string refusal(const PatternArgs& a);
  /// Throws std::invalid_argument with refusal(a) when that is not "".
  explicit PatternCopy(const PatternArgs& a);
  ~PatternCopy();
  PatternCopy(const PatternCopy&) = delete;
  PatternCopy& operator=(const PatternCopy&) = delete;
  /// Enqueues the copy on `stream` (a cudaStream_t), `unroll` (1, 2 or 4) tokens per warp
  /// per loop trip: the floor is the fastest of the three.
  void launch(void* stream, int unroll) const;
  /// The pattern it copies (its `store` flag names the direction).
  const PatternArgs& args() const { return args_; }

 private:
  PatternArgs args_;
  void* table_ = nullptr;  // device: the read and the write tables (pattern_copy.cu)
  int32_t counts_[6] = {};
};

/// The first byte i < bytes that one of two writers wrote and the other did not, or -1.
/// Each writer ran twice, over the buffer filled with 0xAA and then with 0x55: a writes
/// byte i when a_aa[i] != 0xAA or a_55[i] != 0x55 (a deterministic writer's byte cannot
/// equal both fills, while one fill alone misses every byte it writes as that fill's
/// value). Device pointers; waits for `stream`.
int64_t first_footprint_difference(const uint8_t* a_aa, const uint8_t* a_55, const uint8_t* b_aa, const uint8_t* b_55,
                                   size_t bytes, void* stream);

}  // namespace kvcheck::bench
