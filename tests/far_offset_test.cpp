// Offsets past 2^31 elements on every host backend, without allocating gigabytes:
// kv_index_cat writes every one of its num_q*(wl+wr) output entries, so an output of
// more than 2^31 entries (8 GiB of int32) is needed to see an offset kept in 32 bits.
// The 8 GiB here are virtual: one 16 MiB memfd mapped again and again, so every
// entry i of the output is physical entry i mod 4 Mi; the input `right` repeats with
// the same period, so all writes that land on one physical entry write the same
// value, whatever the order. The 8 GiB before the output are another memfd, a canary
// band: an offset that wraps to a negative int32 writes there.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

constexpr size_t kUnit = size_t{16} << 20;  // bytes of one memfd, mapped repeatedly
constexpr size_t kUnitEntries = kUnit / sizeof(int32_t);

// A region of `bytes` (a multiple of kUnit) of virtual memory in which every kUnit
// bytes are the same physical memfd pages.
class AliasedRegion {
 public:
  AliasedRegion(void* at, size_t bytes, const char* name) {
    fd_ = memfd_create(name, 0);
    if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(kUnit)) != 0) {
      error_ = std::string("memfd: ") + std::strerror(errno);
      return;
    }
    for (size_t off = 0; off < bytes; off += kUnit)
      if (mmap(static_cast<uint8_t*>(at) + off, kUnit, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) ==
          MAP_FAILED) {
        error_ = std::string("mmap: ") + std::strerror(errno);
        return;
      }
    unit_ = static_cast<int32_t*>(mmap(nullptr, kUnit, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    if (unit_ == MAP_FAILED) {
      unit_ = nullptr;
      error_ = std::string("mmap: ") + std::strerror(errno);
    }
  }
  ~AliasedRegion() {
    if (unit_) munmap(unit_, kUnit);
    if (fd_ >= 0) close(fd_);
  }
  AliasedRegion(const AliasedRegion&) = delete;
  AliasedRegion& operator=(const AliasedRegion&) = delete;
  const std::string& error() const { return error_; }
  /// The physical entries (entry i of the region is unit()[i % kUnitEntries]).
  int32_t* unit() const { return unit_; }

 private:
  int fd_ = -1;
  int32_t* unit_ = nullptr;
  std::string error_;
};

// A reservation of address space, unmapped when done.
struct Reservation {
  void* base = nullptr;
  size_t bytes = 0;
  explicit Reservation(size_t n) : bytes(n) {
    base = mmap(nullptr, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) base = nullptr;
  }
  ~Reservation() {
    if (base) munmap(base, bytes);
  }
};

// Mutant 045: `out + int32(q * (wl + wr))`. Rows q >= 2048 of width 2^20 start past
// entry 2^31; truncated, they land up to 8 GiB before `out`, in the canary band.
TEST(FarOffsets, KvIndexCatOutputPast2e31Entries) {
  const int32_t width = 1 << 20, num_q = (1 << 11) + 4;  // 2^31 + 2^22 output entries
  const size_t entries = size_t{1} * static_cast<size_t>(num_q) * static_cast<size_t>(width);
  const size_t band = size_t{8} << 30;                              // int32 wraps reach 2^31 entries back
  const size_t region = (entries * sizeof(int32_t) + kUnit - 1) / kUnit * kUnit;
  Reservation space(band + 2 * region);
  if (!space.base) GTEST_SKIP() << "cannot reserve " << ((band + 2 * region) >> 30) << " GiB of address space";
  auto* base = static_cast<uint8_t*>(space.base);
  AliasedRegion canary(base, band, "kvcheck-canary"), out(base + band, region, "kvcheck-out"),
      right(base + band + region, region, "kvcheck-right");
  for (const AliasedRegion* r : {&canary, &out, &right})
    if (!r->error().empty()) GTEST_SKIP() << "aliased mappings unavailable: " << r->error();
  for (size_t i = 0; i < kUnitEntries; ++i) {
    canary.unit()[i] = 0x5A5A5A5A;
    out.unit()[i] = 0x6B6B6B6B;
    right.unit()[i] = i % 7 == 3 ? -1 : static_cast<int32_t>(i % 100003);
  }
  const int32_t cached = 5, cur = 11;
  const std::span<const int32_t> right_span(reinterpret_cast<const int32_t*>(base + band + region), entries);
  const std::span<int32_t> out_span(reinterpret_cast<int32_t*>(base + band), entries);
  for (const auto& b : available_backends()) {
    if (!b->capabilities().host_memory) continue;  // a device adapter would copy 8 GiB
    SCOPED_TRACE(std::string(b->name()));
    b->kv_index_cat({}, 0, right_span, width, num_q, cached, cur, out_span);
    size_t bad_canary = 0, bad_out = 0, first_bad = kUnitEntries;
    for (size_t i = 0; i < kUnitEntries; ++i) {
      bad_canary += canary.unit()[i] != 0x5A5A5A5A;
      const int32_t r = right.unit()[i];
      if (out.unit()[i] != (r == -1 ? -1 : r + cached + cur)) {
        ++bad_out;
        first_bad = std::min(first_bad, i);
      }
    }
    EXPECT_EQ(bad_canary, 0u) << "output rows past entry 2^31 were written before `out` (a 32-bit offset)";
    EXPECT_EQ(bad_out, 0u) << "output entry " << first_bad << " (mod " << kUnitEntries << ") is wrong";
    for (size_t i = 0; i < kUnitEntries; ++i) canary.unit()[i] = 0x5A5A5A5A, out.unit()[i] = 0x6B6B6B6B;
  }
}

}  // namespace
}  // namespace kvcheck
