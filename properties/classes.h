// Case classes (issue 11 "class floors"): every property case notes what it exercised
// ("multi-thread", "custom format", "empty ring segment", ...); the runner counts the
// classes over a run, `kvcheck run` prints them and writes them to summary.json, and a
// property declares bounds (a floor, and for wasted cases a ceiling) on the fraction
// of its cases in a class. The property suite fails a property whose classes leave
// their bounds at the CI budget, so a generator change that stops reaching a path
// (or starts wasting cases) is caught.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kvcheck::props {

/// Tags the case running on this thread with `name` (once per case, however often).
void note_class(std::string_view name);
/// The slot-space class of a batch of n rows over num_slots slots in blocks of
/// block_size: "slot space at the bitmap limit" (the largest validate_slot_mapping
/// checks with a bitmap, to a block) or "slot space past the bitmap limit (hash map)";
/// nothing for the small caches most cases draw.
void note_slot_space_class(int64_t n, int64_t num_slots, int32_t block_size);

/// Class counts of one run: class name -> cases that noted it.
using ClassCounts = std::map<std::string, int>;

/// Counting of the cases run on this thread (the runner): begin_case() starts a case,
/// end_case() adds its classes to the counts (cases that throw are not counted),
/// take_class_counts() returns the counts and clears them.
void begin_case();
void end_case();
/// `first`: only the first cases that held count (a run that failed: the cases before
/// the failure, not the shrink's candidates that held).
ClassCounts take_class_counts(size_t first = SIZE_MAX);

/// A declared bound on the fraction of a property's cases in one class.
struct ClassBound {
  enum class Needs { kNothing, kThreadKnob, kHostMemory };
  std::string name;
  double min_fraction = 0;  // floor
  double max_fraction = 1;  // ceiling (for classes of wasted cases)
  Needs needs = Needs::kNothing;  // a backend feature the class depends on
};

/// What the backend of a run offers; bounds are judged only for backends whose
/// capabilities are unrestricted (a BF16-only plugin cannot reach custom formats).
struct ClassBoundContext {
  bool unrestricted = true;  // BackendCapabilities::restrictions() is empty
  bool thread_knob = true;   // Backend::set_test_parallelism works
  bool host_memory = true;   // BackendCapabilities::host_memory
};

/// Whether bound b is judged for a backend offering `context`: never on restricted
/// backends, and a bound needing the thread knob or host memory only where it is.
bool class_bound_applies(const ClassBound& b, const ClassBoundContext& context);

/// Runs below this many cases are not judged (small budgets are noisy).
inline constexpr int kClassBoundMinCases = 300;

/// One line per bound that `counts` over `cases` cases breaks ("" when all hold, and
/// when the context is restricted): "multi-thread: 12 of 300 cases (4.0%), floor 20%".
std::string check_class_bounds(const std::vector<ClassBound>& bounds, const ClassCounts& counts, int cases,
                               const ClassBoundContext& context);

/// "name=count;name=count" and back (the campaign's child-to-parent pipe).
std::string encode_class_counts(const ClassCounts& counts);
ClassCounts decode_class_counts(const std::string& text);

}  // namespace kvcheck::props
