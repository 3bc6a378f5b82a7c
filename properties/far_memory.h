// Address space far larger than the memory behind it, for offsets past 2^31 elements
// (SPEC §6 "Reach of the property layer": 32-bit offsets). kv_index_cat writes every
// entry of its output, so seeing a 32-bit row offset there needs more than 2^31
// output entries (8 GiB of int32): here those 8 GiB are one 16 MiB memfd mapped again
// and again, so entry i of a region is physical entry i mod kUnitEntries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kvcheck::props {

inline constexpr size_t kUnitBytes = size_t{16} << 20;  // one memfd, mapped repeatedly
inline constexpr size_t kUnitEntries = kUnitBytes / sizeof(int32_t);

/// A PROT_NONE reservation of `bytes` of address space (MAP_NORESERVE), unmapped when
/// done; base() is null when the reservation failed.
class Reservation {
 public:
  explicit Reservation(size_t bytes);
  ~Reservation();
  Reservation(const Reservation&) = delete;
  Reservation& operator=(const Reservation&) = delete;
  uint8_t* base() const { return base_; }

 private:
  uint8_t* base_ = nullptr;
  size_t bytes_;
};

/// `bytes` (a multiple of kUnitBytes) at `at`, inside a Reservation, in which every
/// kUnitBytes are the same physical pages of one memfd. error() is "" on success.
class AliasedRegion {
 public:
  AliasedRegion(uint8_t* at, size_t bytes, const char* name);
  ~AliasedRegion();
  AliasedRegion(const AliasedRegion&) = delete;
  AliasedRegion& operator=(const AliasedRegion&) = delete;
  const std::string& error() const { return error_; }
  /// The physical entries: entry i of the region is unit()[i % kUnitEntries].
  int32_t* unit() const { return unit_; }

 private:
  int fd_ = -1;
  int32_t* unit_ = nullptr;
  std::string error_;
};

}  // namespace kvcheck::props
