// The byte reader of the fuzz decoders: a props::Source (properties/gen/source.h) over
// libFuzzer's input, so a decoder is the very builder the RapidCheck generator runs.
//
// Each choice range(lo, hi) reads the fewest little-endian bytes that hold hi - lo
// (one byte up to 255 values, two up to 65,536, ...) from the front of the input and
// answers lo + value % (hi - lo + 1); once the input is exhausted every choice answers
// lo, the simplest. Counts are bounded by what is left: count(lo, hi, cost) <= lo +
// remaining / cost. So the empty input is the simplest scenario (0 rows, 1 block), a
// scenario grows with its input, and libFuzzer's byte minimisation (-minimize_crash=1)
// minimises the scenario too: fewer bytes, fewer rows and blocks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "properties/gen/source.h"

namespace kvcheck::fuzz {

class ByteSource final : public props::Source {
 public:
  ByteSource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  int64_t range(int64_t lo, int64_t hi) override;
  int64_t count(int64_t lo, int64_t hi, int64_t cost) override;
  uint32_t seed() override { return static_cast<uint32_t>(range(0, UINT32_MAX)); }
  size_t remaining() const { return size_ - pos_; }
  /// The next two bytes as a little-endian value; 0 when fewer than two are left.
  uint16_t u16();

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace kvcheck::fuzz
