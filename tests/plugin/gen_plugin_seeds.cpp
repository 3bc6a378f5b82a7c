// gen_plugin_seeds DIR: writes the store seeds the plugin tests replay
// (tests/plugin/corpus/store): BF16 stores with block sizes that are multiples of 16
// (the test plugins' capabilities) and a slot_mapping mixing padding (-1) with real
// distinct in-range slots (valid input), the inputs a "padding clamped to slot 0" bug shows on. Deterministic: the
// first inputs of a fixed pseudo-random sequence whose decoding has each feature.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fuzzers/decoders.h"

namespace {

using kvcheck::props::StoreScenario;

bool padded_bf16(const StoreScenario& s, int32_t min_bs) {
  const auto& sm = s.slot_mapping;
  const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
  std::vector<int32_t> real;
  for (int32_t slot : sm)
    if (slot != -1) real.push_back(slot);
  std::sort(real.begin(), real.end());
  const bool valid = std::adjacent_find(real.begin(), real.end()) == real.end() &&
                     std::all_of(real.begin(), real.end(), [&](int32_t x) { return x >= 0 && x < num_slots; });
  // A packed block stride: the test plugins take no other (no KVCHECK_OP_ANY_BLOCK_STRIDE).
  return valid && s.shape.format.is_bf16() && s.shape.block_size % 16 == 0 && s.shape.block_size >= min_bs &&
         s.shape.block_stride == 0 &&
         std::count(sm.begin(), sm.end(), -1) > 0 && std::count(sm.begin(), sm.end(), -1) < std::ssize(sm) &&
         s.kv_rows() >= std::ssize(sm) && s.row_stride >= s.shape.format.elements;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir(argv[1]);
  std::filesystem::create_directories(dir);
  const std::vector<std::pair<std::string, std::function<bool(const StoreScenario&)>>> wanted = {
      {"bf16-padding-bs16", [](const StoreScenario& s) { return padded_bf16(s, 16) && s.shape.block_size == 16; }},
      {"bf16-padding-bs64", [](const StoreScenario& s) { return padded_bf16(s, 64); }},
      {"bf16-padding-any", [](const StoreScenario& s) { return padded_bf16(s, 16); }},
  };
  kvcheck::fuzz::SplitMix64 rng{0x9C0FFEEull};
  int missing = 0;
  for (const auto& [name, want] : wanted) {
    bool found = false;
    for (int attempt = 0; attempt < 2000000 && !found; ++attempt) {
      std::vector<uint8_t> b(16 + rng.next() % 240);
      for (auto& x : b) x = static_cast<uint8_t>(rng.next());
      kvcheck::fuzz::ByteSource src(b.data(), b.size());
      const kvcheck::props::StoreFaultScenario c = kvcheck::fuzz::decode_store(src);
      if (!c.fault.empty() || !want(c.scenario)) continue;
      std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::ssize(b));
      found = true;
    }
    if (!found) {
      std::fprintf(stderr, "gen_plugin_seeds: no input found for %s\n", name.c_str());
      ++missing;
    }
  }
  return missing ? 1 : 0;
}
