// Replay main for compilers without libFuzzer: runs LLVMFuzzerTestOneInput on every
// file named on the command line, descending into directories (corpus/<target>/ and
// its regressions/). A mismatch abort()s, so a failing regression fails the test.
// Property regression files (*.json, properties/regression.h) are replayed through
// their property on the fuzz backend instead (a writer-to-reader pair's on that pair
// where both sides are loaded); a failing one fails the run (exit 1).
// An input the backend does not support (outside its capabilities, or refused with
// kUnsupported) is neither a pass nor a failure: it is counted apart, and a replay in
// which no input ran at all is "not exercised" (exit 1), never a pass.
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

struct Tally {
  size_t passed = 0, unsupported = 0, failed = 0;
};
Tally tally;

// Counts one input: unsupported (by `backend`) when `why` says what it could not run.
void count(const std::filesystem::path& file, const std::string& why,
           const kvcheck::Backend& backend = kvcheck::fuzz::fuzz_backend()) {
  if (why.empty()) {
    ++tally.passed;
    return;
  }
  std::fprintf(stderr, "not supported by %s: %s: %s\n", std::string(backend.name()).c_str(), file.c_str(),
               why.c_str());
  ++tally.unsupported;
}

// A property regression file: replays its scenario on the fuzz backend, or a
// writer-to-reader pair's on that pair (regression_backend; a pair not loaded here is
// not supported: the file is not exercised).
void replay_property_regression(const std::filesystem::path& file, std::ifstream& in) {
  std::string verdict, unsupported;
  const kvcheck::Backend* on = &kvcheck::fuzz::fuzz_backend();
  try {
    const nlohmann::json doc =
        kvcheck::props::parse_regression_text(std::string(std::istreambuf_iterator<char>(in), {}));
    // As written or not at all, also where its pair is not loaded here (explain's order).
    const kvcheck::props::Property& property = kvcheck::props::check_regression_document(doc);
    std::string pair_missing;
    const kvcheck::Backend* pair = kvcheck::fuzz::regression_backend(doc.value("failed_on", ""), &pair_missing);
    std::fprintf(stderr, "replay: %s (%s on %s)\n", file.c_str(), doc.value("property", "?").c_str(),
                 pair ? std::string(pair->name()).c_str() : doc.value("failed_on", "?").c_str());
    if (pair == nullptr) {
      std::fprintf(stderr, "not supported here: %s: %s\n", file.c_str(), pair_missing.c_str());
      ++tally.unsupported;
      return;
    }
    on = pair;
    verdict = kvcheck::props::replay_checked_regression(property, doc, *on, &unsupported);
  } catch (const std::exception& e) {
    verdict = std::string("unusable regression file: ") + e.what();
  }
  if (!verdict.empty()) {
    std::fprintf(stderr, "FAIL %s\n%s\n", file.c_str(), verdict.c_str());
    ++tally.failed;
    return;
  }
  count(file, unsupported, *on);
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
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());  // a failure aborts
  count(file, kvcheck::fuzz::last_skipped());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  kvcheck::fuzz::check_setup();
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (fs::is_directory(arg)) {
      std::vector<fs::path> files;  // sorted: the same order on every machine
      for (const auto& e : fs::recursive_directory_iterator(arg))
        // Hidden files (regressions/.gitkeep) keep directories in git: they are no inputs.
        if (e.is_regular_file() && e.path().filename().string().rfind(".", 0) != 0) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) inputs += replay(f);
    } else if (replay(arg)) {
      ++inputs;
    } else {
      return 1;
    }
  }
  std::string unsupported;
  if (tally.unsupported > 0)
    unsupported = ", " + std::to_string(tally.unsupported) + " not supported by " +
                  std::string(kvcheck::fuzz::fuzz_backend().name());
  std::printf("replayed %zu inputs: %zu passed%s, %zu failed\n", inputs, tally.passed, unsupported.c_str(),
              tally.failed);
  if (tally.failed > 0) {
    std::printf("FAILED: %zu property regression(s)\n", tally.failed);
    return 1;
  }
  if (tally.passed == 0) {  // an empty corpus, or one the backend runs none of
    std::printf("NOT EXERCISED: no input ran on the backend (%s)\n", inputs == 0 ? "no inputs" : "none supported");
    return 1;
  }
  return 0;
}
