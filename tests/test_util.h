// Helpers shared by the GoogleTest files: asserting which kvcheck::Error a call throws.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <stdexcept>
#include <string_view>

#include "impl/backends.h"
#include "impl/error.h"
#include "properties/gen/splitmix.h"
#include "properties/registry.h"

namespace kvcheck {

/// The registered property of this name (throws when there is none).
inline const props::Property& property(std::string_view name) {
  for (const auto& p : props::registry().all())
    if (p.name == name) return p;
  throw std::runtime_error("no property " + std::string(name));
}

/// n pseudo-random bytes from `seed` (SplitMix64): fuzz inputs for decoder tests.
inline std::vector<uint8_t> random_bytes(uint64_t seed, size_t n) {
  props::SplitMix64 rng{seed};
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng.next());
  return b;
}

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

/// The cpu backend with a planted store bug, for tests that must see a harness catch
/// one: every operation forwards to cpu; a subclass overrides store_kv_cache (calling
/// cpu() first) to plant its fault.
class PlantedStoreBackend : public Backend {
 public:
  PlantedStoreBackend() : cpu_(available_backends().front()) {}
  void load_paged_kv_cache(const ConstCacheView& c, std::span<const int32_t> s, int32_t k,
                           const LoadOutput& o) const override {
    cpu_->load_paged_kv_cache(c, s, k, o);
  }
  void convert_kv_index(const ConvertKvIndexArgs& a, std::span<int32_t> o) const override {
    cpu_->convert_kv_index(a, o);
  }
  void kv_index_cat(std::span<const int32_t> l, int32_t wl, std::span<const int32_t> r, int32_t wr, int32_t q,
                    int32_t a, int32_t b, std::span<int32_t> o) const override {
    cpu_->kv_index_cat(l, wl, r, wr, q, a, b, o);
  }
  void expand_swa_index(std::span<const int32_t> p, int32_t q, int32_t w, std::span<int32_t> o) const override {
    cpu_->expand_swa_index(p, q, w, o);
  }
  void swa_decode_index(std::span<const int32_t> s, int32_t q, int32_t w, int32_t r,
                        std::span<int32_t> o) const override {
    cpu_->swa_decode_index(s, q, w, r, o);
  }

 protected:
  const Backend& cpu() const { return *cpu_; }

 private:
  std::shared_ptr<const Backend> cpu_;
};

}  // namespace kvcheck
