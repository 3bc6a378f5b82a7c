// gen_corpus: writes the seed corpus of every fuzz target, deterministically.
// For each wanted feature (a format, block size 133, all-padding slot mappings, a
// wrapped ring, zero-fill segments, ...) it tries inputs from a fixed pseudo-random
// sequence until the shared decoder (fuzzers/fuzz_data.h) turns one into a scenario
// with that feature, and writes it as corpus/<target>/<feature>. Same binary, same
// files: regenerate with `gen_corpus corpus` after changing the decoder.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fuzzers/fuzz_data.h"

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
  seed<L>(root, target, "out-rows-short", d, [](const L& s) { return s.out_rows < s.total_k; });
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
  seed<I>(root, "index", "convert-bs133", d, [](const I& s) { return s.op == I::Op::kConvert && s.block_size == 133 && s.num_q >= 2 && s.k >= 4 && s.invalid.empty(); });
  seed<I>(root, "index", "convert-missing-block", d, [](const I& s) { return s.op == I::Op::kConvert && !s.invalid.empty() && s.invalid[0] == 'b'; });
  seed<I>(root, "index", "convert-no-table-row", d, [](const I& s) { return s.op == I::Op::kConvert && !s.invalid.empty() && s.invalid[0] == 'n'; });
  seed<I>(root, "index", "empty", d, [](const I& s) { return s.num_q == 0; });
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
  std::printf("gen_corpus: wrote %d seeds under %s (%d features not found)\n", g_written,
              root.c_str(), g_missing);
  return g_missing == 0 ? 0 : 1;
}
