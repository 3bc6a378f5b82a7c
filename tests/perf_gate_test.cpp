// The performance gate's verdicts (bench/perf_gate.h; bench_cuda --check on the GPU):
// a drop past the tolerance fails, a row not measured is never a pass, a run that
// compared nothing fails, a baseline from another device gives no verdict.
#include "bench/perf_gate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace kvcheck::bench {
namespace {

nlohmann::json baseline(double tolerance = -1) {
  nlohmann::json b{{"device", "NVIDIA H200"}, {"rows", nlohmann::json::array()}};
  if (tolerance >= 0) b["tolerance_points"] = tolerance;
  b["rows"].push_back({{"op", "store"}, {"format", "V41"}, {"tokens", 262144}, {"block_size", 64},
                       {"ratio_to_copy", 0.70}, {"decode", false}});
  b["rows"].push_back({{"op", "load"}, {"format", "V41"}, {"tokens", 262144}, {"block_size", 64},
                       {"ratio_to_copy", 0.74}, {"decode", false}});
  b["rows"].push_back({{"op", "store"}, {"format", "V41"}, {"tokens", 1}, {"block_size", 64},
                       {"ratio_to_copy", 0.001}, {"decode", true}});
  return b;
}

TEST(PerfGate, SmallChangesPass) {
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.66, false}, {"load", "V41", 262144, 64, 0.80, false}};
  const PerfGateResult g = check_perf_baseline(rows, baseline(), -1, "NVIDIA H200", "b.json");
  EXPECT_TRUE(g.ran);
  EXPECT_EQ(g.compared, 2);
  EXPECT_EQ(g.dropped, 0);
  EXPECT_EQ(g.tolerance, 5.0);  // the default
  EXPECT_EQ(g.exit_code(), 0) << g.report;
}

TEST(PerfGate, ADropPastTheToleranceFails) {
  // 70 % -> 64.9 %: 5.1 points down; the decode row (0.1 % -> 0) is not gated.
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.649, false},
                                  {"load", "V41", 262144, 64, 0.74, false},
                                  {"store", "V41", 1, 64, 0.0, true}};
  const PerfGateResult g = check_perf_baseline(rows, baseline(), -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(g.compared, 2);
  EXPECT_EQ(g.dropped, 1);
  EXPECT_EQ(g.exit_code(), 1);
  EXPECT_NE(g.report.find("DROPPED"), std::string::npos) << g.report;
  // The file's tolerance, then the caller's, decide.
  EXPECT_EQ(check_perf_baseline(rows, baseline(6), -1, "NVIDIA H200", "b.json").exit_code(), 0);
  EXPECT_EQ(check_perf_baseline(rows, baseline(6), 1, "NVIDIA H200", "b.json").exit_code(), 1);
}

TEST(PerfGate, RowsNotMeasuredAreCountedAndNothingComparedFails) {
  const std::vector<PerfRow> one{{"load", "V41", 262144, 64, 0.74, false}};
  const PerfGateResult g = check_perf_baseline(one, baseline(), -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(g.compared, 1);
  EXPECT_EQ(g.not_measured, 1);
  EXPECT_EQ(g.exit_code(), 0);
  // Another block size is another row: nothing compared is a failure, not a pass.
  const std::vector<PerfRow> other{{"load", "V41", 262144, 133, 0.74, false}};
  const PerfGateResult none = check_perf_baseline(other, baseline(), -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(none.compared, 0);
  EXPECT_EQ(none.not_measured, 2);
  EXPECT_EQ(none.exit_code(), 1);
  EXPECT_NE(none.report.find("nothing compared"), std::string::npos) << none.report;
}

TEST(PerfGate, RowsUnderTheGatedSizeAreListedNeverFailed) {
  // A 4,096-token row (launch-bound) 20 points down is shown, not a drop; the same
  // drop at kMinGatedTokens fails.
  nlohmann::json b = baseline();
  for (const int64_t tokens : {int64_t{4096}, kMinGatedTokens})
    b["rows"].push_back({{"op", "store"}, {"format", "BF16(512)"}, {"tokens", tokens}, {"block_size", 133},
                         {"ratio_to_copy", 0.54}, {"decode", false}});
  const std::vector<PerfRow> small{{"store", "V41", 262144, 64, 0.70, false},
                                   {"store", "BF16(512)", 4096, 133, 0.34, false}};
  const PerfGateResult g = check_perf_baseline(small, b, -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(g.compared, 1);
  EXPECT_EQ(g.not_gated, 1);
  EXPECT_EQ(g.dropped, 0);
  EXPECT_EQ(g.exit_code(), 0) << g.report;
  EXPECT_NE(g.report.find("not gated (launch-bound)"), std::string::npos) << g.report;
  const std::vector<PerfRow> large{{"store", "BF16(512)", kMinGatedTokens, 133, 0.34, false}};
  const PerfGateResult d = check_perf_baseline(large, b, -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(d.dropped, 1);
  EXPECT_EQ(d.exit_code(), 1) << d.report;
}

// A row whose baseline launch took under kMinGatedMs (the 65,536-token FP4_INDEX load,
// 4.8-5.7 us, spread 9 points over four runs on one H100) is listed, never failed; the
// same drop on a row of kMinGatedMs or more fails; a row without "ms" is gated.
TEST(PerfGate, RowsShorterThanTheGatedTimeAreListedNeverFailed) {
  nlohmann::json b = baseline();
  b["rows"].push_back({{"op", "load"}, {"format", "FP4_INDEX"}, {"tokens", 65536}, {"block_size", 64},
                       {"ratio_to_copy", 0.607}, {"decode", false}, {"ms", 0.00483}});
  b["rows"].push_back({{"op", "load"}, {"format", "FP4_INDEX"}, {"tokens", 65536}, {"block_size", 133},
                       {"ratio_to_copy", 0.607}, {"decode", false}, {"ms", kMinGatedMs}});
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.70, false},
                                  {"load", "V41", 262144, 64, 0.74, false},
                                  {"load", "FP4_INDEX", 65536, 64, 0.512, false}};
  const PerfGateResult g = check_perf_baseline(rows, b, -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(g.compared, 2);
  EXPECT_EQ(g.not_gated, 1);
  EXPECT_EQ(g.dropped, 0);
  EXPECT_EQ(g.exit_code(), 0) << g.report;
  EXPECT_NE(g.report.find("not gated (launch-bound)"), std::string::npos) << g.report;
  EXPECT_NE(g.report.find("under 65536 tokens or 10 us not gated"), std::string::npos) << g.report;
  const std::vector<PerfRow> at_limit{{"load", "FP4_INDEX", 65536, 133, 0.512, false}};
  const PerfGateResult d = check_perf_baseline(at_limit, b, -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(d.dropped, 1);
  EXPECT_EQ(d.exit_code(), 1) << d.report;
  const std::vector<PerfRow> no_ms{{"store", "V41", 262144, 64, 0.60, false}};
  EXPECT_EQ(check_perf_baseline(no_ms, b, -1, "NVIDIA H200", "b.json").dropped, 1);
}

TEST(PerfGate, RowsTheBaselineLacksAreListedNeverPassedOrFailed) {
  // A row added since the baseline was written (a new format, another block size) at
  // any ratio is listed and counted; launch-bound and decode rows are not listed.
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.70, false},
                                  {"store", "kv e2m1 8x128 rope", 262144, 16, 0.01, false},
                                  {"load", "V41", 262144, 133, 0.74, false},
                                  {"store", "kv e2m1 8x128 rope", 4096, 16, 0.01, false},
                                  {"store", "kv e2m1 8x128 rope", 1, 16, 0.0, true}};
  const PerfGateResult g = check_perf_baseline(rows, baseline(), -1, "NVIDIA H200", "b.json");
  EXPECT_EQ(g.compared, 1);
  EXPECT_EQ(g.not_in_baseline, 2);
  EXPECT_EQ(g.dropped, 0);
  EXPECT_EQ(g.exit_code(), 0) << g.report;
  EXPECT_NE(g.report.find("kv e2m1 8x128 rope"), std::string::npos) << g.report;
  EXPECT_NE(g.report.find("2 not in the baseline"), std::string::npos) << g.report;
  EXPECT_EQ(g.report.find("   4096 "), std::string::npos) << g.report;
}

TEST(PerfGate, AnotherDeviceGivesNoVerdict) {
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.10, false}};
  const PerfGateResult g = check_perf_baseline(rows, baseline(), -1, "NVIDIA A100", "b.json");
  EXPECT_FALSE(g.ran);
  EXPECT_EQ(g.compared, 0);
  EXPECT_EQ(g.exit_code(), 0);
  EXPECT_NE(g.report.find("not run"), std::string::npos) << g.report;
}

// bench_cuda --slots blocks writes "slots": "blocks" (a prefill's pattern) and --pdl
// "launch": "pdl" (an engine's PDL chain): other ratios, never a baseline of the gate,
// which times scattered slots and plain launches; the report names the option.
TEST(PerfGate, ABaselineMeasuredOtherwiseGivesNoVerdict) {
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.10, false}};
  const struct {
    const char *field, *value, *gated, *option;
  } kOtherwise[] = {{"slots", "blocks", "scattered", "--slots blocks"}, {"launch", "pdl", "plain", "--pdl"}};
  for (const auto& o : kOtherwise) {
    SCOPED_TRACE(o.option);
    nlohmann::json b = baseline();
    b[o.field] = o.value;
    const PerfGateResult g = check_perf_baseline(rows, b, -1, "NVIDIA H200", "b.json");
    EXPECT_FALSE(g.ran);
    EXPECT_EQ(g.compared, 0);
    EXPECT_NE(g.report.find(std::string("of ") + o.option + ";"), std::string::npos) << g.report;
    b[o.field] = o.gated;
    EXPECT_TRUE(check_perf_baseline(rows, b, -1, "NVIDIA H200", "b.json").ran);
    // Among several files, one measured otherwise never shadows this device's gated one ...
    nlohmann::json other = baseline();
    other[o.field] = o.value;
    const PerfGateResult g2 =
        check_perf_baselines(rows, {{"other.json", other}, {"gated.json", baseline()}}, -1, "NVIDIA H200");
    EXPECT_TRUE(g2.ran);
    EXPECT_NE(g2.report.find("gated.json"), std::string::npos) << g2.report;
    // ... and as this device's only file it gives no verdict, the report saying why (not
    // "no baseline is from" this device).
    const PerfGateResult g3 = check_perf_baselines(rows, {{"other.json", other}}, -1, "NVIDIA H200");
    EXPECT_FALSE(g3.ran);
    EXPECT_NE(g3.report.find(std::string("other.json (") + o.option + ")"), std::string::npos) << g3.report;
    // A value that is not a string names the file, as a missing field does.
    other[o.field] = 1;
    EXPECT_THROW(check_perf_baselines(rows, {{"bad.json", other}}, -1, "NVIDIA H200"), std::invalid_argument);
  }
  // Both options at once: the report names both.
  nlohmann::json both = baseline();
  both["slots"] = "blocks";
  both["launch"] = "pdl";
  EXPECT_NE(check_perf_baseline(rows, both, -1, "NVIDIA H200", "b.json").report.find("--slots blocks --pdl"),
            std::string::npos);
}

// One baseline per GPU model: this device's is the one compared (the H100's drop fails
// on the H100, the H200's file is not consulted), and with none there is no verdict,
// the report naming each file's device.
TEST(PerfGate, TheBaselineOfThisDeviceIsTheOneCompared) {
  nlohmann::json h100 = baseline();
  h100["device"] = "NVIDIA H100 80GB HBM3";
  h100["rows"][0]["ratio_to_copy"] = 0.80;
  const std::vector<NamedBaseline> both{{"baseline_h200.json", baseline()}, {"baseline_h100.json", h100}};
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.72, false}, {"load", "V41", 262144, 64, 0.74, false}};
  const PerfGateResult on_h100 = check_perf_baselines(rows, both, -1, "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(on_h100.ran);
  EXPECT_EQ(on_h100.dropped, 1);  // 80 -> 72 against the H100's file; the H200's 70 would pass
  EXPECT_NE(on_h100.report.find("baseline_h100.json"), std::string::npos) << on_h100.report;
  const PerfGateResult on_h200 = check_perf_baselines(rows, both, -1, "NVIDIA H200");
  EXPECT_TRUE(on_h200.ran);
  EXPECT_EQ(on_h200.dropped, 0);
  EXPECT_EQ(on_h200.compared, 2);
  const PerfGateResult elsewhere = check_perf_baselines(rows, both, -1, "NVIDIA A100");
  EXPECT_FALSE(elsewhere.ran);
  EXPECT_EQ(elsewhere.exit_code(), 0);
  EXPECT_NE(elsewhere.report.find("baseline_h100.json ('NVIDIA H100 80GB HBM3')"), std::string::npos)
      << elsewhere.report;
  EXPECT_FALSE(check_perf_baselines(rows, {}, -1, "NVIDIA H200").ran);
  // Many long names: the report keeps every one (no fixed-size buffer).
  std::vector<NamedBaseline> many;
  for (int i = 0; i < 12; ++i) many.push_back({std::string(80, 'a' + i) + ".json", baseline()});
  const std::string report = check_perf_baselines(rows, many, -1, "NVIDIA A100").report;
  EXPECT_NE(report.find(std::string(80, 'l') + ".json ('NVIDIA H200'))\n"), std::string::npos) << report;
}

// A file without "device", wherever it sits, or a matching file without rows, is an
// error naming that file, not a verdict.
TEST(PerfGate, ABaselineWithoutItsFieldsIsAnErrorNamingIt) {
  nlohmann::json no_device = baseline();
  no_device.erase("device");
  const std::vector<PerfRow> rows{{"store", "V41", 262144, 64, 0.70, false}};
  for (const auto& files : {std::vector<NamedBaseline>{{"good.json", baseline()}, {"bad.json", no_device}},
                            std::vector<NamedBaseline>{{"bad.json", no_device}, {"good.json", baseline()}}}) {
    try {
      check_perf_baselines(rows, files, -1, "NVIDIA H200");
      ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  }
  nlohmann::json no_rows = baseline();
  no_rows.erase("rows");
  EXPECT_THROW(check_perf_baselines(rows, {{"other.json", no_rows}}, -1, "NVIDIA H200"), std::invalid_argument);
}

TEST(PerfGate, AMalformedBaselineThrows) {
  nlohmann::json b = baseline();
  b["rows"][0].erase("ratio_to_copy");
  EXPECT_THROW(check_perf_baseline({}, b, -1, "NVIDIA H200", "b.json"), nlohmann::json::exception);
}

// The committed baselines are bench_cuda --json files the gate reads, with their rows,
// one per GPU model.
TEST(PerfGate, TheCommittedBaselinesParse) {
  for (const char* name : {"baseline_h200.json", "baseline_h100.json"}) {
    std::ifstream in(std::string(KVCHECK_SOURCE_DIR) + "/bench/" + name);
    ASSERT_TRUE(in) << name;
    const nlohmann::json b = nlohmann::json::parse(in);
    std::vector<PerfRow> same;
    for (const auto& r : b.at("rows"))
      same.push_back({r.at("op"), r.at("format"), r.at("tokens"), r.at("block_size"), r.at("ratio_to_copy"),
                      r.value("decode", false)});
    const PerfGateResult g = check_perf_baseline(same, b, -1, b.at("device"), name);
    EXPECT_GT(g.compared, 50) << name;
    EXPECT_EQ(g.dropped, 0) << name;
    EXPECT_EQ(g.tolerance, 5.0) << name;
  }
}

}  // namespace
}  // namespace kvcheck::bench
