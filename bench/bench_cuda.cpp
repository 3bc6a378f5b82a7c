// CUDA kernel throughput through the device API (impl/cuda/device_api.h), everything
// device-resident: every SPEC §2 format, store and load, n = 1 .. 262,144 tokens,
// block sizes 64 and 133, scattered slots (a random permutation of the cache's slots;
// loads read whole blocks in a random order). Baselines timed in the same process: a
// 2 GiB device-to-device copy (bytes read + written) and an empty kernel launch.
//
//   bench_cuda [--json FILE] [--quick] [--format NAME] [--tokens N] [--slots scattered|blocks]
//              [--pdl] [--check BASELINE]... [--tolerance POINTS]
// --slots blocks: the stores' slot_mapping as a prefill writes it (each block's tokens in
// order, the blocks in a random order) instead of every slot at random (the default, the
// gated figures); the header line and the JSON ("slots") say so, and --check refuses it
// (the baselines are of scattered slots). Its decode-size rows then write consecutive
// slots of one block or a few (a decode batch's are random: read them from a scattered
// run), and its other random inputs differ from a scattered run's (fewer draws).
// --pdl: the store, load, concat, store_kv and gather_kv rows launched with programmatic
// dependent launch (LaunchOptions::pdl), as an engine chains its kernels, instead of plain
// launches (the default, the gated figures). Each kernel waits for the one before at its
// start and releases the next after its last write, so plain minus PDL is a lower bound
// on what launching back-to-back kernels costs a short row. Rows timed one launch at a
// time (decode, "timing": "single") sync after each launch and do not change; the
// access-pattern floor, the empty kernel and the copy_blocks / swap_blocks rows launch
// plainly either way (their rows' "launch": "plain"). The header and each row's JSON
// ("launch") say so; --check refuses it.
// --check: the performance gate (docs/cuda.md, "The performance gate"). BASELINE is a --json file of an
// earlier run (bench/baseline_<card>.json are the committed ones, one per GPU model; given
// several times, the one from this device is used, none: no verdict); every bandwidth row it
// holds that this run measured again must keep its ratio to the copy within POINTS
// percentage points (default: the file's "tolerance_points", else 5), else the row is
// DROPPED and the exit code is 1. A baseline row this run did not measure is "not
// measured", never a pass; a run that measured none of them fails too (it gated
// nothing). Decode rows are not gated (a launch of a few microseconds: noise).
// --format / --tokens run one format / one size (for ncu); --tokens also takes sizes past
// 262,144 (up to 4,194,304: the MLA rows only, the K/V rows keep theirs). K/V family rows (SPEC §7,
// "kv ..."; op "load" is gather_kv) follow the MLA formats, then copy_blocks (SPEC §8.1,
// "copy ...": bytes = every copied block read and written), then swap_blocks (docs/spec.md
// §8.3, "swap ...": bytes = the bytes moved, the ratio to a cudaMemcpyAsync of them in
// the same direction).
// Bandwidth rows: CUDA events around 20 back-to-back launches, median of 5; MLA and K/V
// store/load rows also time the access-pattern floor (bench/pattern_copy.h, docs/cuda.md
// "The access-pattern floor"): the same bytes between the same addresses, no arithmetic. Decode
// rows (n <= 256), twice: each launch timed alone (event, launch, event, sync), median
// of 200, and inside a CUDA graph as engines run decode (100 launches captured, the
// graph replayed 20 times, median of 5; "timing": "graph"), each next to the empty
// kernel timed the same way. Bytes = payload read + written
// (kv rows and records for a store; records and output rows for a load).
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <numeric>
#include <random>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/empty_kernel.h"
#include "bench/pattern_copy.h"
#include "bench/perf_gate.h"
#include "impl/cuda/device_api.h"
#include "impl/cuda/kv_family.h"
#include "impl/kv_layout.h"
#include "impl/layout.h"
#include "impl/op_args.h"

namespace kvcheck {
namespace {

#define CK(x)                                                                        \
  do {                                                                               \
    const cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                  \
    }                                                                                \
  } while (0)

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Milliseconds per launch: events around `iters` back-to-back launches, median of 5.
double time_batched(const std::function<void()>& launch, int iters, cudaStream_t s) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();  // warm up
  std::vector<double> ms;
  for (int rep = 0; rep < 5; ++rep) {
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < iters; ++i) launch();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t / iters);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(ms);
}

/// Milliseconds of one launch timed alone (event, launch, event, sync), median of 200.
double time_single(const std::function<void()>& launch, cudaStream_t s) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 10; ++i) launch();
  CK(cudaStreamSynchronize(s));
  std::vector<double> ms;
  for (int i = 0; i < 200; ++i) {
    CK(cudaEventRecord(a, s));
    launch();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    float t = 0;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return median(ms);
}

/// Milliseconds per launch inside a CUDA graph, as engines run decode: `launches`
/// back-to-back launches captured once, the graph replayed 20 times between events
/// (time_batched), divided by `launches`.
double time_graph(const std::function<void()>& launch, cudaStream_t s, int launches = 100) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < launches; ++i) launch();
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  const double ms = time_batched([&] { CK(cudaGraphLaunch(exec, s)); }, 20, s) / launches;
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return ms;
}

void* dmalloc(size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(bytes, 1)));
  return p;
}

struct Row {
  std::string op, format;
  int64_t tokens, block_size;
  double bytes, ms, gbps, ratio;  // ratio: to the copy (bandwidth rows) or the empty kernel (decode rows)
  bool decode;
  std::string timing = "batched";  // batched | single (a launch alone) | graph (inside a CUDA graph)
  double floor_gbps = 0;  // the access-pattern floor (bench/pattern_copy.h) over the same bytes; 0: not measured
};

/// The pattern copy of `a`, built once per row for its footprint check and its timing;
/// null when PatternCopy cannot take `a` (its refusal is then printed once per reason).
std::unique_ptr<const bench::PatternCopy> pattern_copy(const bench::PatternArgs& a) {
  if (const std::string why = bench::PatternCopy::refusal(a); !why.empty()) {
    static std::vector<std::string> said;
    if (std::find(said.begin(), said.end(), why) == said.end()) {
      said.push_back(why);
      std::printf("access-pattern floor not measured where: %s\n", why.c_str());
    }
    return nullptr;
  }
  return std::make_unique<const bench::PatternCopy>(a);
}

/// GB/s of `bytes` moved by `copy`, timed as a bandwidth row (the fastest unroll).
double floor_gbps(const bench::PatternCopy& copy, double bytes, cudaStream_t s) {
  double best = 0;
  for (const int unroll : {1, 2, 4}) {
    // bench/ncu.sh finds each timed floor by this range's name (the footprint check's
    // launches come first, a number that depends on the row).
    nvtxRangePushA(
        (std::string("floor ") + (copy.args().store ? "store" : "load") + " unroll " + std::to_string(unroll)).c_str());
    best = std::max(best, bytes / time_batched([&] { copy.launch(s, unroll); }, 20, s) / 1e6);
    nvtxRangePop();
  }
  return best;
}

/// A floor is only a floor when it writes what the kernel writes: the store and the
/// pattern copy each run on `buffers` filled with 0xAA and again filled with 0x55 (a byte
/// is written when it differs from either fill: a kernel's byte may equal one of them),
/// and their written bytes compared on the device. False, and a line saying where, when
/// they differ. Checked once per row (at its first bandwidth size).
bool same_footprint(const char* row, const std::function<void()>& store, const bench::PatternCopy& copy,
                    const std::vector<std::pair<uint8_t*, size_t>>& buffers, cudaStream_t s) {
  for (const int unroll : {1, 2, 4})
    for (size_t i = 0; i < buffers.size(); ++i) {
      const auto [buf, bytes] = buffers[i];
      uint8_t* kept[3];  // the kernel's after 0xAA and 0x55, the copy's after 0xAA
      for (uint8_t*& k : kept) k = static_cast<uint8_t*>(dmalloc(bytes));
      const auto run_on = [&](uint8_t fill, const std::function<void()>& writer, uint8_t* keep) {
        CK(cudaMemsetAsync(buf, fill, bytes, s));
        writer();
        if (keep != nullptr) CK(cudaMemcpyAsync(keep, buf, bytes, cudaMemcpyDeviceToDevice, s));
      };
      const std::function<void()> pattern = [&] { copy.launch(s, unroll); };
      run_on(0xAA, store, kept[0]);
      run_on(0x55, store, kept[1]);
      run_on(0xAA, pattern, kept[2]);
      run_on(0x55, pattern, nullptr);  // left in buf
      CK(cudaGetLastError());
      const int64_t at = bench::first_footprint_difference(kept[0], kept[1], kept[2], buf, bytes, s);
      for (uint8_t* k : kept) CK(cudaFree(k));
      if (at >= 0) {
        std::printf("access-pattern floor of %s not measured: buffer %zu byte %lld is written by one of the kernel "
                    "and the pattern copy only\n", row, i, static_cast<long long>(at));
        return false;
      }
    }
  return true;
}

/// The pattern of an MLA-cache store (slots) or load (blocks) of `layout` (SPEC §3):
/// a token-interleaved record is one piece; a block-planar one its [data | tail] row and
/// its scales. Flat rows: the store's BF16 kv row; the load's output row and scales.
bench::PatternArgs mla_pattern(const CacheLayout& layout, uint8_t* cache, bool store, const void* kv, uint8_t* out,
                               uint8_t* sf, const int32_t* slots, const int32_t* blocks, int64_t n) {
  const PagedLayout p = layout.paged();
  bench::PatternArgs a;
  a.n = n;
  a.block_size = layout.block_size;
  a.block_stride[0] = p.block_stride;
  a.slots = slots;
  a.blocks = blocks;
  a.store = store;
  a.side[0].cache[0] = cache;
  a.piece[a.pieces++] = {0, 0, p.data_token_stride, static_cast<int32_t>(p.data_token_stride)};
  if (!p.interleaved && p.sf_bytes > 0)
    a.piece[a.pieces++] = {0, p.scale_region, p.scale_token_stride, static_cast<int32_t>(p.sf_bytes)};
  if (store) {
    a.side[0].flat[0] = static_cast<uint8_t*>(const_cast<void*>(kv));
    a.flat_bytes[0] = 2 * layout.format.elements;
  } else {
    a.side[0].flat[0] = out;
    a.flat_bytes[0] = static_cast<int32_t>(layout.format.load_row_bytes());
    a.side[0].flat[1] = sf;
    a.flat_bytes[1] = static_cast<int32_t>(layout.format.load_scale_row_bytes());
  }
  return a;
}

/// The stores' slot_mapping over `num_slots` slots of blocks of `bs` tokens, in a random
/// order: every slot at random (scattered), or each block's slots in order with the
/// blocks in a random order (blocks: a prefill's pattern). num_slots % bs == 0.
std::vector<int32_t> slot_order(int64_t num_slots, int32_t bs, bool blocks, std::mt19937_64& rng) {
  std::vector<int32_t> perm(static_cast<size_t>(num_slots));
  if (!blocks) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    return perm;
  }
  if (num_slots % bs != 0) {
    std::fprintf(stderr, "bench_cuda: %lld slots are no whole number of blocks of %d\n",
                 static_cast<long long>(num_slots), bs);
    std::exit(2);
  }
  std::vector<int32_t> order(static_cast<size_t>(num_slots / bs));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const auto b = static_cast<size_t>(bs);
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = order[i / b] * bs + static_cast<int32_t>(i % b);
  return perm;
}

/// The performance gate (--check, bench/perf_gate.h) against the baseline of this
/// device among `files`: prints its table, returns the exit code (0 or 1).
int check_baseline(const std::vector<Row>& rows, double copy_gbps, const std::vector<std::string>& files,
                   double tolerance, const std::string& this_device) {
  std::vector<bench::PerfRow> measured;
  for (const Row& r : rows)
    measured.push_back({r.op, r.format, r.tokens, r.block_size, r.decode ? r.gbps / copy_gbps : r.ratio, r.decode});
  std::vector<bench::NamedBaseline> baselines;
  for (const std::string& f : files) {
    std::ifstream in(f);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      std::fprintf(stderr, "bench_cuda: the baseline %s is not JSON\n", f.c_str());
      return 1;
    }
    baselines.push_back({f, std::move(j)});
  }
  try {
    const bench::PerfGateResult g = bench::check_perf_baselines(measured, baselines, tolerance, this_device);
    std::printf("\n%s", g.report.c_str());
    return g.exit_code();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "bench_cuda: a baseline is not a bench_cuda --json file: %s\n", e.what());
    return 1;
  }
}

/// The fused-RoPE rows' inputs (docs/spec.md §8.4) on the device: a kRopePositions x
/// rot_dim cos/sin table of real angles (cos of pair j at column j, sin at rot_dim/2 +
/// j, base 10000; it stays in L2) and n random positions below kRopePositions.
constexpr int64_t kRopePositions = 4096;
struct RopeInputs {
  float* table;
  int64_t* positions;
};
RopeInputs rope_inputs(int32_t rot_dim, int64_t n, std::mt19937_64& rng) {
  const int32_t half = rot_dim / 2;
  std::vector<float> table(static_cast<size_t>(kRopePositions * rot_dim));
  for (int64_t p = 0; p < kRopePositions; ++p)
    for (int32_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(p) * std::pow(10000.0, -static_cast<double>(j) / half);
      table[static_cast<size_t>(p * rot_dim + j)] = static_cast<float>(std::cos(angle));
      table[static_cast<size_t>(p * rot_dim + half + j)] = static_cast<float>(std::sin(angle));
    }
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (auto& p : positions) p = static_cast<int64_t>(rng() % kRopePositions);
  RopeInputs in{static_cast<float*>(dmalloc(table.size() * 4)), static_cast<int64_t*>(dmalloc(positions.size() * 8))};
  CK(cudaMemcpy(in.table, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(in.positions, positions.data(), positions.size() * 8, cudaMemcpyHostToDevice));
  return in;
}

}  // namespace
}  // namespace kvcheck

// --tokens' largest count: BF16(512)'s buffers and the footprint check's three cache
// copies take about 25 GiB there (at 2^24 about 98 GiB, more than an H100 holds).
constexpr int64_t kMaxOnlyTokens = int64_t{1} << 22;

int main(int argc, char** argv) {
  using namespace kvcheck;
  std::string json, only_format;
  std::vector<std::string> baselines;  // --check, once per GPU model
  bool quick = false, block_slots = false, pdl = false;
  int64_t only_tokens = 0;
  double tolerance = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (a == "--format" && i + 1 < argc) {
      only_format = argv[++i];
    } else if (a == "--tokens" && i + 1 < argc) {
      char* end = nullptr;
      only_tokens = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || end == argv[i] || only_tokens < 1 || only_tokens > kMaxOnlyTokens) {
        std::fprintf(stderr, "bench_cuda: --tokens %s: a count from 1 to %lld\n", argv[i],
                     static_cast<long long>(kMaxOnlyTokens));
        return 2;
      }
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--pdl") {
      pdl = true;
    } else if (a == "--slots" && i + 1 < argc && (std::string(argv[i + 1]) == "scattered" || std::string(argv[i + 1]) == "blocks")) {
      block_slots = std::string(argv[++i]) == "blocks";
    } else if (a == "--check" && i + 1 < argc) {
      baselines.push_back(argv[++i]);
    } else if (a == "--tolerance" && i + 1 < argc) {
      char* end = nullptr;
      tolerance = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(tolerance >= 0)) {
        std::fprintf(stderr, "bench_cuda: --tolerance takes percentage points >= 0, not '%s'\n", argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr,
                   "usage: bench_cuda [--json FILE] [--quick] [--format NAME] [--tokens N] [--slots scattered|blocks] [--pdl] "
                   "[--check BASELINE]... "
                   "[--tolerance POINTS]\n");
      return 2;
    }
  }
  // How this run measures: the JSON's "slots" and "launch", and what --check compares.
  const nlohmann::json mode{{"slots", block_slots ? "blocks" : "scattered"}, {"launch", pdl ? "pdl" : "plain"}};
  if (const std::string o = bench::ungated_options(mode); !o.empty() && !baselines.empty()) {
    std::fprintf(stderr, "bench_cuda: --check gates scattered slots and plain launches (the baselines'), not %s\n",
                 o.c_str());
    return 2;
  }
  for (const std::string& b : baselines)
    if (!std::ifstream(b)) {
      std::fprintf(stderr, "bench_cuda: cannot read the baseline %s\n", b.c_str());
      return 2;
    }
  const std::string why = cuda::probe_device();
  if (!why.empty()) {
    std::printf("bench_cuda: skipped (%s)%s\n", why.c_str(), baselines.empty() ? "" : "; the performance gate did not run");
    return 0;
  }
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));

  // Baselines.
  const size_t copy_bytes = size_t{2} << 30;
  void* src = dmalloc(copy_bytes);
  void* dst = dmalloc(copy_bytes);
  CK(cudaMemset(src, 1, copy_bytes));
  const double copy_ms =
      time_batched([&] { CK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s)); }, 5, s);
  const double copy_gbps = 2.0 * copy_bytes / copy_ms / 1e6;
  CK(cudaFree(src));
  CK(cudaFree(dst));
  const double empty_ms = time_single([&] { bench::launch_empty(s); }, s);
  const double empty_graph_ms = time_graph([&] { bench::launch_empty(s); }, s);
  std::printf("device %s: d2d copy %.1f GB/s (read + written), empty kernel %.2f us per launch alone, %.2f us in a "
              "CUDA graph\n",
              prop.name, copy_gbps, empty_ms * 1e3, empty_graph_ms * 1e3);
  if (pdl)
    std::printf("launches: PDL (--pdl: the store, load, concat, store_kv and gather_kv launches with programmatic "
                "dependent launch, as an engine's kernel chain; not the gated figures)\n");
  if (block_slots)
    std::printf("slots: blocks (--slots blocks: each block's slots in order, the blocks shuffled; not the gated "
                "pattern)\n");

  // --tokens N: that one size for the MLA rows, above 262,144 too (a working set past
  // L2, whose 50-60 MB holds a small index load's whole cache between launches).
  const int64_t max_tokens = std::max<int64_t>(quick ? 65536 : 262144, only_tokens);
  std::vector<int64_t> sizes = {1, 16, 256, 4096, 65536};
  if (!quick) sizes.push_back(262144);
  if (only_tokens > 0) sizes = {only_tokens};
  std::vector<KVCacheFormat> formats = supported_formats();
  if (!only_format.empty()) {
    if (only_format.rfind("kv ", 0) == 0 || only_format.rfind("copy ", 0) == 0 || only_format.rfind("swap ", 0) == 0) {
      formats = {};
    } else {
      try {
        formats = {format_by_name(only_format)};
      } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_cuda: --format %s: %s (a SPEC §2 format, BF16(E), or a row name such as "
                     "\"kv bf16\", \"copy 2x32KiB\", \"swap h2d 64x4KiB\")\n", only_format.c_str(), e.what());
        return 2;
      }
    }
  }
  std::vector<Row> rows;
  std::mt19937_64 rng(1);
  for (const KVCacheFormat& f : formats) {
    for (const int32_t bs : {64, 133}) {
      const int64_t num_blocks = (max_tokens + bs - 1) / bs;
      const CacheLayout layout = CacheLayout::make(f, num_blocks, bs);
      const cuda::DeviceCache cache{static_cast<uint8_t*>(dmalloc(static_cast<size_t>(layout.size_bytes()))),
                                    layout.paged(), layout.size_bytes()};
      CK(cudaMemset(cache.base, 0, static_cast<size_t>(layout.size_bytes())));
      // Split caches (docs/spec.md §8.2) as FlashInfer keeps them: this BF16(512) cache
      // holds kv_c and a BF16(64) pe_cache of the same blocks holds k_pe.
      const bool split = f == KVCacheFormat::BF16(512);
      const CacheLayout pe_layout = CacheLayout::make(KVCacheFormat::BF16(64), num_blocks, bs);
      const cuda::DeviceCache pe_cache{
          split ? static_cast<uint8_t*>(dmalloc(static_cast<size_t>(pe_layout.size_bytes()))) : nullptr,
          pe_layout.paged(), pe_layout.size_bytes()};
      // kv: random finite bf16 with a per-group spread of exponents.
      std::vector<uint16_t> kv(static_cast<size_t>(max_tokens * f.elements));
      for (auto& x : kv) x = static_cast<uint16_t>(((rng() & 1) << 15) | ((112 + rng() % 24) << 7) | (rng() & 0x7F));
      const std::vector<int32_t> perm = slot_order(layout.num_slots(), bs, block_slots, rng);
      std::vector<int32_t> blocks(static_cast<size_t>(num_blocks));
      std::iota(blocks.begin(), blocks.end(), 0);
      std::shuffle(blocks.begin(), blocks.end(), rng);
      auto* d_kv = static_cast<uint16_t*>(dmalloc(kv.size() * 2));
      auto* d_slots = static_cast<int32_t*>(dmalloc(perm.size() * 4));
      auto* d_blocks = static_cast<int32_t*>(dmalloc(blocks.size() * 4));
      CK(cudaMemcpy(d_blocks, blocks.data(), blocks.size() * 4, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(d_kv, kv.data(), kv.size() * 2, cudaMemcpyHostToDevice));
      CK(cudaMemcpy(d_slots, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
      const int64_t out_row = f.load_row_bytes(), sf_row = f.load_scale_row_bytes();
      auto* d_out = static_cast<uint8_t*>(dmalloc(static_cast<size_t>(max_tokens * out_row)));
      auto* d_sf = static_cast<uint8_t*>(dmalloc(static_cast<size_t>(max_tokens * std::max<int64_t>(sf_row, 4))));
      // Fill the cache once with real records.
      cuda::store_kv_cache(cache, {d_kv, max_tokens, f.elements, d_slots, max_tokens}, {s, pdl});
      // A fused RoPE of k_pe (docs/spec.md §8.4) as vLLM's MLA runs it: NeoX on all 64
      // rope dims, a 4096-position table of real angles, random positions.
      const RopeInputs ri = rope_inputs(64, max_tokens, rng);
      const RopeArgs rope{ri.table, kRopePositions, ri.positions, max_tokens, 64, 0, true};
      bool footprint_checked = false, floor_ok = true;  // same_footprint, once per cache
      for (const int64_t n : sizes) {
        const bool decode = n <= 256;
        const cuda::StoreArgs st{d_kv, max_tokens, f.elements, d_slots, n};
        const auto store = [&] { cuda::store_kv_cache(cache, st, {s, pdl}); };
        std::vector<int32_t> segs;
        for (int64_t b = 0, t = 0; t < n; ++b, t += bs)
          segs.insert(segs.end(), {blocks[static_cast<size_t>(b)], 0, static_cast<int32_t>(std::min<int64_t>(bs, n - t)),
                                   static_cast<int32_t>(t)});
        auto* d_segs = static_cast<int32_t*>(dmalloc(segs.size() * 4));
        CK(cudaMemcpy(d_segs, segs.data(), segs.size() * 4, cudaMemcpyHostToDevice));
        const cuda::LoadArgs ld{d_segs, static_cast<int64_t>(segs.size() / 4), static_cast<int32_t>(n), d_out, out_row,
                                f.is_index() ? d_sf : nullptr, sf_row, n};
        const auto load = [&] { cuda::load_paged_kv_cache(cache, ld, {s, pdl}); };
        const double store_bytes = static_cast<double>(n) * (2.0 * f.elements + f.bytes_per_token());
        const double load_bytes = static_cast<double>(n) * (f.bytes_per_token() + out_row + sf_row);
        // concat_and_cache_mla (docs/spec.md §8.2) as vLLM calls it on the MLA records:
        // kv_c and k_pe two views of one [n][576] tensor, split 512 + 64.
        const cuda::ConcatArgs ct{d_kv, max_tokens, f.elements, d_kv + 512, max_tokens, f.elements,
                                  512, f.elements - 512, d_slots, n};
        const auto concat = [&] { cuda::concat_and_cache_mla(cache, ct, {s, pdl}); };
        std::vector<std::tuple<const char*, std::function<void()>, double>> ops{{"store", store, store_bytes},
                                                                                 {"load", load, load_bytes}};
        if (f == KVCacheFormat::FP8_DS_MLA()) ops.emplace_back("concat", concat, store_bytes);
        // The same with k_pe rotated as it is stored (the positions' 8 bytes per token counted;
        // the 1 MiB table stays in L2).
        cuda::ConcatArgs rope_ct = ct;
        rope_ct.rope = &rope;
        const auto concat_rope = [&] { cuda::concat_and_cache_mla(cache, rope_ct, {s, pdl}); };
        if (f == KVCacheFormat::FP8_DS_MLA()) ops.emplace_back("concat rope", concat_rope, store_bytes + 8.0 * n);
        // kv_c the 512-element rows, k_pe a 64-element view into them: 1152 bytes read and
        // written per token.
        const cuda::ConcatArgs split_ct{d_kv, max_tokens, 512, d_kv + 448, max_tokens, 512, 512, 64, d_slots, n,
                                        &pe_cache};
        const auto concat_split = [&] { cuda::concat_and_cache_mla(cache, split_ct, {s, pdl}); };
        if (split) ops.emplace_back("concat split", concat_split, static_cast<double>(n) * 4.0 * 576);
        cuda::ConcatArgs split_rope_ct = split_ct;
        split_rope_ct.rope = &rope;
        const auto concat_split_rope = [&] { cuda::concat_and_cache_mla(cache, split_rope_ct, {s, pdl}); };
        if (split)
          ops.emplace_back("concat split rope", concat_split_rope, static_cast<double>(n) * (4.0 * 576 + 8.0));
        for (const auto& [op, fn, bytes] : ops) {
          const double ms = decode ? time_single(fn, s) : time_batched(fn, 20, s);
          const double gbps = bytes / ms / 1e6;
          rows.push_back({op, f.name, n, bs, bytes, ms, gbps, decode ? ms / empty_ms : gbps / copy_gbps, decode,
                          decode ? "single" : "batched"});
          const bool is_store = std::string(op) == "store";
          if (!decode && (is_store || std::string(op) == "load")) {
            const auto copy =
                pattern_copy(mla_pattern(layout, cache.base, is_store, d_kv, d_out, d_sf, d_slots, d_blocks, n));
            if (copy && is_store && !footprint_checked) {
              const std::string name = f.name + " bs " + std::to_string(bs);
              floor_ok = same_footprint(name.c_str(), fn, *copy,
                                        {{cache.base, static_cast<size_t>(layout.size_bytes())}}, s);
              footprint_checked = true;
              CK(cudaMemsetAsync(cache.base, 0, static_cast<size_t>(layout.size_bytes()), s));  // real records again
              cuda::store_kv_cache(cache, {d_kv, max_tokens, f.elements, d_slots, max_tokens}, {s, pdl});
            }
            if (copy && floor_ok) rows.back().floor_gbps = floor_gbps(*copy, bytes, s);
          }
          if (decode) {  // and as engines run decode: inside a CUDA graph, next to the empty kernel's
            const double g = time_graph(fn, s);
            rows.push_back({op, f.name, n, bs, bytes, g, bytes / g / 1e6, g / empty_graph_ms, true, "graph"});
          }
        }
        CK(cudaFree(d_segs));
      }
      CK(cudaFree(cache.base));
      if (split) CK(cudaFree(pe_cache.base));
      CK(cudaFree(ri.table));
      CK(cudaFree(ri.positions));
      CK(cudaFree(d_kv));
      CK(cudaFree(d_slots));
      CK(cudaFree(d_blocks));
      CK(cudaFree(d_out));
      CK(cudaFree(d_sf));
    }
  }
  // The K/V family (SPEC §7): store_kv (K and V rows by slot_mapping) and gather_kv
  // (whole blocks of sequences through a block table), vLLM's block size 16.
  struct KvCase {
    const char* name;
    KvDtype dtype;
    KvHeadLayout order;
    int32_t heads, head_dim;
    KvScaleKind scale;
    int64_t tokens;
    bool reciprocal = false;  // recipe sglang (SPEC §7.3.1): a multiply by RN(1/s), not a division
    bool rope = false;        // store only, the key rows rotated first (docs/spec.md §8.4)
    KvSfLayout sf = KvSfLayout::kLinear;  // e2m1: where the block scales go (docs/spec.md §7.9)
  };
  const KvCase kv_cases[] = {
      {"kv bf16 NHD 8x128", KvDtype::kBF16, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kNone, 262144},
      {"kv bf16 HND 8x128", KvDtype::kBF16, KvHeadLayout::kHND, 8, 128, KvScaleKind::kNone, 262144},
      {"kv e4m3/tensor 8x128", KvDtype::kE4M3, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerTensor, 262144},
      {"kv e4m3/head 8x128", KvDtype::kE4M3, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerHead, 262144},
      {"kv e4m3/tensor sglang 8x128", KvDtype::kE4M3, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerTensor, 262144,
       true},
      {"kv bf16 NHD 40x128", KvDtype::kBF16, KvHeadLayout::kNHD, 40, 128, KvScaleKind::kNone, 65536},
      // Llama's fused rotary + store (vLLM rotary_embedding + reshape_and_cache_flash,
      // FlashInfer rope_quantize_fp8_append_paged_kv_cache): NeoX over all 128 dims.
      {"kv bf16 NHD 8x128 rope", KvDtype::kBF16, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kNone, 262144, false, true},
      {"kv e4m3/tensor 8x128 rope", KvDtype::kE4M3, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerTensor, 262144, false,
       true},
      // NVFP4 (docs/spec.md §7.9): FlashInfer's linear scales, vLLM's 4-token interleave.
      {"kv e2m1 8x128", KvDtype::kE2M1, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerTensor, 262144},
      {"kv e2m1 interleave4 8x128", KvDtype::kE2M1, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerTensor, 262144, false,
       false, KvSfLayout::kInterleave4},
      // Heads of 6 and 5 groups: the kernels' 2- and 1-group units (4 groups at 128).
      {"kv e2m1 8x96", KvDtype::kE2M1, KvHeadLayout::kNHD, 8, 96, KvScaleKind::kPerTensor, 262144},
      {"kv e2m1 8x80", KvDtype::kE2M1, KvHeadLayout::kNHD, 8, 80, KvScaleKind::kPerTensor, 262144},
      // NVFP4 with the engines' rotary (NeoX over all 128 dims) before the quantisation.
      {"kv e2m1 8x128 rope", KvDtype::kE2M1, KvHeadLayout::kNHD, 8, 128, KvScaleKind::kPerTensor, 262144, false, true},
  };
  for (const KvCase& kc : kv_cases) {
    if (!only_format.empty() && only_format != kc.name) continue;
    const int32_t bs = 16;
    const int64_t n = quick ? std::min<int64_t>(kc.tokens, 65536) : kc.tokens, num_blocks = n / bs;
    const KvCacheLayout l = kv_dense_layout(kc.dtype, kc.order, num_blocks, bs, kc.heads, kc.head_dim);
    const int64_t row = int64_t{kc.heads} * kc.head_dim;
    const bool e2m1 = kc.dtype == KvDtype::kE2M1;
    // Record bytes per element: 2, 1, or e2m1's half byte plus a scale byte per 16.
    const double es = e2m1 ? 0.5 + 1.0 / 16 : static_cast<double>(kv_dtype_bytes(kc.dtype));
    const size_t cache_bytes = static_cast<size_t>(kv_bytes(kc.dtype, num_blocks * l.stride_page));
    auto* d_k = static_cast<uint8_t*>(dmalloc(cache_bytes));
    auto* d_v = static_cast<uint8_t*>(dmalloc(cache_bytes));
    const size_t sf_bytes = e2m1 ? static_cast<size_t>(num_blocks * l.stride_page / 16) : 1;
    auto* d_k_sf = static_cast<uint8_t*>(dmalloc(sf_bytes));
    auto* d_v_sf = static_cast<uint8_t*>(dmalloc(sf_bytes));
    const int64_t groups = kc.head_dim / 16;
    const bool head_major = kc.sf == KvSfLayout::kInterleave4;  // its tiles are [block][head][token x group]
    const KvSfGeometry sf{kc.sf, int64_t{bs} * kc.heads * groups, head_major ? groups : kc.heads * groups,
                          head_major ? int64_t{bs} * groups : groups};
    std::vector<uint16_t> kv_rows(static_cast<size_t>(n * row));
    for (auto& x : kv_rows) x = static_cast<uint16_t>(((rng() & 1) << 15) | ((118 + rng() % 12) << 7) | (rng() & 0x7F));
    auto* d_key = static_cast<uint16_t*>(dmalloc(kv_rows.size() * 2));
    auto* d_value = static_cast<uint16_t*>(dmalloc(kv_rows.size() * 2));
    CK(cudaMemcpy(d_key, kv_rows.data(), kv_rows.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_value, kv_rows.data(), kv_rows.size() * 2, cudaMemcpyHostToDevice));
    const std::vector<int32_t> perm = slot_order(n, bs, block_slots, rng);
    auto* d_slots = static_cast<int32_t*>(dmalloc(perm.size() * 4));
    CK(cudaMemcpy(d_slots, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
    const std::vector<float> scale(static_cast<size_t>(kc.heads), 0.0625f);
    auto* d_scale = static_cast<float*>(dmalloc(scale.size() * 4));
    CK(cudaMemcpy(d_scale, scale.data(), scale.size() * 4, cudaMemcpyHostToDevice));
    const KvPagedLayout dl = kv_paged_layout(l);
    cuda::StoreKvLaunch st;
    st.key = {d_key, KvDevDtype::kBF16, row, kc.head_dim};
    st.value = {d_value, KvDevDtype::kBF16, row, kc.head_dim};
    st.slot_mapping = d_slots;
    st.n = n;
    st.k_cache = d_k;
    st.v_cache = d_v;
    st.layout = dl;
    st.k_scale = st.v_scale = d_scale;
    st.per_head_scale = kc.scale == KvScaleKind::kPerHead;
    st.reciprocal = kc.reciprocal;
    if (e2m1) {
      st.k_sf = d_k_sf;
      st.v_sf = d_v_sf;
      st.sf = kv_sf_layout(l, sf);
    }
    // The rope rows: a 4096-position table of real angles over head_dim dims, random
    // positions (8 bytes per token counted; the table stays in L2).
    const RopeInputs ri = rope_inputs(kc.head_dim, n, rng);
    if (kc.rope) st.rope = {ri.table, kRopePositions, ri.positions, n, kc.head_dim, 0, true};
    // gather: 64 sequences of n/64 tokens over the blocks in a random order.
    const int32_t num_seqs = 64, max_blocks = static_cast<int32_t>(num_blocks / num_seqs);
    std::vector<int32_t> table(static_cast<size_t>(num_blocks)), cu(num_seqs + 1);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    for (int32_t i = 0; i <= num_seqs; ++i) cu[static_cast<size_t>(i)] = static_cast<int32_t>(int64_t{i} * max_blocks * bs);
    auto* d_table = static_cast<int32_t*>(dmalloc(table.size() * 4));
    auto* d_cu = static_cast<int32_t*>(dmalloc(cu.size() * 4));
    CK(cudaMemcpy(d_table, table.data(), table.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_cu, cu.data(), cu.size() * 4, cudaMemcpyHostToDevice));
    cuda::GatherKvLaunch ga;
    ga.k_cache = d_k;
    ga.v_cache = d_v;
    ga.layout = dl;
    ga.k_scale = ga.v_scale = d_scale;
    ga.per_head_scale = st.per_head_scale;
    if (e2m1) {
      ga.k_sf = d_k_sf;
      ga.v_sf = d_v_sf;
      ga.sf = st.sf;
    }
    ga.block_table = d_table;
    ga.max_blocks = max_blocks;
    ga.cu_seqlens_k = d_cu;
    ga.num_seqs = num_seqs;
    ga.max_tokens = cu.back();
    ga.out_k = {d_key, KvDevDtype::kBF16, row, kc.head_dim};
    ga.out_v = {d_value, KvDevDtype::kBF16, row, kc.head_dim};
    const auto run = [](const std::string& err) {
      if (!err.empty()) {
        std::fprintf(stderr, "bench_cuda: %s\n", err.c_str());
        std::exit(1);
      }
    };
    const double bytes = static_cast<double>(n) * row * 2 * (2 + es);  // K and V: rows + records
    const double store_bytes = bytes + (kc.rope ? 8.0 * n : 0.0);
    const double store_ms = time_batched([&] { run(cuda::launch_store_kv(st, nullptr, {s, pdl})); }, 20, s);
    // The access-pattern floor: each side's row as one piece per head (NHD: one piece),
    // e2m1's block scales as one more (linear) or one per head (the 4-token interleave:
    // a head's scale bytes 4 apart).
    bench::PatternArgs pat;
    pat.n = n;
    pat.block_size = bs;
    pat.sides = 2;
    pat.slots = d_slots;
    pat.blocks = d_table;
    pat.block_stride[0] = kv_bytes(kc.dtype, dl.k.stride_page);
    const int64_t head_bytes = kv_bytes(kc.dtype, kc.head_dim);
    if (kc.order == KvHeadLayout::kNHD)
      pat.piece[pat.pieces++] = {0, 0, kv_bytes(kc.dtype, dl.k.stride_token), static_cast<int32_t>(row / kc.head_dim * head_bytes)};
    else
      for (int32_t h = 0; h < kc.heads && pat.pieces < 8; ++h)
        pat.piece[pat.pieces++] = {0, kv_bytes(kc.dtype, h * dl.k.stride_head), kv_bytes(kc.dtype, dl.k.stride_token),
                                   static_cast<int32_t>(head_bytes)};
    if (e2m1) pat.block_stride[1] = sf.stride_page;
    if (e2m1 && !head_major)
      pat.piece[pat.pieces++] = {1, 0, sf.stride_token, static_cast<int32_t>(kc.heads * groups)};
    for (int32_t h = 0; e2m1 && head_major && h < kc.heads && pat.pieces < 16; ++h)
      pat.piece[pat.pieces++] = {1, h * sf.stride_head, 0, static_cast<int32_t>(groups), static_cast<int32_t>(groups)};
    pat.side[0] = {{d_k, d_k_sf}, {reinterpret_cast<uint8_t*>(d_key), nullptr}};
    pat.side[1] = {{d_v, d_v_sf}, {reinterpret_cast<uint8_t*>(d_value), nullptr}};
    pat.flat_bytes[0] = static_cast<int32_t>(row * 2);
    const bool patterned = (kc.order == KvHeadLayout::kNHD || kc.heads <= 8) && dl.k == dl.v;
    const auto store_copy = patterned ? pattern_copy(pat) : nullptr;
    const bool floor_ok =
        store_copy &&
        same_footprint(kc.name, [&] { run(cuda::launch_store_kv(st, nullptr, {s, pdl})); }, *store_copy,
                       {{d_k, cache_bytes}, {d_v, cache_bytes}, {d_k_sf, sf_bytes}, {d_v_sf, sf_bytes}}, s);
    run(cuda::launch_store_kv(st, nullptr, {s, pdl}));  // real records again for the gather
    rows.push_back({"store", kc.name, n, bs, store_bytes, store_ms, store_bytes / store_ms / 1e6,
                    store_bytes / store_ms / 1e6 / copy_gbps, false});
    if (floor_ok) rows.back().floor_gbps = floor_gbps(*store_copy, store_bytes, s);
    if (!kc.rope) {  // the rope rows' gather is the row without it
      const double gather_ms = time_batched([&] { run(cuda::launch_gather_kv(ga, nullptr, {s, pdl})); }, 20, s);
      rows.push_back({"load", kc.name, n, bs, bytes, gather_ms, bytes / gather_ms / 1e6,
                      bytes / gather_ms / 1e6 / copy_gbps, false});
      pat.store = false;
      if (floor_ok)
        if (const auto load_copy = pattern_copy(pat)) rows.back().floor_gbps = floor_gbps(*load_copy, bytes, s);
    }
    for (void* p : {static_cast<void*>(d_k), static_cast<void*>(d_v), static_cast<void*>(d_key),
                    static_cast<void*>(d_value), static_cast<void*>(d_slots), static_cast<void*>(d_scale),
                    static_cast<void*>(d_table), static_cast<void*>(d_cu), static_cast<void*>(ri.table),
                    static_cast<void*>(ri.positions), static_cast<void*>(d_k_sf), static_cast<void*>(d_v_sf)})
      CK(cudaFree(p));
  }
  // copy_blocks (SPEC §8.1): half of a 262,144-token pool's blocks copied onto the
  // other half (random pairs), vLLM's bs 16 x 8 heads x 128 bf16 = 32 KiB blocks in a
  // layer's K and V views (separate halves of one allocation); then 32 layers' K/V
  // pages interleaved (64 views of 4 KiB: bs 16 x 1 head x 128, the chunked launch);
  // unchecked and checked (device-side validation of the mapping, then the copy).
  struct CopyCase {
    const char* name;
    int64_t views, block_bytes;
    bool interleaved, checked;
  };
  const CopyCase copy_cases[] = {{"copy 2x32KiB", 2, 32768, false, false},
                                 {"copy 2x32KiB checked", 2, 32768, false, true},
                                 {"copy 64x4KiB interleaved", 64, 4096, true, false}};
  for (const CopyCase& cc : copy_cases) {
    if (!only_format.empty() && only_format != cc.name) continue;
    const int64_t tokens = quick ? 65536 : 262144, per_view_blocks = tokens / 16;
    const int64_t num_blocks = cc.interleaved ? per_view_blocks / 16 : per_view_blocks;  // 64 views share the pool
    const int64_t stride = cc.interleaved ? cc.views * cc.block_bytes : cc.block_bytes;
    const int64_t size = cc.interleaved ? num_blocks * stride : cc.views * num_blocks * cc.block_bytes;
    std::vector<int64_t> views;
    for (int64_t v = 0; v < cc.views; ++v)
      views.insert(views.end(), {cc.interleaved ? v * cc.block_bytes : v * num_blocks * cc.block_bytes, cc.block_bytes});
    std::vector<int64_t> order(static_cast<size_t>(num_blocks)), mapping;
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t p = 0; p < num_blocks / 2; ++p)
      mapping.insert(mapping.end(), {order[static_cast<size_t>(p)], order[static_cast<size_t>(num_blocks / 2 + p)]});
    auto* d_base = static_cast<uint8_t*>(dmalloc(static_cast<size_t>(size)));
    auto* d_map = static_cast<int64_t*>(dmalloc(mapping.size() * 8));
    auto* d_status = static_cast<cuda::DeviceStatus*>(dmalloc(sizeof(cuda::DeviceStatus)));
    CK(cudaMemset(d_base, 3, static_cast<size_t>(size)));
    CK(cudaMemcpy(d_map, mapping.data(), mapping.size() * 8, cudaMemcpyHostToDevice));
    const CopyBlocksArgs a{d_base, size, views, num_blocks, stride, {d_map, mapping.size()}};
    void* d_ws = dmalloc(cuda::copy_blocks_workspace_bytes(a));
    const auto fn = [&] {
      if (cc.checked)
        cuda::copy_blocks_checked(a, d_status, d_ws, {s, false});
      else
        cuda::copy_blocks(a, {s, false});
    };
    const double ms = time_batched(fn, 20, s);
    const double bytes = 2.0 * cc.views * static_cast<double>(mapping.size() / 2) * cc.block_bytes;
    rows.push_back({"copy", cc.name, tokens, 16, bytes, ms, bytes / ms / 1e6, bytes / ms / 1e6 / copy_gbps, false});
    for (void* p : {static_cast<void*>(d_base), static_cast<void*>(d_map), static_cast<void*>(d_status), d_ws})
      CK(cudaFree(p));
  }
  // swap_blocks (docs/spec.md §8.3): half of a pool's blocks moved to another pool,
  // 32 layers' K/V pages interleaved in src (64 views of 4 KiB, page-first, as a host
  // swap space keeps them) into 64 layer-first tensors in dst; device->device, host->
  // device (reload) and device->host (offload), the host pool page-locked. The ratio is
  // to a cudaMemcpyAsync of the same bytes in the same direction, timed here (a
  // contiguous copy: the copy engine's rate); bytes = the bytes moved, once.
  struct SwapCase {
    const char* name;
    bool src_host, dst_host;
  };
  const SwapCase swap_cases[] = {{"swap d2d 64x4KiB", false, false},
                                 {"swap h2d 64x4KiB", true, false},
                                 {"swap d2h 64x4KiB", false, true}};
  for (const SwapCase& sc : swap_cases) {
    if (!only_format.empty() && only_format != sc.name) continue;
    const int64_t tokens = quick ? 65536 : 262144, views_n = 64, record = 4096;
    const int64_t num_blocks = tokens / 16 / 16;  // as the interleaved copy row
    const int64_t src_stride = views_n * record, size = num_blocks * src_stride;
    std::vector<int64_t> views;
    for (int64_t v = 0; v < views_n; ++v) views.insert(views.end(), {v * record, v * num_blocks * record, record});
    std::vector<int64_t> order(static_cast<size_t>(num_blocks)), mapping;
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int64_t p = 0; p < num_blocks / 2; ++p)
      mapping.insert(mapping.end(), {order[static_cast<size_t>(p)], order[static_cast<size_t>(num_blocks / 2 + p)]});
    const auto alloc = [&](bool host) {
      void* p = nullptr;
      if (host)
        CK(cudaMallocHost(&p, static_cast<size_t>(size)));
      else
        p = dmalloc(static_cast<size_t>(size));
      CK(cudaMemset(p, 3, static_cast<size_t>(size)));
      return static_cast<uint8_t*>(p);
    };
    uint8_t* src_pool = alloc(sc.src_host);
    uint8_t* dst_pool = alloc(sc.dst_host);
    auto* d_map = static_cast<int64_t*>(dmalloc(mapping.size() * 8));
    CK(cudaMemcpy(d_map, mapping.data(), mapping.size() * 8, cudaMemcpyHostToDevice));
    SwapBlocksArgs a;
    a.src = src_pool;
    a.src_pool = {size, num_blocks, src_stride, sc.src_host};
    a.dst = dst_pool;
    a.dst_pool = {size, num_blocks, record, sc.dst_host};
    a.views = views;
    a.block_mapping = {d_map, mapping.size()};
    const double moved = static_cast<double>(views_n) * static_cast<double>(mapping.size() / 2) * record;
    const double ms = time_batched([&] { cuda::swap_blocks(a, {s, false}); }, 20, s);
    const double memcpy_ms = time_batched(
        [&] { CK(cudaMemcpyAsync(dst_pool, src_pool, static_cast<size_t>(moved), cudaMemcpyDefault, s)); }, 20, s);
    rows.push_back({"swap", sc.name, tokens, 16, moved, ms, moved / ms / 1e6, memcpy_ms / ms, false});
    for (auto [p, host] : {std::pair<void*, bool>{src_pool, sc.src_host}, {dst_pool, sc.dst_host}})
      CK(host ? cudaFreeHost(p) : cudaFree(p));
    CK(cudaFree(d_map));
  }
  CK(cudaStreamDestroy(s));

  std::printf("%-6s %-20s %7s %4s %12s %10s %9s %s\n", "op", "format", "tokens", "bs", "bytes", "us", "GB/s",
              "ratio");
  for (const Row& r : rows) {
    std::printf("%-6s %-20s %7lld %4lld %12.0f %10.2f %9.1f %5.2f%s", r.op.c_str(), r.format.c_str(),
                static_cast<long long>(r.tokens), static_cast<long long>(r.block_size), r.bytes, r.ms * 1e3, r.gbps,
                r.decode ? r.ratio : 100 * r.ratio,
                !r.decode ? "% of copy" : r.timing == "graph" ? "x empty kernel, in a CUDA graph" : "x empty kernel");
    if (r.floor_gbps > 0)  // the access-pattern floor (bench/pattern_copy.h), and this row's share of it
      std::printf("; floor %5.2f%% of copy, row %6.2f%% of floor", 100 * r.floor_gbps / copy_gbps,
                  100 * r.gbps / r.floor_gbps);
    std::printf("\n");
  }
  if (!json.empty()) {  // the shape bench/compare_alternatives.py --ours reads
    nlohmann::json j{{"device", prop.name},
                     {"slots", mode["slots"]},
                     {"launch", mode["launch"]},  // the run's option; each row says its own below
                     {"copy_gbps", copy_gbps},
                     {"empty_kernel_us", empty_ms * 1e3},
                     {"empty_kernel_graph_us", empty_graph_ms * 1e3},
                     {"rows", nlohmann::json::array()}};
    for (const Row& r : rows)
      j["rows"].push_back({{"op", r.op}, {"format", r.format}, {"tokens", r.tokens}, {"block_size", r.block_size},
                           {"bytes", r.bytes}, {"ms", r.ms}, {"gbps", r.gbps},
                           {"ratio_to_copy", r.decode ? r.gbps / copy_gbps : r.ratio},
                           {"ratio_to_empty_kernel", r.ms / (r.timing == "graph" ? empty_graph_ms : empty_ms)},
                           {"decode", r.decode}, {"timing", r.timing},
                           // --pdl reaches neither copy_blocks / swap_blocks nor a launch timed alone
                           {"launch", pdl && r.op != "copy" && r.op != "swap" && r.timing != "single" ? "pdl" : "plain"}});
    for (size_t i = 0; i < rows.size(); ++i)
      if (rows[i].floor_gbps > 0) {
        j["rows"][i]["floor_ratio_to_copy"] = rows[i].floor_gbps / copy_gbps;
        j["rows"][i]["ratio_to_floor"] = rows[i].gbps / rows[i].floor_gbps;
      }
    std::ofstream out(json);
    out << j.dump(1) << "\n";
    if (!out) {
      std::fprintf(stderr, "bench_cuda: cannot write %s\n", json.c_str());
      return 1;
    }
    std::printf("wrote %s\n", json.c_str());
  }
  return baselines.empty() ? 0 : check_baseline(rows, copy_gbps, baselines, tolerance, prop.name);
}
