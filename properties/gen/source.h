// Where a scenario builder's choices come from: Google FuzzTest's "one domain, two
// engines". Every builder in properties/gen/ draws through a Source, so the same code
// is the RapidCheck generator (RcSource below: each choice a RapidCheck draw) and the
// libFuzzer decoder (fuzz::ByteSource, fuzzers/byte_reader.h: each choice read from
// the input). A fix to a builder reaches both engines at once.
//
// Contract of every builder: the low end of each range and the first of each list is
// the simplest choice (no padding, no fault, the first format, the smallest count).
// RapidCheck shrinks toward it, and an exhausted fuzz input answers it, so a short
// input is a tiny scenario.
#pragma once

#include <rapidcheck.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "properties/gen/gen_caps.h"

namespace kvcheck::props {

class Source {
 public:
  virtual ~Source() = default;
  /// A value in [lo, hi] (lo <= hi); lo is the simplest. RapidCheck scales the range
  /// with the case size.
  virtual int64_t range(int64_t lo, int64_t hi) = 0;
  /// A count in [lo, hi] of things that each cost about `cost` more choices. The fuzz
  /// engine bounds it by its remaining input (lo + remaining / cost): a scenario grows
  /// with the input, and a crash minimised by bytes is minimal as a scenario too.
  virtual int64_t count(int64_t lo, int64_t hi, int64_t cost) {
    (void)cost;
    return range(lo, hi);
  }
  /// An index into `weights` drawn with those weights, whatever the case size (a
  /// category: every size reaches each); index 0 is the simplest.
  virtual size_t weighted(std::span<const int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int64_t x = range(0, total - 1);
    for (size_t i = 0; i < weights.size(); ++i) {
      if (x < weights[i]) return i;
      x -= weights[i];
    }
    return weights.size() - 1;
  }
  /// A seed for bulk contents (values, fill patterns); 0 is the simplest.
  virtual uint32_t seed() = 0;
  /// Whether multi-GiB sparse inputs may be drawn (far kv rows): RapidCheck on a
  /// host-memory backend; never the fuzzers.
  virtual bool huge_inputs() const { return false; }
  /// Whether caches of tens of thousands of slots (a few MiB, at a validator's size
  /// threshold) may be drawn: RapidCheck; never the fuzzers, whose executions stay small.
  virtual bool large_caches() const { return false; }

  size_t weighted(std::initializer_list<int> weights) { return weighted(std::span<const int>(weights.begin(), weights.size())); }
  bool coin() { return weighted({1, 1}) == 1; }
  /// True with probability 1/n; never in the simplest case.
  bool one_in(int n) { return weighted({n - 1, 1}) == 1; }
  /// One of `values` (equal weights); the first is the simplest.
  template <class T>
  T pick(std::span<const T> values) {
    const std::vector<int> w(values.size(), 1);
    return values[weighted(std::span<const int>(w))];
  }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return pick(std::span<const T>(values.begin(), values.size()));
  }
  /// One of `values` with the given weights (pairs weight, value); the first is the simplest.
  template <class T>
  T pick_weighted(std::initializer_list<std::pair<int, T>> values) {
    std::vector<int> w;
    for (const auto& [weight, v] : values) w.push_back(weight);
    return (values.begin() + static_cast<std::ptrdiff_t>(weighted(std::span<const int>(w))))->second;
  }
};

/// The RapidCheck engine: each choice is a RapidCheck draw (so it shrinks toward the
/// low end). Use only inside rc::gen::exec or a property body.
// Every draw is checked against its own bounds: while shrinking, RapidCheck re-runs the
// builder and hands each draw the value recorded at the same position, so when an
// earlier choice changed which draws happen, a draw can receive another draw's value
// (a pick of 2 got index 3 under ASan: plugin.row_limit_unguarded_fails). Such a value
// is brought into range, so the case stays a valid one of the builder's.
class RcSource final : public Source {
 public:
  int64_t range(int64_t lo, int64_t hi) override {
    return lo >= hi ? lo : std::clamp(*rc::gen::inRange<int64_t>(lo, hi + 1), lo, hi);
  }
  /// inRange scaled by the case size, but never below size 30: small cases are not all
  /// one row or one block, and a failure still shrinks toward lo.
  int64_t count(int64_t lo, int64_t hi, int64_t /*cost*/) override {
    if (lo >= hi) return lo;
    return std::clamp(*rc::gen::withSize([lo, hi](int size) {
      return rc::gen::resize(std::max(size, 30), rc::gen::inRange<int64_t>(lo, hi + 1));
    }), lo, hi);
  }
  using Source::weighted;
  /// elementOf over each index repeated by its weight: size-independent, and shrinks
  /// toward the first index. A replayed index that is out of range or has weight 0 is
  /// mapped onto the allowed ones.
  size_t weighted(std::span<const int> weights) override {
    std::vector<size_t> slots;
    for (size_t i = 0; i < weights.size(); ++i) slots.insert(slots.end(), static_cast<size_t>(std::max(weights[i], 0)), i);
    if (slots.size() == 1) return slots.front();
    const size_t k = *rc::gen::elementOf(slots);
    return k < weights.size() && weights[k] > 0 ? k : slots[k % slots.size()];
  }
  uint32_t seed() override { return *rc::gen::arbitrary<uint32_t>(); }
  bool huge_inputs() const override { return generator_caps().host_memory; }
  bool large_caches() const override { return true; }
};

}  // namespace kvcheck::props
