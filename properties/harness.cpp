#include "properties/harness.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "properties/classes.h"

#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck::props {

KVCache make_cache(const CacheShape& shape) {
  KVCache cache = KVCache::with_canaries(CacheLayout::make(shape.format, shape.num_blocks, shape.block_size));
  fill_pattern(cache.bytes(), shape.fill_seed);
  return cache;
}

CacheView view(KVCache& cache) { return cache.view(); }
ConstCacheView const_view(const KVCache& cache) { return cache.view(); }

KVInput kv_input(const StoreScenario& s) {
  // rows is what the buffer holds; the op must take its row count from slot_mapping.
  const int64_t rows = s.row_stride > 0 ? static_cast<int64_t>(s.kv.size()) / s.row_stride : 0;
  return {s.kv.data(), rows, s.row_stride};
}

LoadBuffers::LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed)
    : LoadBuffers(format, rows, seed, 16, 16, 0) {}

LoadBuffers::LoadBuffers(const LoadScenario& s)
    : LoadBuffers(s.shape.format, s.out_rows, s.out_seed, s.out_data_pad, s.out_scale_pad, s.out_offset) {}

LoadBuffers::LoadBuffers(const KVCacheFormat& format, int64_t rows, uint32_t seed, int64_t data_pad,
                         int64_t scale_pad, int32_t offset) {
  rows = std::max<int64_t>(rows, 0);
  const int64_t row = format.load_row_bytes() + data_pad;
  const int64_t sf_row = format.load_scale_row_bytes() > 0 ? format.load_scale_row_bytes() + scale_pad : 0;
  data.resize(static_cast<size_t>(std::max<int64_t>(1, offset + rows * row)));
  scales.resize(static_cast<size_t>(std::max<int64_t>(1, offset + rows * sf_row)));
  fill_pattern(data, seed);
  fill_pattern(scales, seed ^ 0x5CA1E5u);
  out = {data.data() + offset, row, sf_row > 0 ? scales.data() + offset : nullptr, sf_row, rows};
}

namespace {

constexpr size_t kFarPrefixBytes = size_t{4} << 30;  // every int32-truncated offset lands in here or the rows

}  // namespace

FarKvRows::FarKvRows(const StoreScenario& s) {
  const int64_t rows = s.row_stride > 0 ? static_cast<int64_t>(s.kv.size()) / s.row_stride : 0;
  const int64_t span = rows == 0 ? 0 : (rows - 1) * s.far_row_stride + s.row_stride;  // elements
  size_ = kFarPrefixBytes + static_cast<size_t>(span) * 2 + 4096;
  base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw std::runtime_error(fmt::format("cannot reserve {} GiB of address space for far kv rows: {}",
                                         size_ >> 30, std::strerror(errno)));
  }
  auto* kv = reinterpret_cast<bf16_bits*>(static_cast<uint8_t*>(base_) + kFarPrefixBytes);
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(kv + r * s.far_row_stride, &s.kv[static_cast<size_t>(r * s.row_stride)],
                static_cast<size_t>(s.row_stride) * 2);
  input_ = {kv, rows, s.far_row_stride};
}

FarKvRows::~FarKvRows() {
  if (base_) munmap(base_, size_);
}

ScopedParallelism::ScopedParallelism(const Backend* backend, int32_t threads, int64_t work_rows) {
  if (backend == nullptr || threads <= 0) return;
  if (!backend->set_test_parallelism(threads, 1)) return;
  backend_ = backend;
  if (threads >= 2 && work_rows >= 2) note_class("multi-thread");
}

ScopedParallelism::~ScopedParallelism() {
  if (backend_) backend_->set_test_parallelism(0, 0);
}

std::optional<ErrorCode> run_store(const Backend* backend, const StoreScenario& s, KVCache& cache, std::string* what) {
  std::vector<int32_t> slots(s.slot_mapping);
  slots.insert(slots.end(), s.slot_tail.begin(), s.slot_tail.end());
  const std::span<const int32_t> slot_mapping(slots.data(), s.slot_mapping.size());
  std::optional<FarKvRows> far;
  if (s.far_row_stride > 0) far.emplace(s);
  const KVInput kv = far ? far->input() : kv_input(s);
  int64_t valid = 0;
  for (int32_t slot : s.slot_mapping) valid += slot >= 0;
  try {
    const ScopedParallelism split(backend, s.threads, valid);
    if (backend)
      backend->store_kv_cache(kv, slot_mapping, view(cache));
    else
      ref::store_kv_cache(kv, slot_mapping, cache.bytes(), s.shape.format, s.shape.num_blocks, s.shape.block_size);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return std::nullopt;
}

std::optional<ErrorCode> run_load(const Backend* backend, const LoadScenario& s, const KVCache& cache,
                                  LoadBuffers& out, std::string* what) {
  int64_t covered = 0;
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    covered += std::max<int64_t>(0, int64_t{s.load_segments[i + 2]} - s.load_segments[i + 1]);  // bogus ranges too
  try {
    const ScopedParallelism split(backend, s.threads, covered);
    if (backend)
      backend->load_paged_kv_cache(const_view(cache), s.load_segments, s.total_k, out.out);
    else
      ref::load_paged_kv_cache(cache.bytes(), s.shape.format, s.shape.num_blocks, s.shape.block_size,
                               s.load_segments, s.total_k, out.out);
  } catch (const Error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return std::nullopt;
}

std::string context(const std::string& op, const CacheShape& shape, std::string_view backend) {
  return fmt::format("op={} format={} backend={} block_size={} num_blocks={}", op, shape.format.name,
                     backend, shape.block_size, shape.num_blocks);
}

std::string show_error(const std::optional<ErrorCode>& e) {
  return e ? fmt::format("threw {}", to_string(*e)) : std::string("returned normally");
}

}  // namespace kvcheck::props
