// CudaBackend against the scalar reference (label: cuda): every SPEC §2 format plus
// odd valid formats, block sizes 133 and 1, the §4.5 special values, arbitrary cache
// bytes, every store/load error path (same code, buffers untouched) and a cache
// larger than 4 GiB. Skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "tests/cuda/cuda_plugin.h"
#include "impl/plugin/abi_convert.h"
#include "impl/plugin/loader.h"
#include "include/kvcheck/backend_abi.h"
#include "impl/cuda/kernels.h"
#include "impl/error.h"
#include "reference/index_transforms.h"
#include "reference/load.h"
#include "reference/store.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;

std::shared_ptr<const Backend> cuda_or_skip(std::string* why) {
  auto b = cuda::make_cuda_backend(why);
  return b;
}

#define KVCHECK_CUDA_BACKEND_OR_SKIP(var)                                         \
  std::string why_##var;                                                          \
  const auto var = cuda_or_skip(&why_##var);                                      \
  if (!var) GTEST_SKIP() << "no usable CUDA device here (" << why_##var << ")"

// Formats that pass §2 validation beyond the table: odd group sizes (an e2m1 byte
// straddling two groups), odd element counts, unaligned fp32 scales, tiny BF16.
std::vector<KVCacheFormat> test_formats() {
  std::vector<KVCacheFormat> fs = supported_formats();
  fs.push_back(KVCacheFormat::BF16(8));
  KVCacheFormat f;
  f.name = "E2M1_G3_E4M3_CAST";  // 12 elements, groups of 3: bytes 1 and 4 straddle
  f.quantized_dtype = QuantizedDtype::kE2M1;
  f.elements = 12;
  f.elements_per_sf = 3;
  f.sf_format = SfFormat::kE4M3;
  f.do_cast = f.token_interleaved = true;
  fs.push_back(f);
  f.name = "E4M3_G5_FP32_CAST";  // 15 elements: fp32 scales at odd offsets
  f.quantized_dtype = QuantizedDtype::kE4M3;
  f.elements = 15;
  f.elements_per_sf = 5;
  f.sf_format = SfFormat::kFP32;
  fs.push_back(f);
  f.name = "E4M3_G7_FP32_INDEX";
  f.elements = 21;
  f.elements_per_sf = 7;
  f.do_cast = f.token_interleaved = false;
  fs.push_back(f);
  f.name = "E2M1_G1_UE8M0_INDEX";  // group of 1: 8 scales, 8 elements
  f.quantized_dtype = QuantizedDtype::kE2M1;
  f.elements = 8;
  f.elements_per_sf = 1;
  f.sf_format = SfFormat::kUE8M0;
  fs.push_back(f);
  // A named format's dtype, scales, E and G in 132-byte interleaved records (odd tokens
  // only 4-byte aligned): the fixed kernels' 8-byte words once faulted here
  // ("misaligned address"); they must take the run-time path.
  f.name = "E4M3_G32_UE8M0_INDEX_INTERLEAVED";
  f.quantized_dtype = QuantizedDtype::kE4M3;
  f.elements = 128;
  f.elements_per_sf = 32;
  f.sf_format = SfFormat::kUE8M0;
  f.do_cast = false;
  f.token_interleaved = true;
  fs.push_back(f);
  f.name = "E4M3_G128_FP32_INDEX_INTERLEAVED";
  f.elements_per_sf = 128;
  f.sf_format = SfFormat::kFP32;
  fs.push_back(f);
  f.name = "E4M3_G2048_UE8M0_CAST";  // group wider than a warp's stride, 2 groups
  f.quantized_dtype = QuantizedDtype::kE4M3;
  f.elements = 4096;
  f.elements_per_sf = 2048;
  f.do_cast = f.token_interleaved = true;
  fs.push_back(f);
  // BF16 tails (SPEC §2) off the 16-byte grid: 15 e4m3 + 3 fp32 power-of-two scales + 8
  // BF16 = 43-byte records (odd tokens start at odd bytes); 6 e2m1 bytes + 4 e4m3 scales +
  // 64 BF16 = 138 bytes; FP8_DS_MLA's own shape with groups of 64 (the run-time path).
  f.name = "E4M3_G5_POW2_CAST_TAIL8";
  f.elements = 23;
  f.elements_per_sf = 5;
  f.sf_format = SfFormat::kFP32Pow2;
  f.bf16_tail_elements = 8;
  fs.push_back(f);
  f.name = "E2M1_G3_E4M3_CAST_TAIL64";
  f.quantized_dtype = QuantizedDtype::kE2M1;
  f.elements = 76;
  f.elements_per_sf = 3;
  f.sf_format = SfFormat::kE4M3;
  f.bf16_tail_elements = 64;
  fs.push_back(f);
  f = KVCacheFormat::FP8_DS_MLA();
  f.name = "E4M3_G64_POW2_CAST_TAIL64";
  f.elements_per_sf = 64;
  fs.push_back(f);
  for (auto& x : fs) x.validate();
  return fs;
}

// bf16 inputs: the §4.5 specials, whole special groups and wide exponent ranges.
std::vector<bf16_bits> make_kv(std::mt19937_64& rng, int64_t rows, int64_t stride, int32_t elements,
                               int32_t group) {
  static const bf16_bits kSpecial[] = {0x7FC0, 0xFFC1, 0x7F81, 0x7F80, 0xFF80, 0x0000, 0x8000,
                                       0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x3F80};
  std::vector<bf16_bits> kv(static_cast<size_t>(rows * stride), 0xDEAD);
  const int32_t g = group > 0 ? group : 8;
  for (int64_t r = 0; r < rows; ++r) {
    for (int32_t g0 = 0; g0 < elements; g0 += g) {
      const int mode = static_cast<int>(rng() % 8);
      const int base_exp = static_cast<int>(rng() % 254) + 1;
      for (int32_t i = g0; i < std::min(elements, g0 + g); ++i) {
        bf16_bits v;
        if (mode == 0) {
          v = kSpecial[rng() % std::size(kSpecial)];
        } else if (mode == 1) {
          v = rng() % 2 ? 0x0000 : 0x8000;  // an all-zero group
        } else if (mode == 2) {
          v = rng() % 4 ? 0x7FC0 : static_cast<bf16_bits>(rng() & 0x807F);  // NaN + tiny
        } else {
          const int e = std::clamp(base_exp - static_cast<int>(rng() % 12), 0, 254);
          v = static_cast<bf16_bits>(((rng() & 1) << 15) | (e << 7) | (rng() & 0x7F));
          if (rng() % 64 == 0) v = kSpecial[rng() % std::size(kSpecial)];
        }
        kv[static_cast<size_t>(r * stride + i)] = v;
      }
    }
  }
  return kv;
}

Bytes random_bytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

struct Case {
  KVCacheFormat format;
  int32_t block_size;
};

// Readable CTest names (gtest would otherwise print the parameter's raw bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.format.name << " block_size " << c.block_size; }

std::string name_of(const testing::TestParamInfo<Case>& info) {
  std::string n = info.param.format.name + "_bs" + std::to_string(info.param.block_size);
  for (auto& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

class CudaVsReference : public testing::TestWithParam<Case> {};

// Store random rows (padding rows, slot 0, the last slot, padded kv rows) into a
// sentinel-filled cache, then load shuffled segments with gaps and zero fills into
// sentinel-filled, padded outputs; both bit-identical to the reference.
TEST_P(CudaVsReference, StoreThenLoadMatchesReference) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  const KVCacheFormat& f = GetParam().format;
  const int32_t bs = GetParam().block_size;
  std::mt19937_64 rng(0x6B76 + bs * 131 + f.elements);
  const int64_t num_blocks = bs == 1 ? 300 : 5;
  const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
  const int64_t num_slots = layout.num_slots();
  for (int round = 0; round < 3; ++round) {
    // Slots: a permutation prefix, plus padding; slot 0 and the last slot included.
    std::vector<int32_t> perm(static_cast<size_t>(num_slots));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const int64_t n = std::min<int64_t>(num_slots, 150 + round * 200);
    std::vector<int32_t> slots(perm.begin(), perm.begin() + n);
    slots[0] = 0;
    for (auto& s : slots)
      if (s == 0 && &s != &slots[0]) s = -1;
    if (n > 2) slots[1] = static_cast<int32_t>(num_slots - 1);
    for (int64_t i = 2; i < n; ++i)
      if (slots[static_cast<size_t>(i)] == num_slots - 1 || rng() % 5 == 0) slots[static_cast<size_t>(i)] = -1;
    // Round 0: odd kv stride (the run-time store path); 1: dense; 2: padded, aligned.
    const int64_t stride = f.elements + (round == 0 ? 3 : round == 1 ? 0 : 8);
    const auto kv = make_kv(rng, n, stride, f.elements, f.elements_per_sf);
    const KVInput in{kv.data(), n, stride};

    Bytes ref_cache(static_cast<size_t>(layout.size_bytes()), 0x5A);
    if (round == 2) ref_cache = random_bytes(rng, ref_cache.size());
    Bytes cuda_cache = ref_cache;
    ref::store_kv_cache(in, slots, ref_cache, f, num_blocks, bs);
    cuda->store_kv_cache(in, slots, CacheView{cuda_cache.data(), layout, layout.size_bytes()});
    ASSERT_EQ(cuda_cache, ref_cache) << f.name << " bs " << bs << " round " << round;

    // Segments: consecutive pieces of random blocks (or zero fill), gaps between
    // destinations, then shuffled.
    std::vector<int32_t> segs;
    int64_t dst = 0;
    for (int i = 0; i < 40; ++i) {
      const int32_t block = rng() % 6 == 0 ? -1 : static_cast<int32_t>(rng() % num_blocks);
      const int32_t b = static_cast<int32_t>(rng() % (bs + 1));
      const int32_t e = b + static_cast<int32_t>(rng() % (bs - b + 1));
      dst += static_cast<int64_t>(rng() % 3);
      segs.insert(segs.end(), {block, b, e, static_cast<int32_t>(dst)});
      dst += e - b;
    }
    std::vector<std::array<int32_t, 4>> shuffled;
    for (size_t i = 0; i < segs.size(); i += 4) shuffled.push_back({segs[i], segs[i + 1], segs[i + 2], segs[i + 3]});
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    segs.clear();
    for (auto& s : shuffled) segs.insert(segs.end(), s.begin(), s.end());
    const int32_t total_k = static_cast<int32_t>(dst + 2);
    const int64_t row_bytes = f.load_row_bytes(), sf_row = f.load_scale_row_bytes();
    const int64_t data_stride = row_bytes + (round == 0 ? 3 : 16);  // odd: unaligned bf16 rows
    const int64_t sf_stride = sf_row + (round == 0 ? 1 : 8);
    const int64_t rows = total_k + 1;
    Bytes ref_data(static_cast<size_t>(rows * data_stride), 0x33), ref_sf;
    if (f.is_index()) ref_sf.assign(static_cast<size_t>(rows * sf_stride), 0x44);
    Bytes cuda_data = ref_data, cuda_sf = ref_sf;
    LoadOutput ref_out{ref_data.data(), data_stride, f.is_index() ? ref_sf.data() : nullptr, sf_stride, rows};
    LoadOutput cuda_out{cuda_data.data(), data_stride, f.is_index() ? cuda_sf.data() : nullptr, sf_stride, rows};
    ref::load_paged_kv_cache(ref_cache, f, num_blocks, bs, segs, total_k, ref_out);
    cuda->load_paged_kv_cache(ConstCacheView{cuda_cache.data(), layout, layout.size_bytes()}, segs, total_k, cuda_out);
    ASSERT_EQ(cuda_data, ref_data) << f.name << " bs " << bs << " round " << round;
    ASSERT_EQ(cuda_sf, ref_sf) << f.name << " bs " << bs << " round " << round;
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& f : test_formats())
    for (int32_t bs : {133, 64, 1}) out.push_back({f, bs});
  return out;
}
INSTANTIATE_TEST_SUITE_P(Formats, CudaVsReference, testing::ValuesIn(cases()), name_of);

// Runs `op` (which throws), returns its code; nullopt when it did not throw.
std::optional<ErrorCode> code_of(const std::function<void()>& op) {
  try {
    op();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

// Every store error path: the reference's code, and no cache byte changes.
TEST(CudaBackendErrors, StoreErrorsMatchReferenceAndWriteNothing) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  for (const KVCacheFormat& f : {KVCacheFormat::V41(), KVCacheFormat::FP4_INDEX(), KVCacheFormat::BF16(64)}) {
    const int32_t bs = 133;
    const int64_t num_blocks = 2;
    const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
    std::mt19937_64 rng(7);
    const auto kv = make_kv(rng, 4, f.elements, f.elements, f.elements_per_sf);
    const int32_t last = static_cast<int32_t>(layout.num_slots());
    struct Bad {
      const char* what;
      std::vector<int32_t> slots;
      KVInput in;
      bool null_cache = false;
    };
    const KVInput good{kv.data(), 4, f.elements};
    const std::vector<Bad> bad{
        {"slot -2", {0, -2, 1, 2}, good},
        {"slot == num_slots", {0, 1, last, 2}, good},
        {"INT32_MIN", {INT32_MIN, 1, 2, 3}, good},
        {"INT32_MAX", {3, INT32_MAX}, good},
        {"duplicate before out of range", {5, 6, 5, last + 7}, good},
        {"duplicate of slot 0 after padding", {0, -1, 0, 1}, good},
        {"kv rows < n", {0, 1, 2, 3, 4}, good},
        {"row_stride < E", {0, 1}, {kv.data(), 4, f.elements - 1}},
        {"null kv", {0, 1}, {nullptr, 4, f.elements}},
        {"null cache", {0, 1}, good, true},
    };
    for (const auto& b : bad) {
      Bytes ref_cache(static_cast<size_t>(layout.size_bytes()), 0x77), cuda_cache = ref_cache;
      const auto want = code_of([&] {
        ref::store_kv_cache(b.in, b.slots, b.null_cache ? std::span<uint8_t>() : std::span<uint8_t>(ref_cache), f, num_blocks, bs);
      });
      const auto got = code_of([&] {
        cuda->store_kv_cache(b.in, b.slots, CacheView{b.null_cache ? nullptr : cuda_cache.data(), layout, layout.size_bytes()});
      });
      ASSERT_TRUE(want.has_value()) << f.name << ": " << b.what;
      EXPECT_EQ(got, want) << f.name << ": " << b.what;
      EXPECT_TRUE(std::all_of(cuda_cache.begin(), cuda_cache.end(), [](uint8_t x) { return x == 0x77; }))
          << f.name << ": " << b.what << " wrote into the cache";
    }
  }
}

// Every load error path: the reference's code, and no output byte changes.
TEST(CudaBackendErrors, LoadErrorsMatchReferenceAndWriteNothing) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  for (const KVCacheFormat& f : {KVCacheFormat::V41_FP4(), KVCacheFormat::MXFP8_INDEX()}) {
    const int32_t bs = 133, num_blocks = 3;
    const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
    std::mt19937_64 rng(11);
    const Bytes cache = random_bytes(rng, static_cast<size_t>(layout.size_bytes()));
    const int64_t row = f.load_row_bytes(), sf = std::max<int64_t>(f.load_scale_row_bytes(), 1);
    struct Bad {
      const char* what;
      std::vector<int32_t> segs;
      int32_t total_k = 20;
      int64_t rows = 20, data_stride = 0, sf_stride = 0;
      bool null_data = false, null_scales = false, null_cache = false;
    };
    std::vector<Bad> bad{
        {"block out of range", {0, 0, 5, 0, 3, 0, 5, 5}},
        {"block -2", {-2, 0, 5, 0}},
        {"begin > end", {0, 5, 4, 0}},
        {"end > block_size", {0, 130, 134, 0}},
        {"dst out of range", {0, 0, 5, 16}},
        {"negative dst", {0, 0, 5, -1}},
        {"overlap", {0, 0, 5, 0, -1, 0, 3, 4}},
        {"overlap beats later range error", {1, 0, 5, 10, 2, 0, 2, 11, 0, 9, 3, 0}},
        {"segments % 4", {0, 0, 5}},
        {"total_k < 0", {}, -1},
        {"out rows < total_k", {0, 0, 5, 0}, 20, 19},
        {"narrow data stride", {0, 0, 5, 0}, 20, 20, row - 1},
        {"null data", {0, 0, 5, 0}, 20, 20, 0, 0, true},
        {"null cache", {0, 0, 5, 0}, 20, 20, 0, 0, false, false, true},
    };
    if (f.is_index()) {
      bad.push_back({"narrow scale stride", {0, 0, 5, 0}, 20, 20, 0, sf - 1});
      bad.push_back({"null scales", {0, 0, 5, 0}, 20, 20, 0, 0, false, true});
    }
    for (auto& b : bad) {
      const int64_t ds = b.data_stride ? b.data_stride : row, ss = b.sf_stride ? b.sf_stride : sf;
      Bytes ref_data(static_cast<size_t>(21 * (row + 8)), 0x66), cuda_data = ref_data;
      Bytes ref_sf(static_cast<size_t>(21 * (sf + 8)), 0x67), cuda_sf = ref_sf;
      auto out_of = [&](Bytes& d, Bytes& s) {
        return LoadOutput{b.null_data ? nullptr : d.data(), ds,
                          b.null_scales || !f.is_index() ? nullptr : s.data(), ss, b.rows};
      };
      const auto want = code_of([&] {
        ref::load_paged_kv_cache(b.null_cache ? std::span<const uint8_t>() : std::span<const uint8_t>(cache), f, num_blocks, bs, b.segs,
                                 b.total_k, out_of(ref_data, ref_sf));
      });
      const auto got = code_of([&] {
        cuda->load_paged_kv_cache(ConstCacheView{b.null_cache ? nullptr : cache.data(), layout, layout.size_bytes()}, b.segs,
                                  b.total_k, out_of(cuda_data, cuda_sf));
      });
      ASSERT_TRUE(want.has_value()) << f.name << ": " << b.what;
      EXPECT_EQ(got, want) << f.name << ": " << b.what;
      EXPECT_TRUE(std::all_of(cuda_data.begin(), cuda_data.end(), [](uint8_t x) { return x == 0x66; }) &&
                  std::all_of(cuda_sf.begin(), cuda_sf.end(), [](uint8_t x) { return x == 0x67; }))
          << f.name << ": " << b.what << " wrote into the output";
    }
  }
}

// All-padding stores and empty loads touch nothing (and need no device work).
TEST(CudaBackend, PaddingOnlyAndEmptyCallsWriteNothing) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  const KVCacheFormat f = KVCacheFormat::V41();
  const CacheLayout layout = CacheLayout::make(f, 2, 64);
  Bytes cache(static_cast<size_t>(layout.size_bytes()), 0x11);
  std::vector<bf16_bits> kv(3 * 512, 0x3F80);
  cuda->store_kv_cache({kv.data(), 3, 512}, std::vector<int32_t>{-1, -1, -1}, {cache.data(), layout, layout.size_bytes()});
  cuda->store_kv_cache({nullptr, 0, 0}, {}, {nullptr, layout});
  EXPECT_TRUE(std::all_of(cache.begin(), cache.end(), [](uint8_t x) { return x == 0x11; }));
  Bytes out(4 * 1024, 0x22);
  cuda->load_paged_kv_cache({cache.data(), layout, layout.size_bytes()}, std::vector<int32_t>{0, 3, 3, 4}, 4,
                            {out.data(), 1024, nullptr, 0, 4});
  cuda->load_paged_kv_cache({nullptr, layout}, {}, 0, {nullptr, 0, nullptr, 0, 0});
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t x) { return x == 0x22; }));
}

// Random valid index-transform inputs: the reference's values.
TEST(CudaBackend, IndexTransformsMatchReference) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  std::mt19937_64 rng(3);
  auto to32 = [](const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); };
  const int32_t num_q = 37, k = 61, bs = 7, max_blocks = 9, num_seqs = 5;
  std::vector<int32_t> table(num_seqs * max_blocks), topk(num_q * k), seq_ids(num_q), ctx(num_q);
  for (auto& t : table) t = static_cast<int32_t>(rng() % 1000);
  for (int32_t q = 0; q < num_q; ++q) {
    seq_ids[q] = static_cast<int32_t>(rng() % num_seqs);
    ctx[q] = static_cast<int32_t>(rng() % (bs * max_blocks + 1));
    for (int32_t c = 0; c < k; ++c) topk[q * k + c] = static_cast<int32_t>(rng() % (bs * max_blocks + 20)) - 1;
  }
  const ConvertKvIndexArgs args{topk, num_q, k, table, max_blocks, seq_ids, ctx, bs};
  std::vector<int32_t> out(num_q * k, 99);
  cuda->convert_kv_index(args, out);
  EXPECT_EQ(out, to32(ref::convert_kv_index(args)));

  const int32_t wl = 13, wr = 29;
  std::vector<int32_t> left(num_q * wl), right(num_q * wr), cat(num_q * (wl + wr));
  for (auto& x : left) x = static_cast<int32_t>(rng() % 100) - 1;
  for (auto& x : right) x = static_cast<int32_t>(rng() % 100) - 1;
  cuda->kv_index_cat(left, wl, right, wr, num_q, 4096, 1024, cat);
  EXPECT_EQ(cat, to32(ref::kv_index_cat(left, wl, right, wr, num_q, 4096, 1024)));

  const int32_t width = 50;
  std::vector<int32_t> pivots(num_q * 4), exp(num_q * width);
  for (int32_t q = 0; q < num_q; ++q) {
    const int32_t len1 = static_cast<int32_t>(rng() % 30), len2 = static_cast<int32_t>(rng() % (width - len1 + 1));
    pivots[4 * q] = static_cast<int32_t>(rng() % 5000);
    pivots[4 * q + 1] = len1;
    pivots[4 * q + 2] = static_cast<int32_t>(rng() % 5000);
    pivots[4 * q + 3] = len2;
  }
  cuda->expand_swa_index(pivots, num_q, width, exp);
  EXPECT_EQ(exp, to32(ref::expand_swa_index(pivots, num_q, width)));

  const int32_t ring = 40;
  std::vector<int32_t> start_len(num_q * 2), dec(num_q * width);
  for (int32_t q = 0; q < num_q; ++q) {
    start_len[2 * q] = static_cast<int32_t>(rng() % 400);
    start_len[2 * q + 1] = static_cast<int32_t>(rng() % (ring + 1));
  }
  cuda->swa_decode_index(start_len, num_q, width, ring, dec);
  EXPECT_EQ(dec, to32(ref::swa_decode_index(start_len, num_q, width, ring)));

  // Errors: the shared validation's code, nothing written.
  std::vector<int32_t> bad_start{0, ring + 1}, small(width, 5);
  EXPECT_EQ(code_of([&] { cuda->swa_decode_index(bad_start, 1, width, ring, small); }),
            ErrorCode::kInvalidArgument);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](int32_t x) { return x == 5; }));
}

// A V41 cache over 4 GiB: records at the far end (byte offsets past 2^32) are
// stored and loaded with 64-bit offsets. The reference runs on a one-block cache
// holding the same token positions; every other byte of the big cache stays zero.
// kv rows more than 2^31 elements from the kv base (a strided view into a 4 GiB
// tensor) through the run-time store kernel (a custom format): a 32-bit row offset
// (mutant 050) stores row 2 from the wrong place. The reference gets the same rows
// packed.
TEST(CudaBackend, KvRowsPast2To31ElementsRuntimePath) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  const int64_t stride = (int64_t{1} << 30) + 7;  // elements; row 2 starts at 2^31 + 14
  const int64_t n = 3;
  const int64_t kv_bytes = ((n - 1) * stride + 64) * 2;
  if (cuda::device_free_bytes() < kv_bytes + (int64_t{2} << 30))
    GTEST_SKIP() << "needs " << (kv_bytes >> 20) << " MiB + 2 GiB of free device memory, has "
                 << cuda::device_free_bytes();
  KVCacheFormat f;
  f.name = "E4M3_G5_FP32_CAST";  // not a fixed-kernel format: the run-time store path
  f.quantized_dtype = QuantizedDtype::kE4M3;
  f.elements = 15;
  f.elements_per_sf = 5;
  f.sf_format = SfFormat::kFP32;
  f.do_cast = f.token_interleaved = true;
  f.validate();
  const CacheLayout layout = CacheLayout::make(f, 2, 4);
  std::unique_ptr<bf16_bits, void (*)(void*)> kv(static_cast<bf16_bits*>(std::calloc(static_cast<size_t>(kv_bytes), 1)),
                                                 std::free);
  ASSERT_TRUE(kv) << "cannot allocate " << kv_bytes << " host bytes";
  std::mt19937_64 rng(50);
  const auto rows = make_kv(rng, n, f.elements, f.elements, f.elements_per_sf);  // packed, for the reference
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(kv.get() + r * stride, rows.data() + r * f.elements, static_cast<size_t>(f.elements) * 2);
  const std::vector<int32_t> slots{5, 0, 6};
  Bytes got(static_cast<size_t>(layout.size_bytes()), 0x5A), want = got;
  cuda->store_kv_cache({kv.get(), n, stride}, slots, {got.data(), layout, layout.size_bytes()});
  ref::store_kv_cache({rows.data(), n, f.elements}, slots, want, f, 2, 4);
  EXPECT_EQ(got, want) << "rows 2^31 elements past the kv base were not stored from their own place";
}

TEST(CudaBackend, CacheOver4GiBFarEnd) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(cuda);
  const int64_t need = int64_t{8} << 30;
  if (cuda::device_free_bytes() < need)
    GTEST_SKIP() << "needs 8 GiB of free device memory, has " << cuda::device_free_bytes();
  const KVCacheFormat f = KVCacheFormat::V41();
  const int32_t bs = 64;
  const int64_t num_blocks = 140000;  // 140000 * 33792 B = 4.73e9 B > 4 GiB
  const CacheLayout big = CacheLayout::make(f, num_blocks, bs);
  ASSERT_GT(big.size_bytes(), int64_t{4} << 30);
  std::unique_ptr<uint8_t[]> cache(new uint8_t[static_cast<size_t>(big.size_bytes())]());
  const int32_t last = static_cast<int32_t>(big.num_slots() - 1);
  const int32_t past_4g = static_cast<int32_t>(((int64_t{4} << 30) / big.block_stride + 1) * bs + 5);
  const std::vector<int32_t> slots{last, -1, last - 1, past_4g, last - bs + 1};
  std::mt19937_64 rng(5);
  const int64_t n = static_cast<int64_t>(slots.size());
  const auto kv = make_kv(rng, n, 512, 512, 32);
  cuda->store_kv_cache({kv.data(), n, 512}, slots, {cache.get(), big, big.size_bytes()});

  // The reference: the same rows at the same token positions of one block.
  const CacheLayout one = CacheLayout::make(f, 1, bs);
  Bytes ref_cache(static_cast<size_t>(one.size_bytes()), 0);
  std::vector<int32_t> ref_slots;
  for (int32_t s : slots) ref_slots.push_back(s < 0 ? -1 : s % bs);
  ref::store_kv_cache({kv.data(), n, 512}, ref_slots, ref_cache, f, 1, bs);
  // Offsets by SPEC §3 by hand, not from CacheLayout: V41 records are 528 bytes and a
  // block of 64 tokens is 33792 bytes (the spec's own example).
  constexpr int64_t bpt = 528, kBlockStride = 33792;
  ASSERT_EQ(big.size_bytes(), num_blocks * kBlockStride);
  std::vector<std::pair<int64_t, int64_t>> records;  // byte ranges written
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] < 0) continue;
    const int64_t off = (slots[i] / bs) * kBlockStride + (slots[i] % bs) * bpt;
    ASSERT_EQ(0, std::memcmp(cache.get() + off, ref_cache.data() + ref_slots[i] * bpt,
                             static_cast<size_t>(bpt)))
        << "record of slot " << slots[i] << " at byte " << off;
    records.emplace_back(off, off + bpt);
  }
  std::sort(records.begin(), records.end());
  int64_t pos = 0, stray = 0;
  for (const auto& [b, e] : records) {
    stray += std::count_if(cache.get() + pos, cache.get() + b, [](uint8_t x) { return x != 0; });
    pos = e;
  }
  stray += std::count_if(cache.get() + pos, cache.get() + big.size_bytes(), [](uint8_t x) { return x != 0; });
  EXPECT_EQ(stray, 0) << "bytes outside the stored records changed";

  // Load those records back (plus a zero fill) and compare with the reference load.
  std::vector<int32_t> segs, ref_segs;
  int32_t dst = 0;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] < 0) continue;
    segs.insert(segs.end(), {slots[i] / bs, slots[i] % bs, slots[i] % bs + 1, dst});
    ref_segs.insert(ref_segs.end(), {0, ref_slots[i], ref_slots[i] + 1, dst});
    ++dst;
  }
  segs.insert(segs.end(), {-1, 0, 2, dst});
  ref_segs.insert(ref_segs.end(), {-1, 0, 2, dst});
  const int32_t total_k = dst + 2;
  Bytes got(static_cast<size_t>(total_k) * 1024, 0x5C), want = got;
  cuda->load_paged_kv_cache({cache.get(), big, big.size_bytes()}, segs, total_k, {got.data(), 1024, nullptr, 0, total_k});
  ref::load_paged_kv_cache(ref_cache, f, 1, bs, ref_segs, total_k,
                           {want.data(), 1024, nullptr, 0, total_k});
  EXPECT_EQ(got, want);
}

// The cuda plugin called directly, as an engine or a test of its own would, not
// through the harness (whose seam checks every call first): a paged cache whose format
// breaks SPEC §2 — e4m3 data with ue8m0 scales but elements_per_sf 0 — is refused with
// INVALID_FORMAT by every paged entry, before anything divides by the group size (it
// was a SIGFPE); as a split concat's pe_cache, naming pe_cache.
TEST(CudaPlugin, EntriesRefuseAFormatWithoutScaleGroupsBeforeUsingIt) {
  KVCHECK_CUDA_BACKEND_OR_SKIP(backend);
  const auto lib = plugin::load_library(plugin::builtin_plugin_dir() + "/libkvcheck_cuda.so");
  const kvcheck_backend_v1_t& t = *lib->table;
  kvcheck_paged_cache bad{};
  bad.format = KVCHECK_FORMAT_OTHER;
  bad.elements = 128;
  bad.quantized_dtype = 1;  // e4m3
  bad.sf_format = 1;        // ue8m0
  bad.elements_per_sf = 0;
  bad.quantized_bytes = 128;
  bad.num_blocks = 1;
  bad.block_size = 1;
  char msg[256] = {};
  kvcheck_store_args st{};
  st.cache = bad;
  EXPECT_EQ(t.store_kv_cache(t.context, &st, nullptr, msg, sizeof msg), KVCHECK_STATUS_INVALID_FORMAT) << msg;
  kvcheck_load_args ld{};
  ld.cache = bad;
  EXPECT_EQ(t.load_paged_kv_cache(t.context, &ld, nullptr, msg, sizeof msg), KVCHECK_STATUS_INVALID_FORMAT) << msg;
  // A valid BF16(8) cache of one 32-byte block, and the bad one as pe_cache.
  void* cache = nullptr;
  ASSERT_EQ(cudaMalloc(&cache, 32), cudaSuccess);
  kvcheck_concat_and_cache_mla_args cc{};
  cc.kv_lora_rank = 8;
  cc.rope_dim = 128;
  cc.cache = plugin::to_abi(CacheLayout::make(KVCacheFormat::BF16(8), 1, 1), static_cast<uint8_t*>(cache), 32);
  cc.has_pe_cache = 1;
  cc.pe_cache = bad;
  EXPECT_EQ(t.concat_and_cache_mla(t.context, &cc, nullptr, msg, sizeof msg), KVCHECK_STATUS_INVALID_FORMAT) << msg;
  EXPECT_NE(std::string(msg).find("pe_cache: "), std::string::npos) << msg;
  cudaFree(cache);
}

}  // namespace
}  // namespace kvcheck
