// concat_and_cache_mla (docs/spec.md §8.2): the spec's known answers, worked out by
// hand (BF16 bit patterns, and FP8_DS_MLA's record from SPEC §4.6: amax 336 -> scale
// 2^0, 336 -> e4m3 0x7A), on the reference and on every backend; and the refusals,
// each with its code and no cache byte changed.
#include <gtest/gtest.h>

#include <climits>
#include <functional>
#include <vector>

#include "impl/backends.h"
#include "reference/store.h"
#include "tests/test_util.h"

namespace kvcheck {
namespace {

using Bytes = std::vector<uint8_t>;
using Rows = std::vector<uint16_t>;

struct Call {
  KVCacheFormat format;
  int32_t num_blocks, block_size;
  Rows kv_c;
  int64_t kv_c_stride;
  Rows k_pe;
  int64_t k_pe_stride;
  int32_t kv_lora_rank, rope_dim;
  std::vector<int32_t> slot_mapping;
};
using Run = std::function<void(const ConcatMlaArgs&)>;

constexpr uint8_t kFill = 0xEE;

/// The call's arguments on `cache` (one cache; split calls set pe_cache).
ConcatMlaArgs args(const Call& c, const CacheLayout& layout, Bytes& cache) {
  const auto rows = [](const Rows& r, int64_t stride) { return stride > 0 ? static_cast<int64_t>(r.size()) / stride : 0; };
  return {{c.kv_c.data(), rows(c.kv_c, c.kv_c_stride), c.kv_c_stride},
          {c.k_pe.data(), rows(c.k_pe, c.k_pe_stride), c.k_pe_stride},
          c.kv_lora_rank,
          c.rope_dim,
          c.slot_mapping,
          {cache.data(), layout, static_cast<int64_t>(cache.size())},
          std::nullopt,
          std::nullopt};
}

/// Runs the call on `cache`, first filled with kFill.
void call(const Run& run, const Call& c, Bytes& cache) {
  const CacheLayout layout = CacheLayout::make(c.format, c.num_blocks, c.block_size);
  cache.assign(static_cast<size_t>(layout.size_bytes()), kFill);
  run(args(c, layout, cache));
}

Bytes after(const Run& run, const Call& c) {
  Bytes cache;
  call(run, c, cache);
  return cache;
}

void expect_refused(const Run& run, const Call& c, ErrorCode code, const std::string& needle) {
  Bytes cache;
  expect_error([&] { call(run, c, cache); }, code, {needle});
  EXPECT_EQ(cache, Bytes(cache.size(), kFill)) << "a refused call wrote";
}

Bytes repeat(std::initializer_list<uint8_t> unit, size_t times) {
  Bytes out;
  for (size_t i = 0; i < times; ++i) out.insert(out.end(), unit);
  return out;
}

void known_answers(const Run& run) {
  const KVCacheFormat bf16 = KVCacheFormat::BF16(8);
  // 1.0, 2.0, 3.0 ++ 4.0 ... 8.0 into slot 1 of a 2-token block: bytes 16-31, little-endian.
  Bytes want(32, kFill);
  const Bytes rec{0x80, 0x3F, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40, 0xA0, 0x40, 0xC0, 0x40, 0xE0, 0x40, 0x00, 0x41};
  std::copy(rec.begin(), rec.end(), want.begin() + 16);
  const Rows row{0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0, 0x4100};
  EXPECT_EQ(after(run, {bf16, 1, 2, Rows(row.begin(), row.begin() + 3), 3, Rows(row.begin() + 3, row.end()), 5, 3, 5,
                        {1}}),
            want);
  // The same record split 1 + 7, kv_c rows padded to 2, k_pe rows to 9; row 0 is padding.
  Rows k_pe(18, 0x2222);
  std::copy(row.begin() + 1, row.end(), k_pe.begin() + 9);
  EXPECT_EQ(after(run, {bf16, 1, 2, {0x1111, 0, 0x3F80, 0}, 2, k_pe, 9, 1, 7, {-1, 1}}), want);
  // k_pe a view of kv_c's rows (one tensor [1][8] split 2 + 6): the record is the row.
  EXPECT_EQ(after(
                [&](const ConcatMlaArgs& a) {
                  ConcatMlaArgs b = a;
                  b.k_pe = {a.kv_c.data + 2, 1, 8};
                  run(b);
                },
                {bf16, 1, 2, row, 8, {}, 8, 2, 6, {1}}),
            want);

  // FP8_DS_MLA, kv_lora_rank 512 + rope_dim 64: kv_c all 336.0 (0x43A8), k_pe all 1.0.
  const KVCacheFormat mla = KVCacheFormat::FP8_DS_MLA();
  const Bytes ds = after(run, {mla, 1, 1, Rows(512, 0x43A8), 512, Rows(64, 0x3F80), 64, 512, 64, {0}});
  Bytes ds_want(512, 0x7A);  // 336 between 320 (0x7A) and 352 (0x7B): the even code
  const Bytes scales = repeat({0x00, 0x00, 0x80, 0x3F}, 4), tail = repeat({0x80, 0x3F}, 64);  // 2^0 four times
  ds_want.insert(ds_want.end(), scales.begin(), scales.end());
  ds_want.insert(ds_want.end(), tail.begin(), tail.end());
  ds_want.resize(ds.size(), kFill);  // the block's padding to its 32-byte stride (SPEC §3)
  EXPECT_EQ(ds, ds_want);
  // Split 528 + 48: the tail starts with kv_c's last 16 values (2.0), then k_pe's (3.0).
  Rows kv_c(512, 0x43A8);
  kv_c.resize(528, 0x4000);
  const Bytes ds2 = after(run, {mla, 1, 1, kv_c, 528, Rows(48, 0x4040), 48, 528, 48, {0}});
  Bytes ds2_want(ds_want.begin(), ds_want.begin() + 528);
  const Bytes t1 = repeat({0x00, 0x40}, 16), t2 = repeat({0x40, 0x40}, 48);
  ds2_want.insert(ds2_want.end(), t1.begin(), t1.end());
  ds2_want.insert(ds2_want.end(), t2.begin(), t2.end());
  ds2_want.resize(ds2.size(), kFill);
  EXPECT_EQ(ds2, ds2_want);

  // Refusals, in the §8.2 order; nothing written. The widths are checked with no row too.
  expect_refused(run, {bf16, 1, 2, {}, 3, {}, 5, 0, 8, {}}, ErrorCode::kInvalidArgument, "kv_lora_rank");
  expect_refused(run, {bf16, 1, 2, {}, 3, {}, 5, 4, 5, {}}, ErrorCode::kShapeMismatch, "rope_dim");
  const Rows c3(3, 0x3F80), p5(5, 0x4000);
  expect_refused(run, {bf16, 1, 2, c3, 3, p5, 5, 0, 8, {1}}, ErrorCode::kInvalidArgument, "kv_lora_rank");
  expect_refused(run, {bf16, 1, 2, c3, 3, p5, 5, 3, 4, {1}}, ErrorCode::kShapeMismatch, "rope_dim");
  expect_refused(run, {bf16, 1, 2, c3, 3, p5, 5, 3, 5, {1, 0}}, ErrorCode::kShapeMismatch, "kv_c");
  expect_refused(run, {bf16, 1, 2, Rows(6, 0), 3, p5, 5, 3, 5, {1, 0}}, ErrorCode::kShapeMismatch, "k_pe");
  expect_refused(run, {bf16, 1, 2, Rows(4, 0), 2, Rows(10, 0), 5, 3, 5, {1, 0}}, ErrorCode::kInvalidArgument, "kv_c");
  expect_refused(run, {bf16, 1, 2, c3, 3, Rows(8, 0), 4, 3, 5, {1}}, ErrorCode::kInvalidArgument, "k_pe");
  expect_refused(run, {bf16, 1, 2, c3, 3, p5, 5, 3, 5, {2}}, ErrorCode::kSlotOutOfRange, "slot_mapping[0]");
  expect_refused(run, {bf16, 1, 2, Rows(6, 0), 3, Rows(10, 0), 5, 3, 5, {1, 1}}, ErrorCode::kDuplicateSlot,
                 "slot_mapping[1]");
}

// ---- Split caches (docs/spec.md §8.2 "Split caches") ----

/// pe_cache's geometry, and where it lives: a buffer of its own, or `inside` bytes into
/// the cache's.
struct PeCache {
  KVCacheFormat format;
  int32_t num_blocks, block_size;
  int64_t block_stride = 0;  // 0 = packed
  int64_t inside = -1;
};

/// The cache and pe_cache after `run` (both first filled with kFill); c.format is the
/// cache's (E = kv_lora_rank when valid).
std::pair<Bytes, Bytes> split_call(const Run& run, const Call& c, const PeCache& p) {
  const CacheLayout layout = CacheLayout::make(c.format, c.num_blocks, c.block_size);
  CacheLayout pe_layout = CacheLayout::make(p.format, p.num_blocks, p.block_size);
  if (p.block_stride != 0) pe_layout.block_stride = p.block_stride;
  Bytes cache(static_cast<size_t>(layout.size_bytes()), kFill);
  Bytes pe(static_cast<size_t>(std::max(pe_layout.size_bytes(), pe_layout.packed_stride())), kFill);
  ConcatMlaArgs a = args(c, layout, cache);
  a.pe_cache = CacheView{p.inside >= 0 ? cache.data() + p.inside : pe.data(), pe_layout, static_cast<int64_t>(pe.size())};
  run(a);
  return {cache, pe};
}

void expect_split_refused(const Run& run, const Call& c, const PeCache& p, ErrorCode code, const std::string& needle) {
  Bytes cache, pe;  // both buffers as the refused call left them
  const Run keep = [&](const ConcatMlaArgs& a) {
    const auto grab = [&] {
      cache.assign(a.cache.base, a.cache.base + a.cache.size_bytes);
      pe.assign(a.pe_cache->base, a.pe_cache->base + a.pe_cache->size_bytes);
    };
    try {
      run(a);
    } catch (...) {
      grab();
      throw;
    }
    grab();
  };
  expect_error([&] { split_call(keep, c, p); }, code, {needle});
  EXPECT_EQ(cache, Bytes(cache.size(), kFill)) << "a refused call wrote the cache";
  EXPECT_EQ(pe, Bytes(pe.size(), kFill)) << "a refused call wrote pe_cache";
}

void split_known_answers(const Run& run) {
  // kv_c 1.0 ... 8.0 into a BF16(8) cache and k_pe 8 x -1.0 into a BF16(8) pe_cache, slot 1
  // of one 2-token block: bytes 16-31 of each.
  const KVCacheFormat b8 = KVCacheFormat::BF16(8);
  const Rows kv_c{0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0, 0x4100}, k_pe(8, 0xBF80);
  const PeCache pe{b8, 1, 2};
  const auto [cache, pe_bytes] = split_call(run, {b8, 1, 2, kv_c, 8, k_pe, 8, 8, 8, {1}}, pe);
  Bytes want_cache(cache.size(), kFill), want_pe(pe_bytes.size(), kFill);
  const Bytes c_rec{0x80, 0x3F, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40, 0xA0, 0x40, 0xC0, 0x40, 0xE0, 0x40, 0x00, 0x41};
  const Bytes p_rec = repeat({0x80, 0xBF}, 8);
  std::copy(c_rec.begin(), c_rec.end(), want_cache.begin() + 16);
  std::copy(p_rec.begin(), p_rec.end(), want_pe.begin() + 16);
  EXPECT_EQ(cache, want_cache);
  EXPECT_EQ(pe_bytes, want_pe);
  // The same rows as one tensor [2][16] (k_pe a view 8 elements in), at slot 0 after a
  // padding row: bytes 0-15 of each.
  Rows joined(16, 0x1111);
  joined.insert(joined.end(), kv_c.begin(), kv_c.end());
  joined.insert(joined.end(), k_pe.begin(), k_pe.end());
  const auto [cache2, pe2] = split_call(
      [&](const ConcatMlaArgs& a) {
        ConcatMlaArgs b = a;
        b.k_pe = {a.kv_c.data + 8, 2, 16};
        run(b);
      },
      {b8, 1, 2, joined, 16, {}, 16, 8, 8, {-1, 0}}, pe);
  Bytes want_cache2(cache2.size(), kFill), want_pe2(pe2.size(), kFill);
  std::copy(c_rec.begin(), c_rec.end(), want_cache2.begin());
  std::copy(p_rec.begin(), p_rec.end(), want_pe2.begin());
  EXPECT_EQ(cache2, want_cache2);
  EXPECT_EQ(pe2, want_pe2);

  // Refusals, in the §8.2 order; neither cache written.
  const Call ok{b8, 1, 2, kv_c, 8, k_pe, 8, 8, 8, {1}};
  expect_split_refused(run, ok, {b8, 2, 2}, ErrorCode::kShapeMismatch, "pe_cache");        // 2 blocks vs 1
  expect_split_refused(run, ok, {b8, 1, 4}, ErrorCode::kShapeMismatch, "pe_cache");        // block_size 4 vs 2
  expect_split_refused(run, ok, {b8, 1, 2, 16}, ErrorCode::kInvalidArgument, "pe_cache");  // stride below 32
  expect_split_refused(run, {b8, 1, 2, kv_c, 8, k_pe, 8, 7, 8, {1}}, pe, ErrorCode::kShapeMismatch, "kv_lora_rank");
  expect_split_refused(run, {b8, 1, 2, kv_c, 8, k_pe, 8, 8, 7, {1}}, pe, ErrorCode::kShapeMismatch, "rope_dim");
  expect_split_refused(run, {b8, 1, 2, kv_c, 8, k_pe, 8, 0, 8, {1}}, pe, ErrorCode::kInvalidArgument, "kv_lora_rank");
  // pe_cache (one 32-byte block) at the cache's base: the two share a byte.
  expect_split_refused(run, ok, {b8, 1, 2, 0, 0}, ErrorCode::kInvalidArgument, "share a byte");
  expect_split_refused(run, {b8, 1, 2, kv_c, 8, k_pe, 8, 8, 8, {2}}, pe, ErrorCode::kSlotOutOfRange,
                       "slot_mapping[0]");
}

// ---- Fused RoPE (docs/spec.md §8.4) ----

/// A RoPE's buffers (RopeArgs views them).
struct Rope {
  std::vector<float> cos_sin;
  int64_t max_position;
  std::vector<int64_t> positions;
  int32_t rot_dim, rope_offset;
  bool neox;
};

/// `run` with the rope added to every call (k_pe's buffer checked unchanged: it is only read).
Run with_rope(const Run& run, const Rope& r) {
  return [&run, &r](const ConcatMlaArgs& a) {
    ConcatMlaArgs b = a;
    b.rope = RopeArgs{r.cos_sin.empty() ? nullptr : r.cos_sin.data(), r.max_position,
                      r.positions.empty() ? nullptr : r.positions.data(), static_cast<int64_t>(r.positions.size()),
                      r.rot_dim, r.rope_offset, r.neox};
    const Rows k_pe_before(a.k_pe.data, a.k_pe.data + (a.k_pe.data ? a.k_pe.rows * a.k_pe.row_stride : 0));
    run(b);
    EXPECT_EQ(Rows(a.k_pe.data, a.k_pe.data + k_pe_before.size()), k_pe_before) << "the call wrote k_pe";
  };
}

void rope_known_answers(const Run& run, bool split) {
  // kv_c [1, 2, 3, 4] ++ k_pe [1, 2, 3, 4] into slot 1 of one 2-token BF16(8) block; k_pe
  // rotated at position 1 of a 2-row table: row 0 the identity (cos 1, 1; sin 0, 0),
  // row 1 cos (0, 0.5), sin (1, 0.75). NeoX pairs (0, 2), (1, 3):
  //   x' = 1*0 - 3*1 = -3, y' = 3*0 + 1*1 = 1;  x' = 2*0.5 - 4*0.75 = -2, y' = 4*0.5 + 2*0.75 = 3.5
  // -> k_pe' = [-3, -2, 1, 3.5] = 0xC040 0xC000 0x3F80 0x4060. GPT-J pairs (0, 1), (2, 3):
  //   x' = 1*0 - 2*1 = -2, y' = 2*0 + 1*1 = 1;  x' = 3*0.5 - 4*0.75 = -1.5, y' = 4*0.5 + 3*0.75 = 4.25
  // -> [-2, 1, -1.5, 4.25] = 0xC000 0x3F80 0xBFC0 0x4088.
  const KVCacheFormat b8 = KVCacheFormat::BF16(8);
  const Rows four{0x3F80, 0x4000, 0x4040, 0x4080};
  const std::vector<float> table{1, 1, 0, 0, 0, 0.5f, 1, 0.75f};
  const Bytes kv_c_rec{0x80, 0x3F, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40};
  const Bytes neox{0x40, 0xC0, 0x00, 0xC0, 0x80, 0x3F, 0x60, 0x40}, gptj{0x00, 0xC0, 0x80, 0x3F, 0xC0, 0xBF, 0x88, 0x40};
  for (const bool is_neox : {true, false}) {
    const Rope r{table, 2, {1}, 4, 0, is_neox};
    const Bytes& pe_rec = is_neox ? neox : gptj;
    if (!split) {
      Bytes want(32, kFill);
      std::copy(kv_c_rec.begin(), kv_c_rec.end(), want.begin() + 16);
      std::copy(pe_rec.begin(), pe_rec.end(), want.begin() + 24);
      EXPECT_EQ(after(with_rope(run, r), {b8, 1, 2, four, 4, four, 4, 4, 4, {1}}), want) << "neox " << is_neox;
      // Position 0 (the identity row): k_pe as it is; a padding row's position is checked, not used.
      Bytes same(32, kFill);
      std::copy(kv_c_rec.begin(), kv_c_rec.end(), same.begin() + 16);
      std::copy(kv_c_rec.begin(), kv_c_rec.end(), same.begin() + 24);
      EXPECT_EQ(after(with_rope(run, {table, 2, {1, 0}, 4, 0, is_neox}), {b8, 1, 2, Rows{0, 0, 0, 0, 0x3F80, 0x4000, 0x4040, 0x4080}, 4,
                                                                            Rows{0, 0, 0, 0, 0x3F80, 0x4000, 0x4040, 0x4080}, 4, 4, 4, {-1, 1}}),
                same);
    } else {
      // Split caches: kv_c [1 .. 8] into a BF16(8) cache, k_pe [1 .. 8] (the first four
      // rotated as above, 5 .. 8 as they are) into a BF16(8) pe_cache; slot 1: bytes 16-31.
      const Rows eight{0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0, 0x40E0, 0x4100};
      const auto [cache, pe] = split_call(with_rope(run, r), {b8, 1, 2, eight, 8, eight, 8, 8, 8, {1}}, {b8, 1, 2});
      const Bytes rest{0xA0, 0x40, 0xC0, 0x40, 0xE0, 0x40, 0x00, 0x41};
      Bytes want_cache(cache.size(), kFill), want_pe(pe.size(), kFill);
      std::copy(kv_c_rec.begin(), kv_c_rec.end(), want_cache.begin() + 16);
      std::copy(rest.begin(), rest.end(), want_cache.begin() + 24);
      std::copy(pe_rec.begin(), pe_rec.end(), want_pe.begin() + 16);
      std::copy(rest.begin(), rest.end(), want_pe.begin() + 24);
      EXPECT_EQ(cache, want_cache);
      EXPECT_EQ(pe, want_pe) << "neox " << is_neox;
    }
  }
  if (split) {
    expect_split_refused(with_rope(run, {table, 2, {2}, 4, 0, true}), {b8, 1, 2, Rows(8, 0), 8, Rows(8, 0), 8, 8, 8, {1}},
                         {b8, 1, 2}, ErrorCode::kInvalidArgument, "positions[0] = 2");
    return;
  }
  // No FMA, and the rounding to BF16: kv_c 6 x 1.0, k_pe [3, 1], one pair, cos fp32(1/3) =
  // 0x3EAAAAAB, sin 1. 3 * 0x3EAAAAAB = 1 + 2^-25 exactly, 1.0 in fp32; x' = 1.0 - 1*1 = 0
  // (a fused multiply-add would keep 2^-25: 0x3300). y' = fl(0x3EAAAAAB + 3) = 3 + 1398101
  // * 2^-22, to BF16 3.328125 = 0x4055. Record of slot 0 (block_size 1): 6 x (80 3F), 00 00 55 40.
  const Rope third{{1.0f / 3.0f, 1.0f}, 1, {0}, 2, 0, true};
  Bytes fma_want = repeat({0x80, 0x3F}, 6);
  fma_want.insert(fma_want.end(), {0x00, 0x00, 0x55, 0x40});
  fma_want.resize(32, kFill);  // the block's padding to its 32-byte stride (SPEC §3)
  EXPECT_EQ(after(with_rope(run, third), {b8, 1, 1, Rows(6, 0x3F80), 6, {0x4040, 0x3F80}, 2, 6, 2, {0}}), fma_want);
  // A sub-range: GPT-J, rope_offset 1, rot_dim 2 of rope_dim 4, table row 1 = (cos 0, sin 1):
  // pair (1, 2) = (2, 3) -> (-3, 2); k_pe' = [1, -3, 2, 4].
  Bytes sub(32, kFill);
  const Bytes sub_pe{0x80, 0x3F, 0x40, 0xC0, 0x00, 0x40, 0x80, 0x40};
  std::copy(kv_c_rec.begin(), kv_c_rec.end(), sub.begin() + 16);
  std::copy(sub_pe.begin(), sub_pe.end(), sub.begin() + 24);
  EXPECT_EQ(after(with_rope(run, {{1, 0, 0, 1}, 2, {1}, 2, 1, false}), {b8, 1, 2, four, 4, four, 4, 4, 4, {1}}), sub);

  // Refusals, in the §8.4 order; nothing written.
  const Call ok{b8, 1, 2, four, 4, four, 4, 4, 4, {1}};
  expect_refused(with_rope(run, {table, 2, {1}, 3, 0, true}), ok, ErrorCode::kInvalidArgument, "rot_dim");
  expect_refused(with_rope(run, {table, 2, {1}, 0, 0, true}), ok, ErrorCode::kInvalidArgument, "rot_dim");
  expect_refused(with_rope(run, {table, 2, {1}, 4, 1, true}), ok, ErrorCode::kInvalidArgument, "rope_offset");
  expect_refused(with_rope(run, {table, 2, {1}, 2, -1, true}), ok, ErrorCode::kInvalidArgument, "rope_offset");
  expect_refused(with_rope(run, {table, 0, {1}, 4, 0, true}), ok, ErrorCode::kInvalidArgument, "max_position");
  // The shape rules hold for a call of no rows too.
  expect_refused(with_rope(run, {table, 2, {}, 3, 0, true}), {b8, 1, 2, {}, 4, {}, 4, 4, 4, {}},
                 ErrorCode::kInvalidArgument, "rot_dim");
  expect_refused(with_rope(run, {table, 2, {}, 4, 0, true}), ok, ErrorCode::kShapeMismatch, "positions");
  expect_refused(with_rope(run, {{}, 2, {1}, 4, 0, true}), ok, ErrorCode::kShapeMismatch, "cos_sin_cache");
  expect_refused(with_rope(run, {table, 2, {2}, 4, 0, true}), ok, ErrorCode::kInvalidArgument, "positions[0] = 2");
  expect_refused(with_rope(run, {table, 2, {1, -1}, 4, 0, true}), {b8, 1, 2, Rows(8, 0), 4, Rows(8, 0), 4, 4, 4, {1, 0}},
                 ErrorCode::kInvalidArgument, "positions[1] = -1");
  // A bad position and a bad slot: every position comes before any slot, also when the
  // bad slot's row is the earlier one.
  expect_refused(with_rope(run, {table, 2, {7}, 4, 0, true}), {b8, 1, 2, four, 4, four, 4, 4, 4, {9}},
                 ErrorCode::kInvalidArgument, "positions[0] = 7");
  expect_refused(with_rope(run, {table, 2, {0, 7}, 4, 0, true}), {b8, 1, 2, Rows(8, 0), 4, Rows(8, 0), 4, 4, 4, {9, 0}},
                 ErrorCode::kInvalidArgument, "positions[1] = 7");
  expect_refused(with_rope(run, {table, 2, {1}, -2, 0, true}), ok, ErrorCode::kInvalidArgument, "rot_dim");
  // Positions past n are never read: junk there is fine.
  Bytes want(32, kFill);
  std::copy(kv_c_rec.begin(), kv_c_rec.end(), want.begin() + 16);
  std::copy(neox.begin(), neox.end(), want.begin() + 24);
  EXPECT_EQ(after(with_rope(run, {table, 2, {1, -5, INT64_MAX}, 4, 0, true}), ok), want);
}

TEST(ConcatAndCacheMla, ReferenceRopeKnownAnswers) {
  const kvcheck::Run ref_run = [](const ConcatMlaArgs& a) {
    ref::concat_and_cache_mla(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, a.slot_mapping,
                              {a.cache.base, static_cast<size_t>(a.cache.size_bytes)}, a.cache.layout.format,
                              a.cache.layout.num_blocks, a.cache.layout.block_size, 0, a.rope ? &*a.rope : nullptr);
  };
  rope_known_answers(ref_run, false);
  rope_known_answers(
      [](const ConcatMlaArgs& a) {
        const auto buffer = [](const CacheView& v) {
          return ref::PagedBuffer{{v.base, static_cast<size_t>(v.size_bytes)}, v.layout.format, v.layout.num_blocks,
                                  v.layout.block_size, v.layout.block_stride};
        };
        ref::concat_and_cache_mla_split(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, a.slot_mapping, buffer(a.cache),
                                        buffer(*a.pe_cache), a.rope ? &*a.rope : nullptr);
      },
      true);
}

TEST(ConcatAndCacheMla, ReferenceSplitCacheKnownAnswers) {
  split_known_answers([](const ConcatMlaArgs& a) {
    const auto buffer = [](const CacheView& v) {
      return ref::PagedBuffer{{v.base, static_cast<size_t>(v.size_bytes)}, v.layout.format, v.layout.num_blocks,
                              v.layout.block_size, v.layout.block_stride};
    };
    ref::concat_and_cache_mla_split(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, a.slot_mapping, buffer(a.cache),
                                    buffer(*a.pe_cache));
  });
}

TEST(ConcatAndCacheMla, ReferenceKnownAnswers) {
  known_answers([](const ConcatMlaArgs& a) {
    ref::concat_and_cache_mla(a.kv_c, a.k_pe, a.kv_lora_rank, a.rope_dim, a.slot_mapping,
                              {a.cache.base, static_cast<size_t>(a.cache.size_bytes)}, a.cache.layout.format,
                              a.cache.layout.num_blocks, a.cache.layout.block_size);
  });
}

class ConcatAndCacheMlaBackend : public testing::TestWithParam<std::shared_ptr<const Backend>> {};

TEST_P(ConcatAndCacheMlaBackend, KnownAnswers) {
  known_answers([&](const ConcatMlaArgs& a) { GetParam()->concat_and_cache_mla(a); });
}

TEST_P(ConcatAndCacheMlaBackend, SplitCacheKnownAnswers) {
  if (!(GetParam()->capabilities().ops & KVCHECK_OP_CONCAT_MLA_PE_CACHE))
    GTEST_SKIP() << GetParam()->name() << " declares no KVCHECK_OP_CONCAT_MLA_PE_CACHE";
  split_known_answers([&](const ConcatMlaArgs& a) { GetParam()->concat_and_cache_mla(a); });
}

TEST_P(ConcatAndCacheMlaBackend, RopeKnownAnswers) {
  const uint32_t ops = GetParam()->capabilities().ops;
  if (!(ops & KVCHECK_OP_CONCAT_MLA_ROPE)) GTEST_SKIP() << GetParam()->name() << " declares no KVCHECK_OP_CONCAT_MLA_ROPE";
  const kvcheck::Run run = [&](const ConcatMlaArgs& a) { GetParam()->concat_and_cache_mla(a); };
  rope_known_answers(run, false);
  if (ops & KVCHECK_OP_CONCAT_MLA_PE_CACHE) rope_known_answers(run, true);
}

INSTANTIATE_TEST_SUITE_P(Backends, ConcatAndCacheMlaBackend, testing::ValuesIn(available_backends()),
                         [](const auto& info) { return std::string(info.param->name()); });

}  // namespace
}  // namespace kvcheck
