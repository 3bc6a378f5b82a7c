// The K/V family's checked device entries (label: cuda; impl/cuda/device_api.h:
// store_kv_checked, gather_kv_checked) against the cpu backend on the same input:
// every refusal of SPEC §7.4 / §7.5 gives the same code and message (the device-side
// ones through the validation kernels, the host-side ones in SPEC order around them),
// and the device writes nothing on a refusal: the caches (store) and the outputs
// (gather) come back whole, with the bytes around them, equal to the cpu's. The tests
// that touch the device skip without a GPU; the host-only refusals run everywhere.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/cuda/device_api.h"
#include "impl/error.h"
#include "impl/kv_layout.h"
#include "impl/plugin/device_memory.h"
#include "tests/cuda/device_test_util.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;

using cuda_test::ck;
using cuda_test::outcome;

const cpu::CpuBackend kCpu;
constexpr int64_t kGuard = 64;  // bytes before, between and after the views of a buffer
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

/// One store_kv / gather_kv input in host terms. The caches are K then V in one
/// buffer with kGuard bytes around each; the token rows (store: key, value; gather:
/// out_k, out_v) likewise in a second buffer.
struct KvScenario {
  KvCacheLayout layout;
  KvScaleKind kind = KvScaleKind::kNone;
  std::vector<float> k_scale, v_scale;
  KvRecipe recipe = KvRecipe::kSpec;  // SPEC §7.3.1
  KvDtype rows_dtype[2] = {KvDtype::kBF16, KvDtype::kBF16};  // key/value or out_k/out_v
  int64_t rows = 0, token_stride = 0, head_stride = 0;
  bool null_rows[2] = {false, false}, misaligned_rows[2] = {false, false};
  std::vector<int32_t> slots;                       // store_kv
  std::vector<int32_t> block_table, cu_seqlens_k;  // gather_kv
  int32_t max_blocks = 0;
  std::vector<int32_t> seq_starts;  // gather_kv; empty: none
  SeqStartUnit unit = SeqStartUnit::kToken;
};

int64_t round16(int64_t b) { return (b + 15) / 16 * 16; }

int64_t rows_bytes(const KvScenario& s) {
  if (s.rows <= 0) return 16;
  const KvCacheLayout& l = s.layout;
  return round16(2 * ((s.rows - 1) * std::max<int64_t>(s.token_stride, 0) +
                      (l.num_kv_heads - 1) * std::max<int64_t>(s.head_stride, 0) + l.head_dim) +
                 2);
}

/// Offsets of K, V (cache buffer) and of the two row views (rows buffer).
struct Offsets {
  int64_t k = kGuard, v = 0, cache_bytes = 0, rows[2] = {kGuard, 0}, rows_total = 0;
};
Offsets offsets_of(const KvScenario& s) {
  Offsets o;
  const int64_t span = round16(kv_span_elements(s.layout) * kv_dtype_bytes(s.layout.dtype));
  o.v = o.k + span + kGuard;
  o.cache_bytes = o.v + span + kGuard;
  const int64_t r = rows_bytes(s);
  o.rows[1] = o.rows[0] + r + kGuard;
  o.rows_total = o.rows[1] + r + kGuard;
  return o;
}

/// The initial bytes: guards 0xA5, cache records and rows of finite values (so every
/// byte compare is about validation and addressing, not NaN payloads).
struct HostBuffers {
  Bytes cache, rows;
  std::vector<float> scales;    // k_scale then v_scale
  std::vector<int32_t> meta;    // store: slots; gather: block_table, cu_seqlens_k, seq_starts
};
HostBuffers initial(const KvScenario& s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Offsets o = offsets_of(s);
  HostBuffers h;
  h.cache.assign(static_cast<size_t>(o.cache_bytes), 0xA5);
  const bool fp8 = is_fp8(s.layout.dtype);
  for (const int64_t base : {o.k, o.v}) {
    const int64_t bytes = kv_span_elements(s.layout) * kv_dtype_bytes(s.layout.dtype);
    for (int64_t i = 0; i < bytes; i += fp8 ? 1 : 2) {
      if (fp8) {
        h.cache[static_cast<size_t>(base + i)] = static_cast<uint8_t>((rng() & 0x3F) | (rng() & 0x80));
      } else {
        const uint16_t x = static_cast<uint16_t>(0x3C00 + rng() % 0x800);
        std::memcpy(&h.cache[static_cast<size_t>(base + i)], &x, 2);
      }
    }
  }
  h.rows.assign(static_cast<size_t>(o.rows_total), 0xA5);
  for (const int64_t base : o.rows)
    for (int64_t i = 0; i + 1 < rows_bytes(s); i += 2) {
      const uint16_t x = static_cast<uint16_t>(0x3800 + rng() % 0x1000);
      std::memcpy(&h.rows[static_cast<size_t>(base + i)], &x, 2);
    }
  h.scales = s.k_scale;
  h.scales.insert(h.scales.end(), s.v_scale.begin(), s.v_scale.end());
  h.meta = s.slots;
  h.meta.insert(h.meta.end(), s.block_table.begin(), s.block_table.end());
  h.meta.insert(h.meta.end(), s.cu_seqlens_k.begin(), s.cu_seqlens_k.end());
  h.meta.insert(h.meta.end(), s.seq_starts.begin(), s.seq_starts.end());
  return h;
}

/// The views of a scenario on buffers at the given bases (host or device).
struct Views {
  KvCacheView cache;
  KvTokensOut rows[2];
  std::span<const int32_t> slots, block_table, cu_seqlens_k, seq_starts;
  GatherKvArgs gather(const KvScenario& s) const {
    return {cache, block_table, s.max_blocks, cu_seqlens_k, seq_starts, s.unit, rows[0], rows[1]};
  }
};
Views views_of(const KvScenario& s, uint8_t* cache, uint8_t* rows, const float* scales, const int32_t* meta) {
  const Offsets o = offsets_of(s);
  const int64_t span = kv_span_elements(s.layout);
  Views v;
  v.cache = {cache + o.k, span, cache + o.v, span, s.layout, {}, nullptr, 0, nullptr, 0, {}};
  v.cache.scales.kind = s.kind;
  v.cache.scales.k_scale = {scales, s.k_scale.size()};
  v.cache.scales.v_scale = {scales + s.k_scale.size(), s.v_scale.size()};
  v.cache.scales.recipe = s.recipe;
  for (int side = 0; side < 2; ++side) {
    uint8_t* data = s.null_rows[side] ? nullptr : rows + o.rows[side] + (s.misaligned_rows[side] ? 1 : 0);
    v.rows[side] = {data, s.rows_dtype[side], s.rows, s.token_stride, s.head_stride};
  }
  v.slots = {meta, s.slots.size()};
  v.block_table = {meta + s.slots.size(), s.block_table.size()};
  v.cu_seqlens_k = {meta + s.slots.size() + s.block_table.size(), s.cu_seqlens_k.size()};
  if (!s.seq_starts.empty())
    v.seq_starts = {meta + s.slots.size() + s.block_table.size() + s.cu_seqlens_k.size(), s.seq_starts.size()};
  return v;
}

struct Result {
  std::string error;
  Bytes cache, rows;
};

Result run_cpu(const KvScenario& s, bool store, uint64_t seed) {
  HostBuffers h = initial(s, seed);
  const Views v = views_of(s, h.cache.data(), h.rows.data(), h.scales.data(), h.meta.data());
  Result r;
  r.error = outcome([&] {
    if (store)
      kCpu.store_kv(v.rows[0], v.rows[1], v.slots, v.cache);
    else
      kCpu.gather_kv(v.gather(s));
  });
  r.cache = h.cache;
  r.rows = h.rows;
  return r;
}

template <typename T>
void upload(const cuda::DeviceBuffer& d, const std::vector<T>& h) {
  if (!h.empty()) ck(cudaMemcpy(d.get(), h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
}

/// A store_kv with a fused RoPE on the device: the cache buffer, the rows, the scales,
/// the slots, the RoPE table and positions uploaded (and synchronised), a workspace for
/// `layout` and a status.
struct DeviceRopeStore {
  cuda::DeviceBuffer cache, rows, scales, slots, cos_sin, positions, workspace, status;
  template <typename Row>
  DeviceRopeStore(const Bytes& c, const std::vector<Row>& r, const std::vector<float>& sc, const std::vector<int32_t>& sl,
                  const std::vector<float>& cs, const std::vector<int64_t>& pos, const KvCacheLayout& layout)
      : cache(c.size()),
        rows(r.size() * sizeof(Row)),
        scales(sc.size() * 4),
        slots(sl.size() * 4),
        cos_sin(cs.size() * 4),
        positions(pos.size() * 8),
        workspace(cuda::store_kv_workspace_bytes(layout)),
        status(sizeof(cuda::DeviceStatus)) {
    upload(cache, c);
    upload(rows, r);
    upload(scales, sc);
    upload(slots, sl);
    upload(cos_sin, cs);
    upload(positions, pos);
    ck(cudaDeviceSynchronize());
  }
};

/// The same call through the checked device entry (PDL on, its own stream); every
/// buffer comes back whole, guards included.
Result run_device(const KvScenario& s, bool store, uint64_t seed) {
  const HostBuffers h = initial(s, seed);
  cuda::DeviceBuffer cache(h.cache.size()), rows(h.rows.size()), scales(std::max<size_t>(h.scales.size(), 1) * 4),
      meta(std::max<size_t>(h.meta.size(), 1) * 4), status(sizeof(cuda::DeviceStatus));
  upload(cache, h.cache);
  upload(rows, h.rows);
  upload(scales, h.scales);
  upload(meta, h.meta);
  ck(cudaDeviceSynchronize());  // the legacy-stream uploads are done before `stream` runs
  const Views v = views_of(s, cache.get(), rows.get(), scales.as<float>(), meta.as<int32_t>());
  cudaStream_t stream;
  ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const cuda::LaunchOptions opts{stream, true};
  Result r;
  r.error = outcome([&] {
    if (store) {
      cuda::DeviceBuffer workspace(cuda::store_kv_workspace_bytes(s.layout));
      cuda::store_kv_checked(v.rows[0], v.rows[1], v.slots, v.cache, status.as<cuda::DeviceStatus>(),
                             workspace.get(), opts)
          .throw_if_error(stream);
    } else {
      cuda::gather_kv_checked(v.gather(s), status.as<cuda::DeviceStatus>(), opts).throw_if_error(stream);
    }
  });
  ck(cudaStreamSynchronize(stream));
  ck(cudaStreamDestroy(stream));
  r.cache.resize(h.cache.size());
  r.rows.resize(h.rows.size());
  ck(cudaMemcpy(r.cache.data(), cache.get(), r.cache.size(), cudaMemcpyDeviceToHost));
  ck(cudaMemcpy(r.rows.data(), rows.get(), r.rows.size(), cudaMemcpyDeviceToHost));
  return r;
}

/// cpu and device agree on the outcome and on every byte; a refusal left every
/// buffer as it was. Returns the outcome.
std::string expect_same(const KvScenario& s, bool store, const std::string& what, uint64_t seed = 7) {
  const Result want = run_cpu(s, store, seed), got = run_device(s, store, seed);
  EXPECT_EQ(got.error, want.error) << what;
  EXPECT_TRUE(got.cache == want.cache) << what << ": the caches differ (with the bytes around them)";
  EXPECT_TRUE(got.rows == want.rows) << what << ": the row buffers differ (with the bytes around them)";
  if (!want.error.empty()) {
    const HostBuffers before = initial(s, seed);
    EXPECT_TRUE(got.cache == before.cache) << what << ": the device wrote a cache despite the refusal";
    EXPECT_TRUE(got.rows == before.rows) << what << ": the device wrote the rows despite the refusal";
  }
  return want.error;
}

/// A valid store_kv and gather_kv of 4 blocks x 5 tokens (not a power of two), 2
/// heads x 8: store rows 0..5 to slots {7, -1, 0, 19, 12, 3}; gather 2 sequences (4
/// and 6 tokens) through table {3, -7 (unneeded), 1, 0}.
KvScenario base(KvDtype dtype, KvHeadLayout order, KvScaleKind kind, bool store) {
  KvScenario s;
  s.layout = kv_dense_layout(dtype, order, 4, 5, 2, 8);
  s.kind = is_fp8(dtype) ? kind : KvScaleKind::kNone;
  const size_t scales = s.kind == KvScaleKind::kPerHead ? 2 : s.kind == KvScaleKind::kPerTensor ? 1 : 0;
  s.k_scale.assign(scales, 0.5f);
  s.v_scale.assign(scales, 2.0f);
  const KvDtype model = dtype == KvDtype::kFP16 ? KvDtype::kFP16 : KvDtype::kBF16;
  s.rows_dtype[0] = s.rows_dtype[1] = model;
  s.token_stride = 2 * 8;
  s.head_stride = 8;
  if (store) {
    s.slots = {7, -1, 0, 19, 12, 3};
    s.rows = 6;
  } else {
    s.cu_seqlens_k = {0, 4, 10};
    s.max_blocks = 2;
    s.block_table = {3, -7, 1, 0};
    s.rows = 10;
  }
  return s;
}

struct Config {
  KvDtype dtype;
  KvHeadLayout order;
  KvScaleKind kind;
};
const Config kConfigs[] = {{KvDtype::kBF16, KvHeadLayout::kNHD, KvScaleKind::kNone},
                           {KvDtype::kFP16, KvHeadLayout::kHND, KvScaleKind::kNone},
                           {KvDtype::kE4M3, KvHeadLayout::kNHD, KvScaleKind::kPerHead},
                           {KvDtype::kE5M2, KvHeadLayout::kHND, KvScaleKind::kPerTensor}};

struct Mutation {
  const char* name;
  std::function<void(KvScenario&)> apply;
  bool fp8_only = false;
  bool refused = true;  // the cpu refuses it (checked, so the list stays meaningful)
};

std::string name_of(const Config& c) { return to_string(c.dtype) + " " + to_string(c.order); }

// Every store_kv refusal (SPEC §7.4), in and around the device-side checks, on the
// four cache dtypes: same code and message as the cpu, nothing written.
TEST(KvDeviceValidation, StoreKvRefusalsAreTheCpuRefusals) {
  KVCHECK_NEED_GPU();
  const std::vector<Mutation> mutations = {
      {"valid", [](KvScenario&) {}, false, false},
      {"slot == num_slots", [](KvScenario& s) { s.slots[2] = 20; }},
      {"slot -2", [](KvScenario& s) { s.slots[4] = -2; }},
      {"slot INT32_MIN", [](KvScenario& s) { s.slots[0] = std::numeric_limits<int32_t>::min(); }},
      {"slot INT32_MAX", [](KvScenario& s) { s.slots[5] = std::numeric_limits<int32_t>::max(); }},
      {"duplicate slot", [](KvScenario& s) { s.slots[5] = s.slots[3]; }},
      {"duplicate of slot 0 before a range error", [](KvScenario& s) { s.slots[4] = 0, s.slots[5] = 99; }},
      {"range error before a duplicate", [](KvScenario& s) { s.slots[3] = 20, s.slots[5] = 7; }},
      {"k_scale 0", [](KvScenario& s) { s.k_scale.back() = 0.0f; }, true},
      {"k_scale negative", [](KvScenario& s) { s.k_scale[0] = -1.0f; }, true},
      {"v_scale NaN", [](KvScenario& s) { s.v_scale.back() = kNaN; }, true},
      {"v_scale Inf after a bad k_scale", [](KvScenario& s) { s.v_scale[0] = kInf, s.k_scale.back() = -kInf; }, true},
      {"bad scale before short rows", [](KvScenario& s) { s.v_scale[0] = 0.0f, s.rows = 3; }, true},
      {"bad scale before a bad slot", [](KvScenario& s) { s.v_scale[0] = 0.0f, s.slots[1] = 20; }, true},
      {"bad scale, no rows", [](KvScenario& s) { s.v_scale.back() = kNaN, s.slots.clear(); }, true},
      {"short rows", [](KvScenario& s) { s.rows = 3; }},
      {"short rows before a bad slot", [](KvScenario& s) { s.rows = 3, s.slots[0] = 99; }},
      {"negative token_stride", [](KvScenario& s) { s.token_stride = -16; }},
      {"null value", [](KvScenario& s) { s.null_rows[1] = true; }},
      {"misaligned key", [](KvScenario& s) { s.misaligned_rows[0] = true; }},
      {"fp16 key into the cache", [](KvScenario& s) {
         s.rows_dtype[0] = s.rows_dtype[1] = s.layout.dtype == KvDtype::kFP16 ? KvDtype::kBF16 : KvDtype::kFP16;
         if (is_fp8(s.layout.dtype)) s.rows_dtype[0] = KvDtype::kE4M3;  // not a model dtype
       }},
      {"key and value of two dtypes", [](KvScenario& s) { s.rows_dtype[1] = KvDtype::kFP16; }, true},
      {"two dtypes before a bad slot", [](KvScenario& s) { s.rows_dtype[0] = KvDtype::kFP16, s.slots[2] = -3; }, true},
  };
  int refused = 0;
  for (const Config& c : kConfigs)
    for (const Mutation& m : mutations) {
      if (m.fp8_only && !is_fp8(c.dtype)) continue;
      KvScenario s = base(c.dtype, c.order, c.kind, true);
      m.apply(s);
      const std::string what = name_of(c) + ": " + m.name;
      const std::string error = expect_same(s, true, what);
      EXPECT_EQ(!error.empty(), m.refused) << what << ": " << error;
      refused += !error.empty();
    }
  EXPECT_GT(refused, 60);
}

// Every gather_kv refusal (SPEC §7.5) in the cpu's order: scales, dtypes,
// cu_seqlens_k, max_blocks and the table's size, the outputs, each sequence's length
// and table entries; same code and message, the outputs (and cache) untouched.
TEST(KvDeviceValidation, GatherKvRefusalsAreTheCpuRefusals) {
  KVCHECK_NEED_GPU();
  const std::vector<Mutation> mutations = {
      {"valid", [](KvScenario&) {}, false, false},
      {"unneeded entries of any value", [](KvScenario& s) { s.block_table[1] = std::numeric_limits<int32_t>::min(); },
       false, false},
      {"no rows, null outputs", [](KvScenario& s) { s.cu_seqlens_k = {0, 0, 0}, s.null_rows[0] = s.null_rows[1] = true; },
       false, false},
      {"k_scale 0", [](KvScenario& s) { s.k_scale[0] = 0.0f; }, true},
      {"v_scale NaN before cu errors", [](KvScenario& s) { s.v_scale.back() = kNaN, s.cu_seqlens_k[0] = 3; }, true},
      {"bad scale before an empty cu_seqlens_k", [](KvScenario& s) { s.k_scale[0] = kInf, s.cu_seqlens_k.clear(); },
       true},
      {"bad scale before a short table", [](KvScenario& s) { s.k_scale[0] = -2.0f, s.block_table.pop_back(); }, true},
      {"out_k of the wrong dtype", [](KvScenario& s) {
         s.rows_dtype[0] = s.rows_dtype[1] = s.layout.dtype == KvDtype::kBF16 ? KvDtype::kFP16 : KvDtype::kBF16;
         if (is_fp8(s.layout.dtype)) s.rows_dtype[1] = KvDtype::kE5M2;
       }},
      {"cu_seqlens_k empty", [](KvScenario& s) { s.cu_seqlens_k.clear(), s.block_table.clear(); }},
      {"cu_seqlens_k[0] = 1", [](KvScenario& s) { s.cu_seqlens_k[0] = 1; }},
      {"cu_seqlens_k decreases", [](KvScenario& s) { s.cu_seqlens_k = {0, 4, 3}; }},
      {"cu_seqlens_k decreases before max_blocks < 0", [](KvScenario& s) { s.cu_seqlens_k = {0, 4, 3}, s.max_blocks = -1; }},
      {"cu_seqlens_k[0] before a decrease", [](KvScenario& s) { s.cu_seqlens_k = {2, 1, 0}; }},
      {"max_blocks < 0", [](KvScenario& s) { s.max_blocks = -1; }},
      {"max_blocks < 0 before a bad entry", [](KvScenario& s) { s.max_blocks = -1, s.block_table[0] = 99; }},
      {"table one short", [](KvScenario& s) { s.block_table.pop_back(); }},
      {"table short before short outputs", [](KvScenario& s) { s.block_table.pop_back(), s.rows = 2; }},
      {"out rows short", [](KvScenario& s) { s.rows = 9; }},
      {"out rows short before a bad entry", [](KvScenario& s) { s.rows = 9, s.block_table[2] = -1; }},
      {"out_v null", [](KvScenario& s) { s.null_rows[1] = true; }},
      {"out_k misaligned", [](KvScenario& s) { s.misaligned_rows[0] = true; }},
      {"out_k overlaps before out_v is misaligned", [](KvScenario& s) { s.misaligned_rows[1] = true, s.token_stride = 8; }},
      {"outputs overlap", [](KvScenario& s) { s.token_stride = 8; }},
      {"negative head_stride", [](KvScenario& s) { s.head_stride = -8; }},
      {"sequence too long", [](KvScenario& s) { s.cu_seqlens_k = {0, 4, 15}, s.rows = 15; }},
      {"sequence too long before a bad entry", [](KvScenario& s) { s.cu_seqlens_k = {0, 11, 12}, s.rows = 12, s.block_table[2] = -1; }},
      {"needed entry -1", [](KvScenario& s) { s.block_table[3] = -1; }},
      {"needed entry -2", [](KvScenario& s) { s.block_table[2] = -2; }},
      {"needed entry num_blocks", [](KvScenario& s) { s.block_table[0] = 4; }},
      {"first bad entry wins", [](KvScenario& s) { s.block_table[3] = 7, s.block_table[2] = -1; }},
      {"max_blocks 0 with tokens", [](KvScenario& s) { s.max_blocks = 0, s.block_table.clear(); }},
      // seq_starts (rows of 2 blocks of 5 = 10 positions; sequences of 4 and 6 tokens).
      {"seq_starts 1, 4 (tokens)", [](KvScenario& s) { s.seq_starts = {1, 4}; }, false, false},
      {"seq_starts 4, 3 in blocks (both round to 0)", [](KvScenario& s) { s.seq_starts = {4, 3}, s.unit = SeqStartUnit::kBlock; },
       false, false},
      {"seq_starts 3 reaches the unneeded -7", [](KvScenario& s) { s.seq_starts = {3, 4}; }},
      {"seq_starts 4 in tokens reaches -7", [](KvScenario& s) { s.seq_starts = {4, 0}; }},
      {"seq_starts past the row (tokens)", [](KvScenario& s) { s.seq_starts = {1, 5}; }},
      {"seq_starts past the row (blocks)", [](KvScenario& s) { s.seq_starts = {0, 9}, s.unit = SeqStartUnit::kBlock; }},
      {"seq_starts INT32_MAX", [](KvScenario& s) { s.seq_starts = {std::numeric_limits<int32_t>::max(), 0}; }},
      {"seq_starts negative", [](KvScenario& s) { s.seq_starts = {0, -1}; }},
      {"seq_starts INT32_MIN in blocks", [](KvScenario& s) {
         s.seq_starts = {std::numeric_limits<int32_t>::min(), 0}, s.unit = SeqStartUnit::kBlock;
       }},
      {"a bad entry before a negative start", [](KvScenario& s) { s.seq_starts = {0, -1}, s.block_table[0] = 99; }},
      {"a negative start before a later bad entry", [](KvScenario& s) { s.seq_starts = {-1, 0}, s.block_table[2] = 99; }},
      {"seq_starts one short", [](KvScenario& s) { s.seq_starts = {1}; }},
      {"seq_starts short before short outputs", [](KvScenario& s) { s.seq_starts = {1}, s.rows = 2; }},
      {"an empty sequence's start is never bounded", [](KvScenario& s) {
         s.cu_seqlens_k = {0, 0, 10}, s.seq_starts = {std::numeric_limits<int32_t>::max(), 0};
       }, false, false},
  };
  int refused = 0;
  for (const Config& c : kConfigs)
    for (const Mutation& m : mutations) {
      if (m.fp8_only && !is_fp8(c.dtype)) continue;
      KvScenario s = base(c.dtype, c.order, c.kind, false);
      m.apply(s);
      const std::string what = name_of(c) + ": " + m.name;
      const std::string error = expect_same(s, false, what);
      EXPECT_EQ(!error.empty(), m.refused) << what << ": " << error;
      refused += !error.empty();
    }
  EXPECT_GT(refused, 130);
}

// Random metadata with the awkward values mixed in: the smallest offending position
// wins on the device as in the cpu's scan (many rows, so many CTAs race for it).
TEST(KvDeviceValidation, RandomMetadataGivesTheCpuOutcome) {
  KVCHECK_NEED_GPU();
  std::mt19937_64 rng(0x6A7E);
  const int32_t awkward[] = {-2, -1, 0, 19, 20, 21, std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max()};
  int errors = 0, cases = 0;
  for (int round = 0; round < 120; ++round) {
    const Config& c = kConfigs[round % 4];
    const bool store = round % 2 == 0;
    KvScenario s = base(c.dtype, c.order, c.kind, store);
    s.layout = kv_dense_layout(c.dtype, c.order, 4, 5, 2, 8);
    if (store) {
      // Distinct slots (a shuffled permutation) with -1 padding, then maybe one fault.
      std::vector<int32_t> perm(20);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      s.rows = 1 + static_cast<int64_t>(rng() % 20);
      s.slots.resize(static_cast<size_t>(s.rows));
      for (size_t i = 0; i < s.slots.size(); ++i) s.slots[i] = rng() % 4 == 0 ? -1 : perm[i];
      if (rng() % 2) {
        const size_t i = rng() % s.slots.size();
        s.slots[i] = rng() % 2 ? awkward[rng() % std::size(awkward)] : s.slots[rng() % s.slots.size()];
      }
    } else {
      const int32_t num_seqs = 1 + static_cast<int32_t>(rng() % 6);
      s.max_blocks = static_cast<int32_t>(rng() % 4);
      s.cu_seqlens_k.assign(1, 0);
      for (int32_t i = 0; i < num_seqs; ++i)
        s.cu_seqlens_k.push_back(s.cu_seqlens_k.back() + static_cast<int32_t>(rng() % (5 * s.max_blocks + 2)));
      if (rng() % 8 == 0) s.cu_seqlens_k[rng() % s.cu_seqlens_k.size()] -= 1;
      s.block_table.resize(static_cast<size_t>(num_seqs * s.max_blocks));
      for (auto& x : s.block_table) x = rng() % 12 == 0 ? awkward[rng() % std::size(awkward)] : static_cast<int32_t>(rng() % 4);
      s.rows = std::max<int64_t>(1, s.cu_seqlens_k.back() - static_cast<int64_t>(rng() % 8 == 0));
      if (rng() % 2) {  // seq_starts in a row of 5 * max_blocks positions, some past it
        s.unit = rng() % 2 ? SeqStartUnit::kToken : SeqStartUnit::kBlock;
        for (int32_t i = 0; i < num_seqs; ++i)
          s.seq_starts.push_back(rng() % 10 == 0 ? awkward[rng() % std::size(awkward)]
                                                 : static_cast<int32_t>(rng() % (5 * s.max_blocks + 1)));
      }
    }
    if (is_fp8(c.dtype) && rng() % 10 == 0) s.k_scale[0] = 0.0f;
    const std::string error = expect_same(s, store, name_of(c) + " round " + std::to_string(round), round);
    errors += !error.empty();
    ++cases;
  }
  EXPECT_GT(errors, cases / 5) << errors << " of " << cases;
  EXPECT_LT(errors, cases * 4 / 5) << errors << " of " << cases;
}

// The refusals with no device-side check before them are thrown on the host before
// anything is enqueued (no status, no stream needed), with the cpu's code and message:
// so they run without a GPU, on host memory the device entries never read. Among them
// the defect once in the launchers: fp16 rows into a bf16 cache, and a gather of bf16
// rows from an fp16 cache.
TEST(KvDeviceApi, HostRefusalsAreTheCpuRefusalsBeforeAnyLaunch) {
  struct Case {
    const char* name;
    bool store;
    KvDtype dtype;
    std::function<void(KvScenario&)> apply;
  };
  const Case cases[] = {
      {"fp16 rows into a bf16 cache", true, KvDtype::kBF16,
       [](KvScenario& s) { s.rows_dtype[0] = s.rows_dtype[1] = KvDtype::kFP16; }},
      {"bf16 value into an fp16 cache", true, KvDtype::kFP16, [](KvScenario& s) { s.rows_dtype[1] = KvDtype::kBF16; }},
      {"short rows", true, KvDtype::kBF16, [](KvScenario& s) { s.rows = 2; }},
      {"num_blocks 0", true, KvDtype::kE4M3, [](KvScenario& s) { s.layout.num_blocks = 0; }},
      {"e4m3 without scales", true, KvDtype::kE4M3, [](KvScenario& s) { s.kind = KvScaleKind::kNone; }},
      {"per-head scales of one float", false, KvDtype::kE5M2,
       [](KvScenario& s) { s.kind = KvScaleKind::kPerHead, s.k_scale.resize(1), s.v_scale.resize(1); }},
      {"bf16 rows from an fp16 cache", false, KvDtype::kFP16,
       [](KvScenario& s) { s.rows_dtype[0] = s.rows_dtype[1] = KvDtype::kBF16; }},
      {"out_k and out_v of two dtypes", false, KvDtype::kBF16, [](KvScenario& s) { s.rows_dtype[1] = KvDtype::kFP16; }},
      {"cu_seqlens_k empty", false, KvDtype::kBF16, [](KvScenario& s) { s.cu_seqlens_k.clear(); }},
      {"an unknown recipe", true, KvDtype::kE4M3, [](KvScenario& s) { s.recipe = static_cast<KvRecipe>(3); }},
  };
  for (const Case& c : cases) {
    KvScenario s = base(c.dtype, KvHeadLayout::kNHD, KvScaleKind::kPerTensor, c.store);
    c.apply(s);
    const Result want = run_cpu(s, c.store, 1);
    ASSERT_FALSE(want.error.empty()) << c.name;
    HostBuffers h = initial(s, 1);
    const Views v = views_of(s, h.cache.data(), h.rows.data(), h.scales.data(), h.meta.data());
    const std::string got = outcome([&] {
      if (c.store)
        cuda::store_kv_checked(v.rows[0], v.rows[1], v.slots, v.cache, nullptr, nullptr, cuda::LaunchOptions{});
      else
        cuda::gather_kv_checked(v.gather(s), nullptr, cuda::LaunchOptions{});
    });
    EXPECT_EQ(got, want.error) << c.name;
    EXPECT_TRUE(h.cache == initial(s, 1).cache && h.rows == initial(s, 1).rows) << c.name << ": wrote";
  }
}

// SPEC §7.3.1 on the device: every bf16 and fp16 input (one head of 65,536 elements,
// so the vectorised path runs), every recipe, both FP8 dtypes, scales that round
// differently (a subnormal scale too: RN(1/s) = Inf on the device as well, no flush to
// zero); the device's caches equal the cpu's byte for byte (the cpu equals the
// reference on the same inputs: tests/kv_cache_test.cpp).
TEST(KvDeviceApi, RecipesMatchCpuOnEveryInput) {
  KVCHECK_NEED_GPU();
  std::vector<uint16_t> all(65536);
  std::iota(all.begin(), all.end(), uint16_t{0});
  for (const KvDtype fp8 : {KvDtype::kE4M3, KvDtype::kE5M2})
    for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
      for (const KvRecipe recipe : kv_recipes())
        for (const float scale : {1.0f, 7.0f, 3.0f, 0.1f, 1e-3f, 448.0f, 1e-30f, 3e30f, 1e-40f, 1e38f}) {
          const KvCacheLayout l = kv_dense_layout(fp8, KvHeadLayout::kNHD, 1, 1, 1, 65536);
          const std::vector<float> scales{scale, scale};
          const std::vector<int32_t> slot{0};
          Bytes want(2 * 65536, 0xA5), got(2 * 65536, 0xA5);
          const auto view = [&](uint8_t* cache, const uint8_t* rows, const float* sc) {
            KvCacheView c{cache, 65536, cache + 65536, 65536, l, {}, nullptr, 0, nullptr, 0, {}};
            c.scales = {KvScaleKind::kPerTensor, {sc, 1}, {sc + 1, 1}, recipe};
            return std::make_pair(c, KvTokensIn{rows, model, 1, 65536, 65536});
          };
          const auto [hc, hr] = view(want.data(), reinterpret_cast<const uint8_t*>(all.data()), scales.data());
          kCpu.store_kv(hr, hr, slot, hc);
          cuda::DeviceBuffer cache(got.size()), rows(2 * 65536), sc(8), meta(4), status(sizeof(cuda::DeviceStatus)),
              workspace(cuda::store_kv_workspace_bytes(l));
          upload(cache, got);
          upload(rows, all);
          upload(sc, scales);
          upload(meta, slot);
          ck(cudaDeviceSynchronize());
          const auto [dc, dr] = view(cache.get(), rows.get(), sc.as<float>());
          const std::string error = outcome([&] {
            cuda::store_kv_checked(dr, dr, {meta.as<int32_t>(), 1}, dc, status.as<cuda::DeviceStatus>(),
                                   workspace.get(), cuda::LaunchOptions{})
                .throw_if_error(nullptr);
          });
          ck(cudaDeviceSynchronize());
          ck(cudaMemcpy(got.data(), cache.get(), got.size(), cudaMemcpyDeviceToHost));
          const std::string what = to_string(recipe) + " " + to_string(model) + "->" + to_string(fp8) + " scale " +
                                   std::to_string(scale);
          ASSERT_EQ(error, "") << what;
          const auto diff = std::mismatch(want.begin(), want.end(), got.begin());
          ASSERT_TRUE(diff.first == want.end())
              << what << ": first difference at byte " << (diff.first - want.begin()) << ": cpu 0x" << std::hex
              << int{*diff.first} << " device 0x" << int{*diff.second};
        }
}

// store_kv with a NeoX RoPE over the whole head (§8.4), the shape engines run (FlashInfer's
// rope + quantise + append): head_dims whose one trip pairs each thread's vectors
// (rope_pairs_in_thread: 16 to 512 on a 2-byte cache, 32 to 512 on FP8, every group
// width but FP8's 32, head_dim 1024) and 96, 80 that do not, on every cache dtype and
// recipe, rows of random bits (NaN and Inf among them), against the cpu on the whole
// cache buffer, guards included.
TEST(KvDeviceApi, WholeHeadNeoxRopeMatchesCpu) {
  KVCHECK_NEED_GPU();
  constexpr int32_t kHeadDims[] = {16, 32, 64, 128, 256, 512, 96, 80};
  constexpr int kDims = static_cast<int>(std::size(kHeadDims));
  std::mt19937_64 rng(17);
  int checked = 0;
  for (const KvDtype cache_dtype : {KvDtype::kBF16, KvDtype::kFP16, KvDtype::kE4M3, KvDtype::kE5M2})
    for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
      for (const KvRecipe recipe : kv_recipes())
        for (const int32_t head_dim : kHeadDims) {
          const bool fp8 = cache_dtype == KvDtype::kE4M3 || cache_dtype == KvDtype::kE5M2;
          if ((!fp8 && model != cache_dtype) || (!fp8 && recipe != KvRecipe::kSpec)) continue;
          const int32_t heads = 3, block_size = 16;
          const int64_t num_blocks = 5, n = 70, max_position = 11;
          const KvCacheLayout l = kv_dense_layout(cache_dtype, KvHeadLayout::kNHD, num_blocks, block_size, heads, head_dim);
          const int64_t span = kv_span_elements(l) * kv_dtype_bytes(cache_dtype), v_at = kGuard + span + kGuard;
          Bytes cache(static_cast<size_t>(v_at + span + kGuard));
          for (auto& b : cache) b = static_cast<uint8_t>(rng());
          std::vector<uint16_t> rows(static_cast<size_t>(n * heads * head_dim));
          for (auto& x : rows) x = static_cast<uint16_t>(rng());
          std::vector<int32_t> slots(static_cast<size_t>(num_blocks * block_size));
          std::iota(slots.begin(), slots.end(), 0);
          std::shuffle(slots.begin(), slots.end(), rng);
          slots.resize(static_cast<size_t>(n));
          for (size_t i = 0; i < slots.size(); i += 7) slots[i] = -1;
          std::vector<float> cos_sin(static_cast<size_t>(max_position * head_dim));
          for (auto& x : cos_sin) x = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
          std::vector<int64_t> positions(static_cast<size_t>(n));
          for (auto& p : positions) p = static_cast<int64_t>(rng() % max_position);
          const std::vector<float> scales{fp8 ? 0.37f : 1.0f, fp8 ? 2.5f : 1.0f};
          const auto view = [&](uint8_t* base, const float* sc) {
            KvCacheView c{base + kGuard, kv_span_elements(l), base + v_at, kv_span_elements(l), l, {}, nullptr, 0,
                          nullptr, 0, {}};
            if (fp8) c.scales = {KvScaleKind::kPerTensor, {sc, 1}, {sc + 1, 1}, recipe};
            return c;
          };
          const auto rope_of = [&](const float* cs, const int64_t* pos) {
            return RopeArgs{cs, max_position, pos, n, head_dim, 0, true};
          };
          const auto tokens = [&](const void* base) {
            return KvTokensIn{static_cast<const uint8_t*>(base), model, n, int64_t{heads} * head_dim, head_dim};
          };
          const std::string what = to_string(model) + "->" + to_string(cache_dtype) + " " + to_string(recipe) +
                                   " head_dim " + std::to_string(head_dim);
          Bytes want = cache;
          {
            const RopeArgs r = rope_of(cos_sin.data(), positions.data());
            const std::string error =
                outcome([&] { kCpu.store_kv(tokens(rows.data()), tokens(rows.data()), slots, view(want.data(), scales.data()), &r); });
            ASSERT_EQ(error, "") << what << ": the cpu refused the store";
          }
          const DeviceRopeStore d(cache, rows, scales, slots, cos_sin, positions, l);
          const RopeArgs r = rope_of(d.cos_sin.as<float>(), d.positions.as<int64_t>());
          const std::string error = outcome([&] {
            cuda::store_kv_checked(tokens(d.rows.get()), tokens(d.rows.get()), {d.slots.as<int32_t>(), slots.size()},
                                   view(d.cache.get(), d.scales.as<float>()), d.status.as<cuda::DeviceStatus>(),
                                   d.workspace.get(), cuda::LaunchOptions{}, &r)
                .throw_if_error(nullptr);
          });
          ASSERT_EQ(error, "") << what << ": the device refused the store";
          Bytes got(cache.size());
          ck(cudaDeviceSynchronize());
          ck(cudaMemcpy(got.data(), d.cache.get(), got.size(), cudaMemcpyDeviceToHost));
          const auto diff = std::mismatch(want.begin(), want.end(), got.begin());
          ASSERT_TRUE(diff.first == want.end())
              << what << ": first difference at byte " << (diff.first - want.begin()) << " (K at " << kGuard
              << ", V at " << v_at << "): cpu 0x" << std::hex << int{*diff.first} << " device 0x" << int{*diff.second};
          ASSERT_NE(want, cache) << what << ": the store wrote nothing";
          ++checked;
        }
  // bf16 and fp16 caches: their own model dtype, the spec recipe; e4m3 and e5m2: both
  // model dtypes, every recipe.
  EXPECT_EQ(checked, 2 * kDims + 2 * 2 * static_cast<int>(kv_recipes().size()) * kDims);
}

// The workspace size refuses an invalid layout with the error store_kv_checked's
// first check gives (so a caller that sizes first still sees the cpu's error).
TEST(KvDeviceApi, WorkspaceOfAnInvalidLayoutIsTheLayoutError) {
  KvCacheLayout l = kv_dense_layout(KvDtype::kBF16, KvHeadLayout::kNHD, 4, 5, 2, 8);
  EXPECT_EQ(cuda::store_kv_workspace_bytes(l), size_t{4 * 5 * 8});
  l.stride_head = 4;  // heads overlap (D = 8)
  const std::string got = outcome([&] { cuda::store_kv_workspace_bytes(l); });
  const std::string want = outcome([&] { validate_kv_layout(l); });
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(got, want);
}

// ---- e2m1 (NVFP4) caches, SPEC §7.9: store_kv and gather_kv against the cpu backend ----

/// An e2m1 cache pair in one buffer, [guard | K data | guard | V data | guard | K scales
/// | guard | V scales | guard], and its global decode scales k_scale, v_scale.
struct Nvfp4Cache {
  KvCacheLayout layout;
  KvSfGeometry sf;
  float g[2] = {1.0f, 1.0f};
  int64_t data_elements = 0, sf_bytes = 0;
  int64_t k = 0, v = 0, k_sf = 0, v_sf = 0, bytes = 0;  // offsets, total
};
Nvfp4Cache nvfp4_cache(const KvCacheLayout& l, const KvSfGeometry& sf, float gk, float gv) {
  Nvfp4Cache c;
  c.layout = l;
  c.sf = sf;
  c.g[0] = gk;
  c.g[1] = gv;
  c.data_elements = kv_span_elements(l);
  c.sf_bytes = kv_sf_span_bytes(l, sf);
  const int64_t data = round16(kv_bytes(l.dtype, c.data_elements));
  c.k = kGuard;
  c.v = c.k + data + kGuard;
  c.k_sf = c.v + data + kGuard;
  c.v_sf = c.k_sf + round16(c.sf_bytes) + kGuard;
  c.bytes = c.v_sf + round16(c.sf_bytes) + kGuard;
  return c;
}
/// The view of `c` on a buffer at `base` (host or device), scales at `scales` (k, v).
KvCacheView nvfp4_view(const Nvfp4Cache& c, uint8_t* base, const float* scales) {
  KvCacheView v;
  v.k = base + c.k;
  v.k_capacity = c.data_elements;
  v.v = base + c.v;
  v.v_capacity = c.data_elements;
  v.layout = c.layout;
  v.scales.kind = KvScaleKind::kPerTensor;
  v.scales.k_scale = {scales, 1};
  v.scales.v_scale = {scales + 1, 1};
  v.k_sf = base + c.k_sf;
  v.k_sf_capacity = c.sf_bytes;
  v.v_sf = base + c.v_sf;
  v.v_sf_capacity = c.sf_bytes;
  v.sf = c.sf;
  return v;
}
/// Where byte i of the cache buffer is, for a failure message.
std::string nvfp4_region(const Nvfp4Cache& c, int64_t i) {
  const struct { int64_t at, bytes; const char* name; } parts[] = {
      {c.k, kv_bytes(c.layout.dtype, c.data_elements), "K data"},
      {c.v, kv_bytes(c.layout.dtype, c.data_elements), "V data"},
      {c.k_sf, c.sf_bytes, "K scales"},
      {c.v_sf, c.sf_bytes, "V scales"}};
  for (const auto& p : parts)
    if (i >= p.at && i < p.at + p.bytes) return std::string(p.name) + " byte " + std::to_string(i - p.at);
  return "byte " + std::to_string(i) + " outside every view";
}

/// "" when equal, else the first difference (`where` names its place).
std::string first_difference(const Bytes& want, const Bytes& got, const std::function<std::string(int64_t)>& where) {
  if (want.size() != got.size()) return "sizes differ";
  const auto d = std::mismatch(want.begin(), want.end(), got.begin());
  if (d.first == want.end()) return "";
  const int64_t i = d.first - want.begin();
  char buf[96];
  std::snprintf(buf, sizeof buf, ": cpu 0x%02x device 0x%02x", unsigned{*d.first}, unsigned{*d.second});
  return where(i) + buf;
}

/// The bits of f in a model dtype, f exactly representable there (the test's values are).
uint16_t exact_model_bits(KvDtype m, float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (m == KvDtype::kBF16) {
    EXPECT_EQ(u & 0xFFFFu, 0u) << f << " is no bf16 value";
    return static_cast<uint16_t>(u >> 16);
  }
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return 0x7E00;
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7C00u);
  if (a < 0x1p-14f) {  // zero or subnormal: m * 2^-24
    const float m = a * 0x1p24f;
    EXPECT_EQ(m, std::floor(m)) << f << " is no fp16 value";
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(m));
  }
  const int e = static_cast<int>((u >> 23) & 0xFF) - 127;
  EXPECT_TRUE(e <= 15 && (u & 0x1FFFu) == 0) << f << " is no fp16 value";
  return static_cast<uint16_t>(sign | (e + 15) << 10 | ((u >> 13) & 0x3FFu));
}

/// Model-dtype bits of the awkward kinds: NaN of both signs (payloads too), +-Inf,
/// +-0, subnormals, the largest finite values, and random normals of any exponent.
uint16_t special_bits(KvDtype m, std::mt19937_64& rng) {
  static const uint16_t bf16[] = {0x7FC0, 0xFFC0, 0x7F81, 0xFFFF, 0x7F80, 0xFF80, 0x0000, 0x8000,
                                  0x0001, 0x807F, 0x0040, 0x7F7F, 0xFF7F, 0x7F00, 0x3F80, 0xC0C0};
  static const uint16_t fp16[] = {0x7E00, 0xFE00, 0x7C01, 0xFFFF, 0x7C00, 0xFC00, 0x0000, 0x8000,
                                  0x0001, 0x83FF, 0x0200, 0x7BFF, 0xFBFF, 0x7800, 0x3C00, 0xC600};
  return (m == KvDtype::kBF16 ? bf16 : fp16)[rng() % 16];
}
uint16_t random_normal_bits(KvDtype m, std::mt19937_64& rng, int exp_lo, int exp_hi) {
  const uint16_t sign = rng() % 2 ? 0x8000 : 0;
  const int e = exp_lo + static_cast<int>(rng() % static_cast<uint64_t>(exp_hi - exp_lo + 1));
  if (m == KvDtype::kBF16) return static_cast<uint16_t>(sign | e << 7 | (rng() & 0x7F));
  return static_cast<uint16_t>(sign | e << 10 | (rng() & 0x3FF));
}
/// One group of 16 model elements: a pattern per group (all zero, all NaN, normals
/// of one narrow exponent range, normals with awkward values among them, subnormals
/// only, huge values, a lone Inf).
void fill_group(KvDtype m, std::mt19937_64& rng, uint16_t* g) {
  const int emax = m == KvDtype::kBF16 ? 254 : 30;
  const int lo = 1 + static_cast<int>(rng() % static_cast<uint64_t>(emax - 3));
  const int pattern = static_cast<int>(rng() % 8);
  for (int i = 0; i < 16; ++i) {
    uint16_t x = random_normal_bits(m, rng, lo, std::min(lo + 3, emax));
    switch (pattern) {
      case 0: x = rng() % 2 ? 0x8000 : 0x0000; break;  // an all-zero group (signed zeros)
      case 1: x = m == KvDtype::kBF16 ? (rng() % 2 ? 0x7FC0 : 0xFFC1) : (rng() % 2 ? 0x7E00 : 0xFE01); break;
      case 2: break;
      case 3: case 4: if (rng() % 4 == 0) x = special_bits(m, rng); break;
      case 5: x = static_cast<uint16_t>((rng() % 2 ? 0x8000 : 0) | (rng() & (m == KvDtype::kBF16 ? 0x7F : 0x3FF))); break;
      case 6: x = static_cast<uint16_t>((rng() % 2 ? 0x8000 : 0) | (m == KvDtype::kBF16 ? 0x7F00 | (rng() & 0x7F) : 0x7800 | (rng() & 0x3FF))); break;
      case 7: if (i == static_cast<int>(rng() % 16)) x = m == KvDtype::kBF16 ? 0x7F80 : 0xFC00; break;
    }
    g[i] = x;
  }
}

/// A rows buffer [guard | side 0 | guard | side 1 | guard], each side `shift` bytes past
/// a 16-byte boundary, token i head h at element i*token_stride + h*head_stride.
struct Nvfp4Rows {
  KvDtype dtype = KvDtype::kBF16;
  int64_t rows = 0, token_stride = 0, head_stride = 0, shift = 0;
  int64_t at[2] = {0, 0}, bytes = 0;
};
Nvfp4Rows nvfp4_rows(KvDtype m, int64_t rows, const KvCacheLayout& l, int64_t pad, int64_t shift) {
  Nvfp4Rows r;
  r.dtype = m;
  r.rows = rows;
  r.head_stride = l.head_dim + pad;
  r.token_stride = l.num_kv_heads * r.head_stride + pad;
  r.shift = shift;
  const int64_t side = round16(2 * ((rows - 1) * r.token_stride + (l.num_kv_heads - 1) * r.head_stride + l.head_dim) +
                               shift);
  r.at[0] = kGuard + shift;
  r.at[1] = kGuard + side + kGuard + shift;
  r.bytes = 2 * (side + kGuard) + kGuard;
  return r;
}
KvTokensOut nvfp4_tokens(const Nvfp4Rows& r, uint8_t* base, int side) {
  return {base + r.at[side], r.dtype, r.rows, r.token_stride, r.head_stride};
}

/// Runs `op` on a fresh non-blocking stream with PDL, as the cuda plugin does.
void on_stream(const std::function<cuda::PendingCheck(const cuda::LaunchOptions&)>& op) {
  cudaStream_t stream;
  ck(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const cuda::LaunchOptions opts{stream, true};
  op(opts).throw_if_error(stream);
  ck(cudaStreamSynchronize(stream));
  ck(cudaStreamDestroy(stream));
}

/// store_kv then gather_kv of one e2m1 cache against the cpu backend: rows of awkward
/// groups to slots (with -1 padding; the slots nothing stores keep random bytes, NaN
/// scale bytes among them), the whole cache buffer compared (data, scales and the bytes
/// around them); then three sequences over every block gathered from the cpu's cache,
/// the whole output buffer compared. `pad` > 0 gives odd row strides, `shift` rows (and
/// the device's RoPE table) off a 16-byte boundary. With a rope, the key rows get a fused RoPE (§8.4) first: kPart
/// rot_dim 24 from element 4 (across a group boundary), NeoX or GPT-J by seed; kWholeNeox
/// NeoX over the whole head (the engines' shape: the store's pairs path where the head
/// is 2-32 two-group units, or 32 four-group ones at 2048).
enum class Nvfp4Rope { kNone, kPart, kWholeNeox };
void check_nvfp4_store_gather(const std::string& what, const Nvfp4Cache& c, KvDtype model, int64_t pad,
                              int64_t shift, Nvfp4Rope rope_shape, uint64_t seed) {
  const bool rope = rope_shape != Nvfp4Rope::kNone, whole = rope_shape == Nvfp4Rope::kWholeNeox;
  SCOPED_TRACE(what);
  std::mt19937_64 rng(seed);
  const KvCacheLayout& l = c.layout;
  const int64_t slots_total = l.num_blocks * l.block_size, n = slots_total * 3 / 4 + 2;
  ASSERT_GE(l.num_blocks, 4);
  std::vector<int32_t> slots(static_cast<size_t>(slots_total));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  slots.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < slots.size(); i += 5) slots[i] = -1;

  Bytes cache(static_cast<size_t>(c.bytes));
  for (auto& b : cache) b = static_cast<uint8_t>(rng());
  const Nvfp4Rows in = nvfp4_rows(model, n, l, pad, shift);
  Bytes rows(static_cast<size_t>(in.bytes));
  for (auto& b : rows) b = static_cast<uint8_t>(rng());
  for (int side = 0; side < 2; ++side)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t h = 0; h < l.num_kv_heads; ++h)
        for (int64_t grp = 0; grp < l.head_dim / 16; ++grp) {
          uint16_t g[16];
          fill_group(model, rng, g);
          std::memcpy(&rows[static_cast<size_t>(in.at[side] + 2 * (i * in.token_stride + h * in.head_stride + 16 * grp))],
                      g, sizeof g);
        }
  const std::vector<float> scales{c.g[0], c.g[1]};

  const int64_t max_position = 7;
  const int32_t rot_dim = whole ? static_cast<int32_t>(l.head_dim) : 24;
  std::vector<float> cos_sin(static_cast<size_t>(max_position * rot_dim));
  for (auto& x : cos_sin) x = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  std::vector<int64_t> positions(static_cast<size_t>(n));
  for (auto& p : positions) p = static_cast<int64_t>(rng() % max_position);
  const auto rope_of = [&](const float* cs, const int64_t* pos) {
    RopeArgs r;
    r.cos_sin_cache = cs;
    r.max_position = max_position;
    r.positions = pos;
    r.positions_rows = n;
    r.rot_dim = rot_dim;
    r.rope_offset = whole ? 0 : 4;
    r.is_neox = whole || seed % 2 == 0;
    return r;
  };

  // store_kv: cpu, then the device from the same bytes.
  Bytes want = cache;
  {
    const KvCacheView v = nvfp4_view(c, want.data(), scales.data());
    const RopeArgs r = rope_of(cos_sin.data(), positions.data());
    const std::string error = outcome([&] {
      kCpu.store_kv(nvfp4_tokens(in, rows.data(), 0), nvfp4_tokens(in, rows.data(), 1), slots, v, rope ? &r : nullptr);
    });
    ASSERT_EQ(error, "") << "the cpu refused the store";
  }
  Bytes got(cache.size());
  {
    // With `shift`, the device's table starts 4 bytes past a 16-byte boundary: the pairs
    // path's float loads (nvfp4_rope_pairs_rotate<..., false>), else its float4 loads.
    std::vector<float> table = cos_sin;
    if (shift != 0) table.insert(table.begin(), 0.0f);
    const DeviceRopeStore d(cache, rows, scales, slots, table, positions, l);
    const KvCacheView v = nvfp4_view(c, d.cache.get(), d.scales.as<float>());
    const RopeArgs r = rope_of(d.cos_sin.as<float>() + (shift != 0 ? 1 : 0), d.positions.as<int64_t>());
    const std::string error = outcome([&] {
      on_stream([&](const cuda::LaunchOptions& o) {
        return cuda::store_kv_checked(nvfp4_tokens(in, d.rows.get(), 0), nvfp4_tokens(in, d.rows.get(), 1),
                                      {d.slots.as<int32_t>(), slots.size()}, v, d.status.as<cuda::DeviceStatus>(),
                                      d.workspace.get(), o, rope ? &r : nullptr);
      });
    });
    ASSERT_EQ(error, "") << "the device refused the store";
    ck(cudaMemcpy(got.data(), d.cache.get(), got.size(), cudaMemcpyDeviceToHost));
  }
  const std::string store_diff = first_difference(want, got, [&](int64_t i) { return nvfp4_region(c, i); });
  EXPECT_EQ(store_diff, "") << "store_kv: the caches differ";
  const int64_t written = std::count_if(slots.begin(), slots.end(), [](int32_t s) { return s >= 0; });
  EXPECT_GT(written, 0);

  // gather_kv from the cpu's cache: sequences of bs + 3, 2 bs and bs - 1 tokens through
  // table rows {2, 0}, {3, 1}, {1, -1 (unneeded)}, starting at positions 1, 0, 1.
  const int32_t bs = l.block_size;
  const std::vector<int32_t> table{2, 0, 3, 1, 1, -1}, cu{0, bs + 3, 3 * bs + 3, 4 * bs + 2}, starts{1, 0, 1};
  const Nvfp4Rows out = nvfp4_rows(model, cu.back(), l, pad, shift);
  Bytes out_init(static_cast<size_t>(out.bytes));
  for (auto& b : out_init) b = static_cast<uint8_t>(rng());
  Bytes out_want = out_init, out_got(out_init.size());
  const auto gather_args = [&](const uint8_t* cache_base, uint8_t* out_base, const float* sc, const int32_t* meta) {
    GatherKvArgs a;
    a.cache = nvfp4_view(c, const_cast<uint8_t*>(cache_base), sc);
    a.block_table = {meta, table.size()};
    a.max_blocks = 2;
    a.cu_seqlens_k = {meta + table.size(), cu.size()};
    a.seq_starts = {meta + table.size() + cu.size(), starts.size()};
    a.seq_start_unit = SeqStartUnit::kToken;
    a.out_k = nvfp4_tokens(out, out_base, 0);
    a.out_v = nvfp4_tokens(out, out_base, 1);
    return a;
  };
  std::vector<int32_t> meta = table;
  meta.insert(meta.end(), cu.begin(), cu.end());
  meta.insert(meta.end(), starts.begin(), starts.end());
  ASSERT_EQ(outcome([&] { kCpu.gather_kv(gather_args(want.data(), out_want.data(), scales.data(), meta.data())); }), "")
      << "the cpu refused the gather";
  {
    cuda::DeviceBuffer dcache(want.size()), dout(out_init.size()), dscales(8), dmeta(meta.size() * 4),
        status(sizeof(cuda::DeviceStatus));
    upload(dcache, want);
    upload(dout, out_init);
    upload(dscales, scales);
    upload(dmeta, meta);
    ck(cudaDeviceSynchronize());
    const std::string error = outcome([&] {
      on_stream([&](const cuda::LaunchOptions& o) {
        return cuda::gather_kv_checked(gather_args(dcache.get(), dout.get(), dscales.as<float>(), dmeta.as<int32_t>()),
                                       status.as<cuda::DeviceStatus>(), o);
      });
    });
    ASSERT_EQ(error, "") << "the device refused the gather";
    ck(cudaMemcpy(out_got.data(), dout.get(), out_got.size(), cudaMemcpyDeviceToHost));
    Bytes cache_after(want.size());
    ck(cudaMemcpy(cache_after.data(), dcache.get(), cache_after.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(cache_after == want) << "gather_kv wrote the cache";
  }
  const std::string gather_diff = first_difference(out_want, out_got, [&](int64_t i) {
    const int side = i >= out.at[1] - out.shift - kGuard / 2 ? 1 : 0;
    const int64_t e = (i - out.at[side]) / 2;
    return std::string(side ? "out_v" : "out_k") + " byte " + std::to_string(i - out.at[side]) + " (row " +
           std::to_string(e / out.token_stride) + ", element " + std::to_string(e % out.token_stride) + ")";
  });
  EXPECT_EQ(gather_diff, "") << "gather_kv: the outputs differ";
}

/// The e2m1 caches of the tests: dense NHD / HND, or NHD with padded strides (odd byte
/// offsets of the heads); linear scales in token-major or head-major order, or the
/// 4-token interleave (block_size % 4 == 0, stride_token = S), with padded pages.
KvCacheLayout nvfp4_layout(int order, int32_t bs, int32_t heads, int32_t d) {
  if (order < 2) return kv_dense_layout(KvDtype::kE2M1, order ? KvHeadLayout::kHND : KvHeadLayout::kNHD, 5, bs, heads, d);
  KvCacheLayout l = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, 5, bs, heads, d);
  l.stride_head = d + 2;  // (d + 2) / 2 bytes: an odd number for d % 4 == 0
  l.stride_token = heads * l.stride_head + 6;
  l.stride_page = bs * l.stride_token + 10;
  return l;
}
KvSfGeometry nvfp4_sf(int kind, const KvCacheLayout& l) {
  const int64_t s = l.head_dim / 16, bs = l.block_size, h = l.num_kv_heads;
  KvSfGeometry g;
  if (kind == 0) {  // linear, token-major: [page][token][head][S]
    g.stride_head = s;
    g.stride_token = h * s;
    g.stride_page = bs * h * s + 3;
  } else if (kind == 1) {  // linear, head-major with gaps: [page][head][token][S + 1]
    g.stride_token = s + 1;
    g.stride_head = bs * (s + 1) + 2;
    g.stride_page = h * g.stride_head + 5;
  } else {  // interleave4: [page][head][bs x S tile]
    g.layout = KvSfLayout::kInterleave4;
    g.stride_token = s;
    g.stride_head = bs * s;
    g.stride_page = h * bs * s + 7;
  }
  return g;
}

// SPEC §7.9 on the device: e2m1 store_kv then gather_kv equal the cpu backend's bytes
// (caches with their scale caches, outputs, and the bytes around all of them) for bf16
// and fp16 rows, NHD, HND and padded caches, linear and interleave4 scales, aligned and
// odd rows, global scales from tiny to huge, with and without a fused RoPE, at head_dim
// 48, 96 and 128 (the store's 1-, 2- and 4-group units).
TEST(KvDeviceApi, Nvfp4StoreAndGatherMatchCpu) {
  KVCHECK_NEED_GPU();
  const float g_pairs[][2] = {{0.37f, 3.7e-3f}, {1.0f, 1.0f / 448.0f}, {1e-40f, 2.5f}, {3e38f, 6.0f}};
  uint64_t seed = 0;
  for (const int32_t d : {48, 80, 96, 128, 576})
    for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
      for (int order = 0; order < 3; ++order)
        for (int sf = 0; sf < 3; ++sf)
          for (int odd = 0; odd < 2; ++odd) {
            ++seed;
            const KvCacheLayout l = nvfp4_layout(order, 8, 3, d);
            const float* g = g_pairs[seed % 4];
            const Nvfp4Cache c = nvfp4_cache(l, nvfp4_sf(sf, l), g[0], g[1]);
            const std::string what = "head_dim " + std::to_string(d) + " " + to_string(model) +
                                     (order == 0 ? " NHD" : order == 1 ? " HND" : " padded NHD") +
                                     " " + to_string(c.sf.layout) + (sf == 1 ? " (head-major)" : "") +
                                     (odd ? " odd rows" : " aligned rows") + " g " + std::to_string(g[0]) + "/" +
                                     std::to_string(g[1]);
            check_nvfp4_store_gather(what, c, model, odd ? 3 : 0, odd ? 2 : 0, Nvfp4Rope::kNone, seed);
            if (seed % 3 == 0)
              check_nvfp4_store_gather(what + " rope", c, model, odd ? 3 : 0, odd ? 2 : 0, Nvfp4Rope::kPart, seed);
          }
  // head_dim 16 (one group a head), block_size 4: the smallest interleave tile.
  const KvCacheLayout small = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kHND, 6, 4, 2, 16);
  check_nvfp4_store_gather("head_dim 16 interleave4", nvfp4_cache(small, nvfp4_sf(2, small), 0.5f, 3.7e-3f),
                           KvDtype::kBF16, 0, 0, Nvfp4Rope::kNone, 99);
}

// The e2m1 store under the engines' RoPE, NeoX over the whole head (§8.4 then §7.9):
// head_dims 64 to 1024 (2 to 32 two-group units a head) and 2048 (32 four-group units, a
// whole warp): the store's shuffle-pairs path, nvfp4_rope_pairs; and 80, 96, 144 (5, 6
// and 9 groups: one, two and one group a thread, element by element; 80 / 32 and 144 / 32
// round down to a power of two, which once sent them down the pairs path), bf16 and fp16 rows, NHD, HND and padded caches, linear and
// interleave4 scales, -1 rows, aligned and odd row strides (drawn apart from the scale
// layout), 3 heads and 1, 2 or 8 (the side-by-side unit tiles); the device's cache and
// gather equal the cpu's bytes.
TEST(KvDeviceApi, Nvfp4WholeHeadNeoxRopeMatchesCpu) {
  KVCHECK_NEED_GPU();
  uint64_t seed = 400;
  int checked = 0;
  for (const int32_t d : {128, 256, 512, 1024, 2048, 64, 80, 96, 144})
    for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
      for (int order = 0; order < 3; ++order)
        for (const int sf : {0, 2}) {
          ++seed;
          const bool odd = (seed >> 1) % 2 == 1;
          const KvCacheLayout l = nvfp4_layout(order, 8, 3, d);
          const Nvfp4Cache c = nvfp4_cache(l, nvfp4_sf(sf, l), 0.37f, 3.7e-3f);
          const std::string what = "head_dim " + std::to_string(d) + " " + to_string(model) +
                                   (order == 0 ? " NHD " : order == 1 ? " HND " : " padded NHD ") +
                                   to_string(c.sf.layout) + (odd ? " odd rows" : " aligned rows") + " whole-head NeoX";
          check_nvfp4_store_gather(what, c, model, odd ? 3 : 0, odd ? 2 : 0, Nvfp4Rope::kWholeNeox, seed);
          ++checked;
        }
  EXPECT_EQ(checked, 108);
  // Heads whose side's units (heads x head_dim / 32) divide 32, where the pairs kernel
  // puts a tile of 32 / U rows' K units before their V units (chunk_unit_of_sides; 3
  // heads above never do): U = 2 to 128, t = 16 to 1, and 47 rows (block size 12, 5
  // blocks), so the last tile is partial at every t > 1.
  int tiled = 0;
  for (const int32_t heads : {1, 2, 8})
    for (const int32_t d : {64, 128, 256, 512})
      for (int order = 0; order < 3; ++order)
        for (const int sf : {0, 2}) {
          ++seed;
          const bool odd = (seed >> 1) % 2 == 1;
          const KvDtype model = seed % 2 ? KvDtype::kFP16 : KvDtype::kBF16;
          const KvCacheLayout l = nvfp4_layout(order, 12, heads, d);
          const Nvfp4Cache c = nvfp4_cache(l, nvfp4_sf(sf, l), 0.37f, 3.7e-3f);
          const std::string what = std::to_string(heads) + " heads of " + std::to_string(d) + " " + to_string(model) +
                                   (order == 0 ? " NHD " : order == 1 ? " HND " : " padded NHD ") +
                                   to_string(c.sf.layout) + (odd ? " odd rows" : " aligned rows") + " whole-head NeoX";
          check_nvfp4_store_gather(what, c, model, odd ? 3 : 0, odd ? 2 : 0, Nvfp4Rope::kWholeNeox, seed);
          ++tiled;
        }
  EXPECT_EQ(tiled, 72);
}

// SPEC §7.9's store on every model value: each of the 65,536 bf16 (and fp16) bit
// patterns as one element of a group whose 15 companions set the amax (zeros, 1, 2^-8,
// 2^10, huge, subnormal, NaN and -Inf), under global scales 1, 1/448, 3.7e-3 and
// beyond; the device's data and scale bytes equal the cpu's.
TEST(KvDeviceApi, Nvfp4StoreMatchesCpuOnEveryModelValue) {
  KVCHECK_NEED_GPU();
  constexpr int64_t kValues = 65536, kD = 16 * kValues;
  const float base[15] = {1.0f,  -0.5f,      0.25f,     0.75f,   -1.0f,  0.125f,    0.3125f, -0.625f,
                          0.875f, 0.015625f, -0.03125f, 0.375f,  0.34375f, -0.78125f, 0.0625f};
  constexpr int kSets = 7;
  const float g_pairs[][2] = {{1.0f, 1.0f / 448.0f}, {3.7e-3f, 1e-40f}, {3e38f, 0.1f}};
  for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16}) {
    const bool bf16 = model == KvDtype::kBF16;
    // Row k: group j holds value j at position j % 16, set k's companions elsewhere.
    std::vector<uint16_t> rows(static_cast<size_t>(kSets * kD));
    for (int k = 0; k < kSets; ++k) {
      uint16_t comp[15];
      for (int i = 0; i < 15; ++i) {
        float f = base[i];
        switch (k) {
          case 0: f = i % 2 ? -0.0f : 0.0f; break;
          case 1: break;
          case 2: f *= 0x1p-8f; break;
          case 3: f *= 0x1p10f; break;
          case 4: f *= bf16 ? 0x1p127f : 0x1p15f; break;
          case 5: f *= bf16 ? 0x1p-127f : 0x1p-15f; break;  // subnormals of the dtype
          case 6: f = i == 0 ? kNaN : i == 1 ? -kInf : f; break;
        }
        comp[i] = exact_model_bits(model, f);
      }
      for (int64_t j = 0; j < kValues; ++j) {
        uint16_t* g = &rows[static_cast<size_t>(k * kD + 16 * j)];
        for (int i = 0, c = 0; i < 16; ++i) g[i] = i == j % 16 ? static_cast<uint16_t>(j) : comp[c++];
      }
    }
    const KvCacheLayout l = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, 1, kSets, 1, static_cast<int32_t>(kD));
    KvSfGeometry sf;
    sf.stride_token = kD / 16;
    sf.stride_head = kD / 16;
    sf.stride_page = kSets * (kD / 16);
    std::vector<int32_t> slots(kSets);
    std::iota(slots.begin(), slots.end(), 0);
    const KvTokensIn in_host{reinterpret_cast<const uint8_t*>(rows.data()), model, kSets, kD, kD};
    cuda::DeviceBuffer drows(rows.size() * 2), dslots(slots.size() * 4), dscales(8),
        workspace(cuda::store_kv_workspace_bytes(l)), status(sizeof(cuda::DeviceStatus));
    upload(drows, rows);
    upload(dslots, slots);
    const KvTokensIn in_dev{drows.get(), model, kSets, kD, kD};
    for (const auto& gp : g_pairs) {
      const Nvfp4Cache c = nvfp4_cache(l, sf, gp[0], gp[1]);
      const std::vector<float> scales{gp[0], gp[1]};
      Bytes want(static_cast<size_t>(c.bytes), 0xA5), got(want.size());
      ASSERT_EQ(outcome([&] { kCpu.store_kv(in_host, in_host, slots, nvfp4_view(c, want.data(), scales.data())); }), "");
      cuda::DeviceBuffer dcache(want.size());
      upload(dcache, Bytes(want.size(), 0xA5));
      upload(dscales, scales);
      ck(cudaDeviceSynchronize());
      const std::string error = outcome([&] {
        on_stream([&](const cuda::LaunchOptions& o) {
          return cuda::store_kv_checked(in_dev, in_dev, {dslots.as<int32_t>(), slots.size()},
                                        nvfp4_view(c, dcache.get(), dscales.as<float>()),
                                        status.as<cuda::DeviceStatus>(), workspace.get(), o);
        });
      });
      ASSERT_EQ(error, "");
      ck(cudaMemcpy(got.data(), dcache.get(), got.size(), cudaMemcpyDeviceToHost));
      const std::string diff = first_difference(want, got, [&](int64_t i) {
        // The group of the byte: data byte b of side s is group b / 8; scale byte b is group b.
        int64_t grp = -1;
        if (i >= c.k && i < c.v_sf + c.sf_bytes) {
          if (i < c.k_sf) grp = (i - (i < c.v ? c.k : c.v)) / 8;
          else grp = i - (i < c.v_sf ? c.k_sf : c.v_sf);
        }
        std::string s = nvfp4_region(c, i);
        if (grp >= 0) {
          char buf[96];
          std::snprintf(buf, sizeof buf, " (companion set %lld, value 0x%04llx)", static_cast<long long>(grp / kValues),
                        static_cast<unsigned long long>(grp % kValues));
          s += buf;
        }
        return s;
      });
      EXPECT_EQ(diff, "") << to_string(model) << " g " << gp[0] << " / " << gp[1];
    }
  }
}

// SPEC §7.9's load on every code byte and scale byte: 32 groups of one scale byte cover
// the 256 data bytes, for each of the 256 scale bytes (NaN scales 0x7F / 0xFF too), under
// several global scales, into bf16 and fp16; the device's outputs equal the cpu's.
TEST(KvDeviceApi, Nvfp4GatherMatchesCpuOnEveryCodeAndScale) {
  KVCHECK_NEED_GPU();
  constexpr int64_t kGroups = 256 * 32, kD = 16 * kGroups;
  const KvCacheLayout l = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, 1, 1, 1, static_cast<int32_t>(kD));
  KvSfGeometry sf;
  sf.stride_token = sf.stride_head = sf.stride_page = kGroups;
  const float g_pairs[][2] = {{1.0f, 1.0f / 448.0f}, {3.7e-3f, 3e38f}, {1e-40f, 0.5f}};
  const std::vector<int32_t> meta{0, 0, 1};  // block_table {0}, cu_seqlens_k {0, 1}
  for (const KvDtype model : {KvDtype::kBF16, KvDtype::kFP16})
    for (const auto& gp : g_pairs) {
      const Nvfp4Cache c = nvfp4_cache(l, sf, gp[0], gp[1]);
      Bytes cache(static_cast<size_t>(c.bytes), 0xA5);
      for (const int64_t data : {c.k, c.v})
        for (int64_t b = 0; b < kD / 2; ++b)
          cache[static_cast<size_t>(data + b)] = static_cast<uint8_t>(data == c.k ? b : 255 - b % 256);
      for (const int64_t scales_at : {c.k_sf, c.v_sf})
        for (int64_t grp = 0; grp < kGroups; ++grp) cache[static_cast<size_t>(scales_at + grp)] = static_cast<uint8_t>(grp / 32);
      const std::vector<float> scales{gp[0], gp[1]};
      const Nvfp4Rows out = nvfp4_rows(model, 1, l, 0, 0);
      Bytes want(static_cast<size_t>(out.bytes), 0xA5), got(want.size());
      const auto args = [&](uint8_t* cache_base, uint8_t* out_base, const float* sc, const int32_t* m) {
        GatherKvArgs a;
        a.cache = nvfp4_view(c, cache_base, sc);
        a.block_table = {m, 1};
        a.max_blocks = 1;
        a.cu_seqlens_k = {m + 1, 2};
        a.out_k = nvfp4_tokens(out, out_base, 0);
        a.out_v = nvfp4_tokens(out, out_base, 1);
        return a;
      };
      ASSERT_EQ(outcome([&] { kCpu.gather_kv(args(cache.data(), want.data(), scales.data(), meta.data())); }), "");
      cuda::DeviceBuffer dcache(cache.size()), dout(want.size()), dscales(8), dmeta(meta.size() * 4),
          status(sizeof(cuda::DeviceStatus));
      upload(dcache, cache);
      upload(dout, Bytes(want.size(), 0xA5));
      upload(dscales, scales);
      upload(dmeta, meta);
      ck(cudaDeviceSynchronize());
      ASSERT_EQ(outcome([&] {
                  on_stream([&](const cuda::LaunchOptions& o) {
                    return cuda::gather_kv_checked(args(dcache.get(), dout.get(), dscales.as<float>(), dmeta.as<int32_t>()),
                                                   status.as<cuda::DeviceStatus>(), o);
                  });
                }),
                "");
      ck(cudaMemcpy(got.data(), dout.get(), got.size(), cudaMemcpyDeviceToHost));
      const std::string diff = first_difference(want, got, [&](int64_t i) {
        const int side = i >= out.at[1] ? 1 : 0;
        const int64_t e = (i - out.at[side]) / 2;  // element; its group e / 16 has scale byte e / 512
        return std::string(side ? "out_v" : "out_k") + " element " + std::to_string(e) + " (scale byte " +
               std::to_string(e / 16 / 32) + ")";
      });
      EXPECT_EQ(diff, "") << to_string(model) << " g " << gp[0] << " / " << gp[1];
    }
}

// A e2m1 store with a bad global scale is the cpu's refusal, found on the device, and
// writes nothing (the scale values are checked there, SPEC §7.9 / §7.3).
TEST(KvDeviceApi, Nvfp4BadGlobalScaleIsTheCpuRefusal) {
  KVCHECK_NEED_GPU();
  const KvCacheLayout l = kv_dense_layout(KvDtype::kE2M1, KvHeadLayout::kNHD, 4, 4, 1, 16);
  for (const float bad : {0.0f, -1.0f, kNaN, kInf}) {
    const Nvfp4Cache c = nvfp4_cache(l, nvfp4_sf(2, l), 1.0f, bad);
    const Nvfp4Rows in = nvfp4_rows(KvDtype::kBF16, 2, l, 0, 0);
    Bytes rows(static_cast<size_t>(in.bytes), 0x3F), cache(static_cast<size_t>(c.bytes), 0xA5);
    const std::vector<float> scales{c.g[0], c.g[1]};
    const std::vector<int32_t> slots{3, 9};
    Bytes host = cache;
    const std::string want = outcome([&] {
      kCpu.store_kv(nvfp4_tokens(in, rows.data(), 0), nvfp4_tokens(in, rows.data(), 1), slots,
                    nvfp4_view(c, host.data(), scales.data()));
    });
    ASSERT_FALSE(want.empty()) << bad;
    cuda::DeviceBuffer dcache(cache.size()), drows(rows.size()), dscales(8), dslots(8),
        workspace(cuda::store_kv_workspace_bytes(l)), status(sizeof(cuda::DeviceStatus));
    upload(dcache, cache);
    upload(drows, rows);
    upload(dscales, scales);
    upload(dslots, slots);
    ck(cudaDeviceSynchronize());
    const std::string got = outcome([&] {
      on_stream([&](const cuda::LaunchOptions& o) {
        return cuda::store_kv_checked(nvfp4_tokens(in, drows.get(), 0), nvfp4_tokens(in, drows.get(), 1),
                                      {dslots.as<int32_t>(), slots.size()},
                                      nvfp4_view(c, dcache.get(), dscales.as<float>()),
                                      status.as<cuda::DeviceStatus>(), workspace.get(), o);
      });
    });
    EXPECT_EQ(got, want) << bad;
    Bytes after(cache.size());
    ck(cudaMemcpy(after.data(), dcache.get(), after.size(), cudaMemcpyDeviceToHost));
    EXPECT_TRUE(after == cache) << bad << ": the device wrote the cache despite the refusal";
  }
}

}  // namespace
}  // namespace kvcheck
