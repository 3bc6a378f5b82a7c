// Replay main for compilers without libFuzzer: runs LLVMFuzzerTestOneInput on every
// file named on the command line, descending into directories (corpus/<target>/ and
// its regressions/). A mismatch abort()s, so a failing regression fails the test.
// Property regression files (*.json, properties/regression.h) are replayed through
// their property on the fuzz backend instead; a failing one fails the run (exit 1).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzers/checks.h"
#include "properties/regression.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int failed_regressions = 0;

// A property regression file: replays its scenario; false when it fails or is unusable.
void replay_property_regression(const std::filesystem::path& file, std::ifstream& in) {
  std::string verdict;
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    const auto& backend = kvcheck::fuzz::fuzz_backend();
    std::fprintf(stderr, "replay: %s (%s on %s)\n", file.c_str(), doc.value("property", "?").c_str(),
                 std::string(backend.name()).c_str());
    verdict = kvcheck::props::replay_regression(doc, backend);
  } catch (const std::exception& e) {
    verdict = std::string("unusable regression file: ") + e.what();
  }
  if (!verdict.empty()) {
    std::fprintf(stderr, "FAIL %s\n%s\n", file.c_str(), verdict.c_str());
    ++failed_regressions;
  }
}

bool replay(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return false;
  }
  if (file.extension() == ".json") {
    replay_property_regression(file, in);
    return true;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      std::vector<fs::path> files;  // sorted: the same order on every machine
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) count += replay(f);
    } else if (replay(arg)) {
      ++count;
    } else {
      return 1;
    }
  }
  if (failed_regressions > 0) {
    std::printf("replayed %zu inputs, %d property regression(s) FAILED\n", count, failed_regressions);
    return 1;
  }
  std::printf("replayed %zu inputs, all passed\n", count);
  return count > 0 ? 0 : 1;  // an empty corpus is a broken setup, not a pass
}
