// The fused RoPE of a scenario (docs/spec.md §8.4), shared by the two operations that
// take one: concat_and_cache_mla (the rotated row is k_pe) and store_kv (each head of a
// key row). One type, one builder, one fault injector, one printer and one JSON form.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "impl/rope_args.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// A RoPE table's floats: a vector whose size is its capacity. Storage of 1 MiB or more
/// (build_rope's tables of up to 2^20 floats, from_json's) is kept when freed, poisoned
/// for ASan while free, and handed to the next table that fits with the bytes past its
/// size still poisoned: a case copies into warm memory instead of mapping and faulting
/// in 4 MiB of fresh pages (a tenth of fuzz_store_kv's time then), and an access past a
/// table's end or into a freed one is still reported. Copies, resizes and frees are
/// memcpy/memset, not a loop per element (std::vector with an allocator of its own
/// constructs and destroys element by element, each through libFuzzer's hooks).
/// Thread-safe.
class RopeTable {
 public:
  RopeTable() = default;
  RopeTable(const RopeTable& o);
  RopeTable(RopeTable&& o) noexcept;
  RopeTable& operator=(RopeTable o) noexcept;  // a copy or a move, then a swap
  ~RopeTable();
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  float& operator[](size_t i) { return data_[i]; }
  const float& operator[](size_t i) const { return data_[i]; }
  /// n floats: the first min(size(), n) kept, the rest 0.
  void resize(size_t n);

 private:
  float* data_ = nullptr;
  size_t size_ = 0;
};

/// cos_sin holds max_position rows of rot_dim fp32 (cos then sin) when valid, and at
/// least max_position * rot_dim floats always (a fault changes the claim, never past the
/// buffer); positions has positions_rows = positions.size() entries, those past n never
/// read.
struct ScenarioRope {
  int32_t rot_dim = 0;
  int32_t rope_offset = 0;
  bool is_neox = true;
  int64_t max_position = 0;
  RopeTable cos_sin;
  std::vector<int64_t> positions;
};

/// The RopeArgs view of a scenario's RoPE (its buffers).
RopeArgs rope_args(const ScenarioRope& r);

/// A RoPE for n rows of `width` (>= 2) elements: NeoX or GPT-J; the whole row (an odd
/// width's last element left as it is) or a sub-range anywhere in it; a table of 1-24
/// rows or of up to 2^20 floats (positions then near its end); table rows of real
/// angles, special values (±0, ±1, 0.5, 1/3, NaN, ±Inf, the smallest subnormal,
/// FLT_MAX, 1e-30, 1/sqrt 2), any bits, or sin = cos ("cancelling": see rope_cancels);
/// positions anywhere, 0 and the last row included; 1-3 CUDA-graph padding rows of junk
/// positions (-1, max_position, INT64_MIN) past n, 1 case in 4. `whole_neox`: NeoX over
/// the whole row, no draw for either (the engines' shape: FlashInfer's and vLLM's rotary
/// over a whole head).
ScenarioRope build_rope(Source& src, int32_t width, int64_t n, bool whole_neox = false);
/// Row i's table row has sin = cos (and is not all zero or one): make the row's pairs
/// equal there (make_pairs_equal) and x*c - y*s is exactly 0 without a fused
/// multiply-add, x*c's rounding error with one.
bool rope_cancels(const ScenarioRope& r, int64_t i);
/// Every pair (a, b) of the rotated range of `row` (a row of the operation's width):
/// row[b] = row[a].
void make_pairs_equal(const ScenarioRope& r, uint16_t* row);

/// One RoPE rule broken, with the code it must raise (docs/spec.md §8.4): rot_dim odd,
/// 0 or negative; rope_offset -1 or the rotated range past `width`; max_position 0 or
/// negative; (n > 0) positions one row short, or one position outside [0, max_position)
/// (-1, max_position, +1000, INT64_MIN, INT64_MAX) — at a row after a row whose slot is
/// bad when `bad_slot_row` >= 0 is given (the positions come before every slot).
void inject_rope_fault(Source& src, ScenarioRope& r, int32_t width, int64_t n, std::string& fault,
                       std::optional<ErrorCode>& code);

/// Two faults on purpose (n >= 2): slot_mapping[0] out of range (num_slots) and the last
/// row's position too (max_position) — every position is checked before any slot, so
/// the position's kInvalidArgument is the error.
void inject_position_before_slot(ScenarioRope& r, std::vector<int32_t>& slot_mapping, int64_t num_slots,
                                 std::string& fault, std::optional<ErrorCode>& code);
/// After another operation rule's fault changed the row count from old_n: the rows it
/// added get valid positions (0), not the padding rows' junk.
void fit_positions(ScenarioRope& r, int64_t old_n, size_t rows);

void showValue(const ScenarioRope& r, std::ostream& os);
/// JSON form (regression files): cos_sin as hex rows of fp32 bit patterns (NaN payloads
/// survive), its leading rows that equal the generators' cheap pattern as their count
/// ("cos_sin_pattern_rows": a 2^20-float table's file is its last rows, not 10 MB);
/// from_json throws when the table holds fewer than max_position * rot_dim values or
/// more than 2^22, when the pattern's count is negative or names rows of an odd or
/// non-positive rot_dim, or positions more than 2^20.
void to_json(nlohmann::json& j, const ScenarioRope& r);
void from_json(const nlohmann::json& j, ScenarioRope& r);

}  // namespace kvcheck::props
