// The choosers every scenario builder shares (SPEC §6 "Generators must reach"): block
// sizes, formats, BF16 values, slot mappings and shuffles. Each is written once and
// draws through a Source (properties/gen/source.h), so the RapidCheck generators and
// the fuzz decoders of every operation reach the same values.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "impl/format.h"
#include "properties/gen/source.h"
#include "properties/gen/splitmix.h"

namespace kvcheck::props {

/// Block sizes generators must reach (SPEC §6), then odd ones; others are random.
inline constexpr int32_t kBlockSizes[] = {1, 2, 16, 64, 133, 256};
inline constexpr int32_t kOddBlockSizes[] = {53, 61, 69};

/// kBlockSizes (weight 3), kOddBlockSizes (1) or a random size in [1, max_random] (2),
/// fitted to the backend's capabilities (fit_block_size, gen/gen_caps.h).
int32_t choose_block_size(Source& src, int32_t max_random = 300);

/// Whether f is one of the named formats (SPEC §2 table, BF16(E) included).
bool is_named_format(const KVCacheFormat& f);
/// A valid format no named one matches ("custom(...)"): e4m3/e2m1 data, ue8m0/e4m3/fp32
/// scales, mostly group sizes the fixed kernels (16, 32, 128) lack (the run-time group
/// path; odd ones end an e2m1 group mid-byte), do_cast or index (interleaved or not).
KVCacheFormat choose_custom_format(Source& src);
/// Among the formats the backend supports (generator_caps()): a quantised SPEC §2 table
/// format (weight 6), BF16(8k) for k in [1, 128] or BF16(4096) (1), a custom one (2).
KVCacheFormat choose_format(Source& src);

/// How BF16 values are drawn: each group may be all zero, each value may be a special
/// (±0, NaN, ±Inf, e4m3/e2m1 saturation and rounding boundaries: SPEC §4.5), a
/// subnormal, a huge value or random bits; the rest are normal values around a per-row
/// exponent. All percentages 0 (the simplest) gives plain normal values.
struct ValueMix {
  int zero_group_pct = 0, special_pct = 0, subnormal_pct = 0, huge_pct = 0, random_bits_pct = 0;
  uint32_t seed = 0;
};
ValueMix choose_value_mix(Source& src);
/// Fills `rows` rows of `row_stride` values (the first `elements` of each drawn with
/// `mix`, grouped by `group`; the row padding holds NaN bits, which nothing may read).
std::vector<bf16_bits> make_bf16_rows(const ValueMix& mix, int64_t rows, int64_t row_stride,
                                      int64_t elements, int64_t group);

/// The first `count` entries of a shuffle of [0, n) (partial Fisher-Yates): distinct.
std::vector<int32_t> shuffled(SplitMix64& rng, int64_t n, int64_t count);

/// A valid slot mapping of n rows for num_blocks x block_size slots (SPEC §5.1, §5.4):
/// distinct random slots, a prefill run of consecutive slots, or a vLLM block-table
/// mapping (slot of token t = T[t / bs] * bs + t % bs); -1 padding none (7 in 20), some
/// (12: at least one valid row) or all (1); and half the time -1 right before slot 0
/// (the clamp-to-0 bug) at a row below min(max_rows - 1, 8). Row i depends only on the
/// choices and the rows before it, so shrinking n keeps a failing prefix.
std::vector<int32_t> choose_slot_mapping(Source& src, int32_t num_blocks, int32_t block_size, int64_t n,
                                         int64_t max_rows);
/// validate_slot_mapping's two paths (impl/slot_mapping.h): the block count whose slot
/// space for a batch of n rows is the largest the bitmap checks (past = false) or the
/// smallest past it, a hash map's (past = true), at block_size's granularity.
int64_t slot_threshold_blocks(int64_t n, int32_t block_size, bool past);
/// Whether a store case takes a slot space at that limit (1 in 3) and which side (past:
/// the hash map's), drawn whenever the source draws large caches (Source::large_caches)
/// and before the builder tests its shape: a draw that came and went with the shape
/// would shift every later draw of a shrink (RapidCheck replays recorded values by
/// position). The builder still keeps a cache whose bytes at the limit exceed its budget.
struct SlotSpaceEdge {
  bool want = false, past = false;
};
SlotSpaceEdge draw_slot_space_edge(Source& src);

/// Raw slots, mostly invalid: SPEC §6's awkward values (-2, INT32_MIN, INT32_MAX,
/// num_slots), -1, 0, the last slot, random and repeated slots; several errors per row
/// set, so the smallest-index rule of SPEC §5.2 is exercised.
std::vector<int32_t> raw_slot_mapping(Source& src, int64_t num_slots, int64_t n);

/// What a slot mapping looks like, for printers and seed selection: "empty",
/// "all-padding", "padding-next-to-slot-0", "consecutive-run", "distinct", "distinct+padding",
/// "invalid".
std::string slot_mapping_kind(std::span<const int32_t> slots, int64_t num_slots);

/// "[1, -1, 7, ...]" with at most `max_items` entries shown.
std::string format_ints(std::span<const int32_t> v, size_t max_items = 64);

}  // namespace kvcheck::props
