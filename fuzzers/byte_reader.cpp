#include "fuzzers/byte_reader.h"

#include <algorithm>

namespace kvcheck::fuzz {

int64_t ByteSource::range(int64_t lo, int64_t hi) {
  if (lo >= hi) return lo;
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // hi - lo, no overflow
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && (span >> shift) != 0 && pos_ < size_; shift += 8)
    v |= uint64_t{data_[pos_++]} << shift;
  if (span != UINT64_MAX) v %= span + 1;
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + v);
}

int64_t ByteSource::count(int64_t lo, int64_t hi, int64_t cost) {
  const int64_t room = static_cast<int64_t>(remaining()) / std::max<int64_t>(cost, 1);
  return range(lo, std::min(hi, lo + room));
}

uint16_t ByteSource::u16() {
  if (remaining() < 2) return 0;
  const uint16_t v = static_cast<uint16_t>(data_[pos_] | (data_[pos_ + 1] << 8));
  pos_ += 2;
  return v;
}

}  // namespace kvcheck::fuzz
