// The scenario type of copy_blocks (SPEC §8.1) and its one builder, drawn through a
// Source (source.h): the RapidCheck generator of properties/ops/copy_blocks/copy_blocks_props.cpp and
// the copy_blocks fuzz target's decoder (fuzzers/ops/copy_blocks/decode_copy_blocks.cpp) are the same
// code; the one check is props::check_copy_blocks (properties/ops/copy_blocks/copy_blocks_check.h).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impl/error.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One copy_blocks call on an allocation of size_bytes bytes filled from fill_seed.
struct CopyBlocksScenario {
  /// How the views sit in the allocation (reports and case classes).
  enum class Layout {
    kOneView,      // one cache (an MLA layer): block_stride = block_bytes
    kSeparate,     // 2L K/V tensors one after the other, each [num_blocks][block]
    kInterleaved,  // pages of every layer's K and V interleaved: block_stride = 2L*block
    kPadded,       // interleaved with bytes no view owns between records
    kOverlaid,     // two formats on one allocation: views of one offset, two block sizes
  } layout = Layout::kOneView;
  int64_t size_bytes = 0;
  std::vector<int64_t> views;  // [num_views][2] = offset, block_bytes
  int64_t num_blocks = 0, block_stride = 1;
  std::vector<int64_t> block_mapping;  // [num_pairs][2] = src, dst; -1 = padding
  uint32_t fill_seed = 0;
  int32_t threads = 0;  // the backend's work split (ScopedParallelism); 0 = its own
  std::string fault;    // what was broken ("" = valid)
  std::optional<ErrorCode> code;
};

const char* to_string(CopyBlocksScenario::Layout layout);

/// The views' pieces the block-op builders share (copy_blocks here, swap_blocks in
/// swap_blocks_gen.h lays out each of its two pools with them).
/// A view's block_bytes: 16-byte multiples (the vector path), odd sizes (the byte path,
/// tails), the engines' records (576 BF16 rope, 584 / 656 MLA FP8, 1152).
int64_t choose_block_bytes(Source& src);
/// The second record size of an overlaid layout, from the first.
int64_t choose_overlaid_bytes(Source& src, int64_t bytes);
/// The views of `layers` layers (K and V each: 2 per layer; one view for kOneView; 3 per
/// layer for kOverlaid: K, V and the page as one `other`-byte record) of `bytes` bytes in
/// `layout`, for num_blocks blocks: [num_views][2] = offset, block_bytes; sets
/// block_stride. Draws the layout's gap or padding from src.
std::vector<int64_t> lay_out_views(Source& src, CopyBlocksScenario::Layout layout, int64_t layers, int64_t bytes,
                                   int64_t other, int64_t num_blocks, int64_t& block_stride);
/// The printers' form of views and block_mapping: "[a, b, ...]", the first 96 entries.
std::string ints(const std::vector<int64_t>& v);
/// One past the last byte any view holds: views [n][width], offsets in `column`,
/// block_bytes in the last column; 0 without blocks.
int64_t views_end(std::span<const int64_t> views, int width, int column, int64_t num_blocks, int64_t block_stride);

/// The builder: a valid call. Views of 1–8 layers (K and V each) in one of the layouts,
/// block_bytes from 1 to 1,152 (odd ones, 16-byte multiples, the engines' 576, 584,
/// 656), 1–48 blocks; a mapping of distinct destinations none of which is a source
/// (sources repeat: a fork), padding pairs whose other entry is anything (never read).
CopyBlocksScenario build_copy_blocks_scenario(Source& src);
/// One rule of SPEC §8.1 broken at its boundary, with its code: an entry at num_blocks
/// or -2, a duplicate destination, a destination that is a source (its own included),
/// a view ending one byte past the allocation, block_bytes = block_stride + 1, offset -1,
/// a view one byte into another straddling two of its blocks, block_stride 0, an odd
/// entry count.
void inject_copy_blocks_fault(Source& src, CopyBlocksScenario& s);
/// Raw mapping entries (fuzz): any values in [-3, num_blocks + 2], no code (the
/// reference decides).
void raw_copy_blocks_mapping(Source& src, CopyBlocksScenario& s);

rc::Gen<CopyBlocksScenario> gen_copy_blocks_scenario();
rc::Gen<CopyBlocksScenario> gen_copy_blocks_fault_scenario();

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`).
void showValue(const CopyBlocksScenario& s, std::ostream& os);
std::string describe(const CopyBlocksScenario& s);

/// JSON form (regression files): every field, faults' impossible values included.
void to_json(nlohmann::json& j, const CopyBlocksScenario& s);
void from_json(const nlohmann::json& j, CopyBlocksScenario& s);

}  // namespace kvcheck::props
