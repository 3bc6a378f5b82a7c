// The scenario types of store/load/round_trip and their one builder each (SPEC §6
// "Generators must reach"). A builder draws through a Source (source.h), so it is both
// the RapidCheck generator (gen_*: the builder on an RcSource, shrinking toward small
// caches, few rows and plain values) and the fuzz decoder (fuzzers/decode_*.cpp: the
// builder on the input bytes). Builders use earlier draws rather than filtering.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <rapidcheck.h>

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "impl/op_args.h"
#include "impl/error.h"
#include "impl/format.h"
#include "properties/gen/choices.h"
#include "properties/gen/rope_gen.h"
#include "properties/gen/source.h"
#include "properties/gen/splitmix.h"

namespace kvcheck {
void showValue(const KVCacheFormat& f, std::ostream& os);
}  // namespace kvcheck

namespace kvcheck::props {

/// Largest cache one case allocates (whole buffer), and the most output bytes of a load.
inline constexpr int64_t kMaxCacheBytes = int64_t{2} << 20;
/// The cache of a store drawn at validate_slot_mapping's bitmap limit (tens of
/// thousands of slots; build_store_scenario's slot_space_edges) may take this much.
inline constexpr int64_t kMaxEdgeCacheBytes = int64_t{16} << 20;
inline constexpr int64_t kMaxLoadOutBytes = int64_t{512} << 10;

/// A cache shape: format, block_size (1, 2, 16, 64, 133, 256, odd, random ≤ 300),
/// num_blocks, a seed for the cache's prior contents, and the block stride (SPEC §3):
/// 0 = packed, else L layers' blocks side by side plus padding (L * packed + 32k
/// bytes): the view is layer 0's, the bytes from each block's packed end to the next
/// block are the other layers' pages (the buffer compared whole, they must not change).
struct CacheShape {
  KVCacheFormat format;
  int32_t block_size = 1;
  int32_t num_blocks = 1;
  uint32_t fill_seed = 0;  // prior cache bytes: a pattern, so untouched bytes are visible
  int64_t block_stride = 0;  // bytes; 0 = the packed SPEC §3 stride
};

/// The stride a shape's blocks are laid out with (block_stride, or packed when 0).
int64_t shape_block_stride(const CacheShape& s);

struct StoreScenario {
  CacheShape shape;
  std::vector<int32_t> slot_mapping;  // n rows, -1 = padding
  int64_t row_stride = 0;             // elements, >= E (rows may be padded)
  std::vector<bf16_bits> kv;          // rows * row_stride; rows >= n (more: CUDA-graph padding rows; fewer: a fault)
  // Fields below default to the plain case (and are left out of JSON at their defaults).
  int32_t threads = 0;                // > 0: the backend splits the call as on `threads` threads
  std::vector<int32_t> slot_tail;     // entries after slot_mapping in its buffer: a kernel must not read them
  int64_t far_row_stride = 0;         // > 0: kv row r sits at element r*far_row_stride of a sparse buffer
  // concat_and_cache_mla (docs/spec.md §8.2) when kv_lora_rank > 0: kv_c is the first
  // kv_lora_rank elements of each kv row (stride row_stride) and k_pe the next rope_dim:
  // a view of the same rows (pe_row_stride 0: one tensor split, as vLLM's kv_lora) or
  // a buffer of pe_rows rows (-1: kv_rows()) pe_row_stride apart holding those values.
  // A valid case has kv_lora_rank + rope_dim = E, so the joined rows are the kv rows and
  // every store invariant holds as stated. Never with far rows.
  int32_t kv_lora_rank = 0;
  int32_t rope_dim = 0;
  int64_t pe_row_stride = 0;
  int64_t pe_rows = -1;
  // Split caches (docs/spec.md §8.2): kv_c stored into a cache of `shape` (E =
  // kv_lora_rank) and k_pe into one of pe_shape (E = rope_dim, the same num_blocks and
  // block_size when valid). pe_inside_cache >= 0 (a fault): pe_cache starts that many
  // bytes into the cache's buffer instead of a buffer of its own.
  std::optional<CacheShape> pe_shape;
  int64_t pe_inside_cache = -1;
  // Fused RoPE (docs/spec.md §8.4; concat scenarios only): k_pe rotated before the store.
  std::optional<ScenarioRope> rope;
  int64_t kv_rows() const { return row_stride > 0 ? static_cast<int64_t>(kv.size()) / row_stride : 0; }
  bool is_concat() const { return kv_lora_rank > 0 || rope_dim > 0; }
};

struct LoadScenario {
  CacheShape shape;
  std::vector<int32_t> load_segments;  // S * 4, LoadSegment order
  int32_t total_k = 0;
  int64_t out_rows = 0;                // >= total_k
  uint32_t out_seed = 0;               // prior output contents
  // Fields below default to the plain case (and are left out of JSON at their defaults).
  int32_t threads = 0;                 // > 0: the backend splits the call as on `threads` threads
  int64_t out_data_pad = 16;           // bytes of each output data row stride past load_row_bytes (< 0: a fault)
  int64_t out_scale_pad = 16;          // the same for the scale rows (index formats; < 0: a fault)
  int32_t out_offset = 0;              // bytes the output rows start past an aligned allocation
};

/// A scenario and what it must do (SPEC §5), for both engines. `fault` "": valid, both
/// sides return. A fault with `code`: both sides throw exactly `code`, blaming the same
/// entry, and change no byte. A fault without code (the fuzz decoder's raw values, maybe
/// several errors): the backend throws what the reference throws, or both return.
struct StoreFaultScenario {
  StoreScenario scenario;
  std::string fault;  // what was broken, e.g. "slot_mapping[3] = -2"
  std::optional<ErrorCode> code;
};
struct LoadFaultScenario {
  LoadScenario scenario;
  std::string fault;
  std::optional<ErrorCode> code;
};

/// The one printer of each type (RapidCheck counterexamples, fuzz reports, explain).
void showValue(const CacheShape& s, std::ostream& os);
void showValue(const StoreScenario& s, std::ostream& os);
void showValue(const LoadScenario& s, std::ostream& os);
void showValue(const StoreFaultScenario& s, std::ostream& os);
void showValue(const LoadFaultScenario& s, std::ostream& os);
std::string describe(const StoreFaultScenario& s);
std::string describe(const LoadFaultScenario& s);

// JSON forms (nlohmann ADL; regression files, SPEC §6; store_load_json.cpp). bf16 rows
// are hex strings, one per kv row. Fault scenarios add "fault" and "expected_error"
// (absent: raw values). from_json throws on a malformed scenario (kvcheck::Error for a
// format that fails validation, else std::exception).
void to_json(nlohmann::json& j, const CacheShape& s);
void from_json(const nlohmann::json& j, CacheShape& s);
void to_json(nlohmann::json& j, const StoreScenario& s);
void from_json(const nlohmann::json& j, StoreScenario& s);
void to_json(nlohmann::json& j, const LoadScenario& s);
void from_json(const nlohmann::json& j, LoadScenario& s);
void to_json(nlohmann::json& j, const StoreFaultScenario& s);
void from_json(const nlohmann::json& j, StoreFaultScenario& s);
void to_json(nlohmann::json& j, const LoadFaultScenario& s);
void from_json(const nlohmann::json& j, LoadFaultScenario& s);

// The builders (one per type) and the fault injectors (SPEC §5.1/§5.2 rules, one fault
// each, with the code it must raise).
CacheShape build_cache_shape(Source& src);
/// The same for a given format (block size, blocks, stride drawn).
CacheShape build_cache_shape(Source& src, const KVCacheFormat& format);
/// far_rows false: never kv rows past 2^31 elements (the concat builder: its two
/// sources are plain buffers), so the row count and values are drawn as for plain rows.
/// slot_space_edges: where the source draws large caches, 1 shape in 3 whose blocks
/// are small enough gets the block count at validate_slot_mapping's bitmap limit for
/// the batch or one block past it (slot_threshold_blocks); false keeps shape.num_blocks
/// (the concat builders, whose second cache follows it).
StoreScenario build_store_scenario(Source& src, const CacheShape& shape, bool far_rows = true,
                                   bool slot_space_edges = true);
LoadScenario build_load_scenario(Source& src, const CacheShape& shape);
/// Out-of-range slot (SPEC §6 awkward values), kv one row short, row stride < E, or a
/// duplicate slot.
void inject_store_fault(Source& src, StoreFaultScenario& c);
/// concat_and_cache_mla (docs/spec.md §8.2): a two-source scenario of one of the
/// engines' MLA formats or any store format with E >= 2, split anywhere (the engines'
/// kv_lora_rank, 8-element boundaries, inside a scale group or a 16-byte chunk); k_pe a
/// view of the kv rows or a buffer of its own with its own stride.
StoreScenario build_concat_scenario(Source& src);
/// Split caches (docs/spec.md §8.2): kv_c into a cache of BF16(512) or any format, k_pe
/// into one of BF16(64), BF16 of 8-72 elements or any format, with the cache's
/// num_blocks and block_size and its own block stride; k_pe a view or its own tensor.
StoreScenario build_concat_split_scenario(Source& src);
/// Fused RoPE (docs/spec.md §8.4): a concat scenario, or split caches when the backend
/// takes them (a coin), with a rope drawn for it: NeoX or GPT-J, the whole k_pe or a
/// sub-range (rope_offset > 0), real angles, special values (0, ±1, 1/3, NaN, ±Inf,
/// subnormals, huge), any bits, or sin = cos with pairs of equal values (a fused
/// multiply-add then gives another answer); positions anywhere in the table, 0 and its
/// last row included, with CUDA-graph padding rows of junk positions.
StoreScenario build_concat_rope_scenario(Source& src);
/// A fault of inject_concat_fault, or a RoPE rule broken: rot_dim odd or 0, rope_offset
/// negative or the rotated range past rope_dim, max_position 0, positions one row
/// short, a position outside [0, max_position).
void inject_concat_rope_fault(Source& src, StoreFaultScenario& c);
/// A slot fault of inject_store_fault, or a concat rule broken: kv_lora_rank 0,
/// kv_lora_rank + rope_dim != E, kv_c or k_pe one row short, a stride below its width;
/// split caches also: kv_lora_rank or rope_dim one off its cache's E, pe_cache with
/// another num_blocks or block_size, a bad pe_cache block stride, pe_cache inside the
/// cache's buffer.
void inject_concat_fault(Source& src, StoreFaultScenario& c);
/// shape.block_stride made invalid (SPEC §3: below the packed stride, off the 32-byte
/// grid, or not positive); `fault` says which. Every op must refuse it (kInvalidArgument).
void inject_block_stride_fault(Source& src, CacheShape& shape, std::string& fault);
/// total_k < 0, segments not S*4, output short, bad block, range or destination,
/// overlap, output row strides too small.
void inject_load_fault(Source& src, LoadFaultScenario& c);
/// Raw segments, mostly invalid: awkward values in every field, stray int32s.
std::vector<int32_t> raw_load_segments(Source& src, const CacheShape& shape, int32_t total_k);

// RapidCheck generators: the builders on an RcSource. Formats and block sizes stay
// inside generator_caps() (gen/gen_caps.h: the capabilities of the backend under test).
rc::Gen<KVCacheFormat> gen_format();
/// A valid format no named one matches (SPEC §2 fields, any dtype / scale / group
/// combination, group sizes the fixed kernels lack): the run-time group kernels.
rc::Gen<KVCacheFormat> gen_custom_format();
rc::Gen<int32_t> gen_block_size();
rc::Gen<CacheShape> gen_cache_shape();
/// Valid store: distinct valid slots mixed with -1 (none, some, all; -1 next to slot 0).
rc::Gen<StoreScenario> gen_store_scenario();
rc::Gen<StoreScenario> gen_store_scenario(const CacheShape& shape);
/// Valid load plan: zero-fill segments, gaps, shuffled order, wrapped rings, odd output
/// strides and misaligned output bases.
rc::Gen<LoadScenario> gen_load_scenario();
/// A valid scenario with one injected fault.
rc::Gen<StoreFaultScenario> gen_store_fault_scenario();
rc::Gen<StoreScenario> gen_concat_scenario();
rc::Gen<StoreScenario> gen_concat_split_scenario();
rc::Gen<StoreFaultScenario> gen_concat_split_fault_scenario();
rc::Gen<StoreFaultScenario> gen_concat_fault_scenario();
rc::Gen<StoreScenario> gen_concat_rope_scenario();
rc::Gen<StoreFaultScenario> gen_concat_rope_fault_scenario();
rc::Gen<LoadFaultScenario> gen_load_fault_scenario();
/// A row count in [1, max_rows] scaled by the case size from size 30 up (shrinks to 1).
rc::Gen<int> gen_row_count(int max_rows);
/// The work split of one case: 0 (the backend's own) or 1-4 threads.
rc::Gen<int32_t> gen_threads();
/// The same chooser on any Source (the K/V builders use it too; 3 cases in 4 split).
int32_t choose_threads(Source& src);
/// A row stride past 2^30 elements for rows placed in a sparse buffer (so row offsets
/// pass 2^31 elements), or 0 for plain rows; only for host-memory backends
/// (generator_caps().host_memory) and never from the fuzz decoders.
rc::Gen<int64_t> gen_far_row_stride();

}  // namespace kvcheck::props
