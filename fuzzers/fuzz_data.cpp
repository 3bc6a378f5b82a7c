#include "fuzzers/fuzz_data.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <sstream>

#include "impl/layout.h"

namespace kvcheck::fuzz {
namespace {

// Awkward index values of SPEC §6 (num_slots / num_blocks added by the callers).
constexpr int32_t kAwkward[] = {-2, INT32_MIN, INT32_MAX, -1, 0};

// BF16 bit patterns of SPEC §4.5: ±0, NaNs, ±Inf, subnormals, huge, and values at
// e4m3/e2m1 saturation and rounding boundaries (448, 480, 6, 5).
constexpr bf16_bits kSpecialBf16[] = {0x0000, 0x8000, 0x7FC0, 0xFFC0, 0x7F81, 0x7F80, 0xFF80,
                                      0x0001, 0x8001, 0x007F, 0x7F7F, 0xFF7F, 0x3F80, 0x43E0,
                                      0x43F0, 0xC3E0, 0x40C0, 0x40A0, 0x3A83, 0x0080};

int64_t cap_div(int64_t budget, int64_t per) { return per <= 0 ? budget : budget / per; }

bf16_bits gen_value(SplitMix64& rng, int mode) {
  const uint64_t r = rng.next();
  switch (mode) {
    case 0: return static_cast<bf16_bits>(r);  // random bits: NaNs, Infs, subnormals too
    case 1: {  // normal values around 1 (exponent 117..137)
      const uint16_t sign = (r & 1) ? 0x8000 : 0;
      const uint16_t exp = static_cast<uint16_t>(117 + (r >> 1) % 21);
      return static_cast<bf16_bits>(sign | (exp << 7) | ((r >> 8) & 0x7F));
    }
    case 2:  // specials mixed with normal values
      if ((r & 3) != 0) return kSpecialBf16[(r >> 2) % std::size(kSpecialBf16)];
      return gen_value(rng, 1);
    default:  // mostly zero, sometimes one value
      return (r & 7) == 0 ? static_cast<bf16_bits>(r >> 16) : bf16_bits{0};
  }
}

const char* kValueModes[] = {"random-bits", "normal", "specials", "mostly-zero"};

int32_t pick_block_size(FuzzedDataProvider& fdp) {
  const int choice = fdp.ConsumeIntegralInRange<int>(0, 9);
  constexpr int32_t kSizes[] = {1, 2, 16, 64, 133, 256, 53, 61, 69};
  if (choice < 9) return kSizes[choice];
  return fdp.ConsumeIntegralInRange<int32_t>(1, 300);
}

// Distinct valid slots chosen by the generator (partial Fisher-Yates over [0, n)).
std::vector<int32_t> distinct_slots(SplitMix64& rng, int64_t num_slots, size_t count) {
  std::vector<int32_t> all(static_cast<size_t>(num_slots));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
  count = std::min(count, all.size());
  for (size_t i = 0; i < count; ++i)
    std::swap(all[i], all[i + rng.next() % (all.size() - i)]);
  all.resize(count);
  return all;
}

void make_slot_mapping(FuzzedDataProvider& fdp, SplitMix64& rng, const CacheShape& shape,
                       size_t n, bool valid_only, StoreScenario& s) {
  const int mode = fdp.ConsumeIntegralInRange<int>(0, valid_only ? 4 : 5);
  const int pad_pct = fdp.ConsumeIntegralInRange<int>(0, 4) * 25;  // -1 share, modes 0/4
  auto padded = [&] { return static_cast<int>(rng.next() % 100) < pad_pct; };
  std::vector<int32_t>& m = s.slot_mapping;
  m.assign(n, -1);
  switch (mode) {
    case 0: {  // distinct random slots with -1 sprinkled
      s.slot_mode = "distinct-random";
      auto slots = distinct_slots(rng, shape.num_slots(), n);
      for (size_t i = 0; i < slots.size(); ++i) m[i] = padded() ? -1 : slots[i];
      break;
    }
    case 1:
      s.slot_mode = "all-padding";
      break;
    case 2: {  // a prefill run of consecutive slots, -1 past the end of the cache
      s.slot_mode = "consecutive-run";
      const int64_t start = fdp.ConsumeIntegralInRange<int64_t>(0, shape.num_slots() - 1);
      for (size_t i = 0; i < n && start + static_cast<int64_t>(i) < shape.num_slots(); ++i)
        m[i] = static_cast<int32_t>(start + static_cast<int64_t>(i));
      break;
    }
    case 3: {  // padding rows right next to a valid slot 0 (the clamp-to-0 bug)
      s.slot_mode = "padding-next-to-slot-0";
      auto slots = distinct_slots(rng, shape.num_slots(), n + 1);
      slots.erase(std::remove(slots.begin(), slots.end(), 0), slots.end());
      size_t next = 0;
      for (size_t i = 0; i < n; ++i)
        m[i] = (i % 2 == 0 || next >= slots.size()) ? -1 : slots[next++];
      if (n > 0) m[n >= 2 ? 1 : 0] = 0;
      break;
    }
    case 4: {  // vLLM paged prefill: slot of token t = T[t / bs] * bs + t % bs (SPEC §5.4)
      s.slot_mode = "paged-block-table";
      auto table = distinct_slots(rng, shape.num_blocks, static_cast<size_t>(shape.num_blocks));
      const int64_t capacity = shape.num_slots();
      const int64_t begin = fdp.ConsumeIntegralInRange<int64_t>(0, capacity - 1);
      for (size_t i = 0; i < n; ++i) {
        const int64_t t = begin + static_cast<int64_t>(i);
        if (t >= capacity) break;
        m[i] = static_cast<int32_t>(table[t / shape.block_size] * int64_t{shape.block_size} +
                                    t % shape.block_size);
        if (padded()) m[i] = -1;
      }
      break;
    }
    default: {  // raw: awkward and random values, mostly invalid
      s.slot_mode = "raw";
      for (size_t i = 0; i < n; ++i) {
        const int k = fdp.ConsumeIntegralInRange<int>(0, 7);
        if (k < 5) m[i] = kAwkward[k];
        else if (k == 5) m[i] = static_cast<int32_t>(shape.num_slots());
        else m[i] = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(shape.num_slots()));
      }
    }
  }
  if (valid_only || n == 0 || fdp.ConsumeIntegralInRange<int>(0, 7) != 0) return;
  // Inject one bad entry: an awkward value or a duplicate of another row's slot.
  static const char* kKinds[] = {"-2", "INT32_MIN", "INT32_MAX", "num_slots", "last-slot",
                                  "duplicate"};
  const size_t at = fdp.ConsumeIntegralInRange<size_t>(0, n - 1);
  const int k = fdp.ConsumeIntegralInRange<int>(0, 5);
  if (k < 3) m[at] = kAwkward[k];
  else if (k == 3) m[at] = static_cast<int32_t>(shape.num_slots());
  else if (k == 4) m[at] = static_cast<int32_t>(shape.num_slots() - 1);
  else m[at] = m[fdp.ConsumeIntegralInRange<size_t>(0, n - 1)];
  s.slot_mode += "+injected-" + std::string(kKinds[k]) + "[" + std::to_string(at) + "]";
}

StoreScenario decode_store_impl(FuzzedDataProvider& fdp, bool valid_only) {
  StoreScenario s;
  s.shape = decode_cache_shape(fdp);
  const int64_t e = s.shape.format.elements;
  constexpr int32_t kPads[] = {0, 0, 8, 1, 37, -1};  // -1: row_stride < E, an error
  s.row_stride = e + fdp.PickValueInArray(kPads);
  if (valid_only) s.row_stride = std::max<int64_t>(s.row_stride, e);
  const int64_t max_rows = std::min<int64_t>(kMaxRows, cap_div(kMaxKvElements, s.row_stride));
  const size_t n = fdp.ConsumeIntegralInRange<size_t>(0, static_cast<size_t>(max_rows));
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  make_slot_mapping(fdp, rng, s.shape, n, valid_only, s);
  s.kv_rows = static_cast<int64_t>(n);
  if (!valid_only && n > 0 && fdp.ConsumeIntegralInRange<int>(0, 15) == 0) s.kv_rows -= 1;
  const int value_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
  s.value_mode = kValueModes[value_mode];
  s.cache_seed = fdp.ConsumeIntegral<uint64_t>();
  s.kv.resize(static_cast<size_t>(s.kv_rows * s.row_stride));
  for (auto& v : s.kv) v = gen_value(rng, value_mode);
  // The rest of the input sets the first elements directly, so libFuzzer can steer values.
  for (size_t i = 0; i < s.kv.size() && fdp.remaining_bytes() >= 2; ++i)
    s.kv[i] = fdp.ConsumeIntegral<uint16_t>();
  return s;
}

void make_segments(FuzzedDataProvider& fdp, SplitMix64& rng, LoadScenario& s) {
  const int32_t bs = s.shape.block_size, nb = s.shape.num_blocks;
  const int mode = fdp.ConsumeIntegralInRange<int>(0, 4);
  auto& seg = s.segments;
  auto push = [&](int32_t b, int32_t begin, int32_t end, int32_t dst) {
    seg.insert(seg.end(), {b, begin, end, dst});
  };
  if (mode <= 2) {
    static const char* kNames[] = {"contiguous", "zero-fill", "shuffled-gaps"};
    s.segment_mode = kNames[mode];
    int32_t dst = 0;
    while (dst < s.total_k && static_cast<int32_t>(seg.size() / 4) < kMaxSegments) {
      if (mode == 2) dst += static_cast<int32_t>(rng.next() % 3);  // gaps keep out's values
      if (dst >= s.total_k) break;
      const int32_t room = s.total_k - dst;
      if (mode >= 1 && rng.next() % 3 == 0) {
        const int32_t len = 1 + static_cast<int32_t>(rng.next() % std::min(bs, room));
        push(-1, 0, len, dst);
        dst += len;
        continue;
      }
      const int32_t b = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(nb));
      const int32_t begin = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(bs + 1));
      const int32_t max_len = std::min(bs - begin, room);
      const int32_t len = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(max_len + 1));
      push(b, begin, begin + len, dst);
      dst += len;
    }
    if (mode == 2)  // shuffled order (destinations stay disjoint)
      for (size_t i = seg.size() / 4; i > 1; --i) {
        const size_t j = rng.next() % i;
        std::swap_ranges(seg.begin() + static_cast<ptrdiff_t>(4 * (i - 1)),
                         seg.begin() + static_cast<ptrdiff_t>(4 * i),
                         seg.begin() + static_cast<ptrdiff_t>(4 * j));
      }
  } else if (mode == 3) {  // SWA shape: zero-fill pad, then a ring block wrapped at x
    s.segment_mode = "wrapped-ring";
    const int32_t pad = std::min<int32_t>(s.total_k, static_cast<int32_t>(rng.next() % (bs + 1)));
    if (pad > 0) push(-1, 0, pad, 0);
    const int32_t b = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(nb));
    const int32_t x = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(bs));
    int32_t dst = pad;
    const int32_t first = std::min(bs - x, s.total_k - dst);
    if (first > 0) push(b, x, x + first, dst), dst += first;
    const int32_t second = std::min(x, s.total_k - dst);
    if (second > 0) push(b, 0, second, dst), dst += second;
  } else {  // raw: arbitrary values, mostly invalid
    s.segment_mode = "raw";
    const int count = 4 * fdp.ConsumeIntegralInRange<int>(0, 8) + (fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int>(0, 3));  // stray int32: not S*4
    for (int i = 0; i < count; ++i)
      seg.push_back(fdp.ConsumeBool() ? fdp.ConsumeIntegral<int32_t>()
                                      : fdp.ConsumeIntegralInRange<int32_t>(-2, bs + 1));
  }
  if (seg.size() < 4 || fdp.ConsumeIntegralInRange<int>(0, 7) != 0) return;
  // Inject one bad field: an awkward value, or another segment's destination (overlap).
  const size_t i = fdp.ConsumeIntegralInRange<size_t>(0, seg.size() / 4 - 1);
  const int field = fdp.ConsumeIntegralInRange<int>(0, 3);
  const int32_t values[] = {-2, INT32_MIN, INT32_MAX, nb, bs + 1, s.total_k, -1,
                            seg[4 * fdp.ConsumeIntegralInRange<size_t>(0, seg.size() / 4 - 1) + 3]};
  const size_t v = fdp.ConsumeIntegralInRange<size_t>(0, std::size(values) - 1);
  seg[4 * i + static_cast<size_t>(field)] = values[v];
  static const char* kKinds[] = {"-2", "INT32_MIN", "INT32_MAX", "num_blocks", "block_size+1",
                                  "total_k", "-1", "other-dst"};
  s.segment_mode += "+injected-" + std::string(kKinds[v]) + "[" + std::to_string(i) + "][" +
                    std::to_string(field) + "]";
}

void decode_output(FuzzedDataProvider& fdp, LoadScenario& s, bool valid_only) {
  s.out_rows = s.total_k + fdp.ConsumeIntegralInRange<int64_t>(0, 3);
  if (!valid_only && s.total_k > 0 && fdp.ConsumeIntegralInRange<int>(0, 15) == 0)
    s.out_rows = s.total_k - 1;
  constexpr int64_t kDataPads[] = {0, 4, 16, 64, -2};  // -2: stride too small, an error
  constexpr int64_t kScalePads[] = {0, 4, 16, -4};
  s.data_row_pad = fdp.PickValueInArray(kDataPads);
  s.scale_row_pad = fdp.PickValueInArray(kScalePads);
  if (valid_only) s.data_row_pad = std::max<int64_t>(s.data_row_pad, 0);
  if (valid_only) s.scale_row_pad = std::max<int64_t>(s.scale_row_pad, 0);
  s.out_seed = fdp.ConsumeIntegral<uint64_t>();
}

// Builder block sizes from here on reach total_k past INT32_MAX in a few pieces; the
// check compares segments arithmetically instead of row by row.
constexpr int32_t kHugeBlock = 1 << 20;

int32_t max_total_k(const KVCacheFormat& f) {
  return static_cast<int32_t>(std::min<int64_t>(2 * kMaxRows, cap_div(256 << 10, f.load_row_bytes() + 64)));
}

std::string hex16(uint32_t v, int width) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", width, v);
  return buf;
}

}  // namespace

CacheShape decode_cache_shape(FuzzedDataProvider& fdp) {
  CacheShape s;
  const int f = fdp.ConsumeIntegralInRange<int>(0, 7);
  if (f < 6) {
    s.format = supported_formats()[static_cast<size_t>(f)];
  } else if (f == 7) {
    s.format = decode_custom_format(fdp);
  } else {
    constexpr int32_t kElements[] = {8, 16, 64, 128, 136, 1024, 4096};
    s.format = KVCacheFormat::BF16(fdp.PickValueInArray(kElements));
  }
  s.block_size = pick_block_size(fdp);
  while (s.block_size > 1 && block_stride_for(s.format, s.block_size) > kMaxCacheBytes)
    s.block_size /= 2;
  const int64_t stride = block_stride_for(s.format, s.block_size);
  const int32_t max_blocks =
      static_cast<int32_t>(std::clamp<int64_t>(kMaxCacheBytes / stride, 1, kMaxBlocks));
  s.num_blocks = fdp.ConsumeIntegralInRange<int32_t>(1, max_blocks);
  return s;
}

KVCacheFormat decode_custom_format(FuzzedDataProvider& fdp) {
  // Groups 16/32/128 have compiled kernels for every dtype/scale pairing; the others
  // (odd ones end an e2m1 group mid-byte) take the run-time group-size path.
  constexpr int32_t kGroups[] = {1, 3, 5, 7, 16, 32, 64, 128};
  KVCacheFormat f;
  f.quantized_dtype = fdp.ConsumeBool() ? QuantizedDtype::kE4M3 : QuantizedDtype::kE2M1;
  f.sf_format = static_cast<SfFormat>(fdp.ConsumeIntegralInRange<int>(1, 3));
  f.elements_per_sf = fdp.PickValueInArray(kGroups);
  int32_t groups = fdp.ConsumeIntegralInRange<int32_t>(1, 8);
  f.do_cast = fdp.ConsumeBool();
  f.token_interleaved = f.do_cast || fdp.ConsumeBool();
  // SPEC §2: e2m1 needs an even element count; index (no do_cast) ue8m0 scales load as
  // int32 (sf_bytes % 4 == 0). Round the group count up to satisfy both.
  const bool odd_e2m1 = f.quantized_dtype == QuantizedDtype::kE2M1 && f.elements_per_sf % 2 != 0;
  if (odd_e2m1) groups += groups % 2;
  if (!f.do_cast && f.sf_format == SfFormat::kUE8M0) groups = (groups + 3) / 4 * 4;
  f.elements = groups * f.elements_per_sf;
  f.name = to_string(f.quantized_dtype) + "x" + std::to_string(f.elements) + "_G" +
           std::to_string(f.elements_per_sf) + "_" + to_string(f.sf_format) +
           (f.do_cast ? "_CAST" : f.token_interleaved ? "_INDEX_INTERLEAVED" : "_INDEX");
  f.validate();  // never throws: the rules above are the whole SPEC §2 list
  return f;
}

StoreScenario decode_store(FuzzedDataProvider& fdp) { return decode_store_impl(fdp, false); }

LoadScenario decode_load(FuzzedDataProvider& fdp) {
  LoadScenario s;
  s.shape = decode_cache_shape(fdp);
  s.total_k = fdp.ConsumeIntegralInRange<int32_t>(0, max_total_k(s.shape.format));
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  s.cache_seed = rng.next();
  make_segments(fdp, rng, s);
  decode_output(fdp, s, false);
  // A negative total_k (kInvalidArgument); the output buffers keep their rows.
  if (fdp.ConsumeIntegralInRange<int>(0, 31) == 0) s.total_k = -1 - s.total_k;
  return s;
}

RoundTripScenario decode_round_trip(FuzzedDataProvider& fdp) {
  RoundTripScenario r;
  r.store = decode_store_impl(fdp, true);
  LoadScenario& l = r.load;
  l.shape = r.store.shape;
  const int32_t bs = l.shape.block_size;
  SplitMix64 rng{r.store.cache_seed ^ 0x5EEDull};
  // Every block once, in shuffled order, each as whole-block segment (or a zero-fill
  // piece in its place), until the output cap is reached.
  auto order = distinct_slots(rng, l.shape.num_blocks, static_cast<size_t>(l.shape.num_blocks));
  const bool zero_fill = fdp.ConsumeBool();
  l.segment_mode = zero_fill ? "whole-blocks+zero-fill" : "whole-blocks";
  const int32_t cap = max_total_k(l.shape.format);
  int32_t dst = 0;
  for (int32_t b : order) {
    if (dst + bs > cap || static_cast<int32_t>(l.segments.size() / 4) >= kMaxSegments) break;
    if (zero_fill && rng.next() % 4 == 0) {
      const int32_t len = 1 + static_cast<int32_t>(rng.next() % static_cast<uint64_t>(bs));
      l.segments.insert(l.segments.end(), {-1, 0, len, dst});
      dst += len;
      if (dst + bs > cap) break;
    }
    l.segments.insert(l.segments.end(), {b, 0, bs, dst});
    dst += bs;
  }
  l.total_k = dst;
  decode_output(fdp, l, true);
  return r;
}

FormatScenario decode_format(FuzzedDataProvider& fdp) {
  FormatScenario s;
  const int kind = fdp.ConsumeIntegralInRange<int>(0, 2);
  const int base = fdp.ConsumeIntegralInRange<int>(0, 5);
  s.format = supported_formats()[static_cast<size_t>(base)];
  constexpr int32_t kElements[] = {0, -8, 8, 16, 96, 128, 130, 512, 513, 4096, 4104};
  constexpr int32_t kGroups[] = {0, -1, 1, 3, 16, 32, 64, 128, 512};
  if (kind == 2) {  // every field arbitrary
    s.format.name = "fuzzed";
    s.format.quantized_dtype = static_cast<QuantizedDtype>(fdp.ConsumeIntegralInRange<int>(0, 2));
    s.format.sf_format = static_cast<SfFormat>(fdp.ConsumeIntegralInRange<int>(0, 3));
    s.format.elements = fdp.PickValueInArray(kElements);
    s.format.elements_per_sf = fdp.PickValueInArray(kGroups);
    s.format.do_cast = fdp.ConsumeBool();
    s.format.token_interleaved = fdp.ConsumeBool();
    s.format.bf16_tail_elements = fdp.ConsumeIntegralInRange<int>(0, 3) == 0 ? 64 : 0;
  } else if (kind == 1) {  // a supported format with one field changed
    s.format.name += "~mutated";
    switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: s.format.elements = fdp.PickValueInArray(kElements); break;
      case 1: s.format.elements_per_sf = fdp.PickValueInArray(kGroups); break;
      case 2: s.format.sf_format = static_cast<SfFormat>(fdp.ConsumeIntegralInRange<int>(0, 3)); break;
      case 3: s.format.do_cast = !s.format.do_cast; break;
      case 4: s.format.token_interleaved = !s.format.token_interleaved; break;
      default: s.format.bf16_tail_elements = 64; break;
    }
  } else if (base == 5) {  // BF16(E) with E random
    s.format = KVCacheFormat::BF16(8 * fdp.ConsumeIntegralInRange<int32_t>(1, 512));
  }
  s.block_size = pick_block_size(fdp);
  s.block = fdp.ConsumeIntegralInRange<int64_t>(0, 1 << 20);
  s.token = fdp.ConsumeIntegralInRange<int64_t>(0, s.block_size - 1);
  s.dtype = fdp.ConsumeBool() ? CacheDtype::kBF16 : CacheDtype::kUInt8;
  const int rank = fdp.ConsumeIntegralInRange<int>(0, 4);
  constexpr int64_t kDims[] = {1, 528, 288, 68, 132, 512, 4096, 4104, 0, -1, 130, 1024};
  for (int i = 0; i < rank; ++i)
    s.shape.push_back(fdp.ConsumeBool() ? fdp.PickValueInArray(kDims)
                                        : fdp.ConsumeIntegralInRange<int64_t>(-4, 9000));
  s.sf_choice = fdp.ConsumeIntegralInRange<int>(0, 3);
  return s;
}

NumericsScenario decode_numerics(FuzzedDataProvider& fdp) {
  NumericsScenario s;
  s.format = supported_formats()[fdp.ConsumeIntegralInRange<size_t>(0, 4)];
  const int value_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  s.group.resize(static_cast<size_t>(s.format.elements_per_sf));
  for (auto& v : s.group) v = gen_value(rng, value_mode);
  // Float bit patterns straight from the input (4 bytes each), so the fuzzer can aim
  // at rounding boundaries; group elements overwritten from what is left.
  const size_t count = fdp.ConsumeIntegralInRange<size_t>(0, 64);
  for (size_t i = 0; i < count && fdp.remaining_bytes() >= 4; ++i)
    s.floats.push_back(fdp.ConsumeIntegral<uint32_t>());
  for (size_t i = 0; i < s.group.size() && fdp.remaining_bytes() >= 2; ++i)
    s.group[i] = fdp.ConsumeIntegral<uint16_t>();
  return s;
}

IndexScenario decode_index(FuzzedDataProvider& fdp) {
  IndexScenario s;
  s.op = static_cast<IndexScenario::Op>(fdp.ConsumeIntegralInRange<int>(0, 3));
  s.num_q = fdp.ConsumeIntegralInRange<int32_t>(0, 16);
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  auto below = [&](int64_t n) { return static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n)); };
  const auto q = static_cast<size_t>(s.num_q);
  switch (s.op) {
    case IndexScenario::Op::kConvert: {
      s.block_size = pick_block_size(fdp);
      s.k = fdp.ConsumeIntegralInRange<int32_t>(0, 32);
      s.max_blocks = fdp.ConsumeIntegralInRange<int32_t>(1, 16);
      const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(1, 8);
      s.block_table.resize(static_cast<size_t>(num_seqs * s.max_blocks));
      for (auto& b : s.block_table) b = below(64);
      if (fdp.ConsumeBool())
        for (size_t i = 0; i < q; ++i) s.seq_ids.push_back(below(num_seqs));
      const int64_t capacity = int64_t{s.max_blocks} * s.block_size;
      for (size_t i = 0; i < q; ++i) s.context_lens.push_back(below(capacity + 1));
      for (size_t i = 0; i < q * static_cast<size_t>(s.k); ++i) {
        const int32_t ctx = s.context_lens[i / static_cast<size_t>(s.k)];
        switch (below(6)) {
          case 0: s.topk.push_back(-1); break;
          case 1: s.topk.push_back(fdp.PickValueInArray(kAwkward)); break;
          case 2: s.topk.push_back(ctx); break;  // first index past the context: -1
          default: s.topk.push_back(ctx > 0 ? below(ctx) : -1);
        }
      }
      if (q > 0 && fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
        // A -1 table entry that some query's context needs.
        const size_t qi = fdp.ConsumeIntegralInRange<size_t>(0, q - 1);
        const int32_t seq = s.seq_ids.empty() ? static_cast<int32_t>(qi) : s.seq_ids[qi];
        if (seq < num_seqs && s.context_lens[qi] > 0) {
          const int32_t blk = below((s.context_lens[qi] + s.block_size - 1) / s.block_size);
          s.block_table[static_cast<size_t>(seq * s.max_blocks + blk)] = -1;
          s.invalid = "block_table[" + std::to_string(seq) + "][" + std::to_string(blk) + "] = -1";
        }
      }
      if (s.seq_ids.empty() && s.num_q > num_seqs && s.invalid.empty())
        s.invalid = "num_q > num_seqs without seq_ids";
      break;
    }
    case IndexScenario::Op::kCat: {
      s.wl = fdp.ConsumeIntegralInRange<int32_t>(0, 16);
      s.wr = fdp.ConsumeIntegralInRange<int32_t>(0, 16);
      s.total_k_swa_cached = fdp.ConsumeIntegralInRange<int32_t>(0, 1 << 20);
      s.total_k_swa_cur = fdp.ConsumeIntegralInRange<int32_t>(0, 1 << 20);
      for (size_t i = 0; i < q * static_cast<size_t>(s.wl); ++i)
        s.left.push_back(below(4) == 0 ? fdp.PickValueInArray(kAwkward) : below(1 << 20));
      for (size_t i = 0; i < q * static_cast<size_t>(s.wr); ++i)
        s.right.push_back(below(3) == 0 ? -1 : below(1 << 20));
      break;
    }
    case IndexScenario::Op::kExpand: {
      s.width = fdp.ConsumeIntegralInRange<int32_t>(0, 48);
      for (size_t i = 0; i < q; ++i) {  // len1 + len2 <= width (the CPU backend's rule)
        const int32_t len1 = below(s.width + 1);
        s.pivots.insert(s.pivots.end(), {below(1 << 16), len1, below(1 << 16), below(s.width - len1 + 1)});
      }
      break;
    }
    case IndexScenario::Op::kSwaDecode: {
      s.ring_size = fdp.ConsumeIntegralInRange<int32_t>(1, 300);
      s.width = fdp.ConsumeIntegralInRange<int32_t>(0, 48);
      for (size_t i = 0; i < q; ++i)
        s.start_len.insert(s.start_len.end(), {below(8) * s.ring_size + below(s.ring_size),
                                               below(std::min(s.width, s.ring_size) + 1)});
      break;
    }
  }
  return s;
}

PlanScenario decode_plan(FuzzedDataProvider& fdp) {
  PlanScenario s;
  s.mode = static_cast<PlanScenario::Mode>(fdp.ConsumeIntegralInRange<int>(0, 2));
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  auto below = [&](int64_t n) {
    return static_cast<int32_t>(rng.next() % static_cast<uint64_t>(std::max<int64_t>(n, 1)));
  };
  switch (s.mode) {
    case PlanScenario::Mode::kBuilder: {
      // Mostly ordinary block sizes; huge ones reach total_k past INT32_MAX in a few
      // pieces; < 1 is the constructor's error.
      const int size_mode = fdp.ConsumeIntegralInRange<int>(0, 15);
      constexpr int32_t kHuge[] = {1 << 20, (1 << 30) + 7, INT32_MAX};
      constexpr int32_t kBad[] = {0, -1, INT32_MIN};
      s.block_size = size_mode < 13 ? pick_block_size(fdp)
                     : size_mode < 15 ? fdp.PickValueInArray(kHuge)
                                      : fdp.PickValueInArray(kBad);
      const bool huge = s.block_size >= kHugeBlock;
      const int32_t bs = std::max(s.block_size, 1);
      const int num_ops = fdp.ConsumeIntegralInRange<int>(0, 12);
      for (int i = 0; i < num_ops; ++i) {
        PlanOp op;
        op.kind = static_cast<PlanOp::Kind>(fdp.ConsumeIntegralInRange<int>(0, 3));
        const int bad = fdp.ConsumeIntegralInRange<int>(0, 9);  // 0, 1: an invalid field
        switch (op.kind) {
          case PlanOp::Kind::kSegment: {
            const int which = fdp.ConsumeIntegralInRange<int>(0, 3);
            op.a = which == 0 ? -1 : below(64);
            op.b = op.a == -1 ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, bs);
            op.c = fdp.ConsumeIntegralInRange<int32_t>(op.b, bs);
            if (bad == 0) {
              constexpr int32_t kBlocks[] = {-2, INT32_MIN};
              op.a = fdp.PickValueInArray(kBlocks);
              op.note = "invalid block";
            } else if (bad == 1) {
              const int k = fdp.ConsumeIntegralInRange<int>(0, 2);
              if (k == 0) {
                if (op.c == INT32_MAX) --op.c;  // room for begin = end + 1
                op.b = op.c + 1;
                op.note = "invalid: begin > end";
              } else if (k == 1 && bs < INT32_MAX) {
                op.b = 0;
                op.c = bs + 1;
                op.note = "invalid: end > block_size";
              } else if (k == 2) {
                op.b = -1;
                op.note = "invalid: begin < 0";
              }
            }
            break;
          }
          case PlanOp::Kind::kZeroFill:
            op.a = huge ? fdp.ConsumeIntegralInRange<int32_t>(0, INT32_MAX)
                        : fdp.ConsumeIntegralInRange<int32_t>(0, 3 * bs + 2);
            if (bad == 0) op.a = fdp.ConsumeBool() ? -1 : INT32_MIN, op.note = "invalid: negative";
            break;
          case PlanOp::Kind::kPaged: {
            const int32_t tokens = huge ? fdp.ConsumeIntegralInRange<int32_t>(0, INT32_MAX)
                                        : fdp.ConsumeIntegralInRange<int32_t>(0, 4 * bs + 3);
            const int64_t need = (int64_t{tokens} + bs - 1) / bs;
            const int tail = fdp.ConsumeIntegralInRange<int>(0, 2);
            const int table_mode = fdp.ConsumeIntegralInRange<int>(0, 4);
            op.table.resize(static_cast<size_t>(need + tail));
            if (table_mode <= 1) {  // distinct blocks from a shuffled pool
              op.note = "shuffled table";
              auto pool = distinct_slots(rng, static_cast<int64_t>(op.table.size()) + 8, op.table.size());
              std::copy(pool.begin(), pool.end(), op.table.begin());
            } else {  // random entries, repeats allowed
              op.note = "random table";
              for (auto& b : op.table) b = below(64);
            }
            if (table_mode == 3 && !op.table.empty()) {  // holes, maybe inside the range
              op.note = "holey table";
              for (int h = fdp.ConsumeIntegralInRange<int>(1, 3); h > 0; --h)
                op.table[static_cast<size_t>(below(static_cast<int64_t>(op.table.size())))] =
                    fdp.ConsumeBool() ? -1 : INT32_MIN;
            }
            if (table_mode == 4 && need > 0) {  // one block short
              op.note = "short table";
              op.table.resize(static_cast<size_t>(need - 1));
            }
            op.c = tokens;
            op.b = fdp.ConsumeIntegralInRange<int32_t>(0, tokens);
            if (bad == 0) {
              if (op.c == INT32_MAX) --op.c;  // room for begin = end + 1
              if (fdp.ConsumeBool()) op.b = op.c + 1, op.note += ", invalid: begin > end";
              else op.b = -1, op.note += ", invalid: begin < 0";
            }
            break;
          }
          case PlanOp::Kind::kRing: {
            op.a = below(16);
            const int pos_mode = fdp.ConsumeIntegralInRange<int>(0, 7);
            const int64_t len_choice = fdp.ConsumeIntegralInRange<int>(0, 4);
            int64_t len = len_choice == 0 ? 0
                          : len_choice == 1 ? bs  // exactly the ring
                                            : fdp.ConsumeIntegralInRange<int32_t>(0, bs);
            int64_t begin = pos_mode == 0 ? INT32_MAX - len - below(bs)  // far positions
                                          : fdp.ConsumeIntegralInRange<int32_t>(0, 4 * std::min(bs, 1 << 28));
            begin = std::clamp<int64_t>(begin, 0, INT32_MAX - len);
            if (bad == 0) {
              const int k = fdp.ConsumeIntegralInRange<int>(0, 3);
              if (k == 0) op.a = fdp.ConsumeBool() ? -1 : INT32_MIN, op.note = "invalid: state_id < 0";
              else if (k == 1) begin = -1 - below(bs), op.note = "invalid: begin < 0";
              else if (k == 2 && bs < INT32_MAX) len = bs + 1, begin = std::min<int64_t>(begin, INT32_MAX - len), op.note = "invalid: longer than the ring";
              else len = -1 - below(bs), begin = std::max<int64_t>(begin, -len), op.note = "invalid: begin > end";
            }
            op.b = static_cast<int32_t>(begin);
            op.c = static_cast<int32_t>(begin + len);
            if (op.note.empty() && len > 0 && begin % bs + len > bs) op.note = "wraps";
            if (op.note.empty() && len == bs) op.note = "exactly the ring";
            break;
          }
        }
        s.ops.push_back(std::move(op));
      }
      break;
    }
    case PlanScenario::Mode::kCompressed: {
      s.block_size = pick_block_size(fdp);
      std::vector<int32_t> divisors;
      for (int32_t d = 1; d <= s.block_size; ++d)
        if (s.block_size % d == 0) divisors.push_back(d);
      s.ratio = divisors[fdp.ConsumeIntegralInRange<size_t>(0, divisors.size() - 1)];
      const int32_t per_block = s.block_size / s.ratio;
      const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
      const int table_mode = fdp.ConsumeIntegralInRange<int>(0, 3);  // 2: holey, 3: short
      s.table_mode = table_mode <= 1 ? "disjoint shuffled" : table_mode == 2 ? "holey" : "short";
      int32_t next_block = 0;
      std::vector<int32_t> pool = distinct_slots(rng, 4 * 64, 4 * 64);
      for (int32_t i = 0; i < num_seqs; ++i) {
        SeqMeta q;
        q.seqlen_k = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int32_t>(0, s.ratio)  // n == 0 reachable
                                       : fdp.ConsumeIntegralInRange<int32_t>(0, 5 * s.block_size);
        const int32_t n = q.seqlen_k / s.ratio;
        const int32_t need = (n + per_block - 1) / per_block;
        for (int32_t b = 0; b < need + fdp.ConsumeIntegralInRange<int32_t>(0, 2); ++b)
          q.block_table.push_back(b >= need && fdp.ConsumeBool() ? -1 : pool[static_cast<size_t>(next_block++ % 256)]);
        s.seqs.push_back(std::move(q));
      }
      if (table_mode >= 2 && num_seqs > 0) {
        SeqMeta& q = s.seqs[static_cast<size_t>(below(num_seqs))];
        if (table_mode == 3 && !q.block_table.empty()) q.block_table.pop_back();
        if (table_mode == 2 && !q.block_table.empty())
          q.block_table[static_cast<size_t>(below(static_cast<int64_t>(q.block_table.size())))] = -1;
      }
      const int bad = fdp.ConsumeIntegralInRange<int>(0, 9);
      if (bad == 0) {
        constexpr int32_t kRatios[] = {0, -1, INT32_MIN};
        s.ratio = fdp.PickValueInArray(kRatios);
        s.broken = "ratio " + std::to_string(s.ratio);
      } else if (bad == 1 && s.block_size > 1) {
        s.ratio = s.block_size + 1;  // does not divide block_size
        s.broken = "ratio does not divide block_size";
      } else if (bad == 2) {
        s.block_size = fdp.ConsumeBool() ? 0 : -s.block_size;
        s.broken = "block_size " + std::to_string(s.block_size);
      } else if (bad == 3 && num_seqs > 0) {
        const int32_t i = below(num_seqs);
        s.seqs[static_cast<size_t>(i)].seqlen_k = fdp.ConsumeBool() ? -1 : INT32_MIN;
        s.broken = "seqlen_k of sequence " + std::to_string(i);
      }
      break;
    }
    case PlanScenario::Mode::kSwa: {
      s.window = fdp.ConsumeIntegralInRange<int32_t>(1, 16);
      s.ring_size = s.window + (fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, 8));
      const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
      const auto states = distinct_slots(rng, 8, 8);
      for (int32_t i = 0; i < num_seqs; ++i) {
        SeqMeta q;
        const int hist_mode = fdp.ConsumeIntegralInRange<int>(0, 7);
        const int32_t history_end =
            hist_mode == 0 ? fdp.ConsumeIntegralInRange<int32_t>(1 << 30, (1 << 30) + 64)  // far
            : hist_mode == 1 ? fdp.ConsumeIntegralInRange<int32_t>(0, s.window - 1)       // short
                             : fdp.ConsumeIntegralInRange<int32_t>(0, 3 * s.ring_size);
        q.seqlen_q = fdp.ConsumeIntegralInRange<int32_t>(0, 2 * s.ring_size + 3);
        q.seqlen_k = history_end + q.seqlen_q;
        const int start_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
        q.swa_valid_start = start_mode == 0   ? 0
                            : start_mode <= 2 ? fdp.ConsumeIntegralInRange<int32_t>(0, history_end)
                                              : history_end + fdp.ConsumeIntegralInRange<int32_t>(0, 5);
        q.state_id = states[static_cast<size_t>(i)];
        s.seqs.push_back(std::move(q));
      }
      const int bad = fdp.ConsumeIntegralInRange<int>(0, 9);
      if (bad == 0) {
        if (fdp.ConsumeBool()) s.window = fdp.ConsumeBool() ? 0 : -1, s.broken = "window < 1";
        else s.ring_size = s.window - 1, s.broken = "ring_size < window";
      } else if (bad == 1 && num_seqs > 0) {
        const int32_t i = below(num_seqs);
        SeqMeta& q = s.seqs[static_cast<size_t>(i)];
        const int k = fdp.ConsumeIntegralInRange<int>(0, 3);
        static const char* kWhat[] = {"seqlen_q > seqlen_k", "seqlen_q < 0", "swa_valid_start < 0",
                                      "state_id < 0"};
        if (k == 0) q.seqlen_q = q.seqlen_k + 1;
        else if (k == 1) q.seqlen_q = -1;
        else if (k == 2) q.swa_valid_start = -1;
        else q.state_id = INT32_MIN;
        s.broken = std::string(kWhat[k]) + " in sequence " + std::to_string(i);
      }
      break;
    }
  }
  return s;
}

PrefillFuzzScenario decode_prefill(FuzzedDataProvider& fdp) {
  PrefillFuzzScenario out;
  props::PrefillScenario& s = out.step;
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  const int fmt = fdp.ConsumeIntegralInRange<int>(0, 3);
  s.format = fmt == 0 ? KVCacheFormat::V41() : KVCacheFormat::BF16(fmt == 1 ? 8 : fmt == 2 ? 16 : 64);
  s.window = fdp.ConsumeIntegralInRange<int32_t>(1, 16);
  s.ring_size = s.window + (fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, 8));
  const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
  s.num_swa_states = std::max(num_seqs + fdp.ConsumeIntegralInRange<int32_t>(0, 2), 1);
  const auto states = distinct_slots(rng, s.num_swa_states, static_cast<size_t>(s.num_swa_states));
  constexpr int32_t kBlockSizes[] = {1, 2, 4, 16, 64, 133};
  s.block_size = fdp.ConsumeBool() ? fdp.PickValueInArray(kBlockSizes)
                                   : fdp.ConsumeIntegralInRange<int32_t>(1, 300);
  std::vector<int32_t> divisors;
  for (int32_t d = 1; d <= s.block_size; ++d)
    if (s.block_size % d == 0) divisors.push_back(d);
  s.ratio = divisors[fdp.ConsumeIntegralInRange<size_t>(0, divisors.size() - 1)];
  const int32_t per_block = s.block_size / s.ratio;
  int32_t needed = 0;
  for (int32_t i = 0; i < num_seqs; ++i) {
    SeqMeta q;
    const int hist_mode = fdp.ConsumeIntegralInRange<int>(0, 3);
    const int32_t history_end = hist_mode == 0 ? fdp.ConsumeIntegralInRange<int32_t>(0, s.window - 1)
                                               : fdp.ConsumeIntegralInRange<int32_t>(0, 3 * s.ring_size);
    q.seqlen_q = fdp.ConsumeIntegralInRange<int32_t>(0, 2 * s.ring_size + 3);
    q.seqlen_k = history_end + q.seqlen_q;
    q.swa_valid_start = fdp.ConsumeBool() ? 0 : fdp.ConsumeIntegralInRange<int32_t>(0, history_end);
    q.state_id = states[static_cast<size_t>(i)];
    needed += (q.seqlen_k / s.ratio + per_block - 1) / per_block;
    s.seqs.push_back(std::move(q));
  }
  // Disjoint block tables from one shuffled pool; tails of -1 or spare blocks.
  const int32_t spare = fdp.ConsumeIntegralInRange<int32_t>(0, 4);
  const auto pool = distinct_slots(rng, needed + spare, static_cast<size_t>(needed + spare));
  s.num_compressed_blocks = std::max(needed + spare, 1);
  size_t next = 0;
  for (SeqMeta& q : s.seqs) {
    const int32_t need = (q.seqlen_k / s.ratio + per_block - 1) / per_block;
    for (int32_t b = 0; b < need; ++b) q.block_table.push_back(pool[next++]);
    for (int32_t t = fdp.ConsumeIntegralInRange<int32_t>(0, 1); t > 0; --t)
      q.block_table.push_back(spare > 0 && fdp.ConsumeBool()
                                  ? pool[static_cast<size_t>(needed + static_cast<int32_t>(rng.next() % static_cast<uint64_t>(spare)))]
                                  : -1);
  }
  s.topk_width = fdp.ConsumeIntegralInRange<int32_t>(0, 5);
  for (const SeqMeta& q : s.seqs) {
    const int32_t n = q.seqlen_k / s.ratio;
    std::vector<int32_t> topk;
    for (int32_t j = 0; j < q.seqlen_q; ++j) {
      const size_t row_begin = topk.size();
      for (int32_t c = 0; c < s.topk_width; ++c) {
        const int32_t x = n == 0 ? -1 : static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n + 1)) - 1;
        topk.push_back(std::find(topk.begin() + static_cast<ptrdiff_t>(row_begin), topk.end(), x) == topk.end() ? x : -1);
      }
    }
    s.topk.push_back(std::move(topk));
  }
  s.store_before_load = fdp.ConsumeIntegralInRange<int>(0, 7) == 0;
  return out;
}


void fill_cache_bytes(const CacheShape& shape, uint64_t seed, uint8_t* bytes) {
  const CacheLayout l = CacheLayout::make(shape.format, shape.num_blocks, shape.block_size);
  props::fill_pattern({bytes, static_cast<size_t>(l.size_bytes())}, seed);
  if (!(shape.format.do_cast && shape.format.sf_format == SfFormat::kUE8M0)) return;
  for (int64_t b = 0; b < l.num_blocks; ++b)
    for (int64_t t = 0; t < l.block_size; ++t)
      for (int64_t g = 0; g < l.format.sf_bytes(); ++g) {
        uint8_t& v = bytes[l.scale_offset(b, t) + g];
        v = static_cast<uint8_t>(1 + v % 253);  // [1, 253]
      }
}

std::string format_ints(const std::vector<int32_t>& v, size_t max_items) {
  std::string out = "[";
  for (size_t i = 0; i < v.size() && i < max_items; ++i)
    out += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > max_items) out += ", ... (" + std::to_string(v.size()) + " in all)";
  return out + "]";
}

std::string describe(const CacheShape& s) {
  const KVCacheFormat& f = s.format;
  std::ostringstream o;
  o << "  format: " << f.name << " (" << to_string(f.quantized_dtype) << ", " << f.elements
    << " elements";
  if (f.is_quantized())
    o << ", " << f.elements_per_sf << " per " << to_string(f.sf_format) << " scale"
      << (f.do_cast ? ", do_cast" : "") << (f.token_interleaved ? ", interleaved" : "");
  o << ", " << f.bytes_per_token() << " bytes/token)\n";
  o << "  cache: block_size " << s.block_size << ", num_blocks " << s.num_blocks
    << ", block_stride " << block_stride_for(f, s.block_size) << " bytes, num_slots "
    << s.num_slots() << "\n";
  return o.str();
}

std::string describe(const StoreScenario& s) {
  std::ostringstream o;
  o << "store_kv_cache scenario\n" << describe(s.shape);
  o << "  slot_mapping (" << s.slot_mapping.size() << " rows, " << s.slot_mode
    << "): " << format_ints(s.slot_mapping) << "\n";
  o << "  kv: " << s.kv_rows << " rows, row_stride " << s.row_stride << " elements, values "
    << s.value_mode;
  if (!s.kv.empty()) {
    o << "; row 0 starts";
    for (size_t i = 0; i < 8 && i < s.kv.size(); ++i) o << " " << hex16(s.kv[i], 4);
  }
  o << "\n  cache sentinel seed: " << s.cache_seed << "\n";
  return o.str();
}

std::string describe(const LoadScenario& s) {
  std::ostringstream o;
  o << "load_paged_kv_cache scenario\n" << describe(s.shape);
  o << "  total_k " << s.total_k << ", output rows " << s.out_rows << " (row pad "
    << s.data_row_pad << " data / " << s.scale_row_pad << " scale bytes)\n";
  o << "  segments (" << s.segments.size() / 4 << ", " << s.segment_mode
    << ") [block, begin, end, dst]:";
  for (size_t i = 0; i + 3 < s.segments.size() && i < 4 * 32; i += 4)
    o << (i % 16 == 0 ? "\n    " : " ") << "[" << s.segments[i] << ", " << s.segments[i + 1]
      << ", " << s.segments[i + 2] << ", " << s.segments[i + 3] << "]";
  if (s.segments.size() % 4) o << "\n    (+" << s.segments.size() % 4 << " stray int32)";
  if (s.segments.size() > 4 * 32) o << "\n    ...";
  o << "\n  cache seed " << s.cache_seed << ", output sentinel seed " << s.out_seed << "\n";
  return o.str();
}

std::string describe(const RoundTripScenario& s) {
  return "store -> load round trip\n" + describe(s.store) + describe(s.load);
}

std::string describe(const FormatScenario& s) {
  const KVCacheFormat& f = s.format;
  std::ostringstream o;
  o << "format scenario\n  fields: name '" << f.name << "', quantized " << to_string(f.quantized_dtype)
    << ", elements " << f.elements << ", elements_per_sf " << f.elements_per_sf << ", sf "
    << to_string(f.sf_format) << ", do_cast " << f.do_cast << ", interleaved "
    << f.token_interleaved << ", bf16_tail " << f.bf16_tail_elements << "\n";
  o << "  offsets at block " << s.block << ", token " << s.token << ", block_size " << s.block_size
    << "\n  resolve_format(" << (s.dtype == CacheDtype::kBF16 ? "bf16" : "uint8") << ", [";
  for (size_t i = 0; i < s.shape.size(); ++i) o << (i ? ", " : "") << s.shape[i];
  o << "], sf " << (s.sf_choice ? to_string(static_cast<SfFormat>(s.sf_choice)) : "unset")
    << ")\n";
  return o.str();
}

std::string describe(const NumericsScenario& s) {
  std::ostringstream o;
  o << "numerics scenario\n  floats (" << s.floats.size() << "):";
  for (size_t i = 0; i < s.floats.size() && i < 16; ++i) o << " " << hex16(s.floats[i], 8);
  o << "\n  group of " << s.format.name << " (" << s.group.size() << "):";
  for (size_t i = 0; i < s.group.size() && i < 32; ++i) o << " " << hex16(s.group[i], 4);
  o << "\n";
  return o.str();
}

std::string describe(const IndexScenario& s) {
  static const char* kOps[] = {"convert_kv_index", "kv_index_cat", "expand_swa_index",
                               "swa_decode_index"};
  std::ostringstream o;
  o << "index scenario: " << kOps[static_cast<int>(s.op)] << ", num_q " << s.num_q << "\n";
  switch (s.op) {
    case IndexScenario::Op::kConvert:
      o << "  k " << s.k << ", block_size " << s.block_size << ", max_blocks " << s.max_blocks
        << "\n  block_table " << format_ints(s.block_table) << "\n  seq_ids "
        << format_ints(s.seq_ids) << "\n  context_lens " << format_ints(s.context_lens)
        << "\n  topk " << format_ints(s.topk) << "\n";
      break;
    case IndexScenario::Op::kCat:
      o << "  wl " << s.wl << ", wr " << s.wr << ", total_k_swa_cached " << s.total_k_swa_cached
        << ", total_k_swa_cur " << s.total_k_swa_cur << "\n  L " << format_ints(s.left)
        << "\n  R " << format_ints(s.right) << "\n";
      break;
    case IndexScenario::Op::kExpand:
      o << "  width " << s.width << "\n  pivots [off1, len1, off2, len2]... "
        << format_ints(s.pivots) << "\n";
      break;
    case IndexScenario::Op::kSwaDecode:
      o << "  width " << s.width << ", ring_size " << s.ring_size
        << "\n  start_len [start_slot, valid_len]... " << format_ints(s.start_len) << "\n";
      break;
  }
  if (!s.invalid.empty()) o << "  invalid on purpose: " << s.invalid << "\n";
  return o.str();
}

std::string describe(const PlanScenario& s) {
  std::ostringstream o;
  auto seqs = [&] {
    for (size_t i = 0; i < s.seqs.size(); ++i) {
      const SeqMeta& q = s.seqs[i];
      o << "  seq " << i << ": seqlen_k " << q.seqlen_k << ", seqlen_q " << q.seqlen_q;
      if (s.mode == PlanScenario::Mode::kSwa)
        o << ", swa_valid_start " << q.swa_valid_start << ", state_id " << q.state_id;
      else
        o << ", block_table " << format_ints(q.block_table, 16);
      o << "\n";
    }
    if (!s.broken.empty()) o << "  invalid on purpose: " << s.broken << "\n";
  };
  switch (s.mode) {
    case PlanScenario::Mode::kBuilder: {
      static const char* kOps[] = {"append_segment", "append_zero_fill", "append_paged_range",
                                   "append_ring_range"};
      o << "plan scenario: BlockLoadPlanBuilder(" << s.block_size << "), " << s.ops.size()
        << " appends\n";
      for (size_t i = 0; i < s.ops.size(); ++i) {
        const PlanOp& op = s.ops[i];
        o << "  " << i << ": " << kOps[static_cast<int>(op.kind)] << "(";
        switch (op.kind) {
          case PlanOp::Kind::kSegment: o << op.a << ", " << op.b << ", " << op.c; break;
          case PlanOp::Kind::kZeroFill: o << op.a; break;
          case PlanOp::Kind::kPaged: o << format_ints(op.table, 16) << ", " << op.b << ", " << op.c; break;
          case PlanOp::Kind::kRing: o << op.a << ", " << op.b << ", " << op.c; break;
        }
        o << ")" << (op.note.empty() ? "" : "  # " + op.note) << "\n";
      }
      break;
    }
    case PlanScenario::Mode::kCompressed:
      o << "plan scenario: build_compressed_plan, block_size " << s.block_size << ", ratio "
        << s.ratio << ", " << s.seqs.size() << " sequences, tables " << s.table_mode << "\n";
      seqs();
      break;
    case PlanScenario::Mode::kSwa:
      o << "plan scenario: build_swa_plan, window " << s.window << ", ring_size " << s.ring_size
        << ", " << s.seqs.size() << " sequences\n";
      seqs();
      break;
  }
  return o.str();
}

std::string describe(const PrefillFuzzScenario& s) {
  std::ostringstream o;
  o << "prefill scenario\n  ";
  props::showValue(s.step, o);
  o << "\n";
  return o.str();
}

}  // namespace kvcheck::fuzz
