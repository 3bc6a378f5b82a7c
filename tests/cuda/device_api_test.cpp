// The engine-facing device API (label: cuda): device-side validation gives the cpu
// backend's exact error (code, blamed index and value, message) on random bad
// metadata and writes nothing; PDL behind a producer that writes fresh metadata;
// graph capture; the unchecked entry points; the guard bands. Skips without a GPU.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "tests/cuda/cuda_plugin.h"
#include "impl/cuda/device_api.h"
#include "impl/cuda/kv_family.h"
#include "impl/plugin/device_memory.h"
#include "tests/cuda/device_test_util.h"
#include "impl/error.h"
#include "reference/store.h"
#include "tests/cuda/pdl_kernels.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;

using cuda_test::ck;
using cuda_test::outcome;

const cpu::CpuBackend kCpu;

/// Random slot mappings with the awkward values of SPEC §6 mixed in: -1, -2,
/// INT32_MIN/MAX, num_slots, duplicates (of slot 0 too) placed before or after them.
std::vector<int32_t> bad_slots(std::mt19937_64& rng, int64_t n, int64_t num_slots) {
  std::vector<int32_t> s(static_cast<size_t>(n));
  for (auto& x : s) x = rng() % 4 == 0 ? -1 : static_cast<int32_t>(rng() % num_slots);
  const int faults = static_cast<int>(rng() % 3);
  for (int k = 0; k < faults; ++k) {
    const size_t i = rng() % s.size();
    switch (rng() % 6) {
      case 0: s[i] = -2; break;
      case 1: s[i] = INT32_MIN; break;
      case 2: s[i] = INT32_MAX; break;
      case 3: s[i] = static_cast<int32_t>(num_slots); break;
      case 4: s[i] = 0; break;  // likely a duplicate of slot 0
      default: s[i] = s[rng() % s.size()]; break;
    }
  }
  return s;
}

// Store: same outcome text as the cpu backend and the same cache bytes (untouched on
// error), for many random mappings, with and without faults.
TEST(DeviceValidation, StoreErrorsAreTheCpuErrors) {
  KVCHECK_NEED_GPU();
  const auto cuda = cuda::make_cuda_backend(nullptr);
  std::mt19937_64 rng(0x5107E);
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    const KVCacheFormat f = round % 3 == 0 ? KVCacheFormat::V41() : round % 3 == 1 ? KVCacheFormat::MXFP8_INDEX()
                                                                                   : KVCacheFormat::BF16(64);
    const int32_t bs = round % 2 ? 16 : 7;
    const CacheLayout layout = CacheLayout::make(f, 3, bs);
    const int64_t n = 1 + static_cast<int64_t>(rng() % (2 * layout.num_slots()));
    const auto slots = bad_slots(rng, n, layout.num_slots());
    std::vector<bf16_bits> kv(static_cast<size_t>(n * f.elements));
    for (auto& x : kv) x = static_cast<bf16_bits>(0x3C00 + rng() % 0x800);
    Bytes cpu_cache(static_cast<size_t>(layout.size_bytes()), 0x5A), cuda_cache = cpu_cache;
    const KVInput in{kv.data(), n, f.elements};
    const std::string want = outcome([&] { kCpu.store_kv_cache(in, slots, CacheView{cpu_cache.data(), layout, layout.size_bytes()}); });
    const std::string got = outcome([&] { cuda->store_kv_cache(in, slots, CacheView{cuda_cache.data(), layout, layout.size_bytes()}); });
    ASSERT_EQ(got, want) << "round " << round;
    ASSERT_EQ(cuda_cache, cpu_cache) << "round " << round << (want.empty() ? "" : ": wrote despite the error");
    errors += !want.empty();
  }
  EXPECT_GT(errors, 100) << errors << " of 300: the generator must mostly produce bad mappings";
  EXPECT_LT(errors, 290) << errors << " of 300: and some good ones";
}

// Load: random segment lists with out-of-range blocks, bad ranges and destinations,
// null caches and overlaps anywhere in the list.
TEST(DeviceValidation, LoadErrorsAreTheCpuErrors) {
  KVCHECK_NEED_GPU();
  const auto cuda = cuda::make_cuda_backend(nullptr);
  std::mt19937_64 rng(0x10AD);
  int errors = 0;
  for (int round = 0; round < 300; ++round) {
    const KVCacheFormat f = round % 2 ? KVCacheFormat::V41_FP4() : KVCacheFormat::FP8_FP32SF_INDEX();
    const int32_t bs = 5 + static_cast<int32_t>(rng() % 12);
    const int64_t num_blocks = 4;
    const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
    Bytes cache(static_cast<size_t>(layout.size_bytes()));
    for (auto& b : cache) b = static_cast<uint8_t>(rng());
    const int num_segments = 1 + static_cast<int>(rng() % 12);
    std::vector<int32_t> segs;
    int32_t dst = 0;
    for (int s = 0; s < num_segments; ++s) {
      int32_t block = rng() % 5 == 0 ? -1 : static_cast<int32_t>(rng() % num_blocks);
      int32_t b = static_cast<int32_t>(rng() % (bs + 1)), e = b + static_cast<int32_t>(rng() % (bs - b + 1));
      int32_t d = rng() % 6 == 0 && dst > 0 ? static_cast<int32_t>(rng() % dst) : dst;  // overlap
      switch (rng() % 14) {
        case 0: block = static_cast<int32_t>(num_blocks); break;
        case 1: block = -2; break;
        case 2: std::swap(b, e); break;
        case 3: e = bs + 1; break;
        case 4: d = -1; break;
        case 5: d = INT32_MAX; break;
        default: break;
      }
      segs.insert(segs.end(), {block, b, e, d});
      if (d >= 0 && d <= dst) dst = std::max(dst, d + std::max(0, e - b));  // not past the bogus ones
    }
    const int32_t total_k = dst - static_cast<int32_t>(rng() % 2);  // sometimes one short
    const bool null_cache = rng() % 10 == 0;
    const int64_t rows = std::max(total_k, 1);
    const int64_t ds = f.load_row_bytes() + 16, ss = std::max<int64_t>(f.load_scale_row_bytes(), 4) + 4;
    Bytes cpu_data(static_cast<size_t>(rows * ds), 0x66), cpu_sf(static_cast<size_t>(rows * ss), 0x67);
    Bytes cuda_data = cpu_data, cuda_sf = cpu_sf;
    const ConstCacheView view{null_cache ? nullptr : cache.data(), layout, layout.size_bytes()};
    const std::string want = outcome([&] {
      kCpu.load_paged_kv_cache(view, segs, total_k, LoadOutput{cpu_data.data(), ds, cpu_sf.data(), ss, rows});
    });
    const std::string got = outcome([&] {
      cuda->load_paged_kv_cache(view, segs, total_k, LoadOutput{cuda_data.data(), ds, cuda_sf.data(), ss, rows});
    });
    ASSERT_EQ(got, want) << "round " << round;
    ASSERT_EQ(cuda_data, cpu_data) << "round " << round;
    ASSERT_EQ(cuda_sf, cpu_sf) << "round " << round;
    errors += !want.empty();
  }
  EXPECT_GT(errors, 60) << errors << " of 300 cases were errors";
  EXPECT_LT(errors, 290) << errors << " of 300 cases were errors";
}

// The four index transforms: random entries with -2, INT32_MIN/MAX, missing table
// blocks, bad seq ids / context lengths / pivots / start slots.
TEST(DeviceValidation, IndexErrorsAreTheCpuErrors) {
  KVCHECK_NEED_GPU();
  const auto cuda = cuda::make_cuda_backend(nullptr);
  std::mt19937_64 rng(0x1D3);
  const int32_t awkward[] = {-2, -1, 0, 1, INT32_MIN, INT32_MAX, INT32_MAX - 3, 63, 64, 4096};
  const auto pick = [&](int32_t lo, int32_t hi) {
    return rng() % 24 == 0 ? awkward[rng() % std::size(awkward)]
                          : lo + static_cast<int32_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
  };
  int errors = 0, cases = 0;
  for (int round = 0; round < 200; ++round) {
    const int32_t num_q = 1 + static_cast<int32_t>(rng() % 6), k = static_cast<int32_t>(rng() % 7);
    const int32_t width = 1 + static_cast<int32_t>(rng() % 9);
    std::vector<int32_t> cpu_out, cuda_out;
    const auto compare = [&](const char* op, const std::function<void(const Backend&, std::vector<int32_t>&)>& call,
                             size_t out_size) {
      cpu_out.assign(out_size, 0x7A7A7A7A);
      cuda_out = cpu_out;
      const std::string want = outcome([&] { call(kCpu, cpu_out); });
      const std::string got = outcome([&] { call(*cuda, cuda_out); });
      ASSERT_EQ(got, want) << op << " round " << round;
      ASSERT_EQ(cuda_out, cpu_out) << op << " round " << round;
      errors += !want.empty();
      ++cases;
    };
    // convert_kv_index
    const int32_t max_blocks = static_cast<int32_t>(rng() % 4), bs = 1 + static_cast<int32_t>(rng() % 64);
    const int32_t num_seqs = 1 + static_cast<int32_t>(rng() % 3);
    std::vector<int32_t> table(static_cast<size_t>(num_seqs * max_blocks)), topk(static_cast<size_t>(num_q * k));
    std::vector<int32_t> ctx(static_cast<size_t>(num_q)), seq_ids(static_cast<size_t>(num_q));
    for (auto& x : table) x = rng() % 6 == 0 ? -1 : pick(0, 1000);
    for (auto& x : topk) x = pick(-1, max_blocks * bs);
    for (auto& x : ctx) x = rng() % 24 == 0 ? -1 : pick(0, max_blocks * bs + 2);
    for (auto& x : seq_ids) x = rng() % 24 == 0 ? num_seqs : static_cast<int32_t>(rng() % num_seqs);
    const bool use_seq_ids = rng() % 2;  // without: row q reads table row q (may be missing)
    const ConvertKvIndexArgs a{topk, num_q, k, table, max_blocks,
                               use_seq_ids ? std::span<const int32_t>(seq_ids) : std::span<const int32_t>(), ctx, bs};
    compare("convert_kv_index", [&](const Backend& b, std::vector<int32_t>& out) { b.convert_kv_index(a, out); },
            topk.size());
    // kv_index_cat
    const int32_t wl = static_cast<int32_t>(rng() % 4), wr = static_cast<int32_t>(rng() % 4);
    std::vector<int32_t> left(static_cast<size_t>(num_q * wl)), right(static_cast<size_t>(num_q * wr));
    for (auto& x : left) x = pick(-1, 100);
    for (auto& x : right) x = pick(-1, 100);
    const int32_t cached = rng() % 10 == 0 ? INT32_MAX - 50 : pick(0, 500), cur = pick(0, 500);
    compare("kv_index_cat",
            [&](const Backend& b, std::vector<int32_t>& out) {
              b.kv_index_cat(left, wl, right, wr, num_q, cached, cur, out);
            },
            static_cast<size_t>(num_q * (wl + wr)));
    // expand_swa_index
    std::vector<int32_t> pivots(static_cast<size_t>(num_q * 4));
    for (int32_t q = 0; q < num_q; ++q) {
      const int32_t len1 = pick(0, width), len2 = pick(0, width - std::min(width, std::max(len1, 0)));
      pivots[4 * q] = pick(0, 1000);
      pivots[4 * q + 1] = len1;
      pivots[4 * q + 2] = pick(0, 1000);
      pivots[4 * q + 3] = len2;
    }
    compare("expand_swa_index",
            [&](const Backend& b, std::vector<int32_t>& out) { b.expand_swa_index(pivots, num_q, width, out); },
            static_cast<size_t>(num_q * width));
    // SWA decode index
    const int32_t ring = rng() % 10 == 0 ? INT32_MAX / 2 : 1 + static_cast<int32_t>(rng() % 16);
    std::vector<int32_t> start_len(static_cast<size_t>(num_q * 2));
    for (int32_t q = 0; q < num_q; ++q) {
      start_len[2 * q] = pick(0, 5000);
      start_len[2 * q + 1] = pick(0, std::min(width, ring));
    }
    compare("swa_decode_index",
            [&](const Backend& b, std::vector<int32_t>& out) { b.swa_decode_index(start_len, num_q, width, ring, out); },
            static_cast<size_t>(num_q * width));
  }
  // Both outcomes must be well represented, or the comparison proves little.
  EXPECT_GT(errors, cases / 20) << errors << " of " << cases << " cases were errors";
  EXPECT_LT(errors, cases * 19 / 20) << errors << " of " << cases << " cases were errors";
}

/// Device buffers of one PDL / graph test.
struct Dev {
  explicit Dev(size_t bytes) : buf(bytes) {}
  template <typename T>
  T* as() const { return buf.as<T>(); }
  cuda::DeviceBuffer buf;
};

// A producer writes each round's kv rows, slot_mapping and load segments and lets
// its dependents launch at once; the unchecked store, then the unchecked load, run
// right behind it with PDL. Every round's result is checked on the device. Removing
// griddepcontrol.wait from the kernels makes this fail (they read the last round's
// metadata while the producer still spins).
TEST(DeviceApi, PdlBehindAProducerOfFreshMetadata) {
  KVCHECK_NEED_GPU();
  const KVCacheFormat f = KVCacheFormat::BF16(512);
  const int32_t bs = 64;
  const int64_t num_blocks = 64, n = num_blocks * bs;  // every slot, every round
  const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
  const PagedLayout p = layout.paged();
  Dev kv(static_cast<size_t>(n * f.elements * 2)), slots(static_cast<size_t>(n * 4)),
      segs(static_cast<size_t>(num_blocks * 16)), cache(static_cast<size_t>(layout.size_bytes())),
      out(static_cast<size_t>(n * f.elements * 2)), bad(16);
  cudaStream_t s;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  ck(cudaMemsetAsync(bad.as<void>(), 0, 16, s));
  const cuda::LaunchOptions pdl{s, true};
  const int kRounds = 100;
  for (int32_t round = 1; round <= kRounds; ++round) {
    ASSERT_EQ(cuda_test::launch_producer(round, kv.as<uint16_t>(), f.elements, slots.as<int32_t>(), n,
                                         segs.as<int32_t>(), num_blocks, bs, 20000, s),
              "");
    cuda::StoreArgs st{kv.as<uint16_t>(), n, f.elements, slots.as<int32_t>(), n};
    cuda::store_kv_cache(cuda::DeviceCache{cache.as<uint8_t>(), p, layout.size_bytes()}, st, pdl);
    ASSERT_EQ(cuda_test::launch_check_store(round, cache.as<uint8_t>(), p, n, bad.as<unsigned long long>(), s), "");
    ASSERT_EQ(cuda_test::launch_producer(round, nullptr, 0, nullptr, 0, segs.as<int32_t>(), num_blocks, bs, 20000, s),
              "");
    cuda::LoadArgs ld{segs.as<int32_t>(), num_blocks, static_cast<int32_t>(n), out.as<uint8_t>(), f.elements * 2,
                      nullptr, 0, n};
    cuda::load_paged_kv_cache(cuda::DeviceCache{cache.as<uint8_t>(), p, layout.size_bytes()}, ld, pdl);
    ASSERT_EQ(cuda_test::launch_check_load(round, cache.as<uint8_t>(), p, out.as<uint16_t>(), n,
                                           bad.as<unsigned long long>() + 1, s),
              "");
  }
  unsigned long long mismatches[2] = {0, 0};
  ck(cudaMemcpyAsync(mismatches, bad.as<void>(), 16, cudaMemcpyDeviceToHost, s));
  ck(cudaStreamSynchronize(s));
  ck(cudaStreamDestroy(s));
  EXPECT_EQ(mismatches[0], 0u) << "store elements that are not their round's row at their round's slot";
  EXPECT_EQ(mismatches[1], 0u) << "load elements that are not the token their round's segment names";
}

// A checked store and load captured into a CUDA graph, replayed: same bytes as the
// reference, status clear; a graph whose mapping is bad reports the cpu's error on
// every replay and writes nothing.
TEST(DeviceApi, CheckedCallsCaptureIntoAGraph) {
  KVCHECK_NEED_GPU();
  const KVCacheFormat f = KVCacheFormat::V41();
  const int32_t bs = 64;
  const int64_t num_blocks = 8, n = 300;
  const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
  std::mt19937_64 rng(3);
  std::vector<bf16_bits> kv(static_cast<size_t>(n * f.elements));
  for (auto& x : kv) x = static_cast<bf16_bits>(rng() & 0xBFFF);
  std::vector<int32_t> good(static_cast<size_t>(n)), perm(static_cast<size_t>(layout.num_slots()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int32_t>(i);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t i = 0; i < n; ++i) good[static_cast<size_t>(i)] = i % 7 == 3 ? -1 : perm[static_cast<size_t>(i)];
  Bytes want(static_cast<size_t>(layout.size_bytes()), 0x11);
  ref::store_kv_cache(KVInput{kv.data(), n, f.elements}, good, want, f, num_blocks, bs);

  Dev d_kv(kv.size() * 2), d_slots(good.size() * 4), d_cache(want.size()), status(sizeof(cuda::DeviceStatus)),
      ws(cuda::store_workspace_bytes(layout.paged()));
  ck(cudaMemcpy(d_kv.as<void>(), kv.data(), kv.size() * 2, cudaMemcpyHostToDevice));
  cudaStream_t s;
  ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  for (const bool bad : {false, true}) {
    std::vector<int32_t> slots = good;
    if (bad) slots[200] = slots[18];  // a duplicate (row 18 is no padding row), blamed at row 200
    ck(cudaMemcpy(d_slots.as<void>(), slots.data(), slots.size() * 4, cudaMemcpyHostToDevice));
    ck(cudaMemset(d_cache.as<void>(), 0x11, want.size()));
    ck(cudaDeviceSynchronize());  // the legacy-stream setup is done before stream s runs
    cudaGraph_t graph;
    ck(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    const cuda::PendingCheck pc = cuda::store_kv_cache_checked(
        cuda::DeviceCache{d_cache.as<uint8_t>(), layout.paged(), layout.size_bytes()},
        cuda::StoreArgs{d_kv.as<uint16_t>(), n, f.elements, d_slots.as<int32_t>(), n},
        status.as<cuda::DeviceStatus>(), ws.as<void>(), cuda::LaunchOptions{s, true});
    ck(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    ck(cudaGraphInstantiate(&exec, graph, 0));
    const std::string cpu_error = outcome([&] {
      Bytes scratch(want.size(), 0x11);
      kCpu.store_kv_cache(KVInput{kv.data(), n, f.elements}, slots, CacheView{scratch.data(), layout, layout.size_bytes()});
    });
    ASSERT_EQ(cpu_error.empty(), !bad) << cpu_error;
    for (int replay = 0; replay < 3; ++replay) {
      ck(cudaGraphLaunch(exec, s));
      EXPECT_EQ(outcome([&] { pc.throw_if_error(s); }), cpu_error) << "replay " << replay;
      Bytes got(want.size());
      ck(cudaMemcpy(got.data(), d_cache.as<void>(), got.size(), cudaMemcpyDeviceToHost));
      if (bad)
        EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0x11; })) << "wrote on error";
      else
        EXPECT_EQ(got, want) << "replay " << replay;
    }
    ck(cudaGraphExecDestroy(exec));
    ck(cudaGraphDestroy(graph));
  }
  ck(cudaStreamDestroy(s));
}

// The guard bands see a write just outside the buffer, before and after it.
TEST(DeviceApi, GuardBandsSeeWritesOutsideTheBuffer) {
  KVCHECK_NEED_GPU();
  Bytes host(1000, 0x42), back(1000);
  for (const int64_t offset : {int64_t{-1}, int64_t{1000}, int64_t{-4096}, int64_t{1000 + 4095}}) {
    cuda::GuardedBuffer b(host.data(), host.size(), cuda::guard_for(0), "the test buffer", nullptr);
    ck(cudaDeviceSynchronize());
    ck(cudaMemset(b.get() + offset, 0x00, 1));
    ck(cudaDeviceSynchronize());
    try {
      b.download(back.data());
      ADD_FAILURE() << "a write at offset " << offset << " was not seen";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("offset " + std::to_string(offset)), std::string::npos) << e.what();
    }
  }
  cuda::GuardedBuffer clean(host.data(), host.size(), cuda::guard_for(0), "the test buffer", nullptr);
  clean.download(back.data());
  EXPECT_EQ(back, host);
}

// A device layout that is not what SPEC §3 derives is refused by a checked call before
// any launch (unchecked hot paths take the layout as built by CacheLayout::paged()).
TEST(DeviceApi, RefusesAHandBuiltLayoutWithTheWrongStride) {
  KVCHECK_NEED_GPU();
  PagedLayout p = CacheLayout::make(KVCacheFormat::V41(), 2, 64).paged();
  p.block_stride += 16;
  const std::string got = outcome([&] {
    cuda::store_kv_cache_checked(cuda::DeviceCache{nullptr, p}, cuda::StoreArgs{}, nullptr, nullptr,
                                 cuda::LaunchOptions{});
  });
  EXPECT_NE(got.find("invalid-argument"), std::string::npos) << got;
  EXPECT_NE(got.find("block_stride 33808"), std::string::npos) << got;
}

// A device cache whose buffer is smaller than its layout is refused on the host
// before anything is enqueued (docs/spec.md §5.2 validation order, step 1), with the
// cpu backend's code and message; no device needed: the pointers are never touched.
TEST(DeviceApi, RefusesACacheLayoutLargerThanItsBuffer) {
  const CacheLayout real = CacheLayout::make(KVCacheFormat::V41(), 2, 64);
  std::vector<uint8_t> host(static_cast<size_t>(real.size_bytes()));
  std::vector<uint16_t> kv(512);
  const std::vector<int32_t> slots{0};
  const std::vector<int32_t> segs{0, 0, 1, 0};
  std::vector<uint8_t> out(1024);
  for (const CacheLayout& claim : {CacheLayout::make(KVCacheFormat::V41(), 3, 64),
                                   CacheLayout::make(KVCacheFormat::V41(), 2, 65)}) {
    const cuda::DeviceCache cache{host.data(), claim.paged(), real.size_bytes()};
    const std::string store = outcome([&] {
      cuda::store_kv_cache_checked(cache, cuda::StoreArgs{kv.data(), 1, 512, slots.data(), 1}, nullptr, nullptr,
                                   cuda::LaunchOptions{});
    });
    const std::string load = outcome([&] {
      cuda::load_paged_kv_cache_checked(cache, cuda::LoadArgs{segs.data(), 1, 1, out.data(), 1024, nullptr, 0, 1},
                                        nullptr, nullptr, cuda::LaunchOptions{});
    });
    const std::string cpu = outcome([&] {
      kCpu.store_kv_cache(KVInput{kv.data(), 1, 512}, slots, CacheView{host.data(), claim, real.size_bytes()});
    });
    EXPECT_EQ(store, cpu);
    EXPECT_EQ(load, cpu);
    EXPECT_NE(store.find("shape-mismatch: cache view claims"), std::string::npos) << store;
  }
  // The buffer that fits gets past the check (to the missing workspace).
  const std::string fits = outcome([&] {
    cuda::store_kv_cache_checked(cuda::DeviceCache{host.data(), real.paged(), real.size_bytes()},
                                 cuda::StoreArgs{kv.data(), 1, 512, slots.data(), 1}, nullptr, nullptr,
                                 cuda::LaunchOptions{});
  });
  EXPECT_NE(fits.find("invalid-argument: a checked store needs a workspace"), std::string::npos) << fits;
}

}  // namespace
}  // namespace kvcheck

namespace kvcheck {
namespace {

// The K/V launchers refuse a dtype pair the host validation refuses (SPEC §7.1) before
// any launch, so these run without a GPU: a bf16 cache fed fp16 rows was once copied as
// raw bits, and a bf16 key with an fp16 value was quantised side by side.
using D = KvDevDtype;

std::string store_refusal(D cache, D key, D value) {
  cuda::StoreKvLaunch s;
  s.n = 1;
  s.layout.dtype = cache;
  s.key.dtype = key;
  s.value.dtype = value;
  return cuda::launch_store_kv(s, nullptr, {});
}

std::string gather_refusal(D cache, D out_k, D out_v) {
  cuda::GatherKvLaunch g;
  g.max_tokens = 1;
  g.layout.dtype = cache;
  g.out_k.dtype = out_k;
  g.out_v.dtype = out_v;
  return cuda::launch_gather_kv(g, nullptr, {});
}

TEST(KvFamilyLaunch, RefusesRowsOfAnotherDtypeThanATwoByteCache) {
  EXPECT_EQ(store_refusal(D::kBF16, D::kFP16, D::kFP16), "store_kv: key is fp16 but a bf16 cache takes bf16 rows (SPEC §7.1)");
  EXPECT_EQ(gather_refusal(D::kFP16, D::kBF16, D::kBF16), "gather_kv: out_k is bf16 but a fp16 cache gives fp16 rows (SPEC §7.1)");
}

TEST(KvFamilyLaunch, RefusesKeyAndValueOfTwoDtypes) {
  EXPECT_EQ(store_refusal(D::kE4M3, D::kBF16, D::kFP16),
            "store_kv: key is bf16 but value is fp16: key and value share one model dtype (SPEC §7.1)");
  EXPECT_EQ(gather_refusal(D::kE5M2, D::kFP16, D::kBF16),
            "gather_kv: out_k is fp16 but out_v is bf16: key and value share one model dtype (SPEC §7.1)");
}

}  // namespace
}  // namespace kvcheck

namespace kvcheck {
namespace {

// Decode-size BF16 stores take store_copy_row_kernel, kDecodeRowsPerCta rows a CTA (4 for
// rows of up to 64 16-byte chunks, 2 up to 128, 1 up to 256): every row of every CTA,
// the last CTA's ragged rows too, lands at its slot, padding (-1) rows nowhere, and no
// other byte moves. The expected cache is built by hand: a BF16(E) cache holds slot s's
// E elements at byte 2 E s (SPEC §2), the rest stays 0xA5.
TEST(DeviceApi, DecodeStoresEveryRowOfEveryCta) {
  KVCHECK_NEED_GPU();
  std::mt19937 rng(7);
  for (const int32_t e : {512, 576, 1024, 2048, 8}) {  // 64, 72, 128, 256 and 1 chunks a row
    for (const int64_t n : {1, 2, 3, 5, 6, 7, 9, 255, 256}) {
      SCOPED_TRACE("E " + std::to_string(e) + ", " + std::to_string(n) + " rows");
      const int32_t bs = 16;
      const int64_t num_blocks = 32, row_bytes = 2 * int64_t{e};
      const CacheLayout layout = CacheLayout::make(KVCacheFormat::BF16(e), num_blocks, bs);
      ASSERT_EQ(layout.size_bytes(), num_blocks * bs * row_bytes);
      std::vector<int32_t> slots(static_cast<size_t>(num_blocks * bs));
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(static_cast<size_t>(n));
      if (n > 2) slots[1] = -1;  // padding, inside the first CTA
      if (n > 4) slots[static_cast<size_t>(n - 1)] = -1;  // and the last row of the last
      std::vector<uint16_t> kv(static_cast<size_t>(n * e));
      for (auto& x : kv) x = static_cast<uint16_t>(rng());
      Bytes want(static_cast<size_t>(layout.size_bytes()), 0xA5);
      for (int64_t r = 0; r < n; ++r)
        if (slots[static_cast<size_t>(r)] >= 0)
          std::memcpy(want.data() + slots[static_cast<size_t>(r)] * row_bytes, kv.data() + r * e,
                      static_cast<size_t>(row_bytes));
      cuda_test::DeviceArray<uint8_t> d_cache(want.size());
      cuda_test::DeviceArray<uint16_t> d_kv(kv.size());
      cuda_test::DeviceArray<int32_t> d_slots(slots.size());
      ck(cudaMemset(d_cache.p, 0xA5, want.size()));
      ck(cudaMemcpy(d_kv.p, kv.data(), kv.size() * 2, cudaMemcpyHostToDevice));
      ck(cudaMemcpy(d_slots.p, slots.data(), slots.size() * 4, cudaMemcpyHostToDevice));
      cuda::StoreArgs a;
      a.kv = d_kv.p;
      a.kv_rows = n;
      a.kv_row_stride = e;
      a.slot_mapping = d_slots.p;
      a.num_tokens = n;
      cuda::store_kv_cache(cuda::DeviceCache{d_cache.p, layout.paged(), layout.size_bytes()}, a, {});
      ck(cudaDeviceSynchronize());
      Bytes got(want.size());
      ck(cudaMemcpy(got.data(), d_cache.p, got.size(), cudaMemcpyDeviceToHost));
      const auto diff = std::mismatch(got.begin(), got.end(), want.begin());
      EXPECT_TRUE(diff.first == got.end()) << "first differing byte " << (diff.first - got.begin()) << " (slot "
                                           << (diff.first - got.begin()) / row_bytes << ")";
    }
  }
}

// A launch reports its own status and leaves an error the caller had pending alone
// (resident_ctas once cleared it with cudaGetLastError). CTest runs each test in a
// fresh process, so this is the first launch of the kernel here, where the queries run.
TEST(DeviceApi, LaunchLeavesTheCallersPendingErrorAlone) {
  KVCHECK_NEED_GPU();
  int32_t* d = nullptr;
  ck(cudaMalloc(reinterpret_cast<void**>(&d), 64 * sizeof(int32_t)));
  ck(cudaMemset(d, 0, 64 * sizeof(int32_t)));
  int count = 0;
  ck(cudaGetDeviceCount(&count));
  ASSERT_EQ(cudaSetDevice(count + 7), cudaErrorInvalidDevice);  // a non-sticky error, now pending
  const cuda::PendingCheck pc = cuda::expand_swa_index(d, 2, 4, d + 32, /*checked=*/false, nullptr, {});
  (void)pc;
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice) << "the launch cleared the caller's pending error";
  ck(cudaDeviceSynchronize());
  ck(cudaFree(d));
}

}  // namespace
}  // namespace kvcheck
