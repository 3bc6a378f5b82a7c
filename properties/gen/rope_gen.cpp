// The fused RoPE of a scenario (docs/spec.md §8.4): builder, faults, printer, JSON.
#include "properties/gen/rope_gen.h"

#include <nlohmann/json.hpp>
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <mutex>
#include <ostream>
#include <span>
#include <stdexcept>

#include "properties/gen/scenario_json.h"
#include "properties/gen/splitmix.h"  // KVCHECK_BULK

namespace kvcheck::props {
namespace {

// The kept blocks of large RoPE tables (rope_table_allocate): free ones (poisoned) and
// live ones, each with its size in bytes. Never destroyed: a table may outlive statics.
struct TableBlocks {
  std::mutex m;
  std::vector<std::pair<void*, size_t>> free, live;
};
TableBlocks& table_blocks() {
  static TableBlocks* b = new TableBlocks;
  return *b;
}
constexpr size_t kKeptTableBytes = size_t{1} << 20;  // tables this large or larger are kept
constexpr size_t kMaxFreeTables = 4;

/// One fp32 value of a cos/sin table row drawn in `mode`: 0 real angles, 1 special
/// values, else any bits.
float table_value(Source& src, int mode, int64_t p, int32_t j, int32_t half, bool sin) {
  switch (mode) {
    case 0: {  // real RoPE: angle p * 10000^(-j/half), cos then sin, rounded once to fp32
      const double angle = static_cast<double>(p) * std::pow(10000.0, -static_cast<double>(j) / half);
      return static_cast<float>(sin ? std::sin(angle) : std::cos(angle));
    }
    case 1:
      return src.pick<float>({0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1.0f / 3.0f, std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), 1e-30f,
                              0.70710678f});
    default:  // any bits
      return std::bit_cast<float>(static_cast<uint32_t>(src.range(0, UINT32_MAX)));
  }
}

/// Rows [0, rows) of a large table's cheap pattern into `t` (rot_dim floats a row,
/// rot_dim even): row p holds ((p + j) & 1023) / 1024 at j and -((p ^ j) & 511) / 512 at
/// half + j, j < half. Both depend on p mod 1024 only (1024 is masked out of both), so
/// row p + 1024 equals row p: the first 1024 rows are computed (unsigned counters and a
/// running row pointer, no overflow check per element), the rest copied from them.
KVCHECK_BULK void fill_rope_pattern(float* t, int64_t rows, int32_t rot_dim) {
  const uint32_t half = static_cast<uint32_t>(rot_dim / 2);
  const int64_t computed = std::min<int64_t>(rows, 1024);
  float* row = t;
  for (uint32_t p = 0; p < static_cast<uint32_t>(computed); ++p, row += rot_dim) {
    float* const sin = row + half;
    for (uint32_t j = 0; j < half; ++j) row[j] = static_cast<float>((p + j) & 1023u) * (1.0f / 1024);
    for (uint32_t j = 0; j < half; ++j) sin[j] = static_cast<float>((p ^ j) & 511u) * (-1.0f / 512);
  }
  // Rows [done, done + n) = rows [0, n): done is a multiple of 1024 (1024, 2048, 4096 ...).
  for (int64_t done = computed; done < rows;) {
    const int64_t n = std::min(done, rows - done);
    std::memcpy(t + done * rot_dim, t, static_cast<size_t>(n * rot_dim) * sizeof(float));
    done += n;
  }
}

/// After a fault changed rot_dim: the table's rows as the args claim them never pass its
/// buffer (max_position lowered, never the buffer grown: a large table at a wider rot_dim
/// would be gigabytes). The shape rule the fault breaks is checked before any position.
void claim_what_the_table_holds(ScenarioRope& r) {
  if (r.rot_dim > 0)
    r.max_position = std::min<int64_t>(r.max_position, std::max<int64_t>(1, static_cast<int64_t>(r.cos_sin.size()) / r.rot_dim));
  if (r.rot_dim > 0 && r.max_position * r.rot_dim > static_cast<int64_t>(r.cos_sin.size()))
    r.cos_sin.resize(static_cast<size_t>(r.max_position * r.rot_dim));  // (a table smaller than one row)
}

}  // namespace

namespace {

// A block of at least `bytes` (RopeTable's storage): a kept free one when one fits, the
// bytes past `bytes` left poisoned.
void* table_allocate(size_t bytes) {
  if (bytes < kKeptTableBytes) return ::operator new(bytes);
  TableBlocks& b = table_blocks();
  const std::lock_guard<std::mutex> lock(b.m);
  size_t best = b.free.size();  // the smallest free block that fits
  for (size_t i = 0; i < b.free.size(); ++i)
    if (b.free[i].second >= bytes && (best == b.free.size() || b.free[i].second < b.free[best].second)) best = i;
  std::pair<void*, size_t> block;
  if (best < b.free.size()) {
    block = b.free[best];
    b.free.erase(b.free.begin() + static_cast<std::ptrdiff_t>(best));
    ASAN_UNPOISON_MEMORY_REGION(block.first, bytes);
  } else {
    block = {::operator new(bytes), bytes};
  }
  b.live.push_back(block);
  return block.first;
}

void table_deallocate(void* p, size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kKeptTableBytes) {
    ::operator delete(p);
    return;
  }
  TableBlocks& b = table_blocks();
  const std::lock_guard<std::mutex> lock(b.m);
  const auto it = std::find_if(b.live.begin(), b.live.end(), [p](const auto& x) { return x.first == p; });
  if (it == b.live.end()) {  // (not one of ours: every block table_allocate kept is live here)
    ::operator delete(p);
    return;
  }
  const std::pair<void*, size_t> block = *it;
  b.live.erase(it);
  ASAN_POISON_MEMORY_REGION(block.first, block.second);
  b.free.push_back(block);
  if (b.free.size() > kMaxFreeTables) {  // the oldest goes back
    ASAN_UNPOISON_MEMORY_REGION(b.free.front().first, b.free.front().second);
    ::operator delete(b.free.front().first);
    b.free.erase(b.free.begin());
  }
}

}  // namespace

RopeTable::RopeTable(const RopeTable& o)
    : data_(o.size_ == 0 ? nullptr : static_cast<float*>(table_allocate(o.size_ * sizeof(float)))), size_(o.size_) {
  if (size_ > 0) std::memcpy(data_, o.data_, size_ * sizeof(float));
}

RopeTable::RopeTable(RopeTable&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

RopeTable& RopeTable::operator=(RopeTable o) noexcept {
  std::swap(data_, o.data_);
  std::swap(size_, o.size_);
  return *this;
}

RopeTable::~RopeTable() { table_deallocate(data_, size_ * sizeof(float)); }

void RopeTable::resize(size_t n) {
  if (n == size_) return;
  float* const p = n == 0 ? nullptr : static_cast<float*>(table_allocate(n * sizeof(float)));
  const size_t kept = std::min(n, size_);
  if (kept > 0) std::memcpy(p, data_, kept * sizeof(float));
  if (n > kept) std::memset(p + kept, 0, (n - kept) * sizeof(float));  // all-zero bits: 0.0f
  table_deallocate(data_, size_ * sizeof(float));
  data_ = p;
  size_ = n;
}

RopeArgs rope_args(const ScenarioRope& r) {
  return {r.cos_sin.data(), r.max_position, r.positions.data(), static_cast<int64_t>(r.positions.size()), r.rot_dim,
          r.rope_offset, r.is_neox};
}

ScenarioRope build_rope(Source& src, int32_t width, int64_t n, bool whole_neox) {
  ScenarioRope r;
  r.is_neox = whole_neox || src.coin();
  if (whole_neox || src.coin()) {  // the whole row (MLA's 64 rope dims; a head's head_dim)
    r.rot_dim = width / 2 * 2;
  } else {  // a sub-range anywhere in the row (partial rotary)
    r.rot_dim = static_cast<int32_t>(2 * src.range(1, width / 2));
    r.rope_offset = static_cast<int32_t>(src.range(0, width - r.rot_dim));
  }
  const int32_t half = r.rot_dim / 2;
  // A small table, or one of up to 2^20 floats whose last rows are drawn (a row one too
  // far reads past it; 2^20 floats keep p * rot_dim far from 32-bit overflow, which no
  // case here can show).
  r.max_position = src.weighted({7, 1}) == 0 ? src.range(1, 24)
                                             : std::max<int64_t>(1, (int64_t{1} << 20) / r.rot_dim - src.range(0, 7));
  // A large table's rows but its last 4 hold a cheap pattern (fill_rope_pattern).
  const int64_t pattern_rows = r.max_position > 64 ? r.max_position - 4 : 0;
  r.cos_sin.resize(static_cast<size_t>(r.max_position * r.rot_dim));
  fill_rope_pattern(r.cos_sin.data(), pattern_rows, r.rot_dim);
  const int table_mode = static_cast<int>(src.weighted({4, 2, 1, 2, 2}));  // 3: sin = cos; 4: rows of mixed modes
  for (int64_t p = pattern_rows; p < r.max_position; ++p) {
    float* row = r.cos_sin.data() + p * r.rot_dim;
    const int m = table_mode < 4 ? table_mode : static_cast<int>(src.weighted({4, 2, 1, 2}));
    for (int32_t j = 0; j < half; ++j) {
      row[j] = table_value(src, m == 3 ? 0 : m, p, j, half, false);
      row[half + j] = m == 3 ? row[j] : table_value(src, m, p, j, half, true);
    }
  }
  const int64_t extra = src.weighted({3, 1}) == 1 ? src.range(1, 3) : 0;  // CUDA-graph padding rows
  r.positions.resize(static_cast<size_t>(n + extra));
  for (int64_t i = 0; i < n; ++i) {
    int64_t& p = r.positions[static_cast<size_t>(i)];
    switch (src.weighted({4, 1, 1})) {
      case 0: p = src.range(std::max<int64_t>(0, r.max_position - 64), r.max_position - 1); break;
      case 1: p = 0; break;
      default: p = r.max_position - 1; break;
    }
  }
  for (int64_t i = n; i < n + extra; ++i)  // never read: junk that breaks the position rule
    r.positions[static_cast<size_t>(i)] = src.pick<int64_t>({-1, r.max_position, INT64_MIN});
  return r;
}

bool rope_cancels(const ScenarioRope& r, int64_t i) {
  const int32_t half = r.rot_dim / 2;
  if (half < 1 || i < 0 || static_cast<size_t>(i) >= r.positions.size()) return false;
  const int64_t p = r.positions[static_cast<size_t>(i)];
  if (p < 0 || p >= r.max_position || static_cast<size_t>((p + 1) * r.rot_dim) > r.cos_sin.size()) return false;
  const float* row = r.cos_sin.data() + p * r.rot_dim;
  if (std::memcmp(row, row + half, sizeof(float) * static_cast<size_t>(half)) != 0) return false;
  return std::any_of(row, row + half, [](float c) { return c != 0 && c != 1 && c != -1; });
}

void make_pairs_equal(const ScenarioRope& r, uint16_t* row) {
  const int32_t half = r.rot_dim / 2;
  for (int32_t j = 0; j < half; ++j) {
    const int32_t a = r.rope_offset + (r.is_neox ? j : 2 * j);
    const int32_t b = r.rope_offset + (r.is_neox ? j + half : 2 * j + 1);
    row[b] = row[a];
  }
}

void inject_rope_fault(Source& src, ScenarioRope& r, int32_t width, int64_t n, std::string& fault,
                       std::optional<ErrorCode>& code) {
  std::vector<int> kinds{1, 2, 3, 4, 5};
  if (n > 0) kinds.insert(kinds.end(), {6, 7, 7});
  code = ErrorCode::kInvalidArgument;
  switch (src.pick(std::span<const int>(kinds))) {
    case 1:
      r.rot_dim = src.pick<int32_t>({r.rot_dim > 2 ? r.rot_dim - 1 : r.rot_dim + 1, -2, 0});
      claim_what_the_table_holds(r);
      fault = "rot_dim = " + std::to_string(r.rot_dim) + " (odd or < 2)";
      return;
    case 2:
      r.rope_offset = -1;
      fault = "rope_offset = -1";
      return;
    case 3:
      r.rope_offset = width - r.rot_dim + 1;
      fault = "rope_offset + rot_dim = " + std::to_string(r.rope_offset + r.rot_dim) + " > the row's " +
              std::to_string(width) + " elements";
      return;
    case 4:
      r.rot_dim = width / 2 * 2 + 2;  // even, one pair past the row
      r.rope_offset = 0;
      claim_what_the_table_holds(r);
      fault = "rot_dim = " + std::to_string(r.rot_dim) + " > the row's " + std::to_string(width) + " elements";
      return;
    case 5:
      r.max_position = src.pick<int64_t>({0, -1});
      fault = "max_position = " + std::to_string(r.max_position);
      return;
    case 6:
      r.positions.resize(static_cast<size_t>(n - 1));
      fault = "positions has one row fewer than slot_mapping";
      code = ErrorCode::kShapeMismatch;
      return;
    default: {
      const int64_t i = src.range(0, n - 1);
      r.positions[static_cast<size_t>(i)] =
          src.pick<int64_t>({-1, r.max_position, r.max_position + 1000, INT64_MIN, INT64_MAX});
      fault = "positions[" + std::to_string(i) + "] = " + std::to_string(r.positions[static_cast<size_t>(i)]) +
              " outside [0, " + std::to_string(r.max_position) + ")";
      return;
    }
  }
}

void inject_position_before_slot(ScenarioRope& r, std::vector<int32_t>& slot_mapping, int64_t num_slots,
                                 std::string& fault, std::optional<ErrorCode>& code) {
  const size_t n = slot_mapping.size();
  slot_mapping[0] = static_cast<int32_t>(num_slots);
  r.positions[n - 1] = r.max_position;
  fault = "slot_mapping[0] out of range and positions[" + std::to_string(n - 1) + "] = " +
          std::to_string(r.max_position) + ": the position is the error (positions before slots)";
  code = ErrorCode::kInvalidArgument;
}

void fit_positions(ScenarioRope& r, int64_t old_n, size_t rows) {
  if (r.positions.size() < rows) r.positions.resize(rows, 0);
  for (size_t i = static_cast<size_t>(old_n); i < rows; ++i) r.positions[i] = 0;
}

void showValue(const ScenarioRope& r, std::ostream& os) {
  os << "rope(" << (r.is_neox ? "neox" : "gptj") << " rot_dim=" << r.rot_dim << " rope_offset=" << r.rope_offset
     << " max_position=" << r.max_position << " positions=[";
  for (size_t i = 0; i < std::min<size_t>(r.positions.size(), 16); ++i) os << (i ? " " : "") << r.positions[i];
  os << (r.positions.size() > 16 ? " ..." : "") << "] rows=" << r.positions.size() << ")";
}

namespace {
// The leading whole rows of r's table that equal fill_rope_pattern's, bit for bit (0
// where rot_dim is not even and positive): a large table's drawn rows are its last few,
// so its file names the pattern's rows by their count instead of holding 2^20 floats.
int64_t pattern_prefix_rows(const ScenarioRope& r) {
  if (r.rot_dim <= 0 || r.rot_dim % 2 != 0) return 0;
  const int64_t rows = static_cast<int64_t>(r.cos_sin.size()) / r.rot_dim;
  const int64_t period = std::min<int64_t>(rows, 1024);  // row p + 1024 = row p (fill_rope_pattern)
  std::vector<float> pattern(static_cast<size_t>(period * r.rot_dim));
  fill_rope_pattern(pattern.data(), period, r.rot_dim);
  const size_t row_bytes = static_cast<size_t>(r.rot_dim) * sizeof(float);
  int64_t k = 0;
  while (k < rows &&
         std::memcmp(pattern.data() + (k % 1024) * r.rot_dim, r.cos_sin.data() + k * r.rot_dim, row_bytes) == 0)
    ++k;
  return k;
}
}  // namespace

// cos_sin as hex rows of fp32 bit patterns (two 16-bit halves each, low first, one
// table row per string), so NaN payloads survive; its leading rows that are
// fill_rope_pattern's as their count, "cos_sin_pattern_rows" (absent when 0), the
// strings then holding the rows after them.
void to_json(nlohmann::json& j, const ScenarioRope& r) {
  const int64_t pattern_rows = pattern_prefix_rows(r);
  std::vector<uint16_t> halves;
  halves.reserve(r.cos_sin.size() * 2);
  for (float f : std::span(r.cos_sin.data(), r.cos_sin.size()).subspan(static_cast<size_t>(pattern_rows * r.rot_dim))) {
    const uint32_t b = std::bit_cast<uint32_t>(f);
    halves.push_back(static_cast<uint16_t>(b & 0xFFFF));
    halves.push_back(static_cast<uint16_t>(b >> 16));
  }
  j = {{"rot_dim", r.rot_dim},
       {"rope_offset", r.rope_offset},
       {"is_neox", r.is_neox},
       {"max_position", r.max_position},
       {"cos_sin_bits", hex_rows(halves, 2 * std::max<int64_t>(r.rot_dim, 1))},
       {"positions", r.positions}};
  if (pattern_rows > 0) j["cos_sin_pattern_rows"] = pattern_rows;
}

void from_json(const nlohmann::json& j, ScenarioRope& r) {
  r.rot_dim = int_at<int32_t>(j, "rot_dim");
  r.rope_offset = int_at<int32_t>(j, "rope_offset");
  r.is_neox = j.at("is_neox").get<bool>();
  r.max_position = int_at<int64_t>(j, "max_position");
  const std::vector<uint16_t> halves = parse_hex_rows(j.at("cos_sin_bits"));
  if (halves.size() % 2 != 0) throw std::runtime_error("rope cos_sin_bits holds an odd number of halves");
  const int64_t pattern_rows = j.contains("cos_sin_pattern_rows") ? int_at<int64_t>(j, "cos_sin_pattern_rows") : 0;
  if (pattern_rows < 0 || (pattern_rows > 0 && (r.rot_dim <= 0 || r.rot_dim % 2 != 0)) ||
      __int128{pattern_rows} * std::max<int32_t>(r.rot_dim, 0) + halves.size() / 2 > (__int128{1} << 22))
    throw std::runtime_error("rope: cos_sin_pattern_rows must be 0 or more rows of an even rot_dim, 2^22 values at most");
  const size_t first = static_cast<size_t>(pattern_rows * std::max<int32_t>(r.rot_dim, 0));
  r.cos_sin.resize(first + halves.size() / 2);
  fill_rope_pattern(r.cos_sin.data(), pattern_rows, r.rot_dim);
  for (size_t i = 0; i < halves.size() / 2; ++i)
    r.cos_sin[first + i] = std::bit_cast<float>(uint32_t{halves[2 * i]} | (uint32_t{halves[2 * i + 1]} << 16));
  r.positions = ints_at<int64_t>(j, "positions");
  // The table run_store passes is max_position rows of rot_dim floats: the file must hold
  // them (a shape the checks refuse reads nothing), and at most 2^22 of them.
  const __int128 claimed = __int128{std::max<int64_t>(r.max_position, 0)} * std::max<int32_t>(r.rot_dim, 0);
  if (claimed > static_cast<__int128>(r.cos_sin.size()) || r.cos_sin.size() > (size_t{1} << 22) ||
      r.positions.size() > (size_t{1} << 20))
    throw std::runtime_error("rope: cos_sin holds fewer than max_position * rot_dim values, or too many values");
}

}  // namespace kvcheck::props
