// The scenario type of swap_blocks (docs/spec.md §8.3) and its one builder, drawn
// through a Source (source.h): the RapidCheck generator of
// properties/ops/swap_blocks/swap_blocks_props.cpp and the swap_blocks fuzz target's decoder
// (fuzzers/ops/swap_blocks/decode_swap_blocks.cpp) are the same code; the one check is
// props::check_swap_blocks (properties/ops/swap_blocks/swap_blocks_check.h). Each pool is laid out as
// copy_blocks lays out its one allocation (copy_blocks_gen.h), independently: a
// layer-first device pool and a page-first host pool hold the same views.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/error.h"
#include "properties/gen/ops/copy_blocks/copy_blocks_gen.h"
#include "properties/gen/source.h"

namespace kvcheck::props {

/// One side of a swap: its layout, its allocation and where a device backend takes it.
struct SwapPool {
  CopyBlocksScenario::Layout layout = CopyBlocksScenario::Layout::kOneView;
  int64_t size_bytes = 0, num_blocks = 0, block_stride = 1;
  bool host = false;  // page-locked host memory for a device backend
};

/// One swap_blocks call: src filled from fill_seed, dst from fill_seed ^ kDstFill.
struct SwapBlocksScenario {
  SwapPool src, dst;
  std::vector<int64_t> views;          // [num_views][3] = src_offset, dst_offset, block_bytes
  std::vector<int64_t> block_mapping;  // [num_pairs][2] = src, dst; -1 = padding
  int64_t dst_inside_src = -1;  // >= 0: dst starts this many bytes into src's allocation (a fault)
  uint32_t fill_seed = 0;
  int32_t threads = 0;  // the backend's work split (ScopedParallelism); 0 = its own
  std::string fault;    // what was broken ("" = valid)
  std::optional<ErrorCode> code;
};

/// "device->device", "host->device", "device->host", "host->host".
std::string direction(const SwapBlocksScenario& s);

/// The builder: a valid call. The views of 1–8 layers (K and V each, or one view, or two
/// formats overlaid), each pool in its own layout (separate, interleaved, padded) and
/// with its own num_blocks (1–48); a mapping of distinct dst blocks from any src blocks
/// (repeats: one block to several), padding pairs whose other entry is never read; each
/// pool on the host or the device.
SwapBlocksScenario build_swap_blocks_scenario(Source& src);
/// One rule of docs/spec.md §8.3 broken at its boundary, with its code: a src entry at
/// src.num_blocks or -2, a dst entry at dst.num_blocks or -2, a duplicate destination,
/// either allocation one byte short, block_bytes one past the smaller stride, an offset
/// -1, a dst view straddling two blocks of another, two views filling a dst byte from
/// different src bytes, dst inside src's allocation, a stride 0, an odd entry count.
void inject_swap_blocks_fault(Source& src, SwapBlocksScenario& s);
/// Raw mapping entries (fuzz): any values in [-3, num_blocks + 2], no code (the
/// reference decides).
void raw_swap_blocks_mapping(Source& src, SwapBlocksScenario& s);

rc::Gen<SwapBlocksScenario> gen_swap_blocks_scenario();
rc::Gen<SwapBlocksScenario> gen_swap_blocks_fault_scenario();

/// The one printer (RapidCheck counterexamples, fuzz reports, `kvcheck explain`).
void showValue(const SwapBlocksScenario& s, std::ostream& os);
std::string describe(const SwapBlocksScenario& s);

/// JSON form (regression files): every field, faults' impossible values included.
void to_json(nlohmann::json& j, const SwapBlocksScenario& s);
void from_json(const nlohmann::json& j, SwapBlocksScenario& s);

}  // namespace kvcheck::props
