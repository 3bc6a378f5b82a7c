// One scenario model, two engines (properties/gen/source.h): the fuzz decoders of
// store/load/round_trip/index/plan/slot_mapping are the generators' builders on input bytes, so a
// short input is a tiny scenario, scenarios grow with the input, and a useful share of
// inputs is invalid on purpose, with the code the check then demands.
#include <gtest/gtest.h>

#include <vector>

#include "fuzzers/decoders.h"
#include "impl/backends.h"
#include "properties/gen/splitmix.h"
#include "properties/metadata_checks.h"
#include "properties/ops/store_load/op_checks.h"
#include "tests/test_util.h"

namespace kvcheck::fuzz {
namespace {

TEST(ByteSource, ReadsTheFewestBytesAndAnswersLowWhenExhausted) {
  const uint8_t bytes[] = {7, 0x34, 0x12, 200};
  ByteSource src(bytes, sizeof bytes);
  EXPECT_EQ(src.range(0, 9), 7);             // one byte for 10 values
  EXPECT_EQ(src.range(0, 0xFFFF), 0x1234);   // two bytes, little-endian
  EXPECT_EQ(src.range(10, 10), 10);          // no choice: no byte
  EXPECT_EQ(src.range(-5, 94), -5 + 200 % 100);
  EXPECT_EQ(src.remaining(), 0u);
  EXPECT_EQ(src.range(3, 1000), 3);          // exhausted: the low end
  EXPECT_EQ(src.seed(), 0u);
}

TEST(ByteSource, CountsAreBoundedByTheRemainingInput) {
  const std::vector<uint8_t> bytes(9, 0x02);
  ByteSource src(bytes.data(), bytes.size());
  EXPECT_EQ(src.count(0, 1000, 4), 2);  // 9 bytes left at cost 4: [0, 2], one byte: 2 % 3
  EXPECT_EQ(src.count(5, 1000, 100), 5);  // 8 left, less than one unit: no choice
  ByteSource empty(nullptr, 0);
  EXPECT_EQ(empty.count(0, 1000, 1), 0);
}

TEST(Decoders, EmptyInputIsTheSimplestValidScenario) {
  ByteSource src(nullptr, 0);
  const props::StoreFaultScenario c = decode_store(src);
  EXPECT_TRUE(c.fault.empty());
  EXPECT_EQ(c.scenario.shape.num_blocks, 1);
  EXPECT_EQ(c.scenario.shape.block_size, 1);
  EXPECT_TRUE(c.scenario.slot_mapping.empty());
  ByteSource src2(nullptr, 0);
  const props::LoadFaultScenario l = decode_load(src2);
  EXPECT_TRUE(l.fault.empty());
  EXPECT_EQ(l.scenario.total_k, 0);
}

TEST(Decoders, ScenariosGrowWithTheInput) {
  size_t max_rows_short = 0, max_rows_long = 0;
  int32_t max_blocks_short = 0;
  for (uint64_t seed = 0; seed < 400; ++seed) {
    for (size_t len : {size_t{12}, size_t{400}}) {
      const auto b = random_bytes(seed, len);
      ByteSource src(b.data(), b.size());
      const props::StoreFaultScenario c = decode_store(src);
      const size_t n = c.scenario.slot_mapping.size();
      if (len == 12) {
        max_rows_short = std::max(max_rows_short, n);
        max_blocks_short = std::max(max_blocks_short, c.scenario.shape.num_blocks);
      } else {
        max_rows_long = std::max(max_rows_long, n);
      }
    }
  }
  EXPECT_LE(max_rows_short, 6u);   // n <= remaining / 2 after the shape's few bytes
  EXPECT_LE(max_blocks_short, 2);  // num_blocks <= 1 + remaining / 8
  EXPECT_GE(max_rows_long, 40u);
}

TEST(Decoders, InvalidInputsAtAUsefulRateWithTheCodeTheCheckDemands) {
  const auto cpu = backend_by_name("cpu");
  int store_faults = 0, store_raw = 0, load_faults = 0, load_raw = 0;
  constexpr int kInputs = 600;
  for (uint64_t seed = 0; seed < kInputs; ++seed) {
    const auto b = random_bytes(seed ^ 0xF00D, 24 + seed % 64);
    ByteSource s1(b.data(), b.size()), s2(b.data(), b.size());
    const props::StoreFaultScenario c = decode_store(s1);
    const props::LoadFaultScenario l = decode_load(s2);
    store_faults += c.code.has_value(), store_raw += !c.fault.empty() && !c.code;
    load_faults += l.code.has_value(), load_raw += !l.fault.empty() && !l.code;
    // The one check holds on cpu; for faults it demands exactly c.code on both sides.
    EXPECT_EQ(props::check_store(*cpu, c).failure, "") << props::describe(c);
    EXPECT_EQ(props::check_load(*cpu, l).failure, "") << props::describe(l);
  }
  EXPECT_GE(store_faults, kInputs / 8);
  EXPECT_GE(store_raw, kInputs / 16);
  EXPECT_GE(load_faults, kInputs / 8);
  EXPECT_GE(load_raw, kInputs / 16);
}

TEST(Decoders, TheCheckFailsWhenTheDemandedCodeIsNotThrown) {
  // A valid scenario labelled with a fault it does not have: both sides return, so the
  // check must report that they did not throw.
  ByteSource src(nullptr, 0);
  props::StoreFaultScenario c = decode_store(src);
  c.fault = "pretend";
  c.code = ErrorCode::kDuplicateSlot;
  const auto cpu = backend_by_name("cpu");
  const std::string f = props::check_store(*cpu, c).failure;
  EXPECT_NE(f.find("expected duplicate-slot"), std::string::npos) << f;
}

TEST(Decoders, IndexAndPlanEmptyInputsAreTheSimplestScenarios) {
  ByteSource a(nullptr, 0);
  const props::IndexScenario i = decode_index(a);
  EXPECT_EQ(i.op, props::IndexScenario::Op::kConvert);
  EXPECT_EQ(i.num_q, 0);
  EXPECT_EQ(i.block_size, 1);
  EXPECT_TRUE(i.fault.empty());
  ByteSource b(nullptr, 0);
  const props::PlanScenario p = decode_plan(b);
  EXPECT_EQ(p.mode, props::PlanScenario::Mode::kBuilder);
  EXPECT_EQ(p.block_size, 1);
  EXPECT_TRUE(p.ops.empty());
}

TEST(Decoders, IndexAndPlanScenariosGrowWithTheInput) {
  int64_t entries_short = 0, entries_long = 0;
  size_t ops_short = 0, ops_long = 0;
  for (uint64_t seed = 0; seed < 400; ++seed)
    for (size_t len : {size_t{12}, size_t{400}}) {
      const auto bytes = random_bytes(seed, len);
      ByteSource s1(bytes.data(), bytes.size()), s2(bytes.data(), bytes.size());
      const props::IndexScenario i = decode_index(s1);
      const int64_t entries = int64_t{i.num_q} * props::index_out_width(i);
      const size_t ops = decode_plan(s2).ops.size();
      (len == 12 ? entries_short : entries_long) = std::max(len == 12 ? entries_short : entries_long, entries);
      (len == 12 ? ops_short : ops_long) = std::max(len == 12 ? ops_short : ops_long, ops);
    }
  EXPECT_LE(entries_short, 40);  // num_q <= remaining / 4, widths <= remaining
  EXPECT_LE(ops_short, 2u);      // an append costs 6 bytes
  EXPECT_GE(entries_long, 100);
  EXPECT_GE(ops_long, 10u);
}

TEST(Decoders, IndexAndPlanFaultsAtAUsefulRateAndTheCheckHolds) {
  const auto cpu = backend_by_name("cpu");
  int index_faults = 0, index_raw = 0, plan_faults = 0;
  constexpr int kInputs = 800;
  for (uint64_t seed = 0; seed < kInputs; ++seed) {
    const auto b = random_bytes(seed ^ 0xBEEF, 16 + seed % 96);
    ByteSource s1(b.data(), b.size()), s2(b.data(), b.size());
    const props::IndexScenario i = decode_index(s1);
    const props::PlanScenario p = decode_plan(s2);
    index_faults += i.code.has_value(), index_raw += !i.fault.empty() && !i.code;
    bool faulty = !p.broken.empty() || p.table_mode != "disjoint shuffled";
    for (const auto& op : p.ops) faulty = faulty || op.code.has_value();
    plan_faults += faulty;
    EXPECT_EQ(props::check_index(*cpu, i).failure, "") << props::describe(i);
    EXPECT_EQ(props::check_plan(p).failure, "") << props::describe(p);
  }
  EXPECT_GE(index_faults, kInputs / 40);  // convert (1 in 4), then a fault (1 in 5)
  EXPECT_GE(index_raw, kInputs / 40);
  EXPECT_GE(plan_faults, kInputs / 8);
}

TEST(Decoders, IndexAndPlanChecksFailWhenTheDemandedCodeIsNotThrown) {
  const auto cpu = backend_by_name("cpu");
  ByteSource a(nullptr, 0);
  props::IndexScenario i = decode_index(a);  // valid, labelled with a fault it lacks
  i.fault = "pretend";
  i.code = ErrorCode::kRangeOutOfTable;
  EXPECT_NE(props::check_index(*cpu, i).failure.find("must throw range-out-of-table"), std::string::npos);
  props::PlanScenario p;
  p.ops.push_back({props::PlanOp::Kind::kZeroFill, 3, 0, 0, {}, "pretend", ErrorCode::kInvalidArgument});
  EXPECT_NE(props::check_plan(p).failure.find("must throw invalid-argument"), std::string::npos);
}

TEST(Decoders, SlotMappingEmptyInputIsTheSimplestScenario) {
  ByteSource a(nullptr, 0);
  const props::SlotMappingScenario s = decode_slot_mapping(a);
  EXPECT_EQ(s.op, props::SlotMappingScenario::Op::kPrefill);
  EXPECT_EQ(s.block_size, 1);
  EXPECT_TRUE(s.tables.empty());
  EXPECT_TRUE(s.fault.empty());
  EXPECT_EQ(props::check_slot_mapping(s).failure, "");
}

TEST(Decoders, SlotMappingScenariosGrowWithTheInput) {
  size_t seqs_short = 0, seqs_long = 0;
  for (uint64_t seed = 0; seed < 400; ++seed)
    for (size_t len : {size_t{12}, size_t{400}}) {
      const auto bytes = random_bytes(seed, len);
      ByteSource src(bytes.data(), bytes.size());
      const size_t seqs = decode_slot_mapping(src).tables.size();
      size_t& most = len == 12 ? seqs_short : seqs_long;
      most = std::max(most, seqs);
    }
  EXPECT_LE(seqs_short, 2u);  // a sequence costs 8 bytes (an injected one more)
  EXPECT_GE(seqs_long, 4u);
}

TEST(Decoders, SlotMappingFaultsAtAUsefulRateAndTheCheckHolds) {
  int faults = 0, raw = 0;
  constexpr int kInputs = 2000;
  for (uint64_t seed = 0; seed < kInputs; ++seed) {
    const auto b = random_bytes(seed ^ 0x5107, 16 + seed % 96);
    ByteSource src(b.data(), b.size());
    const props::SlotMappingScenario s = decode_slot_mapping(src);
    faults += s.code.has_value(), raw += !s.fault.empty() && !s.code;
    EXPECT_EQ(props::check_slot_mapping(s).failure, "") << props::describe(s);
  }
  EXPECT_GE(faults, kInputs / 8);  // 1 in 5 each
  EXPECT_GE(raw, kInputs / 8);
}

TEST(Decoders, SlotMappingCheckFailsOnTheWrongOutcome) {
  ByteSource a(nullptr, 0);
  props::SlotMappingScenario s = decode_slot_mapping(a);  // valid, labelled with a fault it lacks
  s.fault = "pretend";
  s.code = ErrorCode::kRangeOutOfTable;
  EXPECT_NE(props::check_slot_mapping(s).failure.find("must throw range-out-of-table"), std::string::npos);
  props::SlotMappingScenario bad;  // labelled valid, but num_cached > num_tokens
  bad.tables = {{0}};
  bad.num_cached = {2};
  bad.num_tokens = {1};
  EXPECT_NE(props::check_slot_mapping(bad).failure.find("rejected a valid input"), std::string::npos);
  props::SlotMappingScenario graph;  // prepare_decode of one sequence into two CUDA-graph rows
  graph.op = props::SlotMappingScenario::Op::kPrepareDecode;
  graph.tables = {{3}};
  graph.num_cached = {0};
  graph.num_tokens = {1};
  graph.graph_batch_size = 2;
  EXPECT_EQ(props::check_slot_mapping(graph).failure, "");  // slot 3, then a -1 padding row
  graph.graph_batch_size = -1;
  EXPECT_NE(props::check_slot_mapping(graph).failure.find("rejected a valid input"), std::string::npos);
}

}  // namespace
}  // namespace kvcheck::fuzz
