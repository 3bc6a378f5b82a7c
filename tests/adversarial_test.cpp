// Adversarial reproducers (breaker): inputs the authors did not plan for. Each test
// FAILS on the code as found and passes once the cited docs/spec.md rule is honoured.
// Known answers are from the spec or computed by hand in the comments.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "impl/cpu/cpu_backend.h"
#include "impl/error.h"
#include "impl/format.h"
#include "impl/layout.h"
#include "impl/load_plan.h"
#include "reference/layout.h"
#include "reference/load_plan.h"
#include "tests/test_util.h"
#include "tools/kvcheck/campaign.h"

#if defined(__SANITIZE_ADDRESS__)
#define KVCHECK_ADV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KVCHECK_ADV_ASAN 1
#endif
#endif

namespace kvcheck {
namespace {

// A valid format (SPEC §2 accepts it: e4m3, group 1 divides elements, fp32 scales,
// index layout) whose record is huge: bpt = INT32_MAX data bytes + 4*INT32_MAX scale
// bytes = 5*(2^31-1) = 10,737,418,235 bytes.
KVCacheFormat huge_record_format() {
  KVCacheFormat f;
  f.name = "huge";
  f.quantized_dtype = QuantizedDtype::kE4M3;
  f.elements = INT32_MAX;
  f.elements_per_sf = 1;
  f.sf_format = SfFormat::kFP32;
  return f;
}

// SPEC §3 "All offsets are 64-bit" and layout.h: make() "validates ... that the
// cache size fits in int64". block_size INT32_MAX * bpt 10,737,418,235 = 2.3e19 >
// INT64_MAX (9.2e18): the product overflows (UBSan: impl/layout.cpp:13) and make()
// returns a wrapped block_stride (~4.6e18) instead of throwing kInvalidArgument.
TEST(Adversarial, LayoutMakeRejectsBlockStrideOverflowingInt64) {
  const KVCacheFormat f = huge_record_format();
  ASSERT_NO_THROW(f.validate());
  EXPECT_EQ(code_of([&] { CacheLayout::make(f, 1, INT32_MAX); }), ErrorCode::kInvalidArgument);
}

// Same rule in the reference's own geometry check (reference/layout.cpp:34).
TEST(Adversarial, RefGeometryRejectsBlockStrideOverflowingInt64) {
  const KVCacheFormat f = huge_record_format();
  EXPECT_EQ(code_of([&] { ref::check_cache_geometry(f, 1, INT32_MAX); }),
            ErrorCode::kInvalidArgument);
}

// SPEC §5.2: index formats (quantized, no do_cast) load ue8m0 scales as int32
// [total_k][sf_bytes/4]; format.cpp rejects sf_bytes % 4 != 0 for that reason, but
// only when !token_interleaved. A token-interleaved index format with one ue8m0
// scale (elements 8, group 8: sf_bytes = 1) is accepted, and its load would emit a
// 1-byte "int32" scale row. validate() must reject it (kInvalidFormat).
TEST(Adversarial, InterleavedIndexUe8m0ScalesMustPackIntoInt32) {
  KVCacheFormat f;
  f.name = "interleaved-index";
  f.quantized_dtype = QuantizedDtype::kE4M3;
  f.elements = 8;
  f.elements_per_sf = 8;
  f.sf_format = SfFormat::kUE8M0;
  f.do_cast = false;
  f.token_interleaved = true;
  ASSERT_TRUE(f.is_index());
  EXPECT_EQ(code_of([&] { f.validate(); }), ErrorCode::kInvalidFormat);
}

#ifndef KVCHECK_ADV_ASAN
// Child of ZeroFillOverflowThrowsBeforeMaterialisingPieces: exits 0 when the
// overflow is reported as kInvalidArgument with the builder unchanged.
[[noreturn]] void zero_fill_overflow_child() {
  long pages = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  const rlim_t cap = static_cast<rlim_t>(pages) * sysconf(_SC_PAGESIZE) + (rlim_t{256} << 20);
  const rlimit limit{cap, cap};
  setrlimit(RLIMIT_AS, &limit);
  BlockLoadPlanBuilder b(1);
  b.append_segment(-1, 0, 1);
  try {
    b.append_zero_fill(INT32_MAX);
    std::_Exit(3);
  } catch (const Error& e) {
    std::_Exit(e.code() == ErrorCode::kInvalidArgument && b.total_k() == 1 ? 0 : 4);
  } catch (...) {
    std::_Exit(5);  // std::bad_alloc: the pieces were built before the check
  }
}
#endif

// SPEC §5.3 [decided]: builder errors are thrown "before anything is appended";
// `total_k past INT32_MAX -> kInvalidArgument`. total_k = 1, then a zero fill of
// INT32_MAX rows: 1 + 2^31-1 = 2^31 > INT32_MAX, known from the two arguments alone.
// append_zero_fill first materialises 2^31-1 one-row pieces (block size 1: 32 GiB of
// LoadSegment) and only then checks the total: std::bad_alloc or the OOM killer
// instead of kInvalidArgument. Run in a child capped at +256 MiB of address space.
TEST(Adversarial, ZeroFillOverflowThrowsBeforeMaterialisingPieces) {
#ifdef KVCHECK_ADV_ASAN
  GTEST_SKIP() << "RLIMIT_AS conflicts with ASan's shadow memory";
#else
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(zero_fill_overflow_child(), ::testing::ExitedWithCode(0), "");
#endif
}

// SPEC §5.3: kRangeOutOfTable is for "a paged range needing a block past the
// table". The empty range [13, 13) needs no block; with a 3-block table of 4 tokens
// append_paged_range accepts [12, 12) but throws for [13, 13) ("needs block 3").
// The reference (ref::paged_range_rows) returns no rows for it.
TEST(Adversarial, EmptyPagedRangePastTableNeedsNoBlock) {
  const std::vector<int32_t> table{5, 6, 7};
  ASSERT_TRUE(ref::paged_range_rows(table, 4, 13, 13).empty());
  BlockLoadPlanBuilder b(4);
  EXPECT_NO_THROW(b.append_paged_range(table, 13, 13));
  EXPECT_EQ(b.total_k(), 0);
  EXPECT_TRUE(b.segments().empty());
}

// SPEC §5.5 [decided] SWA decode index: the start slot's whole ring must fit in
// int32. start_slot INT32_MAX with ring 3 lies in the ring [2147483646, 2147483649),
// cut off by INT32_MAX: kInvalidArgument, output untouched. The ring just below,
// [2147483643, 2147483646), is fine: start 2147483645, 2 valid -> 2147483645, 2147483643.
TEST(Adversarial, SwaDecodeIndexStartSlotInLastPartialRing) {
  const cpu::CpuBackend b;
  std::vector<int32_t> out(2, 7);
  EXPECT_EQ(code_of([&] { b.swa_decode_index(std::vector<int32_t>{INT32_MAX, 1}, 1, 2, 3, out); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(out, (std::vector<int32_t>{7, 7}));
  b.swa_decode_index(std::vector<int32_t>{2147483645, 2}, 1, 2, 3, out);
  EXPECT_EQ(out, (std::vector<int32_t>{2147483645, 2147483643}));
}

// README "Exit status 0 when every property held": a property that ran zero cases
// did not hold. With a budget that expires before the first round (1 ns) the
// campaign prints "all properties held" and returns 0 although most (property,
// backend) rows ran 0 cases (`./kvcheck run --seconds 0.001` shows 60 cases over
// 27 rows). Every selected row must run at least one case, or be reported as not
// exercised (verdict not_run, saying why; e.g. a costly property the budget cannot fit),
// or the run must fail.
TEST(Adversarial, CampaignNeverReportsSuccessForPropertiesThatDidNotRun) {
  const std::string report =
      (std::filesystem::temp_directory_path() / ("kvcheck_adv_" + std::to_string(getpid()) + ".json"))
          .string();
  tool::CampaignOptions o;
  o.seconds = 1e-9;
  o.seed = 1;
  o.progress = false;
  o.report_path = report;
  std::ostringstream out, progress;
  // run_campaign sets RC_PARAMS for RapidCheck; keep this process's value.
  const char* old = std::getenv("RC_PARAMS");
  const std::string saved = old ? old : "";
  const int rc = tool::run_campaign(o, out, progress);
  if (old) setenv("RC_PARAMS", saved.c_str(), 1); else unsetenv("RC_PARAMS");
  std::ifstream f(report);
  ASSERT_TRUE(f) << out.str();
  const nlohmann::json j = nlohmann::json::parse(f);
  std::filesystem::remove(report);
  int rows_without_cases = 0;
  for (const auto& r : j["results"])
    if (r["cases"].get<int>() == 0 && !(r["verdict"] == "not_run" && r.contains("why"))) ++rows_without_cases;
  EXPECT_TRUE(rows_without_cases == 0 || rc != 0)
      << rows_without_cases << " rows ran 0 cases but rc = " << rc << "\n"
      << out.str();
}

// README: "Exit status 0 when every property held, 1 on any failure, 2 on bad
// options." CLI11 parse errors exit 105 (--cases 0, --seconds -1), 104 (--cases
// 99999999999) and 106 (`kvcheck bogus`); --seconds nan is accepted and runs the
// 200-case default. Each must exit 2.
TEST(Adversarial, CliBadOptionsExitWithTwo) {
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe");
  const std::filesystem::path tool = exe.parent_path().parent_path() / "tools" / "kvcheck" / "kvcheck";
  if (!std::filesystem::exists(tool)) GTEST_SKIP() << "no " << tool;
  for (const std::string args : {"run --cases 0", "run --cases -5", "run --seconds -1",
                                 "run --cases 99999999999", "run --seconds nan --property layout", "bogus"}) {
    const int status = std::system((tool.string() + " " + args + " --quiet >/dev/null 2>&1").c_str());
    ASSERT_TRUE(WIFEXITED(status)) << args;
    EXPECT_EQ(WEXITSTATUS(status), 2) << "kvcheck " << args;
  }
}

}  // namespace
}  // namespace kvcheck
