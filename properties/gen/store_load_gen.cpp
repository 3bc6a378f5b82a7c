#include "properties/gen/store_load_gen.h"

#include "properties/gen/gen_caps.h"

#include <algorithm>
#include <numeric>
#include <ostream>
#include <random>

namespace kvcheck {
void showValue(const KVCacheFormat& f, std::ostream& os) { os << f.name; }
}  // namespace kvcheck

namespace kvcheck::props {
namespace {

// How a row's values are drawn; percentages shrink towards plain normal values.
struct ValueMix {
  int zero_group_pct = 0;
  int special_pct = 0;   // ±Inf, NaN, ±0
  int subnormal_pct = 0;
  int huge_pct = 0;
  uint32_t seed = 0;
};

bf16_bits draw_value(std::mt19937& rng, const ValueMix& mix, int base_exponent) {
  const int roll = static_cast<int>(rng() % 100);
  const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
  const uint16_t mant = static_cast<uint16_t>(rng() & 0x7F);
  if (roll < mix.special_pct) {
    switch (rng() % 6) {
      case 0: return static_cast<bf16_bits>(sign | 0x7F80);            // ±Inf
      case 1: return static_cast<bf16_bits>(sign | 0x7FC0);            // quiet NaN
      case 2: return static_cast<bf16_bits>(sign | 0x7F80 | (mant | 1));  // NaN with payload
      default: return sign;                                            // ±0
    }
  }
  if (roll < mix.special_pct + mix.subnormal_pct) return static_cast<bf16_bits>(sign | (mant | 1));
  if (roll < mix.special_pct + mix.subnormal_pct + mix.huge_pct)
    return static_cast<bf16_bits>(sign | ((230 + rng() % 25) << 7) | mant);  // up to 2^127
  const int e = std::clamp(base_exponent + static_cast<int>(rng() % 9) - 4, 1, 254);
  return static_cast<bf16_bits>(sign | (e << 7) | mant);
}

}  // namespace

void showValue(const CacheShape& s, std::ostream& os) {
  os << "{format " << s.format.name << ", block_size " << s.block_size << ", num_blocks "
     << s.num_blocks << ", fill_seed " << s.fill_seed << "}";
}

void showValue(const StoreScenario& s, std::ostream& os) {
  os << "store ";
  showValue(s.shape, os);
  os << " n=" << s.slot_mapping.size() << " row_stride=" << s.row_stride << " slot_mapping=[";
  for (size_t i = 0; i < s.slot_mapping.size(); ++i) os << (i ? ", " : "") << s.slot_mapping[i];
  os << "] kv[0][0..7]=[";
  for (size_t i = 0; i < std::min<size_t>(8, s.kv.size()); ++i)
    os << (i ? " " : "") << "0x" << std::hex << s.kv[i] << std::dec;
  os << "]";
  const int64_t rows = s.row_stride > 0 ? static_cast<int64_t>(s.kv.size()) / s.row_stride : 0;
  if (rows != static_cast<int64_t>(s.slot_mapping.size())) os << " kv_rows=" << rows;
  if (!s.slot_tail.empty()) {
    os << " slot_tail=[";
    for (size_t i = 0; i < s.slot_tail.size(); ++i) os << (i ? ", " : "") << s.slot_tail[i];
    os << "]";
  }
  if (s.far_row_stride > 0) os << " far_row_stride=" << s.far_row_stride;
  if (s.threads > 0) os << " threads=" << s.threads;
}

void showValue(const LoadScenario& s, std::ostream& os) {
  os << "load ";
  showValue(s.shape, os);
  os << " total_k=" << s.total_k << " out_rows=" << s.out_rows << " load_segments=[";
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    os << (i ? ", " : "") << "[" << s.load_segments[i] << ", " << s.load_segments[i + 1] << ", "
       << s.load_segments[i + 2] << ", " << s.load_segments[i + 3] << "]";
  os << "]";
  if (s.out_data_pad != 16 || s.out_scale_pad != 16 || s.out_offset != 0)
    os << " out_data_pad=" << s.out_data_pad << " out_scale_pad=" << s.out_scale_pad << " out_offset=" << s.out_offset;
  if (s.threads > 0) os << " threads=" << s.threads;
}

bool is_named_format(const KVCacheFormat& f) {
  for (const auto& g : supported_formats())
    if (g == f) return true;
  return f.is_bf16() && f.name == "BF16(" + std::to_string(f.elements) + ")";
}

rc::Gen<KVCacheFormat> gen_custom_format() {
  return rc::gen::exec([] {
    KVCacheFormat f;
    f.quantized_dtype = *rc::gen::element(QuantizedDtype::kE4M3, QuantizedDtype::kE2M1);
    f.sf_format = *rc::gen::element(SfFormat::kUE8M0, SfFormat::kE4M3, SfFormat::kFP32);
    // Mostly group sizes the fixed kernels (16, 32, 128) lack: the run-time group path.
    f.elements_per_sf = *rc::gen::weightedOneOf<int32_t>({
        {5, rc::gen::element<int32_t>(8, 24, 48, 64, 96, 256)},
        {1, rc::gen::element<int32_t>(2, 4, 6, 10, 512)},
        {1, rc::gen::element<int32_t>(16, 32, 128)},
    });
    f.do_cast = *rc::gen::arbitrary<bool>();
    f.token_interleaved = f.do_cast || *rc::gen::arbitrary<bool>();
    // An index format with ue8m0 scales loads them as int32 words: groups in fours.
    const bool words = !f.do_cast && f.sf_format == SfFormat::kUE8M0;
    const int32_t max_groups = std::max(1, 1024 / f.elements_per_sf);
    int32_t groups = words ? 4 * *rc::gen::inRange(1, std::max(2, max_groups / 4 + 1))
                           : *rc::gen::weightedOneOf<int32_t>({{1, rc::gen::just<int32_t>(1)},
                                                               {4, rc::gen::inRange(2, std::max(3, max_groups + 1))}});
    if (f.quantized_dtype == QuantizedDtype::kE2M1 && (groups * f.elements_per_sf) % 2 != 0) ++groups;
    f.elements = groups * f.elements_per_sf;
    f.name = "custom(" + to_string(f.quantized_dtype) + " " + std::to_string(f.elements) + " x" +
             std::to_string(f.elements_per_sf) + " " + to_string(f.sf_format) + (f.do_cast ? " cast" : "") +
             (f.token_interleaved ? " interleaved" : "") + ")";
    f.validate();
    return f;
  });
}

rc::Gen<KVCacheFormat> gen_format() {
  // Only formats the backend under test supports (generator_caps(), plugin ABI).
  const BackendCapabilities& caps = generator_caps();
  std::vector<KVCacheFormat> named;
  for (const auto& f : supported_formats())
    if (f.is_quantized() && caps.supports_format(f)) named.push_back(f);
  const bool bf16 = caps.supports_format(KVCacheFormat::BF16(512));
  // A valid record outside the table: drawn when the backend takes any format (OTHER).
  KVCacheFormat probe = KVCacheFormat::FP8_FP32SF_INDEX();  // e4m3, one fp32 scale per 64: valid, unnamed
  probe.name = "custom";
  probe.elements_per_sf = 64;
  probe.validate();
  const bool custom = caps.supports_format(probe);
  if (named.empty() && !bf16 && !custom) named = supported_formats();  // nothing runs; draw anyway
  const auto bf16_gen = rc::gen::map(rc::gen::inRange(1, 129), [](int k) {
    return KVCacheFormat::BF16(8 * std::min(k, 512));
  });
  // Weights named 6 : BF16 1 : custom 2 (size-independent: every case size reaches each).
  std::vector<rc::Gen<KVCacheFormat>> gens;
  std::vector<int> kinds;
  auto add = [&](int weight, rc::Gen<KVCacheFormat> g) {
    for (int i = 0; i < weight; ++i) kinds.push_back(static_cast<int>(gens.size()));
    gens.push_back(std::move(g));
  };
  if (!named.empty()) add(6, rc::gen::elementOf(named));
  if (bf16) add(1, bf16_gen);
  if (custom) add(2, gen_custom_format());
  if (gens.size() == 1) return gens.front();
  return rc::gen::mapcat(rc::gen::elementOf(kinds), [gens](int k) { return gens[static_cast<size_t>(k)]; });
}

rc::Gen<int32_t> gen_block_size() {
  return rc::gen::map(rc::gen::weightedOneOf<int32_t>({
                          {3, rc::gen::elementOf(std::vector<int32_t>{1, 2, 16, 64, 133, 256})},
                          {1, rc::gen::elementOf(std::vector<int32_t>{53, 61, 69})},
                          {2, rc::gen::inRange<int32_t>(1, 301)},
                      }),
                      fit_block_size);
}

rc::Gen<CacheShape> gen_cache_shape() {
  return rc::gen::apply(
      [](KVCacheFormat f, int32_t bs, int32_t nb, uint32_t seed) {
        // Keep one case under ~2 MB of cache so hundreds of cases run per second.
        const int64_t per_block = int64_t{bs} * f.bytes_per_token();
        nb = static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(nb, (2 << 20) / per_block)));
        return CacheShape{std::move(f), bs, nb, seed};
      },
      gen_format(), gen_block_size(), rc::gen::inRange(1, 7), rc::gen::arbitrary<uint32_t>());
}

rc::Gen<int32_t> gen_threads() {
  // Size-independent: small cases split too (a 2-row case on 2 threads is the edge).
  return rc::gen::weightedElement<int32_t>({{2, 0}, {1, 1}, {3, 2}, {2, 3}, {2, 4}});
}

rc::Gen<int> gen_row_count(int max_rows) {
  // inRange scaled by the case size, but never below size 30: small cases are not all
  // one row (one "some padding" row is padding a third of the time: a wasted case),
  // and a failure still shrinks towards one row.
  return rc::gen::withSize([max_rows](int size) {
    return rc::gen::resize(std::max(size, 30), rc::gen::inRange(1, std::max(max_rows, 1) + 1));
  });
}

rc::Gen<int64_t> gen_far_row_stride() {
  if (!generator_caps().host_memory) return rc::gen::just<int64_t>(0);  // device adapters copy whole buffers
  return rc::gen::weightedOneOf<int64_t>({
      {10, rc::gen::just<int64_t>(0)},
      {1, rc::gen::element<int64_t>((int64_t{1} << 30) + 1, (int64_t{1} << 30) + 8, (int64_t{3} << 29) + 3,
                                    (int64_t{1} << 31) - 5, (int64_t{1} << 31) + 7)},
  });
}

rc::Gen<StoreScenario> gen_store_scenario(const CacheShape& shape) {
  return rc::gen::exec([shape] {
    StoreScenario s;
    s.shape = shape;
    const int64_t num_slots = int64_t{shape.num_blocks} * shape.block_size;
    const int64_t e = shape.format.elements;
    s.far_row_stride = *gen_far_row_stride();
    int max_rows = static_cast<int>(std::min<int64_t>(num_slots + 4, e >= 512 ? 40 : 96));
    if (s.far_row_stride > 0) max_rows = std::min(max_rows, 6);  // a few rows, far apart
    // Empty batches are rare (they write nothing); small ones are drawn at every size.
    int n = *rc::gen::weightedOneOf<int>({{1, rc::gen::just(0)},
                                          {29, gen_row_count(max_rows)},
                                          {10, rc::gen::resize(100, rc::gen::inRange(1, std::min(max_rows, 8) + 1))}});
    n = std::min(n, max_rows);
    if (s.far_row_stride > 0) n = std::max(n, std::min(max_rows, 3));  // rows 2+ lie past 2^31 elements
    // none, some, all: all-padding batches write nothing, so they are 1 in 20.
    const int padding_mode = *rc::gen::weightedElement<int>({{7, 0}, {12, 1}, {1, 2}});
    const uint32_t slot_seed = *rc::gen::arbitrary<uint32_t>();
    const bool want_slot_zero = *rc::gen::elementOf(std::vector<bool>{false, true});
    std::mt19937 rng(slot_seed);
    // Distinct valid slots by partial Fisher-Yates over [0, num_slots).
    std::vector<int32_t> pool(static_cast<size_t>(num_slots));
    std::iota(pool.begin(), pool.end(), 0);
    size_t next = 0;
    s.slot_mapping.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const bool pad = padding_mode == 2 || (padding_mode == 1 && rng() % 3 == 0) ||
                       next >= pool.size();
      if (pad) {
        s.slot_mapping[static_cast<size_t>(i)] = -1;
        continue;
      }
      std::swap(pool[next], pool[next + rng() % (pool.size() - next)]);
      s.slot_mapping[static_cast<size_t>(i)] = pool[next++];
    }
    // "Some" padding of two or more rows keeps at least one valid row: its last row.
    if (padding_mode == 1 && n > 1 && next == 0) {
      std::swap(pool[0], pool[rng() % pool.size()]);
      s.slot_mapping[static_cast<size_t>(n - 1)] = pool[next++];
    }
    // The classic bug: a -1 clamped to 0. Put slot 0 right after a padding row. Row
    // `at` does not depend on n, so every row's content is fixed by the rows before
    // it and shrinking n keeps a failing prefix intact.
    const size_t at = slot_seed % static_cast<size_t>(std::clamp(max_rows - 1, 1, 8));
    if (want_slot_zero && padding_mode != 2 && at + 1 < static_cast<size_t>(n)) {
      for (auto& slot : s.slot_mapping)
        if (slot == 0) slot = -1;
      s.slot_mapping[at] = -1;
      s.slot_mapping[at + 1] = 0;
    }
    // CUDA-graph padding: kv holds more rows than slot_mapping, and slot_mapping's
    // buffer goes on with real, unused slots; a kernel counting kv rows stores them.
    const int extra = *rc::gen::weightedElement<int>({{3, 0}, {1, 1}, {1, 3}});
    std::vector<bool> used(static_cast<size_t>(num_slots), false);
    for (int32_t slot : s.slot_mapping)
      if (slot >= 0) used[static_cast<size_t>(slot)] = true;
    for (int i = 0, slot = static_cast<int>(rng() % std::max<int64_t>(num_slots, 1)); i < extra; ++i) {
      int tries = 0;
      while (tries < num_slots && used[static_cast<size_t>(slot)]) slot = (slot + 1) % num_slots, ++tries;
      s.slot_tail.push_back(tries < num_slots ? slot : -1);
      if (tries < num_slots) used[static_cast<size_t>(slot)] = true;
    }
    s.row_stride = e + *rc::gen::elementOf(std::vector<int64_t>{0, 0, 8, 3, 17});
    ValueMix mix;
    mix.zero_group_pct = *rc::gen::inRange(0, 40);
    mix.special_pct = *rc::gen::inRange(0, 20);
    mix.subnormal_pct = *rc::gen::inRange(0, 15);
    mix.huge_pct = *rc::gen::inRange(0, 15);
    mix.seed = *rc::gen::arbitrary<uint32_t>();
    if (s.far_row_stride > 0) mix.zero_group_pct = 0;  // far rows must differ from the zeros around them
    std::mt19937 vrng(mix.seed);
    const int rows = n + extra;
    s.kv.assign(static_cast<size_t>(rows * s.row_stride), 0x7FC0);  // NaN in the row padding
    const int64_t group = shape.format.is_quantized() ? shape.format.elements_per_sf : 8;
    for (int r = 0; r < rows; ++r) {
      const int base_exponent = 100 + static_cast<int>(vrng() % 50);
      for (int64_t g = 0; g < e; g += group) {
        const bool zero = static_cast<int>(vrng() % 100) < mix.zero_group_pct;
        for (int64_t i = g; i < std::min(e, g + group); ++i)
          s.kv[static_cast<size_t>(r * s.row_stride + i)] =
              zero ? bf16_bits{0} : draw_value(vrng, mix, base_exponent);
      }
    }
    s.threads = *gen_threads();
    return s;
  });
}

rc::Gen<StoreScenario> gen_store_scenario() {
  return rc::gen::mapcat(gen_cache_shape(),
                         [](const CacheShape& shape) { return gen_store_scenario(shape); });
}

rc::Gen<LoadScenario> gen_load_scenario() {
  return rc::gen::exec([] {
    LoadScenario s;
    s.shape = *gen_cache_shape();
    const int32_t bs = s.shape.block_size;
    // Plans without segments load nothing: 1 in 25. Small plans at every size.
    const int num_segments = *rc::gen::weightedOneOf<int>({{1, rc::gen::just(0)},
                                                           {14, rc::gen::inRange(1, 13)},
                                                           {10, rc::gen::inRange(1, 5)}});
    const uint32_t seed = *rc::gen::arbitrary<uint32_t>();
    const int zero_fill_pct = *rc::gen::inRange(0, 40);
    const int gap_pct = *rc::gen::inRange(0, 50);
    std::mt19937 rng(seed);
    int32_t dst = 0;
    std::vector<LoadSegment> segs;
    for (int i = 0; i < num_segments; ++i) {
      if (static_cast<int>(rng() % 100) < gap_pct) dst += static_cast<int32_t>(rng() % 4);
      const bool zero = static_cast<int>(rng() % 100) < zero_fill_pct;
      int32_t a = static_cast<int32_t>(rng() % (bs + 1)), b = static_cast<int32_t>(rng() % (bs + 1));
      if (a > b) std::swap(a, b);
      if (rng() % 4 == 0) { a = 0; b = bs; }  // whole blocks are the common case
      if (i == 0 && a == b) {  // the first segment is never empty
        if (b < bs) ++b; else --a;
      }
      const int32_t block = zero ? -1 : static_cast<int32_t>(rng() % s.shape.num_blocks);
      segs.push_back({block, a, b, dst});
      dst += b - a;
    }
    if (static_cast<int>(rng() % 100) < gap_pct) dst += 1;
    s.total_k = dst;
    std::shuffle(segs.begin(), segs.end(), rng);
    for (const auto& g : segs)
      s.load_segments.insert(s.load_segments.end(), {g.src_block_id, g.src_begin, g.src_end, g.dst_offset});
    s.out_rows = s.total_k + *rc::gen::inRange(0, 3);
    s.out_seed = *rc::gen::arbitrary<uint32_t>();
    // Output rows: padded (the old 16), tight, odd strides, and bases off alignment.
    s.out_data_pad = *rc::gen::weightedElement<int64_t>({{3, 16}, {2, 0}, {1, 1}, {1, 3}, {1, 7}, {1, 33}});
    s.out_scale_pad = *rc::gen::weightedElement<int64_t>({{3, 16}, {2, 0}, {1, 1}, {1, 5}});
    s.out_offset = *rc::gen::weightedElement<int32_t>({{3, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 8}, {1, 13}});
    s.threads = *gen_threads();
    return s;
  });
}

}  // namespace kvcheck::props
