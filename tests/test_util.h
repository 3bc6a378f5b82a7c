// Helpers shared by the GoogleTest files: asserting which kvcheck::Error a call throws.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/error.h"

namespace kvcheck {

/// Prints a backend test parameter as its name. Without it GoogleTest prints the
/// shared_ptr's heap address, which CTest then puts into the test name (issue 12).
inline void PrintTo(const std::shared_ptr<const Backend>& b, std::ostream* os) {
  *os << (b ? std::string(b->name()) : std::string("null"));
}

/// The code `f` throws; a test failure (and kUnsupported) when it throws nothing.
template <typename F>
ErrorCode code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error thrown";
  return ErrorCode::kUnsupported;
}

/// Expects `fn` to throw an Error with `code` whose message contains every needle.
inline void expect_error(const std::function<void()>& fn, ErrorCode code,
                         const std::vector<std::string>& needles = {}) {
  try {
    fn();
    ADD_FAILURE() << "expected " << to_string(code) << ", nothing thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "'" << e.what() << "' lacks '" << n << "'";
  }
}

inline void expect_error(ErrorCode code, const std::function<void()>& fn, const std::string& needle = "") {
  expect_error(fn, code, needle.empty() ? std::vector<std::string>{} : std::vector<std::string>{needle});
}

}  // namespace kvcheck
