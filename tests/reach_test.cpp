// The reach machinery of the property layer (issue 11): the work-split hook, case-class
// bounds, error blame and the scenario fields that regression files carry.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "impl/backends.h"
#include "impl/cpu/parallel.h"
#include "properties/blame.h"
#include "properties/classes.h"
#include "properties/regression.h"

namespace kvcheck {
namespace {

std::set<std::pair<int64_t, int64_t>> chunks(int64_t n, int64_t bytes) {
  std::mutex mu;
  std::set<std::pair<int64_t, int64_t>> out;
  cpu::parallel_for(n, bytes, [&](int64_t b, int64_t e) {
    std::lock_guard lock(mu);
    out.emplace(b, e);
  });
  return out;
}

TEST(WorkSplit, OverrideSplitsSmallCallsOnThisThreadOnly) {
  EXPECT_EQ(chunks(5, 100).size(), 1u);  // 100 bytes: far below kMinBytesPerThread
  ASSERT_TRUE(cpu::set_thread_parallelism(3, 1));
  EXPECT_EQ(chunks(5, 100), (std::set<std::pair<int64_t, int64_t>>{{0, 1}, {1, 3}, {3, 5}}));
  EXPECT_EQ(chunks(2, 100).size(), 2u);  // never more chunks than rows
  std::set<std::pair<int64_t, int64_t>> other;
  std::thread([&] { other = chunks(5, 100); }).join();
  EXPECT_EQ(other.size(), 1u) << "the override is the calling thread's";
  EXPECT_FALSE(cpu::set_thread_parallelism(0, 7));
  EXPECT_FALSE(cpu::set_thread_parallelism(2000, 1));
  EXPECT_TRUE(cpu::set_thread_parallelism(0, 0));
  EXPECT_EQ(chunks(5, 100).size(), 1u);
}

TEST(WorkSplit, TheCpuPluginTakesTheHook) {
  const auto cpu = backend_by_name("cpu");
  EXPECT_TRUE(cpu->set_test_parallelism(2, 1));
  EXPECT_TRUE(cpu->set_test_parallelism(0, 0));
  EXPECT_FALSE(cpu->set_test_parallelism(-1, 1));
  EXPECT_TRUE(cpu->capabilities().host_memory);
}

TEST(ClassBounds, FloorsAndCeilingsBreak) {
  using props::ClassBound;
  const std::vector<ClassBound> bounds{{"multi-thread", 0.25, 1, ClassBound::Needs::kThreadKnob},
                                       {"custom format", 0.10},
                                       {"writes nothing", 0, 0.12}};
  props::ClassCounts ok{{"multi-thread", 100}, {"custom format", 40}, {"writes nothing", 20}};
  EXPECT_EQ(props::check_class_bounds(bounds, ok, 300, {}), "");
  props::ClassCounts bad{{"multi-thread", 10}, {"writes nothing", 60}};
  const std::string why = props::check_class_bounds(bounds, bad, 300, {});
  EXPECT_NE(why.find("multi-thread: 10 of 300 cases (3.3%), floor 25%"), std::string::npos) << why;
  EXPECT_NE(why.find("custom format: 0 of 300 cases"), std::string::npos) << why;
  EXPECT_NE(why.find("writes nothing: 60 of 300 cases (20.0%), ceiling 12%"), std::string::npos) << why;
  EXPECT_EQ(props::check_class_bounds(bounds, bad, 300, {false, true, true}), "") << "restricted backends";
  EXPECT_EQ(props::check_class_bounds({bounds[0]}, bad, 300, {true, false, true}), "") << "no thread knob";
}

TEST(ClassBounds, CasesCountOncePerClassAndOnlyWhenTheyHeld) {
  props::take_class_counts();
  props::begin_case();
  props::note_class("a");
  props::note_class("a");
  props::end_case();
  props::begin_case();
  props::note_class("b");  // this case throws: no end_case
  props::begin_case();
  props::note_class("a");
  props::end_case();
  props::note_class("outside a case");
  const auto counts = props::take_class_counts();
  EXPECT_EQ(counts, (props::ClassCounts{{"a", 2}}));
  EXPECT_EQ(props::decode_class_counts(props::encode_class_counts({{"x y", 3}, {"z", 1}})),
            (props::ClassCounts{{"x y", 3}, {"z", 1}}));
}

TEST(ErrorBlame, FirstIndexedEntryOfTheMessage) {
  EXPECT_EQ(props::error_blame("cpu store_kv_cache: slot_mapping[7] = 12 repeats slot_mapping[3]"),
            "slot_mapping[7] = 12");
  EXPECT_EQ(props::error_blame("load_segments[2] = [0, 1, 4, -9]: need ..."), "load_segments[2] = [0, 1, 4, -9]");
  EXPECT_EQ(props::error_blame("block_table[1][0] = -7 is out of range"), "block_table[1][0] = -7");
  EXPECT_EQ(props::error_blame("kv has 3 rows but slot_mapping has 4 entries"), "");
  // The blame of mutant 030: the first row of a duplicate instead of the second.
  EXPECT_NE(props::compare_errors(ErrorCode::kDuplicateSlot, ErrorCode::kDuplicateSlot,
                                  "slot_mapping[7] = 12 repeats slot_mapping[3]", ErrorCode::kDuplicateSlot,
                                  "cpu store_kv_cache: slot_mapping[3] = 12 repeats slot_mapping[7]"),
            "");
  EXPECT_EQ(props::compare_errors(ErrorCode::kDuplicateSlot, ErrorCode::kDuplicateSlot,
                                  "slot_mapping[7] = 12 repeats slot_mapping[3]", ErrorCode::kDuplicateSlot,
                                  "cpu store_kv_cache: slot_mapping[7] = 12 repeats slot_mapping[3]"),
            "");
  EXPECT_NE(props::compare_errors(ErrorCode::kDuplicateSlot, ErrorCode::kDuplicateSlot, "x", ErrorCode::kSlotOutOfRange,
                                  "y"),
            "");
}

TEST(ReachScenarios, NewFieldsRoundTripThroughJsonAndDefaultWhenAbsent) {
  props::StoreScenario s;
  s.shape = {KVCacheFormat::BF16(8), 4, 1, 0};
  s.slot_mapping = {1, -1};
  s.row_stride = 8;
  s.kv.assign(3 * 8, 0x3F80);  // three rows for two slots
  s.threads = 3;
  s.slot_tail = {2};
  s.far_row_stride = (int64_t{1} << 30) + 1;
  const auto back = nlohmann::json(s).get<props::StoreScenario>();
  EXPECT_EQ(back.threads, 3);
  EXPECT_EQ(back.slot_tail, std::vector<int32_t>{2});
  EXPECT_EQ(back.far_row_stride, s.far_row_stride);
  EXPECT_EQ(back.kv.size(), 24u);
  nlohmann::json plain = nlohmann::json(s);
  for (const char* k : {"threads", "slot_mapping_tail", "far_row_stride"}) plain.erase(k);
  const auto old = plain.get<props::StoreScenario>();
  EXPECT_EQ(old.threads, 0);
  EXPECT_TRUE(old.slot_tail.empty());
  EXPECT_EQ(old.far_row_stride, 0);

  props::LoadScenario l;
  l.shape = s.shape;
  l.out_data_pad = 3;
  l.out_offset = 5;
  const auto lb = nlohmann::json(l).get<props::LoadScenario>();
  EXPECT_EQ(lb.out_data_pad, 3);
  EXPECT_EQ(lb.out_scale_pad, 16);
  EXPECT_EQ(lb.out_offset, 5);
  EXPECT_FALSE(nlohmann::json(props::LoadScenario{}).contains("out_offset")) << "defaults are left out";
}

}  // namespace
}  // namespace kvcheck
