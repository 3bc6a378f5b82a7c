#include "properties/runner.h"

#include "properties/gen/gen_caps.h"
#include "properties/harness.h"
#include "properties/rapidcheck_bridge.h"
#include "properties/regression.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace kvcheck::props {
namespace {

// Forwards every operation to the backend under test and counts the calls, so a row
// whose cases all returned before reaching the backend is "not exercised", not "passed".
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(const Backend& b) : b_(b) {}
  int64_t calls() const { return calls_; }
  std::string_view name() const override { return b_.name(); }
  BackendCapabilities capabilities() const override { return b_.capabilities(); }
  const Backend& underlying() const override { return b_.underlying(); }
  bool set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const override {
    return b_.set_test_parallelism(max_threads, min_bytes_per_thread);
  }
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping, const CacheView& cache) const override {
    ++calls_;
    b_.store_kv_cache(kv, slot_mapping, cache);
  }
  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments, int32_t total_k,
                           const LoadOutput& out) const override {
    ++calls_;
    b_.load_paged_kv_cache(cache, load_segments, total_k, out);
  }
  void convert_kv_index(const ConvertKvIndexArgs& args, std::span<int32_t> out) const override {
    ++calls_;
    b_.convert_kv_index(args, out);
  }
  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right, int32_t wr,
                    int32_t num_q, int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                    std::span<int32_t> out) const override {
    ++calls_;
    b_.kv_index_cat(left, wl, right, wr, num_q, total_k_swa_cached, total_k_swa_cur, out);
  }
  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override {
    ++calls_;
    b_.expand_swa_index(pivots, num_q, width, out);
  }
  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width, int32_t ring_size,
                        std::span<int32_t> out) const override {
    ++calls_;
    b_.swa_decode_index(start_len, num_q, width, ring_size, out);
  }
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache, const RopeArgs* rope = nullptr) const override {
    ++calls_;
    b_.store_kv(key, value, slot_mapping, cache, rope);
  }
  void gather_kv(const GatherKvArgs& args) const override {
    ++calls_;
    b_.gather_kv(args);
  }
  void copy_blocks(const CopyBlocksArgs& args) const override {
    ++calls_;
    b_.copy_blocks(args);
  }
  void concat_and_cache_mla(const ConcatMlaArgs& args) const override {
    ++calls_;
    b_.concat_and_cache_mla(args);
  }
  void swap_blocks(const SwapBlocksArgs& args) const override {
    ++calls_;
    b_.swap_blocks(args);
  }

 private:
  const Backend& b_;
  mutable int64_t calls_ = 0;  // one property runs on one thread
};

}  // namespace

std::string backend_label(const Property& p, const Backend& b) {
  return p.per_backend ? std::string(b.name()) : std::string("host");
}

std::string test_id(const Property& p, const Backend& b) { return p.name + "/" + backend_label(p, b); }

uint64_t configured_seed(uint64_t fallback) { return rc_params_seed().value_or(fallback); }

std::string no_calls_reason(const Property& p, const Backend& b, int64_t cases, int64_t calls) {
  if (!p.per_backend || cases == 0 || calls > 0) return "";
  return fmt::format("{} cases ran but none called {}", cases, b.name());
}

std::string class_bound_failures(const Property& p, const PropertyOutcome& o) {
  if (o.failed || o.cases < kClassBoundMinCases) return "";
  return check_class_bounds(p.class_bounds, o.classes, o.cases, o.class_context);
}

std::string why_not_exercised(const Property& p, const Backend& b) {
  if (!p.per_backend) return "";
  std::string missing_op;
  if (!b.capabilities().supports_property_op(p.op, &missing_op)) return std::string(b.name()) + " has " + missing_op;
  if (p.needs)
    if (const std::string why = p.needs(b.capabilities()); !why.empty()) return std::string(b.name()) + ": " + why;
  return "";
}

PropertyOutcome run_property(const Property& p, const Backend& b, const CaseBudget& budget) {
  PropertyOutcome o;
  o.property = p.name;
  o.op = p.op;
  o.backend = backend_label(p, b);
  RcRunParams params;
  params.id = test_id(p, b);
  params.description = p.name;
  params.seed = budget.seed;
  params.max_success = p.max_cases_per_run > 0 ? std::min(budget.cases, p.max_cases_per_run) : budget.cases;
  params.max_size = budget.max_size;
  params.disable_shrinking = p.max_cases_per_run > 0;
  params.max_discard_ratio = 10;
  if (o.not_exercised = why_not_exercised(p, b); !o.not_exercised.empty()) return o;  // nothing to run
  // Generators draw only what the backend supports (plugin capabilities).
  const BackendCapabilities backend_caps = p.per_backend ? b.capabilities() : BackendCapabilities{};
  const ScopedGeneratorCaps caps(backend_caps);
  o.class_context = {backend_caps.restrictions().empty(), !p.per_backend || b.set_test_parallelism(0, 0),
                     backend_caps.host_memory};
  take_failing_scenario();  // recorded by scenario_property bodies on failure
  take_class_counts();
  const CountingBackend counted(b);
  const auto start = std::chrono::steady_clock::now();
  const RcRunResult result = run_rapidcheck(params, [&] {
    begin_case();
    try {
      p.body(counted);
    } catch (const UnsupportedCase& r) {
      // Inside a RapidCheck run a kUnsupported refusal is an ordinary failure (harness.h).
      throw_rapidcheck_case_result(RcCaseType::kFailure, r.description);
    }
    end_case();  // only cases that held are counted
  });
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  o.classes = take_class_counts(static_cast<size_t>(result.num_success));  // not the shrink's candidates
  o.backend_calls = counted.calls();
  // Cases run: those that held, and the one that failed (a row that failed on its first
  // case read "cases 0, failures 1").
  o.cases = result.num_success + (result.kind == RcRunResult::Kind::kFailed ? 1 : 0);
  if (result.kind == RcRunResult::Kind::kPassed) return o;
  o.failed = true;
  if (auto scenario = take_failing_scenario()) o.scenario = scenario->dump();
  o.message = result.message;
  o.reproduce = result.reproduce;
  return o;
}

}  // namespace kvcheck::props
