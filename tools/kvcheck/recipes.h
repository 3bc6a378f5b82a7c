// `kvcheck recipes`: the FP8 K/V store recipes of docs/spec.md §7.3.1 side by side —
// `list` prints the table, `diff R1 R2` the smallest inputs on which two recipes give
// different bytes, so a kernel team sees exactly where its kernel departs from another
// engine's. Computed with the reference (reference/kv_numerics.h).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace kvcheck::tool {

/// The options of `kvcheck recipes diff`.
struct RecipeDiffOptions {
  std::string a, b;                  // recipe names (spec, vllm, sglang)
  std::string dtype = "e4m3";        // the FP8 cache dtype: e4m3 or e5m2
  std::string model = "bf16";        // the model dtype of the inputs: bf16 or fp16
  std::vector<double> scales;        // positive, finite as floats; empty: 1, 3, 7, 0.1
  int count = 5;                     // inputs printed per scale
};

/// Prints the recipes and how each stores an element (the spec's table).
void list_recipes(std::ostream& out);

/// Two paged format names (V41_FP4, NVFP4_DS_MLA, ...; SPEC §4.1-§4.9) compare the
/// formats' scale rules instead: for every bf16 x stored first in an otherwise zero
/// group, the scale's value and x's code (both formats must quantise to one data dtype,
/// else 2). Else, K/V recipes:
/// for each scale: how many of the 65,536 model-dtype inputs the two recipes store
/// differently, the `count` smallest in magnitude (x's bits and value, both codes and
/// their values), and NaN's codes when they differ. Returns 0 when the recipes agree
/// on every input at every scale, 1 when they differ, 2 on a bad option (an unknown
/// recipe or dtype, a scale that is not positive and finite; said on `err`).
int diff_recipes(const RecipeDiffOptions& o, std::ostream& out, std::ostream& err);

}  // namespace kvcheck::tool
