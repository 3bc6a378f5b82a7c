#include "tools/kvcheck/explain.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzzers/checks.h"
#include "impl/error.h"
#include "properties/regression.h"

namespace kvcheck {
namespace {

std::string guess_target(const std::filesystem::path& path) {
  std::string prev;
  for (const auto& part : std::filesystem::absolute(path).lexically_normal()) {
    if (prev == "corpus" && fuzz::target_by_name(part.string())) return part.string();
    prev = part.string();
  }
  const std::string name = path.filename().string();
  for (const auto& t : fuzz::targets())
    if (name.rfind(t.name + "-", 0) == 0 || name.rfind("fuzz_" + t.name, 0) == 0) return t.name;
  return "";
}

std::string target_names() {
  std::string names;
  for (const auto& t : fuzz::targets()) names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

}  // namespace

int explain_file(const std::string& path, const std::string& target, std::ostream& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    out << "explain: cannot read " << path << "\n";
    return 2;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  if (std::filesystem::path(path).extension() == ".json") {
    // A property regression file (regression.h): its scenario replayed through its property.
    try {
      const nlohmann::json doc = nlohmann::json::parse(bytes.begin(), bytes.end());
      if (props::is_regression_document(doc)) {
        const Backend& backend = fuzz::fuzz_backend();
        out << "file: " << path << ", property " << doc.value("property", "?") << " (op " << doc.value("op", "?")
            << "), failed on " << doc.value("failed_on", "?") << ", backend " << backend.name() << "\n"
            << "invariant: " << doc.value("invariant", "") << "\n"
            << "scenario: " << doc.at("scenario").dump() << "\n";
        const std::string failure = props::replay_regression(doc, backend);
        if (failure.empty()) {
          out << "result: PASS\n";
          return 0;
        }
        out << "result: FAIL\n" << failure << "\n";
        return 1;
      }
    } catch (const std::exception& e) {
      out << "explain: " << path << " is not a usable regression file: " << e.what() << "\n";
      return 2;
    }
  }
  const std::string name = target.empty() ? guess_target(path) : target;
  const fuzz::Target* t = fuzz::target_by_name(name);
  if (t == nullptr) {
    out << "explain: " << (name.empty() ? "cannot tell the target of " + path
                                        : "no fuzz target '" + name + "'")
        << "; pass --target, one of: " << target_names() << "\n";
    return 2;
  }
  try {
    const Backend& backend = fuzz::fuzz_backend();
    const fuzz::CheckResult r = t->run(bytes.data(), bytes.size(), backend);
    out << "file: " << path << " (" << bytes.size() << " bytes), target " << t->name
        << ", backend " << backend.name() << "\n"
        << r.scenario;
    if (!r.skipped.empty()) out << "skipped (backend cannot run it): " << r.skipped << "\n";
    if (r.failure.empty()) {
      out << "result: PASS\n";
      return 0;
    }
    out << "result: FAIL\n" << r.failure;
    return 1;
  } catch (const std::exception& e) {  // a crash the fuzzer would report as one
    out << "result: FAIL (exception escaped the check: " << e.what() << ")\n";
    return 1;
  }
}

}  // namespace kvcheck
