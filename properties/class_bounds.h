// The declared class bounds of the properties (properties/classes.h), in one place:
// what share of a property's cases must reach each path (floors) and how many may be
// wasted (ceilings). Floors sit at about half of the share a 300-case run reaches, so
// they hold for every seed and fail when a generator change cuts a path off.
#pragma once

#include <vector>

#include "properties/classes.h"

namespace kvcheck::props::bounds {

using N = ClassBound::Needs;

/// Valid stores (store, round_trip): every path of the store kernels.
inline std::vector<ClassBound> store() {
  return {{"multi-thread", 0.25, 1, N::kThreadKnob},
          {"custom format", 0.08},
          {"run-time group size", 0.06},
          {"padding rows", 0.30},
          {"slot 0 after a padding row", 0.10},
          {"kv longer than slot_mapping", 0.20},
          {"slot_mapping buffer goes on", 0.15},
          {"kv row past 2^31 elements", 0.02, 1, N::kHostMemory},
          {"writes nothing", 0, 0.15}};
}

/// Store with an injected metadata fault.
inline std::vector<ClassBound> store_fault() {
  return {{"error blames an entry", 0.25}, {"error duplicate-slot", 0.10}, {"custom format", 0.08}};
}

/// Valid concat_and_cache_mla (docs/spec.md §8.2): every way the row splits.
inline std::vector<ClassBound> concat() {
  return {{"multi-thread", 0.25, 1, N::kThreadKnob},
          {"concat k_pe a view of kv_c's rows", 0.2},
          {"concat k_pe a buffer of its own", 0.2},
          {"concat split off the 16-byte grid", 0.12},
          {"concat split inside a scale group", 0.12},
          {"concat engines' MLA record", 0.08},
          {"padding rows", 0.30},
          {"writes nothing", 0, 0.15}};
}

/// Valid concat_and_cache_mla into split caches (docs/spec.md §8.2).
inline std::vector<ClassBound> concat_split() {
  return {{"multi-thread", 0.25, 1, N::kThreadKnob},
          {"concat k_pe a view of kv_c's rows", 0.2},
          {"concat k_pe a buffer of its own", 0.2},
          {"concat FlashInfer's ckv / kpe caches", 0.08},
          {"padding rows", 0.30},
          {"writes nothing", 0, 0.15}};
}

/// Valid concat_and_cache_mla with a fused RoPE (docs/spec.md §8.4).
inline std::vector<ClassBound> concat_rope() {
  return {{"rope neox", 0.3},
          {"rope gpt-j", 0.3},
          {"rope on a sub-range of k_pe", 0.2},
          {"rope with cancelling pairs", 0.1},
          {"padding rows", 0.30},
          {"writes nothing", 0, 0.15}};
}

/// concat_and_cache_mla with one broken rule.
inline std::vector<ClassBound> concat_fault() {
  return {{"error blames an entry", 0.1}, {"error shape-mismatch", 0.1}, {"error invalid-argument", 0.1}};
}

/// Valid loads.
inline std::vector<ClassBound> load() {
  return {{"multi-thread", 0.30, 1, N::kThreadKnob},
          {"custom format", 0.08},
          {"run-time group size", 0.06},
          {"odd output stride", 0.20},
          {"misaligned output base", 0.25},
          {"zero-fill segment", 0.08},
          {"shuffled segments", 0.20},
          {"no segments", 0, 0.08},
          {"loads nothing", 0, 0.10}};
}

/// Load with an injected plan fault.
inline std::vector<ClassBound> load_fault() { return {{"error blames an entry", 0.30}, {"custom format", 0.08}}; }

/// Round trips through the error bound: custom records too.
inline std::vector<ClassBound> round_trip_bound() {
  return {{"custom format", 0.10}, {"run-time group size", 0.08}, {"writes nothing", 0, 0.15}};
}

/// Valid store_kv.
inline std::vector<ClassBound> store_kv() {
  return {{"multi-thread", 0.25, 1, N::kThreadKnob},
          {"padding rows", 0.30},
          {"kv longer than slot_mapping", 0.25},
          {"slot_mapping buffer goes on", 0.20},
          {"fp8 recipe sglang", 0.06},  // SPEC §7.3.1: the recipe that multiplies and clamps
          {"writes nothing", 0, 0.15}};
}

inline std::vector<ClassBound> store_kv_fault() { return {{"error blames an entry", 0.06}}; }

/// Valid store_kv with a fused RoPE of the key rows (docs/spec.md §8.4).
inline std::vector<ClassBound> store_kv_rope() {
  return {{"rope neox", 0.3},
          {"rope gpt-j", 0.3},
          {"rope on a sub-range of the head", 0.2},
          {"rope neox over the whole head", 0.2},  // the engines' shape (kv_gen.cpp); reached ~39 %
          {"rope with cancelling pairs", 0.08},
          {"padding rows", 0.30},
          {"writes nothing", 0, 0.15}};
}

/// Valid gather_kv.
inline std::vector<ClassBound> gather_kv() {
  return {{"multi-thread", 0.20, 1, N::kThreadKnob},
          {"odd output stride", 0.10},
          {"misaligned output base", 0.15},
          {"no sequence", 0, 0.10},
          {"gathers nothing", 0, 0.15}};
}

inline std::vector<ClassBound> gather_kv_fault() { return {{"error blames an entry", 0.04}}; }

/// gather_kv with seq_starts: both units, starts off their block, partial last blocks.
inline std::vector<ClassBound> gather_kv_seq_starts() {
  return {{"seq_starts in tokens", 0.30},
          {"seq_starts in blocks", 0.30},
          {"a start off its block boundary", 0.20},
          {"partial last block", 0.30}};
}

/// BlockLoadPlanBuilder appends: both edges of the ring's wrap point.
inline std::vector<ClassBound> plan_builder() {
  return {{"ring range ends at the wrap point", 0.10}, {"ring range wraps", 0.10},
          {"ring range wraps by one token", 0.05}};
}

/// SWA plans (and the batches of the prefill step).
inline std::vector<ClassBound> swa_plan() {
  return {{"ring range ends at the wrap point", 0.08}, {"ring range wraps", 0.15}, {"zero pad", 0.15},
          {"no sequence", 0, 0.10}};
}

inline std::vector<ClassBound> prefill() { return {{"no sequence", 0, 0.10}}; }

}  // namespace kvcheck::props::bounds
