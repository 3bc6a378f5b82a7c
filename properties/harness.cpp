#include "properties/harness.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace kvcheck::props {

namespace {

// The free storage of this thread's Buffers (each vector's size is its capacity).
std::vector<std::vector<uint8_t>>& pool() {
  thread_local std::vector<std::vector<uint8_t>> free;
  return free;
}

constexpr size_t kAlign = 256;
constexpr size_t kRedZone = 4096;

}  // namespace

Buffer::Buffer(size_t size) : size_(size) {
  auto& free = pool();
  const size_t need = size + kAlign + kRedZone;
  // The smallest free storage that fits, else the largest (grown: zero-filled once).
  size_t best = free.size();
  for (size_t i = 0; i < free.size(); ++i) {
    if (best == free.size()) {
      best = i;
      continue;
    }
    const bool fits = free[i].size() >= need, best_fits = free[best].size() >= need;
    const bool better = fits != best_fits ? fits
                        : fits            ? free[i].size() < free[best].size()
                                          : free[i].size() > free[best].size();
    if (better) best = i;
  }
  if (best < free.size()) {
    storage_ = std::move(free[best]);
    free.erase(free.begin() + static_cast<std::ptrdiff_t>(best));
  }
  if (storage_.size() < need) storage_.resize(need);
  const auto addr = reinterpret_cast<uintptr_t>(storage_.data());
  base_ = storage_.data() + ((kAlign - addr % kAlign) % kAlign);
  poison(true);
}

// The alignment gap before the buffer and up to kRedZone bytes after it: ASan reports an
// access there as it would past a fresh allocation (its own red zones are smaller).
void Buffer::poison(bool on) {
  const size_t head = static_cast<size_t>(base_ - storage_.data());
  const size_t tail = std::min(kRedZone, storage_.size() - head - size_);
  if (on) {
    ASAN_POISON_MEMORY_REGION(storage_.data(), head);
    ASAN_POISON_MEMORY_REGION(base_ + size_, tail);
  } else {
    ASAN_UNPOISON_MEMORY_REGION(storage_.data(), head);
    ASAN_UNPOISON_MEMORY_REGION(base_ + size_, tail);
  }
}

Buffer::Buffer(Buffer&& o) noexcept : storage_(std::move(o.storage_)), base_(o.base_), size_(o.size_) {
  o.base_ = nullptr;
  o.size_ = 0;
}

Buffer::~Buffer() {
  if (storage_.empty()) return;
  poison(false);
  auto& free = pool();
  if (free.size() < 32) free.push_back(std::move(storage_));
}

Buffer Buffer::clone() const {
  Buffer b(size_);
  if (size_ > 0) std::memcpy(b.base_, base_, size_);
  return b;
}

bool Buffer::operator==(const Buffer& o) const {
  return size_ == o.size_ && (size_ == 0 || std::memcmp(base_, o.base_, size_) == 0);
}

Cache::Cache(const CacheLayout& layout)
    : layout_(layout), buf_(static_cast<size_t>(layout.size_bytes() + 2 * kGuardBytes)) {
  std::memset(buf_.data(), KVCache::kCanary, kGuardBytes);
  std::memset(buf_.data() + kGuardBytes + layout.size_bytes(), KVCache::kCanary, kGuardBytes);
}

bool Cache::guards_intact() const {
  const uint8_t* before = buf_.data();
  const uint8_t* after = data() + layout_.size_bytes();
  for (int64_t i = 0; i < kGuardBytes; ++i)
    if (before[i] != KVCache::kCanary || after[i] != KVCache::kCanary) return false;
  return true;
}

Cache make_cache(const CacheShape& shape) {
  Cache cache(CacheLayout::make(shape.format, shape.num_blocks, shape.block_size));
  fill_pattern(cache.bytes(), shape.fill_seed);
  return cache;
}

Cache copy_cache(const Cache& c) {
  Cache copy(c.layout());
  std::memcpy(copy.data(), c.data(), c.bytes().size());
  return copy;
}

CacheView view(Cache& cache) { return {cache.data(), cache.layout()}; }
ConstCacheView const_view(const Cache& cache) { return {cache.data(), cache.layout()}; }

KVInput kv_input(const StoreScenario& s) {
  // rows is what the buffer holds; the op must take its row count from slot_mapping.
  return {s.kv.empty() ? nullptr : s.kv.data(), s.kv_rows(), s.row_stride};
}

namespace {

int64_t data_row(const KVCacheFormat& f, int64_t pad) { return f.load_row_bytes() + pad; }
int64_t scale_row(const KVCacheFormat& f, int64_t pad) {
  return f.load_scale_row_bytes() > 0 ? f.load_scale_row_bytes() + pad : 0;
}
size_t buffer_bytes(int64_t rows, int64_t stride, int64_t row_bytes) {
  return static_cast<size_t>(std::max<int64_t>(rows, 0) * std::max(stride, row_bytes) + LoadBuffers::kTail);
}

}  // namespace

LoadBuffers::LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed, int64_t data_pad,
                         int64_t scale_pad)
    : data(buffer_bytes(rows, data_row(format, data_pad), format.load_row_bytes())),
      scales(format.load_scale_row_bytes() > 0
                 ? buffer_bytes(rows, scale_row(format, scale_pad), format.load_scale_row_bytes())
                 : 0) {
  // Row strides below the row size are a shape fault of the scenario: the op must refuse them.
  fill_pattern(data.span(), seed);
  fill_pattern(scales.span(), seed ^ 0x5CA1E5u);
  out = {data.data(), data_row(format, data_pad), scales.size() > 0 ? scales.data() : nullptr,
         scale_row(format, scale_pad), std::max<int64_t>(rows, 0)};
}

LoadBuffers::LoadBuffers(const LoadBuffers& o) : data(o.data.clone()), scales(o.scales.clone()), out(o.out) {
  out.data = data.data();
  if (out.scales) out.scales = scales.data();
}

Outcome capture(const std::function<void()>& f) {
  try {
    f();
    return {};
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
}

std::string show(const Outcome& o) { return o.code ? "threw " + o.message : std::string("returned normally"); }

std::string blame(const std::string& m) {
  for (size_t open = m.find('['); open != std::string::npos; open = m.find('[', open + 1)) {
    size_t begin = open;
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(m[begin - 1])) || m[begin - 1] == '_' || m[begin - 1] == '.'))
      --begin;
    size_t end = open + 1;
    while (end < m.size() && std::isdigit(static_cast<unsigned char>(m[end]))) ++end;
    if (begin < open && end > open + 1 && end < m.size() && m[end] == ']') return m.substr(begin, end + 1 - begin);
  }
  return "";
}

std::string compare_outcomes(const Outcome& ref, const Outcome& be, std::string_view backend) {
  if (ref.code != be.code)
    return fmt::format("error mismatch: reference {}; backend {} {}\n", show(ref), backend, show(be));
  if (ref.code && blame(ref.message) != blame(be.message))
    return fmt::format("both threw {}, but blame different entries: reference '{}' ({}), backend {} '{}' ({})\n",
                       to_string(*ref.code), blame(ref.message), ref.message, backend, blame(be.message), be.message);
  return "";
}

std::string expect_outcomes(const std::string& fault, const std::optional<ErrorCode>& code, const Outcome& ref,
                            const Outcome& be, std::string_view backend) {
  std::string fail;
  if (fault.empty() || code) {
    const std::string want = code ? std::string(to_string(*code)) : std::string("it to return");
    if (ref.code != code) fail += fmt::format("reference {} (expected {})\n", show(ref), want);
    if (be.code != code) fail += fmt::format("backend {} {} (expected {})\n", backend, show(be), want);
    if (!fail.empty()) return fail;
  }
  return compare_outcomes(ref, be, backend);
}

void require(const Verdict& v) {
  if (!v.failure.empty()) RC_FAIL(v.failure);
  if (!v.skipped.empty()) RC_FAIL("the backend cannot run this scenario (kUnsupported): " + v.skipped);
}

std::string context(const std::string& op, const CacheShape& shape, std::string_view backend) {
  return fmt::format("op={} format={} backend={} block_size={} num_blocks={}", op, shape.format.name, backend,
                     shape.block_size, shape.num_blocks);
}

}  // namespace kvcheck::props
