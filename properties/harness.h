// Buffers, outcome capture and verdicts shared by the checks of every operation (and so
// by properties, fuzzers, replay and explain): a cache with known prior contents inside
// canary bands, load outputs with padded rows and a tail band, and a side's
// kvcheck::Error caught as a value.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "impl/backend.h"
#include "impl/error.h"
#include "impl/kv_cache.h"
#include "properties/gen/store_load_gen.h"

namespace kvcheck::props {

/// Canary bytes on each side of every harness cache (SPEC §6 "canary bands").
inline constexpr int64_t kGuardBytes = 256;

/// Bytes from a per-thread pool, 256-aligned: a check acquires its buffers per case and
/// returns them on destruction, so consecutive cases reuse memory instead of allocating,
/// zero-filling and faulting in fresh buffers (the fuzzers' main cost per case under
/// ASan). Contents are unspecified until written. Under ASan the pooled storage past
/// size() is poisoned, so a write past the buffer is still reported.
class Buffer {
 public:
  explicit Buffer(size_t size);
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  ~Buffer();
  uint8_t* data() { return base_; }
  const uint8_t* data() const { return base_; }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {base_, size_}; }
  std::span<const uint8_t> span() const { return {base_, size_}; }
  bool operator==(const Buffer& o) const;
  /// Another buffer holding the same bytes.
  Buffer clone() const;

 private:
  void poison(bool on);
  std::vector<uint8_t> storage_;
  uint8_t* base_ = nullptr;
  size_t size_ = 0;
};

/// A paged cache in a pooled buffer: [kGuardBytes canary | layout.size_bytes() | canary].
class Cache {
 public:
  explicit Cache(const CacheLayout& layout);  // contents unspecified, canaries set
  const CacheLayout& layout() const { return layout_; }
  uint8_t* data() { return buf_.data() + kGuardBytes; }
  const uint8_t* data() const { return buf_.data() + kGuardBytes; }
  std::span<uint8_t> bytes() { return {data(), static_cast<size_t>(layout_.size_bytes())}; }
  std::span<const uint8_t> bytes() const { return {data(), static_cast<size_t>(layout_.size_bytes())}; }
  /// True when every canary byte before and after the cache is unchanged.
  bool guards_intact() const;

 private:
  CacheLayout layout_;
  Buffer buf_;
};

/// A cache of `shape` holding fill_pattern(fill_seed), framed by canaries.
Cache make_cache(const CacheShape& shape);
/// A second cache with the same layout and bytes as `c`.
Cache copy_cache(const Cache& c);
CacheView view(Cache& cache);
ConstCacheView const_view(const Cache& cache);
KVInput kv_input(const StoreScenario& s);

/// Load output buffers: `rows` rows at load_row_bytes() + data_pad (scales:
/// load_scale_row_bytes() + scale_pad) bytes, then a kTail-byte band, all holding
/// fill_pattern(seed), so a write past a row or past the last row shows.
struct LoadBuffers {
  static constexpr int64_t kTail = 64;
  Buffer data, scales;  // scales: empty unless the format loads scales
  LoadOutput out;
  LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed, int64_t data_pad = 16,
              int64_t scale_pad = 16);
  explicit LoadBuffers(const LoadScenario& s)
      : LoadBuffers(s.shape.format, s.out_rows, s.out_seed, s.data_row_pad, s.scale_row_pad) {}
  /// The same bytes in new buffers (a copy: cheaper than filling the pattern again).
  LoadBuffers(const LoadBuffers& o);
  LoadBuffers& operator=(const LoadBuffers&) = delete;
  bool operator==(const LoadBuffers& o) const { return data == o.data && scales == o.scales; }
};

/// What one side (reference or backend) did: returned (no code), or threw an Error.
struct Outcome {
  std::optional<ErrorCode> code;
  std::string message;
};
/// Runs f, catching kvcheck::Error into the Outcome (other exceptions propagate: a
/// crash, as the fuzzer and RapidCheck report it).
Outcome capture(const std::function<void()>& f);
std::string show(const Outcome& o);
/// The entry an Error message blames: its first "name[index]" ("slot_mapping[7]",
/// "load_segments[2]"); "" when it names none (a whole-argument error).
std::string blame(const std::string& message);
/// "" when both sides threw the same code blaming the same entry, or both returned.
std::string compare_outcomes(const Outcome& ref, const Outcome& be, std::string_view backend);
/// "" when the sides did what a case requires (gen/store_load_gen.h): fault "" — both
/// returned; a fault with `code` — both threw `code` (and the same entry); a fault
/// without code — compare_outcomes.
std::string expect_outcomes(const std::string& fault, const std::optional<ErrorCode>& code, const Outcome& ref,
                            const Outcome& be, std::string_view backend);

/// The result of one check: the failure report ("" = every invariant held) and, when
/// the backend threw kUnsupported, what it could not run (the fuzzers skip those).
struct Verdict {
  std::string failure;
  std::string skipped;
};
/// Inside a property: fails the case with the report; a skip fails too (a property's
/// scenario is one the backend must run).
void require(const Verdict& v);

/// "op=store format=V41 backend=cpu block_size=133 num_blocks=2": the header of
/// every failure message.
std::string context(const std::string& op, const CacheShape& shape, std::string_view backend);

}  // namespace kvcheck::props
