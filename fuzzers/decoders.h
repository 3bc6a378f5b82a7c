// The fuzz decoders, one per target (fuzzers/ops/<family>/decode_<...>.cpp): input bytes -> the
// scenario the target checks. None throws, every byte string is a valid input, and
// `kvcheck explain` and the corpus generator call the same functions, so a crash file
// always decodes to the scenario that crashed.
//
// Every target: the builders of properties/gen/ (store_load_gen.h, kv_gen.h,
// prefill_gen.h, index_gen.h, plan_gen.h, slot_mapping_gen.h, format_gen.h,
// numerics_gen.h) on a ByteSource (byte_reader.h) — the same code and types as the
// RapidCheck generators, whose properties run the same checks — plus what only a fuzzer needs: injected faults and
// raw values (invalid inputs), the input's last bytes steering values (store,
// round_trip, numerics), the wrong order (prefill).
#pragma once

#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzzers/byte_reader.h"
#include "impl/format.h"
#include "impl/load_plan.h"
#include "properties/gen/choices.h"
#include "properties/gen/ops/copy_blocks/copy_blocks_gen.h"
#include "properties/gen/ops/swap_blocks/swap_blocks_gen.h"
#include "properties/gen/ops/format/format_gen.h"
#include "properties/gen/ops/index/index_gen.h"
#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/gen/ops/numerics/numerics_gen.h"
#include "properties/gen/ops/plan/plan_gen.h"
#include "properties/gen/ops/prefill/prefill_gen.h"
#include "properties/gen/ops/slot_mapping/slot_mapping_gen.h"
#include "properties/gen/ops/store_load/store_load_gen.h"
#include "properties/ops/prefill/prefill_step.h"

namespace kvcheck::fuzz {

using props::SplitMix64;

/// store: a scenario from the store builder; then, one input in four, an injected fault
/// (the property's injector: the expected code is known) and one in eight raw slots
/// (several errors: the backend must match the reference); the input's last bytes
/// overwrite the first kv values, so libFuzzer can steer values.
props::StoreFaultScenario decode_store(ByteSource& src);
/// concat_and_cache_mla: a two-source scenario from the concat builder (docs/spec.md
/// §8.2); one input in four a fault from its injector, one in eight raw slots; values
/// steered as for store.
props::StoreFaultScenario decode_concat_and_cache_mla(ByteSource& src);
/// load: a scenario from the load builder; one input in four a fault, one in eight raw
/// segments.
props::LoadFaultScenario decode_load(ByteSource& src);
/// round_trip: a valid store scenario (values steered as for store).
props::StoreScenario decode_round_trip(ByteSource& src);
/// store_kv, gather_kv: a scenario from the K/V builder with kFuzzKvLimits (small
/// buffers: at most 2^17 elements per cache view, 2^16 row elements); then one input in
/// four a fault from the properties' injector (the code to expect is known), one in
/// eight raw values (raw slots and scale bits; raw table entries).
props::StoreKvScenario decode_store_kv(ByteSource& src);
props::GatherKvScenario decode_gather_kv(ByteSource& src);
/// prefill: a valid batch from the prefill builder; one input in eight stores before
/// it loads (the check then demands a failure exactly on overlap).
props::PrefillScenario decode_prefill(ByteSource& src);
/// The store, load, round_trip and K/V decoders drop the builder's work split (threads = 0): the cpu backend spawns its
/// threads per call, some 30 plain cases under ASan each, and inputs that split reach
/// new coverage, so libFuzzer keeps and mutates them until most of a run splits. The
/// multi-thread paths are the properties' (3 cases in 4 split; class floor 25%). They
/// never draw far kv rows either (ByteSource::huge_inputs() is false).

/// index: the index builder (properties/gen/ops/index/index_gen.h) of a drawn op; one
/// convert_kv_index input in five gets an injected fault (its code known), one in five
/// raw values (the SPEC §5.5 rules decide).
props::IndexScenario decode_index(ByteSource& src);
/// plan: the plan builder (properties/gen/ops/plan/plan_gen.h) of a drawn mode, builder block
/// sizes huge or < 1 too (choose_builder_block_size); one append in five, and one
/// compressed / SWA input in five, made invalid by the properties' injectors.
props::PlanScenario decode_plan(ByteSource& src);
/// slot_mapping: the slot-mapping builder (properties/gen/ops/slot_mapping/slot_mapping_gen.h) of a
/// drawn op (the SPEC §5.4 slot mappings, SPEC §7.6 prepare_prefill/prepare_decode);
/// one input in five gets an injected fault (its code known), one in five
/// raw values (the SPEC §5.4 rules decide).
props::SlotMappingScenario decode_slot_mapping(ByteSource& src);

/// copy_blocks: the copy_blocks builder (properties/gen/ops/copy_blocks/copy_blocks_gen.h); one input
/// in four gets an injected fault (its code known), one in eight raw mapping entries
/// (the SPEC §8.1 rules decide).
props::CopyBlocksScenario decode_copy_blocks(ByteSource& src);
/// swap_blocks: the swap_blocks builder (properties/gen/ops/swap_blocks/swap_blocks_gen.h); one input
/// in four gets an injected fault (its code known), one in eight raw mapping entries
/// (the docs/spec.md §8.3 rules decide).
props::SwapBlocksScenario decode_swap_blocks(ByteSource& src);

/// format: props::build_format_scenario with any fields (valid, one field changed,
/// arbitrary; gen/ops/format/format_gen.h).
props::FormatScenario decode_format(ByteSource& src);
/// numerics: props::build_numerics_scenario; the bytes the builder left overwrite the
/// group's values, so libFuzzer can aim at rounding boundaries.
props::NumericsScenario decode_numerics(ByteSource& src);

}  // namespace kvcheck::fuzz
