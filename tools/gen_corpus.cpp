// gen_corpus: writes the seed corpus of every fuzz target, deterministically.
// For each wanted feature (a format, block size 133, all-padding slot mappings, a
// wrapped ring, zero-fill segments, an injected fault, ...) it tries inputs from a fixed
// pseudo-random sequence, shortest first, until the target's decoder (fuzzers/decoders.h)
// turns one into a scenario with that feature, and writes it as corpus/<target>/<feature>.
// Features are read off the decoded scenario itself. Same binary, same files:
// regenerate with `gen_corpus corpus` after changing a decoder.
#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fuzzers/decoders.h"
#include "properties/ops/kv/kv_harness.h"

namespace fs = std::filesystem;
using kvcheck::fuzz::SplitMix64;

namespace {

using Bytes = std::vector<uint8_t>;

template <typename Scenario>
using Decoder = std::function<Scenario(const Bytes&)>;

// A decoder as Bytes -> scenario.
template <typename Scenario>
Decoder<Scenario> byte_decoder(Scenario (*decode)(kvcheck::fuzz::ByteSource&)) {
  return [decode](const Bytes& b) {
    kvcheck::fuzz::ByteSource src(b.data(), b.size());
    return decode(src);
  };
}

// The first input of the fixed sequence whose decoding satisfies `want`: lengths grow
// with the attempts from 8 bytes, so a seed is about as short as its feature allows,
// and small inputs run fast.
template <typename Scenario>
Bytes find_input(const Decoder<Scenario>& decode, const std::function<bool(const Scenario&)>& want, uint64_t salt) {
  SplitMix64 rng{0xC0FFEEull ^ salt};
  for (int attempt = 0; attempt < 400000; ++attempt) {
    Bytes b(8 + rng.next() % std::min<uint64_t>(8 + attempt / 64, 248));
    for (auto& x : b) x = static_cast<uint8_t>(rng.next());
    if (want(decode(b))) return b;
  }
  return {};
}

int g_written = 0, g_missing = 0;

// Stable across standard libraries (std::hash is not).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

template <typename Scenario>
// `file`: where under root/target the input goes (default: the feature's name); the
// inputs that re-encode old regressions go to regressions/ under their tracked names.
void seed(const fs::path& root, const std::string& target, const std::string& feature, const Decoder<Scenario>& decode,
          std::function<bool(const Scenario&)> want, const std::string& file = "") {
  const Bytes b = find_input(decode, want, fnv1a(target + "/" + feature));
  if (b.empty()) {
    std::fprintf(stderr, "gen_corpus: no input found for %s/%s\n", target.c_str(), feature.c_str());
    ++g_missing;
    return;
  }
  const fs::path out = root / target / (file.empty() ? feature : file);
  fs::create_directories(out.parent_path());
  std::ofstream(out, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ++g_written;
}

bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

const std::vector<std::string> kFormats = {"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX",
                                           "MXFP8_INDEX", "FP8_DS_MLA", "FP8_POW2SF_INDEX", "MODEL1", "NVFP4_DS_MLA", "BF16(512)", "BF16(8)", "BF16(136)",
                                           "BF16(4096)"};
const std::vector<int> kBlockSizes = {1, 2, 16, 64, 133, 256, 53, 61, 69};

// Custom (outside the SPEC §2 table) formats: every dtype x scale format x group class
// (compiled kernels 16/32/128, run-time sizes), so both kernel families are seeded.
struct CustomKind {
  kvcheck::QuantizedDtype dtype;
  kvcheck::SfFormat sf;
  int group_class;  // 16, 32, 128, or 0 = a run-time group size
};
std::vector<CustomKind> custom_kinds() {
  std::vector<CustomKind> out;
  for (auto d : {kvcheck::QuantizedDtype::kE4M3, kvcheck::QuantizedDtype::kE2M1})
    for (auto sf : {kvcheck::SfFormat::kUE8M0, kvcheck::SfFormat::kE4M3, kvcheck::SfFormat::kFP32,
                    kvcheck::SfFormat::kFP32Pow2, kvcheck::SfFormat::kFP32Pow2FloorFirst,
                    kvcheck::SfFormat::kUE8M0FloorAfter})
      if ((!kvcheck::is_fp32_pow2(sf) && sf != kvcheck::SfFormat::kUE8M0FloorAfter) ||
          d == kvcheck::QuantizedDtype::kE4M3)  // SPEC §2: e4m3 only
        for (int g : {16, 32, 128, 0}) out.push_back({d, sf, g});
  return out;
}
std::string name_of(const CustomKind& k) {
  return kvcheck::to_string(k.dtype) + "-" + kvcheck::to_string(k.sf) + "-" +
         (k.group_class ? "G" + std::to_string(k.group_class) : std::string("Grt"));
}
bool is_custom(const kvcheck::KVCacheFormat& f, const CustomKind& k) {
  const bool compiled = f.elements_per_sf == 16 || f.elements_per_sf == 32 || f.elements_per_sf == 128;
  return !kvcheck::props::is_named_format(f) && f.quantized_dtype == k.dtype && f.sf_format == k.sf &&
         (k.group_class ? f.elements_per_sf == k.group_class : !compiled);
}

// Store features, read off the scenario.
using kvcheck::props::StoreFaultScenario;
using kvcheck::props::StoreScenario;
int64_t num_slots(const StoreScenario& s) { return int64_t{s.shape.num_blocks} * s.shape.block_size; }
std::string kind(const StoreScenario& s) { return kvcheck::props::slot_mapping_kind(s.slot_mapping, num_slots(s)); }
int valid_rows(const StoreScenario& s) {
  return static_cast<int>(std::count_if(s.slot_mapping.begin(), s.slot_mapping.end(), [](int32_t x) { return x >= 0; }));
}
// A vLLM block-table mapping: runs of consecutive slots that jump between blocks at block ends.
bool paged(const StoreScenario& s) {
  const int32_t bs = s.shape.block_size;
  if (bs < 2 || s.slot_mapping.size() < 3 || kind(s) == "invalid") return false;
  bool jump = false;
  for (size_t i = 1; i < s.slot_mapping.size(); ++i) {
    const int32_t a = s.slot_mapping[i - 1], b = s.slot_mapping[i];
    if (a < 0 || b < 0) return false;
    if ((a + 1) % bs != 0 && b != a + 1) return false;
    if ((a + 1) % bs == 0 && b != a + 1 && b % bs == 0) jump = true;
  }
  return jump;
}
// Fractions of the kv values (first E of each row) by kind.
struct ValueStats {
  double zero = 0, special = 0, spread = 0;
};
ValueStats value_stats(const StoreScenario& s) {
  ValueStats v;
  const int64_t e = s.shape.format.elements, rows = s.kv_rows();
  if (rows == 0) return v;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < e; ++i) {
      const uint16_t x = s.kv[static_cast<size_t>(r * s.row_stride + i)];
      const int exp = (x >> 7) & 0xFF;
      v.zero += (x & 0x7FFF) == 0;
      v.special += exp == 0xFF || exp == 0;
      v.spread += exp >= 170 || (exp > 0 && exp <= 60);
    }
  const double n = static_cast<double>(rows * e);
  return {v.zero / n, v.special / n, v.spread / n};
}

void store_seeds(const fs::path& root) {
  using S = StoreFaultScenario;
  const auto d = byte_decoder(kvcheck::fuzz::decode_store);
  auto fmt = [](const S& c) { return c.scenario.shape.format.name; };
  auto valid = [](const S& c) { return c.fault.empty(); };
  for (const auto& f : kFormats) {
    seed<S>(root, "store", "fmt-" + f, d, [&](const S& c) { return valid(c) && fmt(c) == f && valid_rows(c.scenario) >= (f == "BF16(4096)" ? 1 : 3); });
    seed<S>(root, "store", "fmt-" + f + "-bs133", d, [&](const S& c) { return valid(c) && fmt(c) == f && c.scenario.shape.block_size == 133 && valid_rows(c.scenario) >= 1; });
  }
  for (int bs : kBlockSizes)
    seed<S>(root, "store", "bs-" + std::to_string(bs), d, [&](const S& c) { return valid(c) && c.scenario.shape.block_size == bs && valid_rows(c.scenario) >= 2; });
  const auto mode = [&](const S& c, const std::string& m) {
    if (m == "raw") return c.fault == "raw slot_mapping";
    if (!valid(c)) return false;
    if (m == "paged-block-table") return paged(c.scenario);
    if (m == "distinct-random") return has(kind(c.scenario), "distinct") && !paged(c.scenario);
    return kind(c.scenario) == m;
  };
  for (const std::string m : {"all-padding", "padding-next-to-slot-0", "consecutive-run", "paged-block-table", "distinct-random", "raw"})
    for (const std::string f : {"V41", "V41_FP4", "MXFP8_INDEX", "BF16"})  // BF16: any E
      seed<S>(root, "store", "slots-" + m + "-" + f, d, [&](const S& c) {
        return mode(c, m) && (fmt(c) == f || (f == "BF16" && c.scenario.shape.format.is_bf16())) &&
               c.scenario.slot_mapping.size() >= 2;
      });
  seed<S>(root, "store", "all-padding-bs133", d, [](const S& c) { return c.fault.empty() && kind(c.scenario) == "all-padding" && c.scenario.shape.block_size == 133 && c.scenario.slot_mapping.size() >= 4; });
  seed<S>(root, "store", "empty", d, [](const S& c) { return c.fault.empty() && c.scenario.slot_mapping.empty(); });
  using E = kvcheck::ErrorCode;
  auto slot_fault = [](const S& c, const std::string& value) {
    return c.code == E::kSlotOutOfRange && has(c.fault, "] = " + value) && c.fault.size() == c.fault.find("] = ") + 4 + value.size();
  };
  seed<S>(root, "store", "injected--2", d, [&](const S& c) { return slot_fault(c, "-2"); });
  seed<S>(root, "store", "injected-INT32_MIN", d, [&](const S& c) { return slot_fault(c, std::to_string(INT32_MIN)); });
  seed<S>(root, "store", "injected-INT32_MAX", d, [&](const S& c) { return slot_fault(c, std::to_string(INT32_MAX)); });
  seed<S>(root, "store", "injected-num_slots", d, [&](const S& c) { return slot_fault(c, std::to_string(num_slots(c.scenario))); });
  seed<S>(root, "store", "injected-duplicate", d, [](const S& c) { return c.code == E::kDuplicateSlot && c.scenario.slot_mapping.size() >= 3; });
  seed<S>(root, "store", "injected-last-slot", d, [](const S& c) {  // raw slots holding the last valid slot
    const auto& m = c.scenario.slot_mapping;
    return c.fault == "raw slot_mapping" && std::count(m.begin(), m.end(), num_slots(c.scenario) - 1) == 1 && m.size() >= 2;
  });
  seed<S>(root, "store", "row-stride-short", d, [](const S& c) { return c.code == E::kInvalidArgument; });
  seed<S>(root, "store", "kv-rows-short", d, [](const S& c) { return c.code == E::kShapeMismatch; });
  seed<S>(root, "store", "row-stride-padded", d, [](const S& c) { return c.fault.empty() && c.scenario.row_stride > c.scenario.shape.format.elements && valid_rows(c.scenario) >= 2; });
  for (const auto& k : custom_kinds())
    seed<S>(root, "store", "custom-" + name_of(k), d, [&](const S& c) { return c.fault.empty() && is_custom(c.scenario.shape.format, k) && valid_rows(c.scenario) >= 3 && value_stats(c.scenario).zero < 0.5; });
  seed<S>(root, "store", "custom-planar-cast", d, [](const S& c) { const auto& f = c.scenario.shape.format; return c.fault.empty() && !kvcheck::props::is_named_format(f) && f.do_cast && !f.token_interleaved && valid_rows(c.scenario) >= 3; });
  seed<S>(root, "store", "custom-bf16-tail", d, [](const S& c) { const auto& f = c.scenario.shape.format; return c.fault.empty() && !kvcheck::props::is_named_format(f) && f.bf16_tail_elements > 0 && valid_rows(c.scenario) >= 3; });
  const auto values = [](const S& c, const std::string& v) {
    const ValueStats st = value_stats(c.scenario);
    return v == "specials" ? st.special >= 0.4 : v == "mostly-zero" ? st.zero >= 0.8 : st.spread >= 0.4;
  };
  for (const std::string v : {"specials", "random-bits", "mostly-zero"})
    for (const std::string f : {"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX"})
      seed<S>(root, "store", "values-" + v + "-" + f, d, [&](const S& c) { return c.fault.empty() && fmt(c) == f && valid_rows(c.scenario) >= 2 && values(c, v); });
}

// Load features, read off the scenario.
using kvcheck::props::LoadFaultScenario;
using kvcheck::props::LoadScenario;
size_t num_segments(const LoadScenario& s) { return s.load_segments.size() / 4; }
bool any_zero_fill(const LoadScenario& s) {
  for (size_t i = 0; i < num_segments(s); ++i)
    if (s.load_segments[4 * i] == -1) return true;
  return false;
}
bool wrapped_ring(const LoadScenario& s) {  // [-1 pad], [b, x, bs, pad], [b, 0, y <= x, ...]
  const auto& g = s.load_segments;
  const size_t k = g.size() >= 4 && g[0] == -1 ? 4 : 0;
  return g.size() == k + 8 && g[k + 2] == s.shape.block_size && g[k + 1] > 0 && g[k + 4] == g[k] && g[k + 5] == 0 &&
         g[k + 6] > 0 && g[k + 6] <= g[k + 1];
}
bool shuffled_with_gaps(const LoadScenario& s) {
  bool unsorted = false, gap = false;
  std::vector<std::pair<int32_t, int32_t>> rows;  // dst, len
  for (size_t i = 0; i < num_segments(s); ++i) {
    rows.push_back({s.load_segments[4 * i + 3], s.load_segments[4 * i + 2] - s.load_segments[4 * i + 1]});
    if (i > 0 && rows[i].first < rows[i - 1].first) unsorted = true;
  }
  std::sort(rows.begin(), rows.end());
  int32_t end = 0;
  for (const auto& [dst, len] : rows) gap |= dst > end, end = std::max(end, dst + len);
  return unsorted && gap;
}

void load_seeds(const fs::path& root) {
  using L = LoadFaultScenario;
  const auto d = byte_decoder(kvcheck::fuzz::decode_load);
  const std::string t = "load";
  auto fmt = [](const L& c) { return c.scenario.shape.format.name; };
  auto plain = [](const L& c) { return c.fault.empty() && num_segments(c.scenario) >= 2; };
  for (const auto& f : kFormats) {
    seed<L>(root, t, "fmt-" + f, d, [&](const L& c) { return plain(c) && fmt(c) == f && any_zero_fill(c.scenario); });
    seed<L>(root, t, "fmt-" + f + "-bs133", d, [&](const L& c) { return plain(c) && fmt(c) == f && c.scenario.shape.block_size == 133; });
  }
  for (int bs : kBlockSizes)
    seed<L>(root, t, "bs-" + std::to_string(bs), d, [&](const L& c) { return plain(c) && c.scenario.shape.block_size == bs && num_segments(c.scenario) >= 3; });
  const auto mode = [&](const L& c, const std::string& m) {
    const LoadScenario& s = c.scenario;
    if (m == "raw") return c.fault == "raw load_segments" && s.load_segments.size() >= 8;
    if (!plain(c)) return false;
    if (m == "wrapped-ring") return wrapped_ring(s);
    if (m == "zero-fill") return any_zero_fill(s) && !wrapped_ring(s);
    if (m == "shuffled-gaps") return shuffled_with_gaps(s);
    return !any_zero_fill(s) && !shuffled_with_gaps(s) && !wrapped_ring(s);  // contiguous
  };
  for (const std::string m : {"contiguous", "zero-fill", "shuffled-gaps", "wrapped-ring", "raw"})
    for (const std::string f : {"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "BF16(512)"})
      seed<L>(root, t, "segments-" + m + "-" + f, d, [&](const L& c) { return mode(c, m) && fmt(c) == f; });
  seed<L>(root, t, "wrapped-ring-bs133", d, [&](const L& c) { return mode(c, "wrapped-ring") && c.scenario.shape.block_size == 133 && num_segments(c.scenario) == 3; });
  seed<L>(root, t, "empty", d, [](const L& c) { return c.fault.empty() && c.scenario.total_k == 0; });
  using E = kvcheck::ErrorCode;
  const std::vector<std::pair<std::string, std::function<bool(const L&)>>> faults = {
      {"injected-field-0", [](const L& c) { return c.code == E::kSegmentBlockOutOfRange; }},
      {"injected-field-1", [](const L& c) { return c.code == E::kSegmentRangeInvalid && has(c.fault, "src_begin ="); }},
      {"injected-field-2", [](const L& c) { return c.code == E::kSegmentRangeInvalid && has(c.fault, "src_end"); }},
      {"injected-field-3", [](const L& c) { return c.code == E::kSegmentDestinationOutOfRange; }},
      {"injected--2", [](const L& c) { return has(c.fault, "src_block_id = -2"); }},
      {"injected-INT32_MIN", [](const L& c) { return has(c.fault, "= " + std::to_string(INT32_MIN)); }},
      {"injected-INT32_MAX", [](const L& c) { return has(c.fault, "= " + std::to_string(INT32_MAX)); }},
      {"injected-num_blocks", [](const L& c) { return has(c.fault, "src_block_id = " + std::to_string(c.scenario.shape.num_blocks)); }},
      {"injected-block_size+1", [](const L& c) { return has(c.fault, "src_end = block_size + 1"); }},
      {"injected-total_k", [](const L& c) { return c.code == E::kSegmentDestinationOutOfRange && !has(c.fault, "= -1 ") && !has(c.fault, "= " + std::to_string(INT32_MIN)) && !has(c.fault, "= " + std::to_string(INT32_MAX)); }},
      {"injected-other-dst", [](const L& c) { return c.code == E::kSegmentOverlap; }},
      {"segments-not-multiple-of-4", [](const L& c) { return has(c.fault, "not a multiple of 4"); }},
      {"data-stride-short", [](const L& c) { return has(c.fault, "data row stride"); }},
      {"scale-stride-short", [](const L& c) { return has(c.fault, "scale row stride"); }},
      {"total-k-negative", [](const L& c) { return c.fault == "total_k = -1" && num_segments(c.scenario) >= 2; }},
      {"out-rows-short", [](const L& c) { return has(c.fault, "total_k - 1 rows"); }},
  };
  for (const auto& fault : faults) {  // (clang-14 lambdas cannot capture structured bindings)
    const std::string& name = fault.first;
    const auto& want = fault.second;
    seed<L>(root, t, name, d, [&](const L& c) { return want(c) && (num_segments(c.scenario) >= 2 || has(name, "stride") || has(name, "rows")); });
  }
  for (const auto& k : custom_kinds())  // do_cast: the dequantising kernels
    seed<L>(root, t, "custom-cast-" + name_of(k), d, [&](const L& c) { return plain(c) && is_custom(c.scenario.shape.format, k) && c.scenario.shape.format.do_cast; });
  seed<L>(root, t, "custom-index-ue8m0", d, [&](const L& c) { const auto& f = c.scenario.shape.format; return plain(c) && !kvcheck::props::is_named_format(f) && f.sf_format == kvcheck::SfFormat::kUE8M0 && f.is_index() && !f.token_interleaved; });
  seed<L>(root, t, "custom-index-interleaved-fp32", d, [&](const L& c) { const auto& f = c.scenario.shape.format; return plain(c) && !kvcheck::props::is_named_format(f) && f.is_index() && f.token_interleaved && f.sf_format == kvcheck::SfFormat::kFP32; });
  seed<L>(root, t, "custom-planar-cast", d, [&](const L& c) { const auto& f = c.scenario.shape.format; return plain(c) && !kvcheck::props::is_named_format(f) && f.do_cast && !f.token_interleaved && c.scenario.shape.block_size > 1; });
  seed<L>(root, t, "custom-cast-bf16-tail", d, [&](const L& c) { const auto& f = c.scenario.shape.format; return plain(c) && !kvcheck::props::is_named_format(f) && f.bf16_tail_elements > 0 && c.scenario.shape.block_size > 1; });
  seed<L>(root, t, "padded-out-rows", d, [&](const L& c) { return plain(c) && c.scenario.out_data_pad == 33 && c.scenario.out_scale_pad == 5 && c.scenario.shape.format.is_index(); });
}

void round_trip_seeds(const fs::path& root) {
  using R = StoreScenario;
  const auto d = byte_decoder(kvcheck::fuzz::decode_round_trip);
  for (const auto& f : kFormats) {
    seed<R>(root, "round_trip", "fmt-" + f, d, [&](const R& s) { return s.shape.format.name == f && valid_rows(s) >= (f == "BF16(4096)" ? 1 : 4); });
    seed<R>(root, "round_trip", "fmt-" + f + "-bs133", d, [&](const R& s) { return s.shape.format.name == f && s.shape.block_size == 133 && valid_rows(s) >= 2; });
  }
  for (int bs : kBlockSizes)
    seed<R>(root, "round_trip", "bs-" + std::to_string(bs), d, [&](const R& s) { return s.shape.block_size == bs && valid_rows(s) >= 2; });
  for (const auto& k : custom_kinds())
    if (k.group_class == 0 || k.group_class == 16)
      seed<R>(root, "round_trip", "custom-" + name_of(k), d, [&](const R& s) { return is_custom(s.shape.format, k) && valid_rows(s) >= 3; });
  seed<R>(root, "round_trip", "all-padding", d, [](const R& s) { return kind(s) == "all-padding" && s.slot_mapping.size() >= 2; });
  seed<R>(root, "round_trip", "padding-next-to-slot-0", d, [](const R& s) { return kind(s) == "padding-next-to-slot-0" && valid_rows(s) >= 2; });
  seed<R>(root, "round_trip", "specials-V41", d, [](const R& s) { return value_stats(s).special >= 0.4 && s.shape.format.name == "V41" && valid_rows(s) >= 2; });
}

void format_seeds(const fs::path& root) {
  using F = kvcheck::props::FormatScenario;
  const auto d = byte_decoder(kvcheck::fuzz::decode_format);
  for (const auto& f : std::vector<std::string>{"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX"})
    seed<F>(root, "format", "fmt-" + f, d, [&](const F& s) { return s.format.name == f; });
  seed<F>(root, "format", "bf16-random-E", d, [](const F& s) { return starts(s.format.name, "BF16(") && s.format.elements != 512; });
  seed<F>(root, "format", "bf16-4096", d, [](const F& s) { return s.format.name == "BF16(4096)"; });
  seed<F>(root, "format", "custom-e2m1-odd-group", d, [](const F& s) { return starts(s.format.name, "custom(") && s.format.quantized_dtype == kvcheck::QuantizedDtype::kE2M1 && s.format.elements_per_sf % 2 == 1; });
  seed<F>(root, "format", "custom-index-fp32", d, [](const F& s) { return starts(s.format.name, "custom(") && s.format.is_index() && s.format.sf_format == kvcheck::SfFormat::kFP32; });
  seed<F>(root, "format", "mutated", d, [](const F& s) { return has(s.format.name, "~mutated"); });
  seed<F>(root, "format", "arbitrary", d, [](const F& s) { return s.format.name == "fuzzed"; });
  seed<F>(root, "format", "resolve-132-ambiguous", d, [](const F& s) { return s.dtype == kvcheck::CacheDtype::kUInt8 && !s.shape.empty() && s.shape.back() == 132 && s.sf_choice == 0; });
  seed<F>(root, "format", "resolve-132-fp32", d, [](const F& s) { return s.dtype == kvcheck::CacheDtype::kUInt8 && !s.shape.empty() && s.shape.back() == 132 && s.sf_choice == 3; });
  for (int64_t bpt : {528, 288, 68, 656})
    seed<F>(root, "format", "resolve-" + std::to_string(bpt), d, [&](const F& s) { return s.dtype == kvcheck::CacheDtype::kUInt8 && !s.shape.empty() && s.shape.back() == bpt; });
  seed<F>(root, "format", "resolve-bf16", d, [](const F& s) { return s.dtype == kvcheck::CacheDtype::kBF16 && !s.shape.empty() && s.shape.back() == 512; });
  seed<F>(root, "format", "resolve-empty-shape", d, [](const F& s) { return s.shape.empty(); });
  seed<F>(root, "format", "V41-bs133", d, [](const F& s) { return s.format.name == "V41" && s.block_size == 133; });
  seed<F>(root, "format", "far-block", d, [](const F& s) { return s.format.is_index() && s.num_blocks == (1 << 20) && s.block >= (1 << 19); });
}

void numerics_seeds(const fs::path& root) {
  using N = kvcheck::props::NumericsScenario;
  const auto d = byte_decoder(kvcheck::fuzz::decode_numerics);
  for (const auto& f : std::vector<std::string>{"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX", "FP8_DS_MLA", "FP8_POW2SF_INDEX", "MODEL1"})
    seed<N>(root, "numerics", "group-" + f, d, [&](const N& s) { return s.format.name == f && s.floats.size() >= 8; });
  for (auto dt : {kvcheck::QuantizedDtype::kE4M3, kvcheck::QuantizedDtype::kE2M1})
    for (auto sf : {kvcheck::SfFormat::kUE8M0, kvcheck::SfFormat::kE4M3, kvcheck::SfFormat::kFP32})
      seed<N>(root, "numerics", "custom-" + kvcheck::to_string(dt) + "-" + kvcheck::to_string(sf), d, [=](const N& s) { return starts(s.format.name, "custom(") && s.format.quantized_dtype == dt && s.format.sf_format == sf && s.floats.size() >= 2; });
  for (auto sf : {kvcheck::SfFormat::kFP32Pow2, kvcheck::SfFormat::kFP32Pow2FloorFirst, kvcheck::SfFormat::kUE8M0FloorAfter})
    seed<N>(root, "numerics", "custom-e4m3-" + kvcheck::to_string(sf), d, [=](const N& s) { return starts(s.format.name, "custom(") && s.format.sf_format == sf && s.floats.size() >= 2; });
  seed<N>(root, "numerics", "zero-group", d, [](const N& s) { return std::all_of(s.group.begin(), s.group.end(), [](uint16_t v) { return (v & 0x7FFF) == 0; }); });
  seed<N>(root, "numerics", "nan-inf-in-group", d, [](const N& s) { return std::any_of(s.group.begin(), s.group.end(), [](uint16_t v) { return (v & 0x7FFF) > 0x7F80; }) && std::any_of(s.group.begin(), s.group.end(), [](uint16_t v) { return (v & 0x7FFF) == 0x7F80; }); });
  seed<N>(root, "numerics", "many-floats", d, [](const N& s) { return s.floats.size() >= 40; });
}

void index_seeds(const fs::path& root) {
  using I = kvcheck::props::IndexScenario;
  using E = kvcheck::ErrorCode;
  const auto d = byte_decoder(kvcheck::fuzz::decode_index);
  const char* names[] = {"convert", "cat", "expand", "swa-decode"};
  for (int op = 0; op < 4; ++op)
    for (int i = 0; i < 3; ++i)
      seed<I>(root, "index", std::string(names[op]) + "-" + std::to_string(i), d, [&](const I& s) {
        return static_cast<int>(s.op) == op && s.num_q >= 2 && s.fault.empty() && (i != 2 || s.num_q >= 12);
      });
  auto convert = [](const I& s) { return s.op == I::Op::kConvert && s.num_q >= 2 && s.k >= 2; };
  seed<I>(root, "index", "convert-valid", d, [&](const I& s) { return convert(s) && s.fault.empty() && s.seq_ids.empty(); });
  seed<I>(root, "index", "convert-valid-seq-ids", d, [&](const I& s) { return convert(s) && s.fault.empty() && !s.seq_ids.empty(); });
  seed<I>(root, "index", "convert-in-place", d, [&](const I& s) { return convert(s) && s.fault.empty() && s.in_place; });
  seed<I>(root, "index", "convert-bs133", d, [&](const I& s) { return convert(s) && s.block_size == 133 && s.k >= 4 && s.fault.empty(); });
  seed<I>(root, "index", "convert-past-max-blocks", d, [](const I& s) { return s.code == E::kRangeOutOfTable && has(s.fault, "past max_blocks"); });
  seed<I>(root, "index", "convert-missing-block", d, [](const I& s) { return s.code == E::kRangeOutOfTable && has(s.fault, "-1 table entry"); });
  seed<I>(root, "index", "convert-negative-entry", d, [](const I& s) { return s.code == E::kInvalidArgument; });
  seed<I>(root, "index", "convert-raw-awkward", d, [](const I& s) { return s.fault == "raw top-k entries" && s.num_q >= 2 && s.k >= 2; });
  seed<I>(root, "index", "convert-raw-table-hole", d, [](const I& s) { return s.fault == "a -1 table entry" && s.num_q >= 2 && s.k >= 2; });
  seed<I>(root, "index", "convert-no-table-row", d, [](const I& s) {
    return s.fault == "no seq_ids" && s.max_blocks > 0 && s.num_q > static_cast<int32_t>(s.block_table.size()) / s.max_blocks; });
  seed<I>(root, "index", "cat-minus-one", d, [](const I& s) {
    return s.op == I::Op::kCat && s.num_q >= 2 && std::count(s.right.begin(), s.right.end(), -1) >= 2; });
  seed<I>(root, "index", "expand-short-pieces", d, [](const I& s) {
    return s.op == I::Op::kExpand && s.num_q >= 2 && s.pivots[1] + s.pivots[3] < s.width && s.pivots[3] > 0; });
  seed<I>(root, "index", "swa-decode-wraps", d, [](const I& s) {
    if (s.op != I::Op::kSwaDecode || s.num_q < 2) return false;
    for (int32_t q = 0; q < s.num_q; ++q)
      if (s.start_len[2 * q] % s.ring_size + s.start_len[2 * q + 1] > s.ring_size) return true;
    return false; });
  seed<I>(root, "index", "empty", d, [](const I& s) { return s.num_q == 0; });
  // The scenario of regressions/index-7be779793fc1 (FuzzedDataProvider bytes): k = 0,
  // queries past the table's single row, no seq_ids (kInvalidArgument, nothing written).
  seed<I>(root, "index", "regression-no-table-row-k0", d, [](const I& s) {
    return s.fault == "no seq_ids" && s.k == 0 && s.max_blocks > 0 && s.num_q >= 3 &&
           s.num_q > static_cast<int32_t>(s.block_table.size()) / s.max_blocks; }, "regressions/index-12fb9a03d6d0");
}

// "invalid: begin > end" -> "invalid-begin-gt-end": file names without spaces or signs.
std::string slug(std::string s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '>' || c == '<') out += c == '>' ? "gt" : "lt";
    else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

void plan_seeds(const fs::path& root) {
  using P = kvcheck::props::PlanScenario;
  using K = kvcheck::props::PlanOp::Kind;
  using M = P::Mode;
  const auto d = byte_decoder(kvcheck::fuzz::decode_plan);
  auto count = [](const P& s, K k, const std::string& note) {
    int n = 0;
    for (const auto& op : s.ops) n += op.kind == k && (note.empty() ? !has(op.note, "invalid") : has(op.note, note));
    return n;
  };
  auto valid = [](const P& s) {
    for (const auto& op : s.ops) if (has(op.note, "invalid")) return false;
    return s.block_size >= 1;
  };
  auto small = [](const P& s) { return s.block_size >= 1 && s.block_size < (1 << 20); };
  seed<P>(root, "plan", "builder-all-kinds", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && valid(s) && count(s, K::kSegment, "") && count(s, K::kZeroFill, "") && count(s, K::kPaged, "") && count(s, K::kRing, ""); });
  seed<P>(root, "plan", "builder-bs133", d, [&](const P& s) { return s.mode == M::kBuilder && s.block_size == 133 && valid(s) && s.ops.size() >= 4; });
  seed<P>(root, "plan", "builder-zero-fill-pieces", d, [&](const P& s) {
    for (const auto& op : s.ops) if (op.kind == K::kZeroFill && op.a > 2 * s.block_size) return small(s) && valid(s);
    return false; });
  for (const std::string note : {"shuffled table", "random table", "holey table", "short table"})
    seed<P>(root, "plan", "builder-paged-" + note.substr(0, note.find(' ')), d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && count(s, K::kPaged, note) >= 1 + (note[0] == 's' || note[0] == 'r'); });
  seed<P>(root, "plan", "builder-ring-wraps", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && s.block_size > 1 && count(s, K::kRing, "wraps") >= 2; });
  auto ring_edge = [](const P& s, int64_t past) {  // a ring range ending `past` tokens after the wrap point
    for (const auto& op : s.ops)
      if (op.kind == K::kRing && !op.code && op.c > op.b && op.b % s.block_size + (int64_t{op.c} - op.b) == s.block_size + past) return true;
    return false; };
  seed<P>(root, "plan", "builder-ring-wrap-point", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && s.block_size > 2 && ring_edge(s, 0); });
  seed<P>(root, "plan", "builder-ring-wraps-by-one", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && s.block_size > 2 && ring_edge(s, 1); });
  seed<P>(root, "plan", "builder-ring-exact", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && s.block_size > 1 && count(s, K::kRing, "exactly the ring") >= 1; });
  // Every error of every append kind, once in an otherwise ordinary sequence.
  const std::vector<std::pair<K, std::string>> errors = {
      {K::kSegment, "invalid block"}, {K::kSegment, "invalid: begin > end"},
      {K::kSegment, "invalid: end > block_size"}, {K::kSegment, "invalid: begin < 0"},
      {K::kZeroFill, "invalid: negative"}, {K::kPaged, "invalid: begin > end"},
      {K::kPaged, "invalid: begin < 0"}, {K::kPaged, "invalid: past the table"},
      {K::kPaged, "invalid: hole in the range"}, {K::kRing, "invalid: state_id < 0"},
      {K::kRing, "invalid: begin < 0"}, {K::kRing, "invalid: longer than the ring"},
      {K::kRing, "invalid: begin > end"}};
  const char* kind_names[] = {"segment", "zero-fill", "paged", "ring"};
  for (const auto& error : errors) {
    const K kind = error.first;  // named copies: clang-14 cannot capture structured bindings
    const std::string note = error.second;
    seed<P>(root, "plan", std::string("builder-") + kind_names[static_cast<int>(kind)] + "-" + slug(note), d, [&](const P& s) {
      int invalid = 0;
      for (const auto& op : s.ops) invalid += has(op.note, "invalid");
      return s.mode == M::kBuilder && small(s) && s.ops.size() >= 3 && invalid == 1 && count(s, kind, note) == 1; });
  }
  seed<P>(root, "plan", "builder-huge-overflow", d, [&](const P& s) {
    int64_t total = 0;
    for (const auto& op : s.ops) if (op.kind == K::kZeroFill && op.a > 0) total += op.a;
    return s.mode == M::kBuilder && s.block_size >= (1 << 20) && total > INT32_MAX; });
  seed<P>(root, "plan", "builder-huge-paged", d, [&](const P& s) { return s.mode == M::kBuilder && s.block_size >= (1 << 20) && count(s, K::kPaged, "") >= 2; });
  // The scenario of regressions/plan-407088fc1898 (FuzzedDataProvider bytes): a paged
  // range ending at INT32_MAX - 1 made reversed (begin = end + 1 must not overflow).
  seed<P>(root, "plan", "regression-paged-begin-past-int32-max", d, [](const P& s) {
    for (const auto& op : s.ops) if (op.kind == K::kPaged && op.b == INT32_MAX && has(op.note, "begin > end")) return s.mode == M::kBuilder;
    return false; }, "regressions/plan-4905883ea6a4");
  seed<P>(root, "plan", "builder-bad-block-size", d, [](const P& s) { return s.mode == M::kBuilder && s.block_size < 1; });
  seed<P>(root, "plan", "builder-empty", d, [](const P& s) { return s.mode == M::kBuilder && s.ops.empty() && s.block_size >= 1; });
  seed<P>(root, "plan", "compressed", d, [](const P& s) { return s.mode == M::kCompressed && s.broken.empty() && s.table_mode[0] == 'd' && s.seqs.size() >= 3 && s.ratio > 1; });
  seed<P>(root, "plan", "compressed-bs133", d, [](const P& s) { return s.mode == M::kCompressed && s.broken.empty() && s.table_mode[0] == 'd' && s.block_size == 133 && s.seqs.size() >= 2; });
  seed<P>(root, "plan", "compressed-seqlen-below-ratio", d, [](const P& s) {
    if (s.mode != M::kCompressed || !s.broken.empty() || s.table_mode[0] != 'd' || s.seqs.size() < 2) return false;
    for (const auto& q : s.seqs) if (q.seqlen_k > 0 && q.seqlen_k < s.ratio) return true;
    return false; });
  for (const std::string t : {"holey", "short"})
    seed<P>(root, "plan", "compressed-" + t, d, [&](const P& s) { return s.mode == M::kCompressed && s.broken.empty() && s.table_mode == t && s.seqs.size() >= 2; });
  for (const std::string b : {"ratio ", "ratio does not", "block_size ", "seqlen_k"})
    seed<P>(root, "plan", "compressed-bad-" + b.substr(0, b.find(' ') == std::string::npos ? b.size() : b.find(' ')) + (b == "ratio does not" ? "-divisor" : ""), d, [&](const P& s) { return s.mode == M::kCompressed && starts(s.broken, b) && !s.seqs.empty(); });
  auto swa_feature = [](const P& s, int what) {
    for (const auto& q : s.seqs) {
      const int64_t he = q.seqlen_k - q.seqlen_q, hb = he - s.window;
      const int64_t pad = std::clamp<int64_t>(q.swa_valid_start - hb, 0, s.window);
      const int64_t b = hb + pad, len = he - b;
      if (what == 0 && len > 0 && b % s.ring_size + len > s.ring_size) return true;  // wraps
      if (what == 1 && pad > 0 && pad < s.window) return true;                        // zero fill
      if (what == 2 && he < s.window) return true;                                     // short history
      if (what == 3 && q.seqlen_q > s.ring_size) return true;                          // chunk > ring
      if (what == 4 && he >= (1 << 30)) return true;                                   // far positions
    }
    return false;
  };
  const char* swa_names[] = {"wrapped-ring", "zero-fill", "short-history", "chunk-longer-than-ring", "far-positions"};
  for (int w = 0; w < 5; ++w)
    seed<P>(root, "plan", std::string("swa-") + swa_names[w], d, [&](const P& s) { return s.mode == M::kSwa && s.broken.empty() && s.seqs.size() >= 2 && swa_feature(s, w); });
  for (const std::string b : {"window", "ring_size", "seqlen_q >", "seqlen_q <", "swa_valid_start", "state_id"})
    seed<P>(root, "plan", "swa-bad-" + std::string(b == "seqlen_q >" ? "seqlen_q-above-k" : b == "seqlen_q <" ? "seqlen_q-negative" : b), d, [&](const P& s) { return s.mode == M::kSwa && starts(s.broken, b) && s.seqs.size() >= 2; });
}

void prefill_seeds(const fs::path& root) {
  using F = kvcheck::props::PrefillScenario;
  const auto d = byte_decoder(kvcheck::fuzz::decode_prefill);
  auto any = [](const F& s, int what) {
    for (const auto& q : s.seqs) {
      const int64_t he = q.seqlen_k - q.seqlen_q, hb = he - s.window;
      const int64_t pad = std::clamp<int64_t>(q.swa_valid_start - hb, 0, s.window);
      const int64_t b = hb + pad, len = he - b;
      if (what == 0 && len > 0 && b % s.ring_size + len > s.ring_size) return true;
      if (what == 1 && pad > 0) return true;
      if (what == 2 && q.seqlen_k > 0 && q.seqlen_k < s.ratio) return true;
      if (what == 3 && he < s.window && he > 0) return true;
      if (what == 4 && q.seqlen_q > s.ring_size) return true;
      if (what == 5 && q.swa_valid_start > 0 && q.swa_valid_start < he) return true;
    }
    return what == 6 && s.block_size == 133;
  };
  const char* names[] = {"wrapped-ring", "zero-fill", "seqlen-below-ratio", "short-history",
                         "chunk-longer-than-ring", "swa-valid-start", "bs133"};
  for (int w = 0; w < 7; ++w)
    for (const bool v41 : {false, true})
      seed<F>(root, "prefill", std::string(names[w]) + (v41 ? "-V41" : "-BF16"), d, [&](const F& f) {
        return any(f, w) && (f.format.name == "V41") == v41 && !f.store_before_load &&
               f.seqs.size() >= 2 && f.topk_width >= 1; });
  seed<F>(root, "prefill", "four-sequences", d, [](const F& f) { return f.seqs.size() == 4 && !f.store_before_load && f.topk_width >= 3; });
  seed<F>(root, "prefill", "store-before-load-overlap", d, [](const F& f) { return f.store_before_load && kvcheck::props::store_overlaps_visible_history(f); });
  seed<F>(root, "prefill", "store-before-load-no-overlap", d, [](const F& f) { return f.store_before_load && !f.seqs.empty() && !kvcheck::props::store_overlaps_visible_history(f); });
  seed<F>(root, "prefill", "empty-batch", d, [](const F& f) { return f.seqs.empty(); });
}

// K/V family (SPEC §7): every cache dtype, NHD/HND, both scale kinds, one-allocation
// views, the seed's sizes, the error paths.
void kv_seeds(const fs::path& root) {
  using S = kvcheck::props::StoreKvScenario;
  using G = kvcheck::props::GatherKvScenario;
  using kvcheck::KvDtype;
  using kvcheck::props::KvAlloc;
  const auto ds = byte_decoder(kvcheck::fuzz::decode_store_kv);
  const auto dg = byte_decoder(kvcheck::fuzz::decode_gather_kv);
  auto valid_store = [&](const S& s) {
    kvcheck::props::KvBuffers b(s.cache), r(s.cache);
    return !s.rope && !kvcheck::props::run_store_kv(nullptr, s, b) && b.bytes != r.bytes;
  };
  auto valid_gather = [&](const G& g) {
    kvcheck::props::KvBuffers b(g.cache);
    kvcheck::props::KvOutBuffers o(g);
    return g.cu_seqlens_k.back() > 0 && !kvcheck::props::run_gather_kv(nullptr, g, b, o);
  };
  for (KvDtype d : kvcheck::kv_dtypes())
    for (auto order : {kvcheck::KvHeadLayout::kNHD, kvcheck::KvHeadLayout::kHND}) {
      const std::string f = kvcheck::to_string(d) + "-" + kvcheck::to_string(order);
      seed<S>(root, "store_kv", f, ds, [&](const S& s) { return s.cache.dtype == d && s.cache.order == order && s.slot_mapping.size() >= 3 && valid_store(s); });
      seed<G>(root, "gather_kv", f, dg, [&](const G& g) { return g.cache.dtype == d && g.cache.order == order && g.cu_seqlens_k.size() >= 3 && valid_gather(g); });
    }
  for (auto k : {kvcheck::KvScaleKind::kPerTensor, kvcheck::KvScaleKind::kPerHead}) {
    const std::string f = "fp8-" + kvcheck::to_string(k);
    seed<S>(root, "store_kv", f, ds, [&](const S& s) { return s.cache.scale_kind == k && s.cache.num_kv_heads > 1 && valid_store(s); });
    seed<G>(root, "gather_kv", f, dg, [&](const G& g) { return g.cache.scale_kind == k && g.cache.num_kv_heads > 1 && valid_gather(g); });
  }
  for (auto a : {KvAlloc::kNanoVllm, KvAlloc::kFlashInfer, KvAlloc::kLayerPages, KvAlloc::kNvfp4Pages}) {
    const std::string f = a == KvAlloc::kNanoVllm     ? "view-nano-vllm"
                          : a == KvAlloc::kFlashInfer ? "view-flashinfer"
                          : a == KvAlloc::kNvfp4Pages ? "view-nvfp4-pages"
                                                      : "view-layer-pages";
    seed<S>(root, "store_kv", f, ds, [&](const S& s) { return s.cache.alloc == a && valid_store(s); });
    seed<G>(root, "gather_kv", f, dg, [&](const G& g) { return g.cache.alloc == a && valid_gather(g); });
  }
  for (int bs : {1, 16, 133, 256})
    seed<S>(root, "store_kv", "bs-" + std::to_string(bs), ds, [&](const S& s) { return s.cache.block_size == bs && valid_store(s); });
  // NVFP4 (docs/spec.md §7.9): both scale layouts, vLLM's pages, the scale-cache faults.
  for (const bool inter : {false, true}) {
    const std::string f = std::string("e2m1-") + (inter ? "interleave4" : "linear");
    const auto want = inter ? kvcheck::KvSfLayout::kInterleave4 : kvcheck::KvSfLayout::kLinear;
    seed<S>(root, "store_kv", f, ds, [&](const S& s) { return s.cache.dtype == KvDtype::kE2M1 && s.cache.sf_layout == want && s.slot_mapping.size() >= 3 && valid_store(s); });
    seed<G>(root, "gather_kv", f, dg, [&](const G& g) { return g.cache.dtype == KvDtype::kE2M1 && g.cache.sf_layout == want && g.cu_seqlens_k.size() >= 3 && valid_gather(g); });
  }
  seed<S>(root, "store_kv", "e2m1-error-scale-cache", ds, [](const S& s) { return s.cache.sf_fault != kvcheck::props::KvSfFault::kNone; });
  seed<G>(root, "gather_kv", "e2m1-error-scale-cache", dg, [](const G& g) { return g.cache.sf_fault != kvcheck::props::KvSfFault::kNone; });
  seed<S>(root, "store_kv", "e2m1-error-scale-into-data", ds, [](const S& s) { return s.cache.sf_fault == kvcheck::props::KvSfFault::kKSfIntoData; });
  seed<S>(root, "store_kv", "heads-40", ds, [&](const S& s) { return s.cache.num_kv_heads == 40 && s.cache.head_dim >= 64 && valid_store(s); });
  seed<G>(root, "gather_kv", "heads-40", dg, [&](const G& g) { return g.cache.num_kv_heads == 40 && g.cache.head_dim >= 64 && valid_gather(g); });
  seed<S>(root, "store_kv", "padded-strides", ds, [&](const S& s) { return s.cache.pad_head > 0 && s.cache.pad_token > 0 && s.key.head_stride > s.cache.head_dim && valid_store(s); });
  seed<S>(root, "store_kv", "graph-padding-rows", ds, [&](const S& s) { return s.key.rows > static_cast<int64_t>(s.slot_mapping.size()) && valid_store(s); });
  seed<S>(root, "store_kv", "all-padding", ds, [&](const S& s) { return s.slot_mapping.size() >= 3 && std::all_of(s.slot_mapping.begin(), s.slot_mapping.end(), [](int32_t x) { return x == -1; }); });
  seed<S>(root, "store_kv", "empty", ds, [&](const S& s) { return s.slot_mapping.empty(); });
  // A fused RoPE of the key rows (docs/spec.md §8.4).
  const auto rope_ok = [&](const S& s) {
    kvcheck::props::KvBuffers b(s.cache), r(s.cache);
    return s.rope && s.fault.empty() && !kvcheck::props::run_store_kv(nullptr, s, b) && b.bytes != r.bytes;
  };
  seed<S>(root, "store_kv", "rope-neox-bf16", ds, [&](const S& s) { return rope_ok(s) && s.rope->is_neox && s.key.dtype == KvDtype::kBF16 && s.rope->rot_dim == s.cache.head_dim / 2 * 2; });
  seed<S>(root, "store_kv", "rope-gptj-sub-range-fp16", ds, [&](const S& s) { return rope_ok(s) && !s.rope->is_neox && s.key.dtype == KvDtype::kFP16 && s.rope->rot_dim < s.cache.head_dim; });
  seed<S>(root, "store_kv", "rope-fp8-cache", ds, [&](const S& s) { return rope_ok(s) && kvcheck::is_fp8(s.cache.dtype); });
  seed<S>(root, "store_kv", "rope-cancelling-pairs", ds, [&](const S& s) {
    if (!rope_ok(s) || s.rope->rot_dim < 8) return false;
    for (size_t i = 0; i < s.slot_mapping.size(); ++i)
      if (s.slot_mapping[i] >= 0 && kvcheck::props::rope_cancels(*s.rope, static_cast<int64_t>(i))) return true;
    return false;
  });
  seed<S>(root, "store_kv", "rope-error-position", ds, [](const S& s) { return s.rope && s.code == kvcheck::ErrorCode::kInvalidArgument && s.fault.rfind("positions[", 0) == 0; });
  seed<S>(root, "store_kv", "rope-error-position-before-slot", ds, [](const S& s) { return s.rope && s.fault.find("positions before slots") != std::string::npos; });
  seed<S>(root, "store_kv", "rope-error-rot-dim", ds, [](const S& s) { return s.rope && s.code == kvcheck::ErrorCode::kInvalidArgument && s.fault.rfind("rot_dim", 0) == 0; });
  auto store_err = [](const S& s, kvcheck::ErrorCode c) {
    kvcheck::props::KvBuffers b(s.cache);
    return kvcheck::props::run_store_kv(nullptr, s, b) == c;
  };
  auto gather_err = [](const G& g, kvcheck::ErrorCode c) {
    kvcheck::props::KvBuffers b(g.cache);
    kvcheck::props::KvOutBuffers o(g);
    return kvcheck::props::run_gather_kv(nullptr, g, b, o) == c;
  };
  using E = kvcheck::ErrorCode;
  for (auto [name, code] : std::vector<std::pair<std::string, E>>{{"slot-out-of-range", E::kSlotOutOfRange}, {"duplicate-slot", E::kDuplicateSlot}, {"shape-mismatch", E::kShapeMismatch}, {"invalid-argument", E::kInvalidArgument}})
    seed<S>(root, "store_kv", "error-" + name, ds, [&, code = code](const S& s) { return store_err(s, code); });
  for (auto [name, code] : std::vector<std::pair<std::string, E>>{{"range-out-of-table", E::kRangeOutOfTable}, {"block-out-of-range", E::kBlockOutOfRange}, {"shape-mismatch", E::kShapeMismatch}, {"invalid-argument", E::kInvalidArgument}})
    seed<G>(root, "gather_kv", "error-" + name, dg, [&, code = code](const G& g) { return gather_err(g, code); });
  // seq_starts (SPEC §7.5): both units, a start off its block, a start at the row's end;
  // the refusals (a sequence past its row, a negative start, a wrong length).
  using kvcheck::SeqStartUnit;
  auto off_block = [](const G& g) {
    for (int32_t v : g.seq_starts) if (v % g.cache.block_size != 0) return true;
    return false;
  };
  auto at_row_end = [](const G& g) {  // a sequence with tokens whose last one is the row's last position
    for (size_t i = 0; i < g.seq_starts.size(); ++i) {
      const int64_t len = g.cu_seqlens_k[i + 1] - g.cu_seqlens_k[i];
      if (len > 0 && g.seq_start_unit == SeqStartUnit::kToken &&
          g.seq_starts[i] + len == int64_t{g.max_blocks} * g.cache.block_size) return true;
    }
    return false;
  };
  seed<G>(root, "gather_kv", "seq-starts-tokens-off-block", dg, [&](const G& g) { return g.seq_start_unit == SeqStartUnit::kToken && g.cu_seqlens_k.size() >= 3 && off_block(g) && g.cache.block_size > 1 && valid_gather(g); });
  seed<G>(root, "gather_kv", "seq-starts-blocks-off-block", dg, [&](const G& g) { return g.seq_start_unit == SeqStartUnit::kBlock && !g.seq_starts.empty() && off_block(g) && g.cache.block_size > 1 && valid_gather(g); });
  seed<G>(root, "gather_kv", "seq-starts-row-end", dg, [&](const G& g) { return at_row_end(g) && g.cache.block_size > 1 && valid_gather(g); });
  seed<G>(root, "gather_kv", "seq-starts-past-row", dg, [](const G& g) { return g.code == E::kRangeOutOfTable && g.fault.rfind("seq_starts", 0) == 0; });
  seed<G>(root, "gather_kv", "seq-starts-negative", dg, [](const G& g) { return g.code == E::kInvalidArgument && g.fault.rfind("seq_starts[", 0) == 0; });
  seed<G>(root, "gather_kv", "seq-starts-wrong-length", dg, [](const G& g) { return g.code == E::kShapeMismatch && g.fault.rfind("seq_starts has", 0) == 0; });
}

void slot_mapping_seeds(const fs::path& root) {
  using S = kvcheck::props::SlotMappingScenario;
  using Op = S::Op;
  const auto d = byte_decoder(kvcheck::fuzz::decode_slot_mapping);
  auto valid = [](const S& s, Op op) { return s.op == op && s.fault.empty(); };
  auto cached = [](const S& s) {
    for (int32_t c : s.num_cached) if (c > 0) return true;
    return false;
  };
  auto tail_token = [](const S& s) {  // decode: a last token that ends a block (the next one is past it)
    for (size_t i = 0; i < s.tables.size(); ++i) if (s.num_tokens[i] > 1 && s.num_tokens[i] % s.block_size == 0) return true;
    return false;
  };
  seed<S>(root, "slot_mapping", "prefill", d, [&](const S& s) { return valid(s, Op::kPrefill) && s.tables.size() >= 3 && cached(s) && s.block_size > 1; });
  seed<S>(root, "slot_mapping", "prefill-bs133", d, [&](const S& s) { return valid(s, Op::kPrefill) && s.block_size == 133 && s.tables.size() >= 2; });
  seed<S>(root, "slot_mapping", "decode", d, [&](const S& s) { return valid(s, Op::kDecode) && s.tables.size() >= 3 && s.block_size > 1; });
  seed<S>(root, "slot_mapping", "decode-last-token-ends-block", d, [&](const S& s) { return valid(s, Op::kDecode) && tail_token(s); });
  seed<S>(root, "slot_mapping", "swa-store-wraps", d, [&](const S& s) { return valid(s, Op::kSwaStore) && s.ring_size > 1 && s.seqlen_q > s.ring_size && s.seqlen_k > s.seqlen_q; });
  seed<S>(root, "slot_mapping", "swa-store-history", d, [&](const S& s) { return valid(s, Op::kSwaStore) && s.ring_size > 1 && s.seqlen_q > 0 && s.seqlen_q < s.ring_size && s.seqlen_k - s.seqlen_q > s.ring_size; });
  seed<S>(root, "slot_mapping", "swa-window-long-history", d, [&](const S& s) { return valid(s, Op::kSwaWindow) && s.window > 1 && s.seqlen_k > s.ring_size + s.window && s.swa_valid_start == 0; });
  seed<S>(root, "slot_mapping", "swa-window-short-history", d, [&](const S& s) { return valid(s, Op::kSwaWindow) && s.window > 2 && s.seqlen_k < s.window; });
  seed<S>(root, "slot_mapping", "swa-window-valid-start", d, [&](const S& s) { return valid(s, Op::kSwaWindow) && s.swa_valid_start > 0 && s.swa_valid_start < s.seqlen_k; });
  seed<S>(root, "slot_mapping", "swa-window-empty", d, [&](const S& s) { return valid(s, Op::kSwaWindow) && s.swa_valid_start >= s.seqlen_k; });
  seed<S>(root, "slot_mapping", "prepare-prefill", d, [&](const S& s) { return valid(s, Op::kPreparePrefill) && s.tables.size() >= 3 && cached(s) && s.block_size > 1; });
  seed<S>(root, "slot_mapping", "prepare-prefill-rule", d, [&](const S& s) { return valid(s, Op::kPreparePrefill) && s.tables.size() >= 2 && s.rule_multiple > 1; });
  seed<S>(root, "slot_mapping", "prepare-decode-graph", d, [&](const S& s) { return valid(s, Op::kPrepareDecode) && s.tables.size() >= 2 && s.graph_batch_size > static_cast<int32_t>(s.tables.size()); });
  seed<S>(root, "slot_mapping", "prepare-decode-last-token-ends-block", d, [&](const S& s) { return valid(s, Op::kPrepareDecode) && tail_token(s); });
  for (const std::string f : {"block_size rule broken", "graph_batch_size below", "raw rule and graph rows"})
    seed<S>(root, "slot_mapping", "prepare-" + slug(f), d, [&](const S& s) { return starts(s.fault, f) && s.tables.size() >= 2; });
  for (const Op op : {Op::kPrefill, Op::kDecode, Op::kPageTable})
    seed<S>(root, "slot_mapping", std::string(op == Op::kPrefill ? "prefill" : op == Op::kDecode ? "decode" : "page-table") + "-past-table", d, [&, op](const S& s) { return s.op == op && s.code && s.tables.size() >= 2; });
  // FlashInfer's page table (SPEC §7.8): prefix-cached chunks, a partial and a full last page.
  auto full_last_page = [](const S& s) {
    for (int32_t n : s.num_tokens) if (n > 0 && n % s.block_size == 0) return true;
    return false;
  };
  seed<S>(root, "slot_mapping", "page-table", d, [&](const S& s) { return valid(s, Op::kPageTable) && s.tables.size() >= 3 && cached(s) && s.block_size > 1; });
  seed<S>(root, "slot_mapping", "page-table-full-last-page", d, [&](const S& s) { return valid(s, Op::kPageTable) && s.tables.size() >= 2 && full_last_page(s) && s.block_size > 1; });
  seed<S>(root, "slot_mapping", "page-table-raw", d, [&](const S& s) { return s.op == Op::kPageTable && !s.fault.empty() && !s.code && s.tables.size() >= 2; });
  for (const std::string f : {"ring_size < 1", "state_id < 0", "seqlen_q > seqlen_k", "seqlen_q < 0", "window outside", "seqlen_k < 1", "swa_valid_start < 0"})
    seed<S>(root, "slot_mapping", "error-" + slug(f), d, [&](const S& s) { return s.code && starts(s.fault, f); });
  for (const std::string f : {"raw block_size", "raw token counts", "raw table entries", "raw SWA arguments"})
    seed<S>(root, "slot_mapping", slug(f), d, [&](const S& s) { return s.fault == f && (s.tables.size() >= 2 || f[4] == 'S'); });
}

}  // namespace

void copy_blocks_seeds(const fs::path& root) {
  using S = kvcheck::props::CopyBlocksScenario;
  using L = S::Layout;
  using E = kvcheck::ErrorCode;
  const auto d = byte_decoder(kvcheck::fuzz::decode_copy_blocks);
  const auto valid = [](const S& s) { return s.fault.empty() && s.block_mapping.size() >= 4; };
  const std::pair<L, const char*> layouts[] = {{L::kOneView, "one-view"},
                                               {L::kSeparate, "separate"},
                                               {L::kInterleaved, "interleaved"},
                                               {L::kPadded, "padded"},
                                               {L::kOverlaid, "overlaid"}};
  for (const auto& [layout, name] : layouts)
    seed<S>(root, "copy_blocks", name, d, [&, layout = layout](const S& s) { return valid(s) && s.layout == layout; });
  seed<S>(root, "copy_blocks", "padding-pair", d, [&](const S& s) {
    for (size_t p = 0; p + 1 < s.block_mapping.size(); p += 2)
      if (s.block_mapping[p] == -1 || s.block_mapping[p + 1] == -1) return valid(s);
    return false;
  });
  seed<S>(root, "copy_blocks", "odd-block-bytes", d, [&](const S& s) { return valid(s) && s.views.size() >= 2 && s.views[1] % 2 == 1; });
  seed<S>(root, "copy_blocks", "block-out-of-range", d, [](const S& s) { return s.code == E::kBlockOutOfRange; });
  seed<S>(root, "copy_blocks", "duplicate-destination", d, [](const S& s) { return s.code == E::kBlockConflict && s.fault.find("two pairs") != std::string::npos; });
  seed<S>(root, "copy_blocks", "destination-is-source", d, [](const S& s) { return s.code == E::kBlockConflict && s.fault.find("a source") != std::string::npos; });
  seed<S>(root, "copy_blocks", "view-past-allocation", d, [](const S& s) { return s.code == E::kShapeMismatch; });
  seed<S>(root, "copy_blocks", "view-straddles", d, [](const S& s) { return s.fault.find("spans a whole") != std::string::npos; });
  seed<S>(root, "copy_blocks", "raw-mapping", d, [](const S& s) { return s.fault == "raw block_mapping" && s.block_mapping.size() >= 6; });
}

void swap_blocks_seeds(const fs::path& root) {
  using S = kvcheck::props::SwapBlocksScenario;
  using L = kvcheck::props::CopyBlocksScenario::Layout;
  using E = kvcheck::ErrorCode;
  const std::string t = "swap_blocks";
  const auto d = byte_decoder(kvcheck::fuzz::decode_swap_blocks);
  const auto valid = [](const S& s) { return s.fault.empty() && s.block_mapping.size() >= 4; };
  const auto has = [](const S& s, const char* what) { return s.fault.find(what) != std::string::npos; };
  for (const std::string dir : {"device->device", "host->device", "device->host", "host->host"})
    seed<S>(root, t, dir.substr(0, dir.find('-')) + "-to-" + dir.substr(dir.find('>') + 1), d,
            [&, dir](const S& s) { return valid(s) && direction(s) == dir; });
  seed<S>(root, t, "layer-first-to-page-first", d, [&](const S& s) {
    return valid(s) && s.src.layout == L::kSeparate && s.dst.layout == L::kInterleaved && s.views.size() >= 12;
  });
  seed<S>(root, t, "padded-to-separate", d, [&](const S& s) {
    return valid(s) && s.src.layout == L::kPadded && s.dst.layout == L::kSeparate;
  });
  seed<S>(root, t, "overlaid", d, [&](const S& s) { return valid(s) && s.dst.layout == L::kOverlaid; });
  seed<S>(root, t, "padding-pair", d, [&](const S& s) {
    for (size_t p = 0; p + 1 < s.block_mapping.size(); p += 2)
      if (s.block_mapping[p] == -1 || s.block_mapping[p + 1] == -1) return valid(s);
    return false;
  });
  seed<S>(root, t, "odd-block-bytes", d, [&](const S& s) { return valid(s) && s.views[2] % 2 == 1; });
  seed<S>(root, t, "src-block-out-of-range", d, [&](const S& s) { return s.code == E::kBlockOutOfRange && has(s, "src entry"); });
  seed<S>(root, t, "dst-block-out-of-range", d, [&](const S& s) { return s.code == E::kBlockOutOfRange && has(s, "dst entry"); });
  seed<S>(root, t, "duplicate-destination", d, [&](const S& s) { return s.code == E::kBlockConflict; });
  seed<S>(root, t, "src-past-allocation", d, [&](const S& s) { return s.code == E::kShapeMismatch && has(s, "src's"); });
  seed<S>(root, t, "dst-past-allocation", d, [&](const S& s) { return s.code == E::kShapeMismatch && has(s, "dst's"); });
  seed<S>(root, t, "view-straddles-dst-blocks", d, [&](const S& s) { return has(s, "one-byte view"); });
  seed<S>(root, t, "two-sources-for-one-dst-byte", d, [&](const S& s) { return has(s, "one byte further on"); });
  seed<S>(root, t, "dst-inside-src", d, [&](const S& s) { return s.dst_inside_src >= 0; });
  seed<S>(root, t, "raw-mapping", d, [&](const S& s) { return s.fault == "raw block_mapping" && s.block_mapping.size() >= 6; });
}

void concat_and_cache_mla_seeds(const fs::path& root) {
  using S = kvcheck::props::StoreFaultScenario;
  using E = kvcheck::ErrorCode;
  using F = kvcheck::KVCacheFormat;
  const std::string t = "concat_and_cache_mla";
  const auto d = byte_decoder(kvcheck::fuzz::decode_concat_and_cache_mla);
  const auto valid = [](const S& c) {
    int64_t stored = 0;
    for (int32_t slot : c.scenario.slot_mapping) stored += slot >= 0;
    return c.fault.empty() && stored >= 2 && !c.scenario.pe_shape && !c.scenario.rope;
  };
  // Split caches (docs/spec.md §8.2): kv_c into the cache, k_pe into pe_cache.
  const auto split = [](const S& c) {
    int64_t stored = 0;
    for (int32_t slot : c.scenario.slot_mapping) stored += slot >= 0;
    return c.fault.empty() && stored >= 2 && c.scenario.pe_shape && !c.scenario.rope;
  };
  // Fused RoPE (docs/spec.md §8.4).
  const auto rope = [](const S& c) {
    int64_t stored = 0;
    for (int32_t slot : c.scenario.slot_mapping) stored += slot >= 0;
    return c.fault.empty() && stored >= 2 && c.scenario.rope;
  };
  seed<S>(root, t, "rope-nvfp4-ds-mla-512-64", d, [&](const S& c) { return rope(c) && c.scenario.shape.format == F::NVFP4_DS_MLA() && c.scenario.kv_lora_rank == 512 && !c.scenario.pe_shape; });
  seed<S>(root, t, "rope-neox-model1-448-64", d, [&](const S& c) { return rope(c) && c.scenario.rope->is_neox && c.scenario.shape.format == F::MODEL1() && c.scenario.kv_lora_rank == 448 && !c.scenario.pe_shape; });
  seed<S>(root, t, "rope-neox-fp8-ds-mla-512-64", d, [&](const S& c) { return rope(c) && c.scenario.rope->is_neox && c.scenario.shape.format == F::FP8_DS_MLA() && c.scenario.kv_lora_rank == 512 && !c.scenario.pe_shape; });
  seed<S>(root, t, "rope-gptj-sub-range", d, [&](const S& c) { return rope(c) && !c.scenario.rope->is_neox && c.scenario.rope->rot_dim < c.scenario.rope_dim; });
  seed<S>(root, t, "rope-split-caches", d, [&](const S& c) { return rope(c) && c.scenario.pe_shape; });
  // A stored row at a table row whose sin equals its cos (its pairs then hold equal values):
  // where x*c - y*s is exactly 0 without a fused multiply-add.
  seed<S>(root, t, "rope-cancelling-pairs", d, [&](const S& c) {
    if (!rope(c) || c.scenario.rope->rot_dim < 8) return false;
    for (size_t i = 0; i < c.scenario.slot_mapping.size(); ++i)
      if (c.scenario.slot_mapping[i] >= 0 && kvcheck::props::rope_cancels(*c.scenario.rope, static_cast<int64_t>(i)))
        return true;
    return false;
  });
  seed<S>(root, t, "rope-error-position-before-slot", d, [](const S& c) { return c.fault.find("positions before slots") != std::string::npos; });
  seed<S>(root, t, "rope-large-table", d, [&](const S& c) { return rope(c) && c.scenario.rope->max_position > 4096; });
  seed<S>(root, t, "rope-error-position", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault.rfind("positions[", 0) == 0; });
  seed<S>(root, t, "rope-error-rot-dim", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault.rfind("rot_dim", 0) == 0; });
  seed<S>(root, t, "rope-error-positions-short", d, [](const S& c) { return c.code == E::kShapeMismatch && c.fault.rfind("positions has", 0) == 0; });
  seed<S>(root, t, "split-flashinfer-512-64", d, [&](const S& c) { return split(c) && c.scenario.shape.format == F::BF16(512) && c.scenario.pe_shape->format == F::BF16(64); });
  seed<S>(root, t, "split-pe-quantised", d, [&](const S& c) { return split(c) && c.scenario.pe_shape->format.is_quantized(); });
  seed<S>(root, t, "split-pe-own-block-stride", d, [&](const S& c) { return split(c) && c.scenario.pe_shape->block_stride != 0; });
  seed<S>(root, t, "split-error-pe-geometry", d, [](const S& c) { return c.code == E::kShapeMismatch && c.fault.rfind("pe_cache has", 0) == 0; });
  seed<S>(root, t, "split-error-pe-block-stride", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault.rfind("pe_cache block_stride", 0) == 0; });
  seed<S>(root, t, "split-error-pe-inside-cache", d, [](const S& c) { return c.scenario.pe_inside_cache >= 0; });
  seed<S>(root, t, "split-error-width", d, [](const S& c) { return c.code == E::kShapeMismatch && c.fault.find("'s E is") != std::string::npos; });
  const auto engines = [](const S& c) { return c.scenario.kv_lora_rank == c.scenario.shape.format.elements - 64; };
  seed<S>(root, t, "model1-448-64", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::MODEL1() && engines(c); });
  seed<S>(root, t, "fp8-ds-mla-512-64", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::FP8_DS_MLA() && engines(c); });
  seed<S>(root, t, "bf16-576-view", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::BF16(576) && engines(c) && c.scenario.pe_row_stride == 0; });
  seed<S>(root, t, "v41-own-k-pe", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::V41() && c.scenario.pe_row_stride > 0; });
  seed<S>(root, t, "fp8-ds-mla-split-in-tile", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::FP8_DS_MLA() && c.scenario.kv_lora_rank % 128 != 0 && c.scenario.kv_lora_rank < 512; });
  seed<S>(root, t, "fp8-ds-mla-split-in-tail", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::FP8_DS_MLA() && c.scenario.kv_lora_rank > 512; });
  seed<S>(root, t, "nvfp4-ds-mla-512-64", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::NVFP4_DS_MLA() && engines(c); });
  seed<S>(root, t, "nvfp4-ds-mla-split-in-tail", d, [&](const S& c) { return valid(c) && c.scenario.shape.format == F::NVFP4_DS_MLA() && c.scenario.kv_lora_rank > 512; });
  seed<S>(root, t, "split-off-16-bytes", d, [&](const S& c) { return valid(c) && c.scenario.kv_lora_rank % 8 != 0; });
  seed<S>(root, t, "custom-format", d, [&](const S& c) { return valid(c) && c.scenario.shape.format.name.rfind("custom", 0) == 0; });
  seed<S>(root, t, "other-layers-between-blocks", d, [&](const S& c) { return valid(c) && c.scenario.shape.block_stride != 0; });
  seed<S>(root, t, "error-kv-lora-rank-0", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault == "kv_lora_rank = 0"; });
  seed<S>(root, t, "error-rope-dim-0", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault == "rope_dim = 0"; });
  seed<S>(root, t, "error-sum-not-e", d, [](const S& c) { return c.code == E::kShapeMismatch && c.fault.find("!= E") != std::string::npos; });
  seed<S>(root, t, "error-k-pe-short", d, [](const S& c) { return c.code == E::kShapeMismatch && c.fault.find("k_pe has") != std::string::npos; });
  seed<S>(root, t, "error-kv-c-short", d, [](const S& c) { return c.code == E::kShapeMismatch && c.fault.find("kv_c") == 0; });
  seed<S>(root, t, "error-k-pe-stride", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault.find("k_pe row stride") == 0; });
  seed<S>(root, t, "error-kv-c-stride", d, [](const S& c) { return c.code == E::kInvalidArgument && c.fault.find("kv_c row stride") == 0; });
  seed<S>(root, t, "error-duplicate-slot", d, [](const S& c) { return c.code == E::kDuplicateSlot; });
  seed<S>(root, t, "error-slot-out-of-range", d, [](const S& c) { return c.code == E::kSlotOutOfRange; });
  seed<S>(root, t, "raw-slots", d, [](const S& c) { return c.fault == "raw slot_mapping" && c.scenario.slot_mapping.size() >= 3; });
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  store_seeds(root);
  load_seeds(root);
  round_trip_seeds(root);
  format_seeds(root);
  numerics_seeds(root);
  index_seeds(root);
  plan_seeds(root);
  prefill_seeds(root);
  kv_seeds(root);
  slot_mapping_seeds(root);
  copy_blocks_seeds(root);
  concat_and_cache_mla_seeds(root);
  swap_blocks_seeds(root);
  std::printf("gen_corpus: wrote %d seeds under %s (%d features not found)\n", g_written,
              root.c_str(), g_missing);
  return g_missing == 0 ? 0 : 1;
}
