#include "properties/harness.h"

#include "properties/case_isolation.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "properties/blame.h"
#include "properties/classes.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck::props {

std::vector<ByteRange> merge_ranges(std::vector<ByteRange> r, int64_t size) {
  for (ByteRange& x : r) x = {std::clamp<int64_t>(x.begin, 0, size), std::clamp<int64_t>(x.end, 0, size)};
  std::sort(r.begin(), r.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> merged;
  for (const ByteRange& x : r)
    if (!merged.empty() && x.begin <= merged.back().end) merged.back().end = std::max(merged.back().end, x.end);
    else merged.push_back(x);
  return merged;
}

int64_t first_change_outside(const std::vector<ByteRange>& merged, int64_t size,
                             std::initializer_list<std::pair<const uint8_t*, const uint8_t*>> pairs) {
  const auto first_in = [&](int64_t a, int64_t b) -> int64_t {
    int64_t first = -1;
    for (const auto& [before, after] : pairs) {
      if (a >= b || std::memcmp(before + a, after + a, static_cast<size_t>(b - a)) == 0) continue;
      int64_t i = a;
      while (before[i] == after[i]) ++i;
      if (first < 0 || i < first) first = i;
    }
    return first;
  };
  int64_t pos = 0;
  for (const ByteRange& r : merged) {
    if (const int64_t bad = first_in(pos, r.begin); bad >= 0) return bad;
    pos = std::max(pos, r.end);
  }
  return first_in(pos, size);
}

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
    : layout_(layout),
      bytes_(std::max(layout.size_bytes(), layout.packed_stride())),
      guard_(KVCache::canary_bytes_for(layout)),
      buf_(static_cast<size_t>(bytes_ + 2 * guard_)) {
  std::memset(buf_.data(), KVCache::kCanary, static_cast<size_t>(guard_));
  std::memset(data() + bytes_, KVCache::kCanary, static_cast<size_t>(guard_));
}

CacheLayout shape_layout(const CacheShape& shape) {
  // The stride is set as drawn, unvalidated: a fault scenario's invalid stride reaches
  // the backends, whose validation must refuse it (the buffer is what it claims).
  CacheLayout layout = CacheLayout::make(shape.format, shape.num_blocks, shape.block_size);
  if (shape.block_stride != 0) layout.block_stride = shape.block_stride;
  return layout;
}

Cache make_cache(const CacheShape& shape) {
  Cache cache(shape_layout(shape));
  fill_pattern(cache.bytes(), shape.fill_seed);
  return cache;
}

Cache copy_cache(const Cache& c) {
  Cache copy(c.layout());
  std::memcpy(copy.data(), c.data(), c.bytes().size());
  return copy;
}

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
                         int64_t scale_pad, int32_t offset)
    : data(offset + buffer_bytes(rows, data_row(format, data_pad), format.load_row_bytes())),
      scales(format.load_scale_row_bytes() > 0
                 ? offset + buffer_bytes(rows, scale_row(format, scale_pad), format.load_scale_row_bytes())
                 : kTail) {
  // Row strides below the row size are a shape fault of the scenario: the op must refuse them.
  fill_pattern(data.span(), seed);
  fill_pattern(scales.span(), seed ^ 0x5CA1E5u);
  out = {data.data() + offset, data_row(format, data_pad),
         format.load_scale_row_bytes() > 0 ? scales.data() + offset : nullptr, scale_row(format, scale_pad),
         std::max<int64_t>(rows, 0)};
}

LoadBuffers::LoadBuffers(const LoadScenario& s)
    : LoadBuffers(s.shape.format, s.out_rows, s.out_seed, s.out_data_pad, s.out_scale_pad, s.out_offset) {}

LoadBuffers::LoadBuffers(const LoadBuffers& o) : data(o.data.clone()), scales(o.scales.clone()), out(o.out) {
  out.data = data.data() + (o.out.data - o.data.data());
  if (out.scales) out.scales = scales.data() + (o.out.scales - o.scales.data());
}

namespace {

constexpr size_t kFarPrefixBytes = size_t{4} << 30;  // every int32-truncated offset lands in here or the rows

}  // namespace

FarKvRows::FarKvRows(const StoreScenario& s) {
  const int64_t rows = s.kv_rows();
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

ConcatSources::ConcatSources(const StoreScenario& s) {
  own_kv_c_ = s.kv;  // a copy: the scenario is never handed to the backend to write
  kv_c_ = {own_kv_c_.empty() ? nullptr : own_kv_c_.data(), s.kv_rows(), s.row_stride};
  if (s.pe_row_stride == 0) {  // a view of the kv rows, kv_lora_rank elements in
    k_pe_ = {own_kv_c_.empty() ? nullptr : own_kv_c_.data() + std::min<int64_t>(s.kv_lora_rank, s.row_stride),
             s.kv_rows(), s.row_stride};
    // The view's last row must end inside the kv buffer: one row fewer where it would not
    // (a fault case whose kv_lora_rank + rope_dim passes the row stride).
    if (k_pe_.rows > 0 && s.kv_lora_rank + int64_t{s.rope_dim} > s.row_stride) --k_pe_.rows;
    return;
  }
  const int64_t rows = s.pe_rows < 0 ? s.kv_rows() : s.pe_rows;
  own_k_pe_.assign(static_cast<size_t>(std::max<int64_t>(rows, 0) * s.pe_row_stride), 0x7FC0);  // NaN padding
  for (int64_t r = 0; r < std::min(rows, s.kv_rows()); ++r)
    for (int64_t e = 0; e < std::min<int64_t>(s.rope_dim, s.pe_row_stride); ++e)
      if (s.kv_lora_rank + e < s.row_stride)
        own_k_pe_[static_cast<size_t>(r * s.pe_row_stride + e)] =
            s.kv[static_cast<size_t>(r * s.row_stride + s.kv_lora_rank + e)];
  k_pe_ = {own_k_pe_.empty() ? nullptr : own_k_pe_.data(), rows, s.pe_row_stride};
  for (int64_t r = 0; r < s.kv_rows(); ++r)
    for (int64_t e = std::max(s.kv_lora_rank, 0); e < s.row_stride; ++e)
      own_kv_c_[static_cast<size_t>(r * s.row_stride + e)] ^= 0x2A55;  // not k_pe's values
}

std::string ConcatSources::written_since(const StoreScenario& s) const {
  const ConcatSources fresh(s);
  const auto first = [](const std::vector<bf16_bits>& now, const std::vector<bf16_bits>& was) -> int64_t {
    for (size_t i = 0; i < now.size(); ++i)
      if (now[i] != was[i]) return static_cast<int64_t>(i);
    return -1;
  };
  if (const int64_t i = first(own_kv_c_, fresh.own_kv_c_); i >= 0)
    return "element " + std::to_string(i) + " of the kv_c buffer" +
           (s.pe_row_stride == 0 ? " (k_pe a view into it)" : "") + " changed: the sources are only read";
  if (const int64_t i = first(own_k_pe_, fresh.own_k_pe_); i >= 0)
    return "element " + std::to_string(i) + " of the k_pe buffer changed: the sources are only read";
  return "";
}

Outcome run_store(const Backend* backend, const StoreScenario& s, Cache& cache, Cache* pe_cache,
                  std::string* inputs_written) {
  std::vector<int32_t> slots;  // slot_mapping then its tail, in one buffer (only when there is a tail)
  if (!s.slot_tail.empty()) {
    slots = s.slot_mapping;
    slots.insert(slots.end(), s.slot_tail.begin(), s.slot_tail.end());
  }
  const std::span<const int32_t> slot_mapping(s.slot_tail.empty() ? s.slot_mapping.data() : slots.data(),
                                              s.slot_mapping.size());
  std::optional<FarKvRows> far;
  if (s.far_row_stride > 0) far.emplace(s);
  const KVInput kv = far ? far->input() : kv_input(s);
  int64_t valid = 0;
  for (int32_t slot : s.slot_mapping) valid += slot >= 0;
  if (s.is_concat()) {
    const ConcatSources src(s);
    ConcatMlaArgs a{src.kv_c(), src.k_pe(), s.kv_lora_rank, s.rope_dim, slot_mapping, cache.view(), std::nullopt,
                    std::nullopt};
    if (s.rope) a.rope = rope_args(*s.rope);
    if (s.pe_shape) {
      if (s.pe_inside_cache >= 0) {
        const CacheLayout pe = shape_layout(*s.pe_shape);
        a.pe_cache = CacheView{cache.data() + s.pe_inside_cache, pe, std::max(pe.size_bytes(), pe.packed_stride())};
      } else {
        a.pe_cache = pe_cache->view();
      }
    }
    const auto ref_buffer = [](const CacheView& v, const CacheShape& sh) {
      return ref::PagedBuffer{{v.base, static_cast<size_t>(v.size_bytes)}, sh.format, sh.num_blocks, sh.block_size,
                              sh.block_stride};
    };
    Outcome out = capture([&] {
      const ScopedParallelism split(backend, s.threads, valid);
      if (backend)
        backend->concat_and_cache_mla(a);
      else if (a.pe_cache)
        ref::concat_and_cache_mla_split(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, slot_mapping,
                                        ref_buffer(a.cache, s.shape), ref_buffer(*a.pe_cache, *s.pe_shape),
                                        a.rope ? &*a.rope : nullptr);
      else
        ref::concat_and_cache_mla(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, slot_mapping, cache.bytes(),
                                  s.shape.format, s.shape.num_blocks, s.shape.block_size, s.shape.block_stride,
                                  a.rope ? &*a.rope : nullptr);
    });
    if (inputs_written) *inputs_written = src.written_since(s);  // (vLLM's fused kernel writes k_pe back)
    return out;
  }
  return capture([&] {
    const ScopedParallelism split(backend, s.threads, valid);
    if (backend)
      backend->store_kv_cache(kv, slot_mapping, cache.view());
    else
      ref::store_kv_cache(kv, slot_mapping, cache.bytes(), s.shape.format, s.shape.num_blocks, s.shape.block_size,
                          s.shape.block_stride);
  });
}

Outcome run_load(const Backend* backend, const LoadScenario& s, const Cache& cache, LoadBuffers& out) {
  int64_t covered = 0;
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    covered += std::max<int64_t>(0, int64_t{s.load_segments[i + 2]} - s.load_segments[i + 1]);  // raw segments: any int32
  return capture([&] {
    const ScopedParallelism split(backend, s.threads, covered);
    if (backend)
      backend->load_paged_kv_cache(cache.view(), s.load_segments, s.total_k, out.out);
    else
      ref::load_paged_kv_cache(cache.bytes(), s.shape.format, s.shape.num_blocks, s.shape.block_size,
                               s.load_segments, s.total_k, out.out, s.shape.block_stride);
  });
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

std::string compare_outcomes(const Outcome& ref, const Outcome& be, std::string_view backend) {
  if (ref.code != be.code)
    return fmt::format("error mismatch: reference {}; backend {} {}\n", show(ref), backend, show(be));
  // Both threw the same code: the one blame rule (blame.h) decides.
  if (ref.code) {
    const std::string bad = compare_errors(*ref.code, ref.code, ref.message, be.code, be.message);
    return bad.empty() ? "" : bad + "\n";
  }
  return "";
}

std::string first_framed_difference(int64_t size, const Buffer& want, const Buffer& got, const char* name,
                                    const char* what) {
  const auto m = std::mismatch(want.span().begin(), want.span().end(), got.span().begin());
  if (m.first == want.span().end()) return "";
  const int64_t at = (m.first - want.span().begin()) - kGuardBytes;
  const std::string where = at < 0       ? fmt::format("the canary band {} bytes before {}", -at, name)
                            : at >= size ? fmt::format("the canary band {} bytes past {}", at - size, name)
                                         : fmt::format("{} byte {}", name, at);
  return fmt::format("{}: {}: expected 0x{:02x}, actual 0x{:02x}\n", what, where, *m.first, *m.second);
}

std::string expect_outcomes(const std::string& fault, const std::optional<ErrorCode>& code, const Outcome& ref,
                            const Outcome& be, std::string_view backend) {
  if (code) {
    const std::string bad = compare_errors(*code, ref.code, ref.message, be.code, be.message);
    return bad.empty() ? "" : bad + "\n";
  }
  if (fault.empty()) {
    std::string fail;
    if (ref.code) fail += fmt::format("reference {} (expected it to return)\n", show(ref));
    if (be.code) fail += fmt::format("backend {} {} (expected it to return)\n", backend, show(be));
    return fail;
  }
  return compare_outcomes(ref, be, backend);
}

bool judge_unsupported(const Outcome& be, bool declared_outside, bool unchanged, const std::string& op,
                       std::string_view backend, Verdict& v) {
  if (be.code != ErrorCode::kUnsupported) return false;
  if (!unchanged)
    v.failure = fmt::format("op={} backend={}\nrefused with kUnsupported ({}) but changed bytes: a refusal writes "
                            "nothing\n", op, backend, be.message);
  else if (!declared_outside)
    v.failure = fmt::format("op={} backend={}\nrefused with kUnsupported a case inside its declared capabilities: {}\n"
                            "(declare the limit in the plugin's capabilities, or run the case)\n", op, backend,
                            be.message);
  else
    v.skipped = op + ": " + be.message;
  return true;
}

bool outside_paged(const BackendCapabilities& c, uint32_t ops, const CacheShape& shape) {
  return (c.ops & ops) != ops || !c.supports_format(shape.format) || !c.supports_block_size(shape.block_size) ||
         !c.supports_block_stride(shape.format, shape.block_size, shape.block_stride);
}

bool outside_kv(const BackendCapabilities& c, uint32_t ops, KvDtype dtype, KvDtype rows, int64_t block_size,
                int64_t num_kv_heads, int64_t head_dim, KvRecipe recipe) {
  return (c.ops & ops) != ops || !c.supports_kv_dtype(dtype) || !c.supports_kv_dtype_pair(dtype, rows) ||
         !c.supports_block_size(block_size) ||
         !c.supports_kv_shape(num_kv_heads, head_dim) || !c.supports_kv_store_recipe(dtype, recipe);
}

void require_isolated(const std::function<Verdict()>& check) {
  run_case([&] { require(check()); });
}

void require(const Verdict& v) {
  if (!v.failure.empty()) RC_FAIL(v.failure);
  if (!v.skipped.empty()) throw UnsupportedCase("the backend cannot run this scenario (kUnsupported): " + v.skipped);
}

std::string context(const std::string& op, const CacheShape& shape, std::string_view backend) {
  return fmt::format("op={} format={} backend={} block_size={} num_blocks={}", op, shape.format.name, backend,
                     shape.block_size, shape.num_blocks);
}

}  // namespace kvcheck::props
