// gen_corpus: writes the seed corpus of every fuzz target, deterministically.
// For each wanted feature (a format, block size 133, all-padding slot mappings, a
// wrapped ring, zero-fill segments, ...) it tries inputs from a fixed pseudo-random
// sequence until the shared decoder (fuzzers/fuzz_data.h) turns one into a scenario
// with that feature, and writes it as corpus/<target>/<feature>. Same binary, same
// files: regenerate with `gen_corpus corpus` after changing the decoder.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fuzzers/fuzz_data.h"
#include "fuzzers/fuzz_data_kv.h"
#include "properties/kv_harness.h"

namespace fs = std::filesystem;
using kvcheck::fuzz::SplitMix64;

namespace {

using Bytes = std::vector<uint8_t>;

// The first input of the fixed sequence whose decoding satisfies `want`.
template <typename Scenario>
Bytes find_input(Scenario (*decode)(FuzzedDataProvider&), const std::function<bool(const Scenario&)>& want,
                 uint64_t salt) {
  SplitMix64 rng{0xC0FFEEull ^ salt};
  for (int attempt = 0; attempt < 100000; ++attempt) {
    Bytes b(16 + rng.next() % 240);
    for (auto& x : b) x = static_cast<uint8_t>(rng.next());
    FuzzedDataProvider fdp(b.data(), b.size());
    if (want(decode(fdp))) return b;
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
void seed(const fs::path& root, const std::string& target, const std::string& feature,
          Scenario (*decode)(FuzzedDataProvider&), std::function<bool(const Scenario&)> want) {
  const Bytes b = find_input(decode, want, fnv1a(target + "/" + feature));
  if (b.empty()) {
    std::fprintf(stderr, "gen_corpus: no input found for %s/%s\n", target.c_str(), feature.c_str());
    ++g_missing;
    return;
  }
  fs::create_directories(root / target);
  std::ofstream(root / target / feature, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ++g_written;
}

bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool has(const std::string& s, const std::string& p) { return s.find(p) != std::string::npos; }

const std::vector<std::string> kFormats = {"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX",
                                           "MXFP8_INDEX", "BF16(512)", "BF16(8)", "BF16(136)", "BF16(4096)"};
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
    for (auto sf : {kvcheck::SfFormat::kUE8M0, kvcheck::SfFormat::kE4M3, kvcheck::SfFormat::kFP32})
      for (int g : {16, 32, 128, 0}) out.push_back({d, sf, g});
  return out;
}
std::string name_of(const CustomKind& k) {
  return kvcheck::to_string(k.dtype) + "-" + kvcheck::to_string(k.sf) + "-" +
         (k.group_class ? "G" + std::to_string(k.group_class) : std::string("Grt"));
}
bool is_custom(const kvcheck::KVCacheFormat& f, const CustomKind& k) {
  const bool compiled = f.elements_per_sf == 16 || f.elements_per_sf == 32 || f.elements_per_sf == 128;
  return has(f.name, "_G") && f.quantized_dtype == k.dtype && f.sf_format == k.sf &&
         (k.group_class ? f.elements_per_sf == k.group_class : !compiled);
}

void store_seeds(const fs::path& root) {
  using S = kvcheck::fuzz::StoreScenario;
  auto d = kvcheck::fuzz::decode_store;
  for (const auto& f : kFormats) {
    seed<S>(root, "store", "fmt-" + f, d, [&](const S& s) { return s.shape.format.name == f && s.slot_mapping.size() >= 3 && s.slot_mode == "distinct-random"; });
    if (f == "BF16(4096)") continue;  // a 133-token block exceeds kMaxCacheBytes
    seed<S>(root, "store", "fmt-" + f + "-bs133", d, [&](const S& s) { return s.shape.format.name == f && s.shape.block_size == 133 && !s.slot_mapping.empty(); });
  }
  for (int bs : kBlockSizes)
    seed<S>(root, "store", "bs-" + std::to_string(bs), d, [&](const S& s) { return s.shape.block_size == bs && s.slot_mapping.size() >= 2 && !has(s.slot_mode, "+"); });
  for (const std::string mode : {"all-padding", "padding-next-to-slot-0", "consecutive-run", "paged-block-table", "distinct-random", "raw"})
    for (const std::string f : {"V41", "V41_FP4", "MXFP8_INDEX", "BF16(512)"})
      seed<S>(root, "store", "slots-" + mode + "-" + f, d, [&](const S& s) { return s.slot_mode == mode && s.shape.format.name == f && s.slot_mapping.size() >= 2; });
  seed<S>(root, "store", "all-padding-bs133", d, [](const S& s) { return s.slot_mode == "all-padding" && s.shape.block_size == 133 && s.slot_mapping.size() >= 4; });
  seed<S>(root, "store", "empty", d, [](const S& s) { return s.slot_mapping.empty(); });
  for (const std::string k : {"-2", "INT32_MIN", "INT32_MAX", "num_slots", "last-slot", "duplicate"})
    seed<S>(root, "store", "injected-" + k, d, [&](const S& s) { return has(s.slot_mode, "+injected-" + k + "[") && s.kv_rows == static_cast<int64_t>(s.slot_mapping.size()) && s.row_stride >= s.shape.format.elements; });
  seed<S>(root, "store", "row-stride-short", d, [](const S& s) { return s.row_stride < s.shape.format.elements && !s.slot_mapping.empty(); });
  seed<S>(root, "store", "kv-rows-short", d, [](const S& s) { return s.kv_rows < static_cast<int64_t>(s.slot_mapping.size()); });
  seed<S>(root, "store", "row-stride-padded", d, [](const S& s) { return s.row_stride > s.shape.format.elements && s.slot_mapping.size() >= 2 && s.slot_mode == "distinct-random"; });
  for (const auto& k : custom_kinds())
    seed<S>(root, "store", "custom-" + name_of(k), d, [&](const S& s) { return is_custom(s.shape.format, k) && s.slot_mapping.size() >= 3 && s.slot_mode == "distinct-random" && s.value_mode != "mostly-zero"; });
  for (const std::string v : {"specials", "random-bits", "mostly-zero"})
    for (const std::string f : {"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX"})
      seed<S>(root, "store", "values-" + v + "-" + f, d, [&](const S& s) { return s.value_mode == v && s.shape.format.name == f && s.slot_mapping.size() >= 2 && s.slot_mode == "distinct-random"; });
}

void load_seeds(const fs::path& root, const std::string& target) {
  using L = kvcheck::fuzz::LoadScenario;
  auto d = kvcheck::fuzz::decode_load;
  for (const auto& f : kFormats) {
    seed<L>(root, target, "fmt-" + f, d, [&](const L& s) { return s.shape.format.name == f && s.segment_mode == "zero-fill" && s.segments.size() >= 8; });
    if (f == "BF16(4096)") continue;
    seed<L>(root, target, "fmt-" + f + "-bs133", d, [&](const L& s) { return s.shape.format.name == f && s.shape.block_size == 133 && s.segments.size() >= 4 && !has(s.segment_mode, "+"); });
  }
  for (int bs : kBlockSizes)
    seed<L>(root, target, "bs-" + std::to_string(bs), d, [&](const L& s) { return s.shape.block_size == bs && s.segments.size() >= 8 && !has(s.segment_mode, "+"); });
  for (const std::string mode : {"contiguous", "zero-fill", "shuffled-gaps", "wrapped-ring", "raw"})
    for (const std::string f : {"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "BF16(512)"})
      seed<L>(root, target, "segments-" + mode + "-" + f, d, [&](const L& s) { return s.segment_mode == mode && s.shape.format.name == f && s.segments.size() >= 8; });
  seed<L>(root, target, "wrapped-ring-bs133", d, [](const L& s) { return s.segment_mode == "wrapped-ring" && s.shape.block_size == 133 && s.segments.size() == 12; });
  seed<L>(root, target, "empty", d, [](const L& s) { return s.total_k == 0; });
  for (int field = 0; field < 4; ++field)
    seed<L>(root, target, "injected-field-" + std::to_string(field), d, [&](const L& s) { return has(s.segment_mode, "][" + std::to_string(field) + "]") && s.segments.size() >= 8; });
  for (const std::string k : {"-2", "INT32_MIN", "INT32_MAX", "num_blocks", "block_size+1", "total_k", "other-dst"})
    seed<L>(root, target, "injected-" + k, d, [&](const L& s) { return has(s.segment_mode, "+injected-" + k + "[") && s.segments.size() >= 8 && s.data_row_pad >= 0 && s.scale_row_pad >= 0 && s.out_rows >= s.total_k; });
  seed<L>(root, target, "segments-not-multiple-of-4", d, [](const L& s) { return s.segments.size() % 4 != 0; });
  seed<L>(root, target, "data-stride-short", d, [](const L& s) { return s.data_row_pad < 0 && s.total_k > 0; });
  seed<L>(root, target, "scale-stride-short", d, [](const L& s) { return s.scale_row_pad < 0 && s.shape.format.is_index() && s.total_k > 0 && s.data_row_pad >= 0; });
  seed<L>(root, target, "total-k-negative", d, [](const L& s) { return s.total_k < 0 && s.segments.size() >= 8 && s.segments.size() % 4 == 0; });
  seed<L>(root, target, "out-rows-short", d, [](const L& s) { return s.out_rows < s.total_k; });
  for (const auto& k : custom_kinds())  // do_cast: the dequantising kernels
    seed<L>(root, target, "custom-cast-" + name_of(k), d, [&](const L& s) { return is_custom(s.shape.format, k) && s.shape.format.do_cast && s.segments.size() >= 8 && s.segment_mode != "raw" && !has(s.segment_mode, "+"); });
  seed<L>(root, target, "custom-index-ue8m0", d, [](const L& s) { return has(s.shape.format.name, "_G") && s.shape.format.sf_format == kvcheck::SfFormat::kUE8M0 && s.shape.format.is_index() && !s.shape.format.token_interleaved && s.segments.size() >= 8 && s.segment_mode != "raw" && !has(s.segment_mode, "+"); });
  seed<L>(root, target, "custom-index-interleaved-fp32", d, [](const L& s) { return has(s.shape.format.name, "INDEX_INTERLEAVED") && s.shape.format.sf_format == kvcheck::SfFormat::kFP32 && s.segments.size() >= 8 && s.segment_mode != "raw" && !has(s.segment_mode, "+"); });
  seed<L>(root, target, "padded-out-rows", d, [](const L& s) { return s.data_row_pad > 0 && s.scale_row_pad > 0 && s.shape.format.is_index() && s.segments.size() >= 8; });
}

void round_trip_seeds(const fs::path& root) {
  using R = kvcheck::fuzz::RoundTripScenario;
  auto d = kvcheck::fuzz::decode_round_trip;
  for (const auto& f : kFormats) {
    seed<R>(root, "round_trip", "fmt-" + f, d, [&](const R& r) { return r.store.shape.format.name == f && r.store.slot_mapping.size() >= 4 && r.load.total_k > 0; });
    if (f == "BF16(4096)") continue;
    seed<R>(root, "round_trip", "fmt-" + f + "-bs133-zero-fill", d, [&](const R& r) { return r.store.shape.format.name == f && r.store.shape.block_size == 133 && has(r.load.segment_mode, "zero") && r.load.total_k > 0; });
  }
  for (int bs : kBlockSizes)
    seed<R>(root, "round_trip", "bs-" + std::to_string(bs), d, [&](const R& r) { return r.store.shape.block_size == bs && r.store.slot_mapping.size() >= 2 && r.load.total_k > 0; });
  for (const auto& k : custom_kinds())
    if (k.group_class == 0 || k.group_class == 16)
      seed<R>(root, "round_trip", "custom-" + name_of(k), d, [&](const R& r) { return is_custom(r.store.shape.format, k) && r.store.slot_mapping.size() >= 3 && r.load.total_k > 0; });
  seed<R>(root, "round_trip", "all-padding", d, [](const R& r) { return r.store.slot_mode == "all-padding" && r.load.total_k > 0; });
  seed<R>(root, "round_trip", "specials-V41", d, [](const R& r) { return r.store.value_mode == "specials" && r.store.shape.format.name == "V41" && r.store.slot_mapping.size() >= 4; });
}

void format_seeds(const fs::path& root) {
  using F = kvcheck::fuzz::FormatScenario;
  auto d = kvcheck::fuzz::decode_format;
  for (const auto& f : std::vector<std::string>{"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX"})
    seed<F>(root, "format", "fmt-" + f, d, [&](const F& s) { return s.format.name == f; });
  seed<F>(root, "format", "bf16-random-E", d, [](const F& s) { return starts(s.format.name, "BF16(") && s.format.elements != 512; });
  seed<F>(root, "format", "mutated", d, [](const F& s) { return has(s.format.name, "~mutated"); });
  seed<F>(root, "format", "arbitrary", d, [](const F& s) { return s.format.name == "fuzzed"; });
  seed<F>(root, "format", "resolve-132-ambiguous", d, [](const F& s) { return s.dtype == kvcheck::CacheDtype::kUInt8 && !s.shape.empty() && s.shape.back() == 132 && s.sf_choice == 0; });
  seed<F>(root, "format", "resolve-132-fp32", d, [](const F& s) { return s.dtype == kvcheck::CacheDtype::kUInt8 && !s.shape.empty() && s.shape.back() == 132 && s.sf_choice == 3; });
  for (int64_t bpt : {528, 288, 68})
    seed<F>(root, "format", "resolve-" + std::to_string(bpt), d, [&](const F& s) { return s.dtype == kvcheck::CacheDtype::kUInt8 && !s.shape.empty() && s.shape.back() == bpt; });
  seed<F>(root, "format", "resolve-bf16", d, [](const F& s) { return s.dtype == kvcheck::CacheDtype::kBF16 && !s.shape.empty() && s.shape.back() == 512; });
  seed<F>(root, "format", "resolve-empty-shape", d, [](const F& s) { return s.shape.empty(); });
  seed<F>(root, "format", "V41-bs133", d, [](const F& s) { return s.format.name == "V41" && s.block_size == 133; });
}

void numerics_seeds(const fs::path& root) {
  using N = kvcheck::fuzz::NumericsScenario;
  auto d = kvcheck::fuzz::decode_numerics;
  for (const auto& f : std::vector<std::string>{"V41", "V41_FP4", "FP4_INDEX", "FP8_FP32SF_INDEX", "MXFP8_INDEX"})
    seed<N>(root, "numerics", "group-" + f, d, [&](const N& s) { return s.format.name == f && s.floats.size() >= 8; });
  seed<N>(root, "numerics", "many-floats", d, [](const N& s) { return s.floats.size() >= 40; });
}

void index_seeds(const fs::path& root) {
  using I = kvcheck::fuzz::IndexScenario;
  auto d = kvcheck::fuzz::decode_index;
  const char* names[] = {"convert", "cat", "expand", "swa-decode"};
  for (int op = 0; op < 4; ++op)
    for (int i = 0; i < 3; ++i)
      seed<I>(root, "index", std::string(names[op]) + "-" + std::to_string(i), d, [&](const I& s) {
        return static_cast<int>(s.op) == op && s.num_q >= 2 && s.invalid.empty() && (i != 2 || s.num_q >= 12);
      });
  // Valid conversions: no topk entry below -1 (an awkward value makes the whole call throw).
  auto convert_valid = [](const I& s) {
    if (s.op != I::Op::kConvert || !s.invalid.empty() || s.num_q < 2 || s.k < 2) return false;
    for (int32_t x : s.topk) if (x < -1) return false;
    return true;
  };
  seed<I>(root, "index", "convert-valid", d, [&](const I& s) { return convert_valid(s) && s.seq_ids.empty(); });
  seed<I>(root, "index", "convert-valid-seq-ids", d, [&](const I& s) { return convert_valid(s) && !s.seq_ids.empty(); });
  seed<I>(root, "index", "convert-bs133", d, [](const I& s) { return s.op == I::Op::kConvert && s.block_size == 133 && s.num_q >= 2 && s.k >= 4 && s.invalid.empty(); });
  seed<I>(root, "index", "convert-missing-block", d, [](const I& s) { return s.op == I::Op::kConvert && !s.invalid.empty() && s.invalid[0] == 'b'; });
  seed<I>(root, "index", "convert-no-table-row", d, [](const I& s) { return s.op == I::Op::kConvert && !s.invalid.empty() && s.invalid[0] == 'n'; });
  seed<I>(root, "index", "empty", d, [](const I& s) { return s.num_q == 0; });
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
  using P = kvcheck::fuzz::PlanScenario;
  using K = kvcheck::fuzz::PlanOp::Kind;
  using M = P::Mode;
  auto d = kvcheck::fuzz::decode_plan;
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
    seed<P>(root, "plan", "builder-paged-" + note.substr(0, note.find(' ')), d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && count(s, K::kPaged, note) >= 2; });
  seed<P>(root, "plan", "builder-ring-wraps", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && s.block_size > 1 && count(s, K::kRing, "wraps") >= 2; });
  seed<P>(root, "plan", "builder-ring-exact", d, [&](const P& s) { return s.mode == M::kBuilder && small(s) && s.block_size > 1 && count(s, K::kRing, "exactly the ring") >= 1; });
  // Every error of every append kind, once in an otherwise ordinary sequence.
  const std::vector<std::pair<K, std::string>> errors = {
      {K::kSegment, "invalid block"}, {K::kSegment, "invalid: begin > end"},
      {K::kSegment, "invalid: end > block_size"}, {K::kSegment, "invalid: begin < 0"},
      {K::kZeroFill, "invalid: negative"}, {K::kPaged, "invalid: begin > end"},
      {K::kPaged, "invalid: begin < 0"}, {K::kRing, "invalid: state_id < 0"},
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
  using F = kvcheck::fuzz::PrefillFuzzScenario;
  auto d = kvcheck::fuzz::decode_prefill;
  auto any = [](const F& f, int what) {
    const auto& s = f.step;
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
        return any(f, w) && (f.step.format.name == "V41") == v41 && !f.step.store_before_load &&
               f.step.seqs.size() >= 2 && f.step.topk_width >= 1; });
  seed<F>(root, "prefill", "four-sequences", d, [](const F& f) { return f.step.seqs.size() == 4 && !f.step.store_before_load && f.step.topk_width >= 3; });
  seed<F>(root, "prefill", "store-before-load-overlap", d, [](const F& f) { return f.step.store_before_load && kvcheck::props::store_overlaps_visible_history(f.step); });
  seed<F>(root, "prefill", "store-before-load-no-overlap", d, [](const F& f) { return f.step.store_before_load && !f.step.seqs.empty() && !kvcheck::props::store_overlaps_visible_history(f.step); });
  seed<F>(root, "prefill", "empty-batch", d, [](const F& f) { return f.step.seqs.empty(); });
}

// K/V family (SPEC §7): every cache dtype, NHD/HND, both scale kinds, one-allocation
// views, the seed's sizes, the error paths.
void kv_seeds(const fs::path& root) {
  using S = kvcheck::props::StoreKvScenario;
  using G = kvcheck::props::GatherKvScenario;
  using kvcheck::KvDtype;
  using kvcheck::props::KvAlloc;
  auto ds = kvcheck::fuzz::decode_store_kv;
  auto dg = kvcheck::fuzz::decode_gather_kv;
  auto valid_store = [&](const S& s) {
    kvcheck::props::KvBuffers b(s.cache), r(s.cache);
    return !kvcheck::props::run_store_kv(nullptr, s, b) && b.bytes != r.bytes;
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
  for (auto a : {KvAlloc::kNanoVllm, KvAlloc::kFlashInfer}) {
    const std::string f = a == KvAlloc::kNanoVllm ? "view-nano-vllm" : "view-flashinfer";
    seed<S>(root, "store_kv", f, ds, [&](const S& s) { return s.cache.alloc == a && valid_store(s); });
    seed<G>(root, "gather_kv", f, dg, [&](const G& g) { return g.cache.alloc == a && valid_gather(g); });
  }
  for (int bs : {1, 16, 133, 256})
    seed<S>(root, "store_kv", "bs-" + std::to_string(bs), ds, [&](const S& s) { return s.cache.block_size == bs && valid_store(s); });
  seed<S>(root, "store_kv", "heads-40", ds, [&](const S& s) { return s.cache.num_kv_heads == 40 && s.cache.head_dim >= 64 && valid_store(s); });
  seed<G>(root, "gather_kv", "heads-40", dg, [&](const G& g) { return g.cache.num_kv_heads == 40 && g.cache.head_dim >= 64 && valid_gather(g); });
  seed<S>(root, "store_kv", "padded-strides", ds, [&](const S& s) { return s.cache.pad_head > 0 && s.cache.pad_token > 0 && s.key.head_stride > s.cache.head_dim && valid_store(s); });
  seed<S>(root, "store_kv", "graph-padding-rows", ds, [&](const S& s) { return s.key.rows > static_cast<int64_t>(s.slot_mapping.size()) && valid_store(s); });
  seed<S>(root, "store_kv", "all-padding", ds, [&](const S& s) { return s.slot_mapping.size() >= 3 && std::all_of(s.slot_mapping.begin(), s.slot_mapping.end(), [](int32_t x) { return x == -1; }); });
  seed<S>(root, "store_kv", "empty", ds, [&](const S& s) { return s.slot_mapping.empty(); });
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
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  store_seeds(root);
  load_seeds(root, "load");
  round_trip_seeds(root);
  format_seeds(root);
  numerics_seeds(root);
  index_seeds(root);
  plan_seeds(root);
  prefill_seeds(root);
  kv_seeds(root);
  std::printf("gen_corpus: wrote %d seeds under %s (%d features not found)\n", g_written,
              root.c_str(), g_missing);
  return g_missing == 0 ? 0 : 1;
}
