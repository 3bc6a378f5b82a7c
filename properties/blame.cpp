#include "properties/blame.h"

#include <fmt/format.h>

#include <regex>

#include "properties/classes.h"

namespace kvcheck::props {

std::string error_blame(std::string_view message) {
  static const std::regex blame(R"([A-Za-z_][A-Za-z0-9_]*(\[-?[0-9]+\])+ = (-?[0-9]+|\[[-0-9, ]*\]))");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(message.begin(), message.end(), m, blame)) return "";
  return m.str(0);
}

std::string compare_errors(ErrorCode want, const std::optional<ErrorCode>& ref, const std::string& ref_message,
                           const std::optional<ErrorCode>& backend, const std::string& backend_message) {
  auto show = [](const std::optional<ErrorCode>& e, const std::string& msg) {
    return e ? fmt::format("threw {}: {}", to_string(*e), msg) : std::string("returned normally");
  };
  if (ref != want)
    return fmt::format("reference {} (expected {})", show(ref, ref_message), to_string(want));
  if (backend != want)
    return fmt::format("backend {} (expected {})", show(backend, backend_message), to_string(want));
  const std::string blame = error_blame(ref_message);
  if (blame.empty()) return "";
  note_class("error blames an entry");
  const std::string got = error_blame(backend_message);
  if (got == blame) return "";
  return fmt::format("the backend blames {} where the reference blames {}\n  reference: {}\n  backend:   {}",
                     got.empty() ? "no entry" : got, blame, ref_message, backend_message);
}

}  // namespace kvcheck::props
