// Direct differential and error tests of the CPU backend's store/load against the
// scalar reference (SPEC §4, §5.1, §5.2), plus a few hand-computed known answers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cpu/stream_copy.h"
#include "impl/error.h"
#include "tests/test_util.h"
#include "impl/kv_cache.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck {
namespace {

constexpr uint8_t kSentinel = 0x5A;

// Sets an environment variable for one scope (KVCHECK_THREADS, KVCHECK_CPU_ISA).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// bf16 inputs with the special values of SPEC §4.5: per group a mode picks ordinary
// values, all zeros, all NaN, a lone Inf, subnormals, huge values or raw random bits.
std::vector<bf16_bits> make_kv(std::mt19937_64& rng, int64_t rows, int64_t stride, int32_t group) {
  static constexpr bf16_bits kSpecial[] = {0x7FC0, 0xFFC1, 0x7F80, 0xFF80, 0x0000, 0x8000,
                                           0x0001, 0x8050, 0x7F7F, 0xFF7F, 0x3F80, 0x0080};
  std::vector<bf16_bits> kv(static_cast<size_t>(rows * stride));
  const int32_t g = std::max(group, 1);
  for (size_t i = 0; i < kv.size(); i += static_cast<size_t>(g)) {
    const int mode = static_cast<int>(rng() % 10);
    for (size_t j = i; j < std::min(kv.size(), i + static_cast<size_t>(g)); ++j) {
      const uint64_t r = rng();
      bf16_bits v;
      switch (mode) {
        case 0: v = 0; break;
        case 1: v = kSpecial[r % 12]; break;
        case 2: v = static_cast<bf16_bits>(r); break;
        case 3: v = static_cast<bf16_bits>((r & 0x807F) | (r % 3 == 0 ? 0x0000 : 0x0100)); break;
        default:  // ordinary: sign, exponent 2^-20..2^20, random mantissa; rare specials
          v = static_cast<bf16_bits>((r & 0x807F) | ((127 - 20 + (r >> 16) % 41) << 7));
          if ((r >> 32) % 64 == 0) v = kSpecial[(r >> 40) % 12];
      }
      kv[j] = v;
    }
  }
  return kv;
}

struct Case {
  KVCacheFormat format;
  int64_t num_blocks;
  int32_t block_size;
};

std::vector<KVCacheFormat> all_formats() {
  std::vector<KVCacheFormat> fs = supported_formats();
  fs.push_back(KVCacheFormat::BF16(8));
  // Valid formats outside the table: odd group sizes (an e2m1 group ending mid-byte)
  // and other dtype/scale pairings the kernels must still handle.
  KVCacheFormat odd;
  odd.name = "E2M1_G3_UE8M0";
  odd.quantized_dtype = QuantizedDtype::kE2M1;
  odd.elements = 24;
  odd.elements_per_sf = 3;
  odd.sf_format = SfFormat::kUE8M0;
  odd.do_cast = odd.token_interleaved = true;
  fs.push_back(odd);
  KVCacheFormat e4e4 = odd;
  e4e4.name = "E4M3_G8_E4M3";
  e4e4.quantized_dtype = QuantizedDtype::kE4M3;
  e4e4.elements = 64;
  e4e4.elements_per_sf = 8;
  e4e4.sf_format = SfFormat::kE4M3;
  fs.push_back(e4e4);
  KVCacheFormat fp4fp32 = KVCacheFormat::FP8_FP32SF_INDEX();
  fp4fp32.name = "E2M1_G16_FP32_INDEX";
  fp4fp32.quantized_dtype = QuantizedDtype::kE2M1;
  fp4fp32.elements_per_sf = 16;
  fs.push_back(fp4fp32);
  KVCacheFormat fp8cast = KVCacheFormat::FP8_FP32SF_INDEX();
  fp8cast.name = "E4M3_G128_FP32_CAST";
  fp8cast.do_cast = fp8cast.token_interleaved = true;
  fs.push_back(fp8cast);
  // BF16 tails (SPEC §2): 43-byte records (15 e4m3, 3 fp32 power-of-two scales, 8 BF16),
  // and an e2m1 record whose groups end mid-byte before a 64-element tail.
  KVCacheFormat tail8 = KVCacheFormat::FP8_DS_MLA();
  tail8.name = "E4M3_G5_POW2_CAST_TAIL8";
  tail8.elements = 23;
  tail8.elements_per_sf = 5;
  tail8.bf16_tail_elements = 8;
  fs.push_back(tail8);
  KVCacheFormat tail64 = odd;
  tail64.name = "E2M1_G3_UE8M0_TAIL64";
  tail64.elements = 24 + 64;
  tail64.bf16_tail_elements = 64;
  fs.push_back(tail64);
  // NVFP4_DS_MLA's fields on another record: an e4m3 tail of 8 after the data, then 8
  // transposed ue8m0 scales (groups of 6 end e2m1 bytes mid-group).
  KVCacheFormat last = odd;
  last.name = "E2M1_G6_UE8M0_E4M3TAIL8_SCALES_LAST";
  last.elements_per_sf = 6;
  last.elements = 48 + 8;
  last.bf16_tail_elements = 8;
  last.e4m3_tail = last.scales_last = true;
  fs.push_back(last);
  for (const auto& f : fs) f.validate();
  return fs;
}

std::vector<int32_t> make_slots(std::mt19937_64& rng, int64_t rows, int64_t num_slots) {
  std::vector<int32_t> all(static_cast<size_t>(num_slots));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int32_t> slots(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    slots[static_cast<size_t>(r)] = rng() % 5 == 0 ? -1 : all[static_cast<size_t>(r % num_slots)];
  if (rows > 1) slots[1] = -1;  // padding next to ...
  if (rows > 2) slots[2] = 0;   // ... a valid slot 0 (SPEC §6)
  if (rows > 2) slots[0] = slots[0] == 0 ? -1 : slots[0];
  // Remove accidental duplicates (slot 0 forced above).
  std::vector<bool> used(static_cast<size_t>(num_slots));
  for (auto& s : slots) {
    if (s < 0) continue;
    if (used[static_cast<size_t>(s)]) s = -1;
    else used[static_cast<size_t>(s)] = true;
  }
  return slots;
}

// Segments covering some of [0, total_k) in shuffled order with gaps and zero fills.
std::vector<int32_t> make_segments(std::mt19937_64& rng, const CacheLayout& l, int32_t& total_k) {
  std::vector<LoadSegment> segs;
  int32_t dst = 0;
  const int n = 1 + static_cast<int>(rng() % 24);
  for (int i = 0; i < n; ++i) {
    dst += static_cast<int32_t>(rng() % 3);  // gap rows keep their values
    const int32_t begin = static_cast<int32_t>(rng() % (l.block_size + 1));
    const int32_t end = begin + static_cast<int32_t>(rng() % (l.block_size - begin + 1));
    const int32_t block = rng() % 6 == 0 ? -1 : static_cast<int32_t>(rng() % l.num_blocks);
    segs.push_back({block, begin, end, dst});
    dst += end - begin;
  }
  total_k = dst + static_cast<int32_t>(rng() % 3);
  std::shuffle(segs.begin(), segs.end(), rng);
  std::vector<int32_t> raw;
  for (const auto& s : segs) raw.insert(raw.end(), {s.src_block_id, s.src_begin, s.src_end, s.dst_offset});
  return raw;
}

struct OutBuffers {
  std::vector<uint8_t> data, scales;
  LoadOutput view(const KVCacheFormat& f, int64_t rows) {
    const int64_t d_stride = f.load_row_bytes() + 6, s_stride = f.load_scale_row_bytes() + 4;
    data.assign(static_cast<size_t>(rows * d_stride), kSentinel);
    scales.assign(static_cast<size_t>(rows * s_stride), kSentinel);
    return {data.data(), d_stride, f.is_index() ? scales.data() : nullptr, s_stride, rows};
  }
};

void store_both(const Case& c, const KVInput& kv, const std::vector<int32_t>& slots,
                KVCache& cpu_cache, KVCache& ref_cache) {
  cpu::CpuBackend().store_kv_cache(kv, slots, cpu_cache.view());
  ref::store_kv_cache(kv, slots, ref_cache.bytes(), c.format, c.num_blocks, c.block_size);
}

// Store then load random data on both; every byte of cache and output must agree.
void check_case(const Case& c, uint64_t seed, int64_t rows) {
  SCOPED_TRACE(c.format.name + " block_size " + std::to_string(c.block_size) + " seed " +
               std::to_string(seed));
  std::mt19937_64 rng(seed);
  const CacheLayout layout = CacheLayout::make(c.format, c.num_blocks, c.block_size);
  KVCache cpu_cache(layout, kSentinel), ref_cache(layout, kSentinel);
  const int64_t stride = c.format.elements + 8;  // rows wider than E
  const std::vector<bf16_bits> kv = make_kv(rng, rows, stride, c.format.elements_per_sf);
  const std::vector<int32_t> slots = make_slots(rng, rows, layout.num_slots());
  store_both(c, {kv.data(), rows, stride}, slots, cpu_cache, ref_cache);
  ASSERT_TRUE(std::equal(cpu_cache.bytes().begin(), cpu_cache.bytes().end(),
                         ref_cache.bytes().begin()))
      << "store: caches differ";

  for (int round = 0; round < 3; ++round) {
    int32_t total_k = 0;
    const std::vector<int32_t> segs = make_segments(rng, layout, total_k);
    OutBuffers cpu_out, ref_out;
    const LoadOutput co = cpu_out.view(c.format, total_k), ro = ref_out.view(c.format, total_k);
    cpu::CpuBackend().load_paged_kv_cache(cpu_cache.const_view(), segs, total_k, co);
    ref::load_paged_kv_cache(ref_cache.bytes(), c.format, c.num_blocks, c.block_size, segs,
                             total_k, ro);
    ASSERT_EQ(cpu_out.data, ref_out.data) << "load data, round " << round;
    ASSERT_EQ(cpu_out.scales, ref_out.scales) << "load scales, round " << round;
  }
}

TEST(CpuBackend, StoreLoadMatchReferenceAllFormats) {
  for (const auto& f : all_formats())
    for (int32_t bs : {1, 2, 16, 133})
      check_case({f, 5, bs}, 1000 + static_cast<uint64_t>(bs), std::min<int64_t>(5 * bs, 300));
}

TEST(CpuBackend, MatchReferenceBaselineIsaAndManyThreads) {
  // Big enough (> 256 KiB of records) to split over threads; both instruction sets.
  for (const char* isa : {"baseline", "native"}) {
    ScopedEnv env_isa("KVCHECK_CPU_ISA", isa);
    ScopedEnv env_threads("KVCHECK_THREADS", "5");
    for (const auto& f : all_formats()) check_case({f, 40, 64}, 7, 2500);
  }
}

// The BF16 copy kernels write by streaming stores past stream_min_bytes() (32 x the
// bytes a thread must have: 8 MiB by default); with the thread threshold at 1 byte (the
// properties' hook) every call streams. Rows 6 bytes wider than a record and odd
// record sizes cover the unaligned head and tail of each streamed row; the baseline ISA
// never streams.
TEST(CpuBackend, StreamedCopiesMatchReference) {
  EXPECT_EQ(cpu::stream_min_bytes(), int64_t{8} << 20);
  for (const char* isa : {"baseline", "native"}) {
    ScopedEnv env_isa("KVCHECK_CPU_ISA", isa);
    ASSERT_TRUE(cpu::set_thread_parallelism(3, 1));
    EXPECT_EQ(cpu::stream_min_bytes(), 32);
    for (const KVCacheFormat& f : {KVCacheFormat::BF16(512), KVCacheFormat::BF16(8), KVCacheFormat::BF16(24)})
      for (int32_t bs : {1, 16, 133}) check_case({f, 5, bs}, 31 + static_cast<uint64_t>(bs), std::min<int64_t>(5 * bs, 300));
    cpu::set_thread_parallelism(0, 0);
    // At the default threshold: 9,000 rows of 1 KiB (a store of 9 MiB streams).
    check_case({KVCacheFormat::BF16(512), 200, 64}, 5, 9000);
  }
}

TEST(CpuBackend, LoadMatchesReferenceOnRandomCacheBytes) {
  // Arbitrary bytes: e4m3 NaN codes, ue8m0 0x00 / 0xFF scales, negative e4m3 scales.
  for (const auto& f : all_formats()) {
    SCOPED_TRACE(f.name);
    std::mt19937_64 rng(99);
    const CacheLayout layout = CacheLayout::make(f, 3, 133);
    KVCache cache(layout);
    for (auto& b : cache.bytes()) b = static_cast<uint8_t>(rng());
    int32_t total_k = 0;
    const std::vector<int32_t> segs = make_segments(rng, layout, total_k);
    OutBuffers cpu_out, ref_out;
    const LoadOutput co = cpu_out.view(f, total_k), ro = ref_out.view(f, total_k);
    cpu::CpuBackend().load_paged_kv_cache(cache.const_view(), segs, total_k, co);
    ref::load_paged_kv_cache(cache.bytes(), f, 3, 133, segs, total_k, ro);
    EXPECT_EQ(cpu_out.data, ref_out.data);
    EXPECT_EQ(cpu_out.scales, ref_out.scales);
  }
}

TEST(CpuBackend, V41KnownAnswerAllOnes) {
  // x = 1.0 everywhere: a = 1.0, a*INV448 = 0.00223 in (2^-9, 2^-8] -> k = -8, scale
  // byte -8+127 = 119 (0x77); q = cvt_e4m3(1.0 * 2^8 = 256) = e 8+7=15, m 0 -> 0x78.
  // Dequant: 256 * 2^-8 = 1.0 -> bf16 0x3F80.
  const KVCacheFormat f = KVCacheFormat::V41();
  const CacheLayout layout = CacheLayout::make(f, 2, 3);
  KVCache cache(layout, kSentinel);
  const std::vector<bf16_bits> kv(512, 0x3F80);
  const std::vector<int32_t> slots = {4};  // block 1, token 1
  cpu::CpuBackend().store_kv_cache({kv.data(), 1, 512}, slots, cache.view());
  // SPEC §3 by hand, not from CacheLayout: block_stride = round_up(3*528, lcm(32, 528)
  // = 1056) = 2112; the record of block 1, token 1 starts at 1*2112 + 1*528.
  constexpr int64_t kBlockStride = 2112, rec = kBlockStride + 528;
  ASSERT_EQ(layout.size_bytes(), 2 * kBlockStride);
  for (int64_t i = 0; i < 2 * kBlockStride; ++i) {
    const uint8_t want = i < rec || i >= rec + 528 ? kSentinel : (i < rec + 512 ? 0x78 : 0x77);
    ASSERT_EQ(cache.data()[i], want) << "byte " << i;
  }
  std::vector<bf16_bits> out(512, 0);
  const std::vector<int32_t> segs = {1, 1, 2, 0};
  cpu::CpuBackend().load_paged_kv_cache(cache.const_view(), segs, 1,
                                        {reinterpret_cast<uint8_t*>(out.data()), 1024, nullptr, 0, 1});
  EXPECT_EQ(out, std::vector<bf16_bits>(512, 0x3F80));
}

TEST(CpuBackend, V41Fp4KnownAnswerZeros) {
  // All zeros: amax 0 -> floor 2^-9*6; times INV6 ~= 2^-9 -> e4m3 code 0x01 (2^-9,
  // the smallest subnormal); codes cvt_e2m1(0 * 512) = 0. Record: 256 zero bytes, 32 x 0x01.
  const KVCacheFormat f = KVCacheFormat::V41_FP4();
  const CacheLayout layout = CacheLayout::make(f, 1, 1);
  KVCache cache(layout, kSentinel);
  const std::vector<bf16_bits> kv(512, 0);
  const std::vector<int32_t> slots = {0};
  cpu::CpuBackend().store_kv_cache({kv.data(), 1, 512}, slots, cache.view());
  for (int64_t i = 0; i < 288; ++i) ASSERT_EQ(cache.data()[i], i < 256 ? 0x00 : 0x01) << i;
  for (int64_t i = 288; i < layout.size_bytes(); ++i) ASSERT_EQ(cache.data()[i], kSentinel) << i;
}

TEST(CpuBackend, Nvfp4DsMlaKnownAnswer) {
  // SPEC §2, §4.9 by hand (tests/numerics_test.cpp Recipe49 works the scales): element 0 =
  // 0.9453125 -> scale 0x23, code 7; element 16 = 1.0 -> scale 0x23, code 7; every other
  // group all zero -> 0x01. Group g's scale at byte 320 + 8*(g%4) + g/4: group 0 at 320,
  // group 1 at 328. Rope (unscaled e4m3): 1.0 -> 0x38, 500 -> 448 = 0x7E, NaN -> 0x7F,
  // -0 -> 0x80, at bytes 256..259.
  const KVCacheFormat f = KVCacheFormat::NVFP4_DS_MLA();
  const CacheLayout layout = CacheLayout::make(f, 1, 1);
  ASSERT_EQ(layout.size_bytes(), 352);
  KVCache cache(layout, kSentinel);
  std::vector<bf16_bits> kv(576, 0);
  kv[0] = 0x3F72;
  kv[16] = 0x3F80;
  kv[512] = 0x3F80;
  kv[513] = 0x43FA;
  kv[514] = 0x7FC0;
  kv[515] = 0x8000;
  const std::vector<int32_t> slots = {0};
  cpu::CpuBackend().store_kv_cache({kv.data(), 1, 576}, slots, cache.view());
  std::vector<uint8_t> want(352, 0);
  want[0] = 0x07;
  want[8] = 0x07;
  want[256] = 0x38;
  want[257] = 0x7E;
  want[258] = 0x7F;
  want[259] = 0x80;
  for (int i = 320; i < 352; ++i) want[i] = 0x01;
  want[320] = want[328] = 0x23;
  EXPECT_EQ(std::vector<uint8_t>(cache.data(), cache.data() + 352), want);
  std::vector<bf16_bits> out(576, 0x1234);
  const std::vector<int32_t> segs = {0, 0, 1, 0};
  cpu::CpuBackend().load_paged_kv_cache(cache.const_view(), segs, 1,
                                        {reinterpret_cast<uint8_t*>(out.data()), 1152, nullptr, 0, 1});
  std::vector<bf16_bits> back(576, 0);
  back[0] = back[16] = 0x3F84;  // 6 * 0.171875 = 1.03125
  back[512] = 0x3F80;
  back[513] = 0x43E0;
  back[514] = 0x7FFF;
  back[515] = 0x8000;
  EXPECT_EQ(out, back);
}

// ---- checked-entry errors: the code, and nothing written ----


class CpuStoreErrors : public ::testing::Test {
 protected:
  void expect_store_error(ErrorCode code, std::vector<int32_t> slots, KVInput kv,
                          const std::string& needle = "") {
    KVCache cache(layout_, kSentinel);
    expect_error(code, [&] { cpu::CpuBackend().store_kv_cache(kv, slots, cache.view()); },
                 needle);
    EXPECT_TRUE(std::all_of(cache.bytes().begin(), cache.bytes().end(),
                            [](uint8_t b) { return b == kSentinel; }))
        << "cache changed on error";
  }
  CacheLayout layout_ = CacheLayout::make(KVCacheFormat::MXFP8_INDEX(), 4, 16);  // 64 slots
  std::vector<bf16_bits> kv_ = std::vector<bf16_bits>(8 * 128, 0x3F80);
  KVInput in_{kv_.data(), 8, 128};
};

TEST_F(CpuStoreErrors, SlotOutOfRange) {
  for (int32_t bad : {-2, 64, INT32_MIN, INT32_MAX})
    expect_store_error(ErrorCode::kSlotOutOfRange, {0, 1, bad, 3}, in_,
                       "slot_mapping[2] = " + std::to_string(bad));
}

TEST_F(CpuStoreErrors, DuplicateNamesBothRows) {
  expect_store_error(ErrorCode::kDuplicateSlot, {-1, 5, -1, 7, 5}, in_,
                     "slot_mapping[4] = 5 repeats slot_mapping[1]");
}

TEST_F(CpuStoreErrors, FirstBadRowWins) {
  // Row 2 repeats row 0, row 3 is out of range: the smaller index (2) is reported.
  expect_store_error(ErrorCode::kDuplicateSlot, {9, 1, 9, 100}, in_, "slot_mapping[2]");
  expect_store_error(ErrorCode::kSlotOutOfRange, {9, 100, 9}, in_, "slot_mapping[1]");
}

TEST_F(CpuStoreErrors, ShapesAndArguments) {
  expect_store_error(ErrorCode::kShapeMismatch, std::vector<int32_t>(9, -1), in_);  // 8 rows
  expect_store_error(ErrorCode::kInvalidArgument, {0}, {kv_.data(), 8, 127});
  expect_store_error(ErrorCode::kShapeMismatch, {0}, {nullptr, 8, 128});
  KVCache cache(layout_, kSentinel);
  const std::vector<int32_t> one = {0};
  expect_error(ErrorCode::kShapeMismatch,
               [&] { cpu::CpuBackend().store_kv_cache(in_, one, {nullptr, layout_}); });
}

TEST_F(CpuStoreErrors, DuplicatesInHugeCacheUseTheHashPath) {
  // num_slots (2^17) > 64*n + 2^16: the hash-set path must find the same duplicate.
  layout_ = CacheLayout::make(KVCacheFormat::BF16(8), 1 << 11, 64);
  expect_store_error(ErrorCode::kDuplicateSlot, {(1 << 17) - 1, 3, (1 << 17) - 1}, in_,
                     "slot_mapping[2]");
}

TEST(CpuStoreNoop, EmptyAndAllPaddingWriteNothing) {
  const CacheLayout layout = CacheLayout::make(KVCacheFormat::V41(), 2, 4);
  KVCache cache(layout, kSentinel);
  std::vector<bf16_bits> kv(3 * 512, 0x3F80);
  cpu::CpuBackend().store_kv_cache({nullptr, 0, 0}, {}, cache.view());
  const std::vector<int32_t> pad = {-1, -1, -1};
  cpu::CpuBackend().store_kv_cache({kv.data(), 3, 512}, pad, cache.view());
  EXPECT_TRUE(std::all_of(cache.bytes().begin(), cache.bytes().end(),
                          [](uint8_t b) { return b == kSentinel; }));
}

class CpuLoadErrors : public ::testing::Test {
 protected:
  void expect_load_error(ErrorCode code, std::vector<int32_t> segs, int32_t total_k,
                         const std::string& needle = "", int64_t claimed_rows = 40) {
    OutBuffers buf;
    LoadOutput out = buf.view(f_, 40);
    out.rows = claimed_rows;  // may claim more rows than exist: nothing may be written
    expect_error(code,
                 [&] {
                   cpu::CpuBackend().load_paged_kv_cache(cache_.const_view(), segs,
                                                         total_k, out);
                 },
                 needle);
    EXPECT_TRUE(std::all_of(buf.data.begin(), buf.data.end(), [](uint8_t b) { return b == kSentinel; }));
    EXPECT_TRUE(std::all_of(buf.scales.begin(), buf.scales.end(), [](uint8_t b) { return b == kSentinel; }));
  }
  KVCacheFormat f_ = KVCacheFormat::FP4_INDEX();
  CacheLayout layout_ = CacheLayout::make(f_, 3, 10);
  KVCache cache_{layout_, 0x11};
};

TEST_F(CpuLoadErrors, EachSegmentRule) {
  expect_load_error(ErrorCode::kSegmentBlockOutOfRange, {0, 0, 1, 0, 3, 0, 1, 1}, 10,
                    "load_segments[1] = [3, 0, 1, 1]");
  expect_load_error(ErrorCode::kSegmentBlockOutOfRange, {-2, 0, 1, 0}, 10);
  expect_load_error(ErrorCode::kSegmentRangeInvalid, {0, 2, 1, 0}, 10);
  expect_load_error(ErrorCode::kSegmentRangeInvalid, {-1, 0, 11, 0}, 20);  // zero fill too
  expect_load_error(ErrorCode::kSegmentRangeInvalid, {0, -1, 1, 0}, 10);
  expect_load_error(ErrorCode::kSegmentDestinationOutOfRange, {0, 0, 5, 6}, 10);
  expect_load_error(ErrorCode::kSegmentDestinationOutOfRange, {0, 0, 1, -1}, 10);
  expect_load_error(ErrorCode::kSegmentDestinationOutOfRange, {0, 0, 10, INT32_MAX}, 10);
  expect_load_error(ErrorCode::kSegmentOverlap, {0, 0, 4, 0, -1, 0, 3, 5, 1, 2, 4, 3}, 10,
                    "load_segments[2] = [1, 2, 4, 3]: output rows overlap load_segments[0]");
}

TEST_F(CpuLoadErrors, FirstBadSegmentWins) {
  // Segment 1 overlaps segment 0; segment 2 has a bad block: index 1 is reported.
  expect_load_error(ErrorCode::kSegmentOverlap, {0, 0, 4, 0, 1, 0, 1, 3, 7, 0, 1, 5}, 10);
}

TEST_F(CpuLoadErrors, ArgumentsAndShapes) {
  expect_load_error(ErrorCode::kInvalidArgument, {0, 0, 1}, 10);
  expect_load_error(ErrorCode::kInvalidArgument, {}, -1);
  expect_load_error(ErrorCode::kShapeMismatch, {0, 0, 1, 0}, 10, "", 9);
  OutBuffers buf;
  LoadOutput out = buf.view(f_, 10);
  out.scales = nullptr;
  const std::vector<int32_t> segs = {0, 0, 1, 0};
  expect_error(ErrorCode::kShapeMismatch, [&] {
    cpu::CpuBackend().load_paged_kv_cache(cache_.const_view(), segs, 10, out);
  });
  out = buf.view(f_, 10);
  out.data_row_stride = 63;  // FP4_INDEX rows are 64 bytes
  expect_error(ErrorCode::kShapeMismatch, [&] {
    cpu::CpuBackend().load_paged_kv_cache(cache_.const_view(), segs, 10, out);
  });
}

TEST_F(CpuLoadErrors, OverlapWithLargeTotalKUsesTheMapPath) {
  expect_load_error(ErrorCode::kSegmentOverlap,
                    {0, 0, 2, 100000000, -1, 0, 5, 3, 1, 0, 3, 99999999}, 200000000,
                    "load_segments[2]", 200000000);
  // The same path, overlapping the range that starts before it (mutant 165).
  expect_load_error(ErrorCode::kSegmentOverlap, {0, 0, 5, 100000000, 1, 0, 2, 100000002}, 200000000,
                    "load_segments[1]", 200000000);
}

TEST(CpuLoadZeroFill, ZeroRowsAndGapsKeepValues) {
  // Block -1 writes zeros in data and scales; rows no segment covers keep the sentinel.
  const KVCacheFormat f = KVCacheFormat::MXFP8_INDEX();
  const CacheLayout layout = CacheLayout::make(f, 1, 4);
  OutBuffers buf;
  const LoadOutput out = buf.view(f, 4);
  const std::vector<int32_t> segs = {-1, 1, 3, 1};  // rows 1, 2
  cpu::CpuBackend().load_paged_kv_cache({nullptr, layout}, segs, 4, out);
  for (int64_t r = 0; r < 4; ++r) {
    const uint8_t want = r == 1 || r == 2 ? 0 : kSentinel;
    for (int64_t i = 0; i < 128; ++i) ASSERT_EQ(buf.data[r * out.data_row_stride + i], want);
    for (int64_t i = 0; i < 4; ++i) ASSERT_EQ(buf.scales[r * out.scale_row_stride + i], want);
    for (int64_t i = 128; i < out.data_row_stride; ++i)  // the stride padding is untouched
      ASSERT_EQ(buf.data[r * out.data_row_stride + i], kSentinel);
  }
}

}  // namespace
}  // namespace kvcheck
