#include "properties/far_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kvcheck::props {

Reservation::Reservation(size_t bytes) : bytes_(bytes) {
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  base_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

Reservation::~Reservation() {
  if (base_) munmap(base_, bytes_);
}

AliasedRegion::AliasedRegion(uint8_t* at, size_t bytes, const char* name) {
  fd_ = memfd_create(name, 0);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(kUnitBytes)) != 0) {
    error_ = std::string("memfd: ") + std::strerror(errno);
    return;
  }
  // MAP_FIXED over the reservation: the pages stay ours until the Reservation unmaps them.
  for (size_t off = 0; off < bytes; off += kUnitBytes)
    if (mmap(at + off, kUnitBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED) {
      error_ = std::string("mmap: ") + std::strerror(errno);
      return;
    }
  void* u = mmap(nullptr, kUnitBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (u == MAP_FAILED) {
    error_ = std::string("mmap: ") + std::strerror(errno);
    return;
  }
  unit_ = static_cast<int32_t*>(u);
}

AliasedRegion::~AliasedRegion() {
  if (unit_) munmap(unit_, kUnitBytes);
  if (fd_ >= 0) close(fd_);
}

}  // namespace kvcheck::props
