// Where a scenario builder's choices come from: Google FuzzTest's "one domain, two
// engines". Every builder in properties/gen/ draws through a Source, so the same code
// is the RapidCheck generator (RcSource below: each choice a RapidCheck draw) and the
// libFuzzer decoder (fuzz::ByteSource, fuzzers/byte_reader.h: each choice read from
// the input). A fix to a builder reaches both engines at once.
//
// Contract of every builder: the low end of each range is the simplest choice (no
// padding, no fault, the first format, the smallest count). RapidCheck shrinks toward
// it, and an exhausted fuzz input answers it, so a short input is a tiny scenario.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <initializer_list>
#include <span>

namespace kvcheck::props {

class Source {
 public:
  virtual ~Source() = default;
  /// A value in [lo, hi] (lo <= hi); lo is the simplest.
  virtual int64_t range(int64_t lo, int64_t hi) = 0;
  /// A count in [lo, hi] of things that each cost about `cost` more choices. The fuzz
  /// engine bounds it by its remaining input (lo + remaining / cost): a scenario grows
  /// with the input, and a crash minimised by bytes is minimal as a scenario too.
  virtual int64_t count(int64_t lo, int64_t hi, int64_t cost) {
    (void)cost;
    return range(lo, hi);
  }
  /// A seed for bulk contents (values, fill patterns); 0 is the simplest.
  virtual uint32_t seed() = 0;

  bool coin() { return range(0, 1) == 1; }
  /// True with probability 1/n; never in the simplest case.
  bool one_in(int64_t n) { return range(1, n) == n; }
  /// One of `values`; the first is the simplest.
  template <class T>
  T pick(std::span<const T> values) {
    return values[static_cast<size_t>(range(0, static_cast<int64_t>(values.size()) - 1))];
  }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return pick(std::span<const T>(values.begin(), values.size()));
  }
  /// An index into `weights` drawn with those weights; index 0 is the simplest.
  size_t weighted(std::initializer_list<int> weights) {
    int total = 0;
    for (int w : weights) total += w;
    int64_t x = range(0, total - 1);
    size_t i = 0;
    for (int w : weights) {
      if (x < w) return i;
      x -= w;
      ++i;
    }
    return weights.size() - 1;
  }
};

/// The RapidCheck engine: each choice is a RapidCheck draw (so it shrinks toward the
/// low end). Use only inside rc::gen::exec or a property body.
class RcSource final : public Source {
 public:
  int64_t range(int64_t lo, int64_t hi) override {
    return lo >= hi ? lo : *rc::gen::inRange<int64_t>(lo, hi + 1);
  }
  uint32_t seed() override { return *rc::gen::arbitrary<uint32_t>(); }
};

}  // namespace kvcheck::props
