// Buffers, runners, outcome capture and verdicts shared by the checks of every
// operation (and so by properties, fuzzers, replay and explain): a cache with known
// prior contents inside canary bands, load outputs with padded rows and a tail band,
// one operation run on a backend or the reference, and its kvcheck::Error caught as a
// value.
#pragma once

#include <utility>
#include <initializer_list>
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
#include "properties/gen/ops/store_load/store_load_gen.h"

namespace kvcheck::props {

/// Canary bytes on each side of every K/V family buffer (SPEC §6 "canary bands",
/// §7.7): wider than any one head's record (head_dim <= 576 elements of <= 2 bytes).
/// Paged MLA/indexer caches use KVCache::canary_bytes_for (at least a block stride).
inline constexpr int64_t kGuardBytes = 4096;

/// Bytes from a per-thread pool, 256-aligned: a check acquires its buffers per case and
/// returns them on destruction, so consecutive cases reuse memory instead of allocating,
/// zero-filling and faulting in fresh buffers (the fuzzers' main cost per case under
/// ASan). Contents are unspecified until written. Under ASan the alignment gap and 4 KiB
/// past the buffer stay poisoned, so an access there is reported as past a fresh one.
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

/// A paged cache in a pooled buffer, framed by canary bands of
/// KVCache::canary_bytes_for(layout) (at least one block stride) on each side.
class Cache {
 public:
  explicit Cache(const CacheLayout& layout);  // contents unspecified, canaries set
  const CacheLayout& layout() const { return layout_; }
  uint8_t* data() { return buf_.data() + guard_; }
  const uint8_t* data() const { return buf_.data() + guard_; }
  /// layout().size_bytes(); at least one packed block for an invalid stride (a fault).
  int64_t size_bytes() const { return bytes_; }
  int64_t guard_bytes() const { return guard_; }
  std::span<uint8_t> bytes() { return {data(), static_cast<size_t>(size_bytes())}; }
  std::span<const uint8_t> bytes() const { return {data(), static_cast<size_t>(size_bytes())}; }
  /// The cache as a backend receives it: base, layout and the buffer's size.
  CacheView view() { return {data(), layout_, size_bytes()}; }
  ConstCacheView view() const { return {data(), layout_, size_bytes()}; }
  bool guards_intact() const { return canary_report().empty(); }
  /// "" when intact, else KVCache's decoded report of each damaged band.
  std::string canary_report() const { return KVCache::canary_report(data(), size_bytes(), guard_); }

 private:
  CacheLayout layout_;
  int64_t bytes_;
  int64_t guard_;
  Buffer buf_;
};

/// A cache of `shape` holding fill_pattern(fill_seed).
Cache make_cache(const CacheShape& shape);
/// A second cache with the same layout and bytes as `c`.
Cache copy_cache(const Cache& c);
KVInput kv_input(const StoreScenario& s);

/// Load output buffers: `rows` rows at load_row_bytes() + data_pad (scales:
/// load_scale_row_bytes() + scale_pad) bytes, starting `offset` bytes in (a misaligned
/// base; the bytes before stay put), then a kTail-byte band, all holding
/// fill_pattern(seed), so a write past a row, before row 0 or past the last row shows.
struct LoadBuffers {
  static constexpr int64_t kTail = 64;
  Buffer data, scales;  // scales: only the tail unless the format loads scales
  LoadOutput out;
  LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed, int64_t data_pad = 16,
              int64_t scale_pad = 16, int32_t offset = 0);
  /// The output of s: s.out_rows rows laid out by s.out_data_pad, out_scale_pad, out_offset.
  explicit LoadBuffers(const LoadScenario& s);
  /// The same bytes in new buffers (a copy: cheaper than filling the pattern again).
  LoadBuffers(const LoadBuffers& o);
  LoadBuffers& operator=(const LoadBuffers&) = delete;
  bool operator==(const LoadBuffers& o) const { return data == o.data && scales == o.scales; }
  /// Bytes before row 0 (out_offset).
  int64_t offset() const { return out.data - data.data(); }
};

/// A store's kv rows placed s.far_row_stride elements apart in a sparse reservation
/// (MAP_NORESERVE: only the pages of the rows exist) after 4 GiB of zero pages, so
/// row offsets pass 2^31 elements and a kernel that truncates one to 32 bits reads
/// zeros instead of the row. Throws std::runtime_error when the address space is not
/// available (vm.overcommit_memory=2).
class FarKvRows {
 public:
  explicit FarKvRows(const StoreScenario& s);
  ~FarKvRows();
  FarKvRows(const FarKvRows&) = delete;
  FarKvRows& operator=(const FarKvRows&) = delete;
  KVInput input() const { return input_; }

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  KVInput input_;
};

/// Bytes [begin, end) of a buffer: where a valid call may write.
struct ByteRange {
  int64_t begin, end;
};
/// `r` clamped to [0, size), sorted and merged.
std::vector<ByteRange> merge_ranges(std::vector<ByteRange> r, int64_t size);
/// The first byte of [0, size) outside every range of `merged` (merge_ranges) where any
/// of the (before, after) pairs differ, or -1. One memcmp per gap: the whole-buffer
/// invariants' check costs what the buffers do, not a per-byte loop.
int64_t first_change_outside(const std::vector<ByteRange>& merged, int64_t size,
                             std::initializer_list<std::pair<const uint8_t*, const uint8_t*>> pairs);

/// Sets backend's work split (Backend::set_test_parallelism) to `threads` threads with
/// a one-byte threshold for one call, restores its default after; notes the case
/// class "multi-thread" when the backend took it and `work_rows` >= 2. No-op for the
/// reference (nullptr) and threads <= 0.
class ScopedParallelism {
 public:
  ScopedParallelism(const Backend* backend, int32_t threads, int64_t work_rows);
  ~ScopedParallelism();
  ScopedParallelism(const ScopedParallelism&) = delete;
  ScopedParallelism& operator=(const ScopedParallelism&) = delete;

 private:
  const Backend* backend_ = nullptr;
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

/// The two sources of a concat scenario (StoreScenario::is_concat()): k_pe a view of the
/// kv rows (kv_c = the kv rows), or (pe_row_stride > 0) a buffer of its own built from
/// the rows' elements [kv_lora_rank, E), pe_rows rows; kv_c is then a copy of the kv
/// rows whose elements past kv_lora_rank are changed, so a kernel that reads k_pe's
/// values from kv_c's rows stores the wrong bytes. Both are copies (the scenario is
/// never written), checked after the call: the sources are only read (§8.2, §8.4).
class ConcatSources {
 public:
  explicit ConcatSources(const StoreScenario& s);
  KVInput kv_c() const { return kv_c_; }
  KVInput k_pe() const { return k_pe_; }
  /// "" when both buffers still hold what s gives them, else the first changed element.
  std::string written_since(const StoreScenario& s) const;

 private:
  std::vector<bf16_bits> own_kv_c_, own_k_pe_;
  KVInput kv_c_, k_pe_;
};

/// Runs the op on the backend (nullptr: the reference) as a scenario describes it: the
/// store passes slot_mapping as the head of a buffer that goes on with s.slot_tail, far
/// kv rows in a sparse buffer, and both split the work as on s.threads threads. Split
/// caches (s.pe_shape): k_pe goes to `pe_cache` (make_cache(*s.pe_shape)), or to a
/// view s.pe_inside_cache bytes into `cache` (a fault; pe_cache unused).
/// A concat call's sources are checked after it (they are only read): `inputs_written`
/// (when given) gets "" or the first element it wrote.
Outcome run_store(const Backend* backend, const StoreScenario& s, Cache& cache, Cache* pe_cache = nullptr,
                  std::string* inputs_written = nullptr);
/// The layout a shape's cache gets (make_cache): its stride as drawn, unvalidated.
CacheLayout shape_layout(const CacheShape& shape);
Outcome run_load(const Backend* backend, const LoadScenario& s, const Cache& cache, LoadBuffers& out);

/// "" when both sides threw the same code blaming the same entry (props::error_blame),
/// or both returned; else what differs.
std::string compare_outcomes(const Outcome& ref, const Outcome& be, std::string_view backend);
/// "" when the sides did what a case requires (gen/ops/store_load/store_load_gen.h): fault "" — both
/// returned; a fault with `code` — both threw `code`, blaming the same entry
/// (props::compare_errors); a fault without code — compare_outcomes.
std::string expect_outcomes(const std::string& fault, const std::optional<ErrorCode>& code, const Outcome& ref,
                            const Outcome& be, std::string_view backend);

/// "" or where two framed copies of a buffer (kGuardBytes of canary each side, then
/// `size` bytes) first differ: "<what>: <name> byte N: expected 0x.., actual 0x..", or
/// the canary band N bytes before / past <name>. The block operations' checks report
/// through it.
std::string first_framed_difference(int64_t size, const Buffer& want, const Buffer& got, const char* name,
                                    const char* what);

/// The result of one check: the failure report ("" = every invariant held) and, when
/// the backend threw kUnsupported, what it could not run (the fuzzers skip those).
struct Verdict {
  std::string failure;
  std::string skipped;
};
/// require(check()) with the check in its own process when case isolation is on
/// (properties/case_isolation.h): what a property without a regression replay uses, so a
/// backend crash still shrinks to the minimal case. Generate the scenario outside.
void require_isolated(const std::function<Verdict()>& check);

/// The one rule for a kUnsupported refusal (SPEC §6), for every check: it is "not
/// supported by this backend" (v.skipped) only when the backend's declared
/// capabilities leave the case out (`declared_outside`: an op bit, format, K/V dtype
/// or block size) and the refusal changed no byte (`unchanged`); a refusal inside the
/// declared capabilities, or one that wrote, is a failure. False when `be` is not a
/// kUnsupported refusal (the check goes on).
bool judge_unsupported(const Outcome& be, bool declared_outside, bool unchanged, const std::string& op,
                       std::string_view backend, Verdict& v);
/// Whether capabilities `c` leave out a paged-cache case of `shape` (ops: the
/// KVCHECK_OP_* bits it calls; a valid non-packed block_stride needs
/// KVCHECK_OP_ANY_BLOCK_STRIDE) or a K/V-family case (its dtype, its rows' dtype,
/// block size, head_dim and, for an FP8 cache, a known recipe outside the declared
/// ones: SPEC §7.3.1).
bool outside_paged(const BackendCapabilities& c, uint32_t ops, const CacheShape& shape);
bool outside_kv(const BackendCapabilities& c, uint32_t ops, KvDtype dtype, KvDtype rows, int64_t block_size,
                int64_t num_kv_heads, int64_t head_dim, KvRecipe recipe);

/// What require() throws for a case the backend refused with kUnsupported: inside a
/// RapidCheck run (run_property) an ordinary failure with this description (the
/// generators draw inside the capabilities, so a refusal there is a bug); a replay
/// (replay_regression) reports it as "not supported by this backend" instead. Not a
/// std::exception, so no generic handler mistakes it for a backend's exception.
struct UnsupportedCase {
  explicit UnsupportedCase(std::string reason) : description(std::move(reason)) {}
  std::string description;
};

/// Inside a property: fails the case with the report; a skip fails too (a property's
/// scenario is one the backend must run), as an UnsupportedCase.
void require(const Verdict& v);

/// "op=store format=V41 backend=cpu block_size=133 num_blocks=2": the header of
/// every failure message.
std::string context(const std::string& op, const CacheShape& shape, std::string_view backend);

}  // namespace kvcheck::props
