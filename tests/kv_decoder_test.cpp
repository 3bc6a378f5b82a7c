// The store_kv, gather_kv and prefill fuzz decoders are the property builders on input
// bytes (fuzzers/decoders.h): the empty input is the simplest scenario, scenarios grow
// with the input and stay within the fuzz limits, faults come with the code the one
// check demands, and the check holds on cpu and can fail.
#include <gtest/gtest.h>

#include <type_traits>
#include <vector>

#include "fuzzers/decoders.h"
#include "impl/backends.h"
#include "properties/gen/splitmix.h"
#include "properties/ops/kv/kv_check.h"
#include "tests/test_util.h"

namespace kvcheck::fuzz {
namespace {

// The two engines produce one type per op.
static_assert(std::is_same_v<decltype(decode_store_kv(std::declval<ByteSource&>())),
                             decltype(*props::gen_store_kv_scenario())>);
static_assert(std::is_same_v<decltype(decode_gather_kv(std::declval<ByteSource&>())),
                             decltype(*props::gen_gather_kv_scenario())>);
static_assert(std::is_same_v<decltype(decode_prefill(std::declval<ByteSource&>())),
                             decltype(*props::gen_prefill_scenario())>);

TEST(KvDecoders, EmptyInputIsTheSimplestValidScenario) {
  ByteSource a(nullptr, 0), b(nullptr, 0), c(nullptr, 0);
  const props::StoreKvScenario s = decode_store_kv(a);
  EXPECT_TRUE(s.fault.empty());
  EXPECT_EQ(s.cache.dtype, KvDtype::kBF16);
  EXPECT_EQ(s.cache.num_blocks, 1);
  EXPECT_EQ(s.cache.block_size, 1);
  EXPECT_EQ(s.cache.num_kv_heads * s.cache.head_dim, 1);
  EXPECT_TRUE(s.slot_mapping.empty());
  const props::GatherKvScenario g = decode_gather_kv(b);
  EXPECT_TRUE(g.fault.empty());
  EXPECT_EQ(g.cu_seqlens_k, std::vector<int32_t>{0});
  const props::PrefillScenario p = decode_prefill(c);
  EXPECT_TRUE(p.seqs.empty());
  EXPECT_FALSE(p.store_before_load);
  EXPECT_EQ(p.window, 1);
}

TEST(KvDecoders, ScenariosGrowWithTheInputWithinTheFuzzLimits) {
  size_t rows_short = 0, rows_long = 0;
  int64_t gathered_long = 0, prefill_q_short = 0, prefill_q_long = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    for (size_t len : {size_t{12}, size_t{600}}) {
      const auto bytes = random_bytes(seed, len);
      ByteSource a(bytes.data(), len), b(bytes.data(), len), c(bytes.data(), len);
      const props::StoreKvScenario s = decode_store_kv(a);
      const props::GatherKvScenario g = decode_gather_kv(b);
      const props::PrefillScenario p = decode_prefill(c);
      EXPECT_EQ(s.threads, 0);
      EXPECT_EQ(g.threads, 0);
      for (const props::KvCacheShape* sh : {&s.cache, &g.cache}) {  // a view's elements (one block may exceed)
        const int64_t per_block =
            int64_t{sh->block_size} * sh->num_kv_heads * (sh->head_dim + sh->pad_head + sh->pad_token) + sh->pad_page;
        EXPECT_TRUE(sh->num_blocks == 1 || sh->num_blocks * per_block <= props::kFuzzKvLimits.cache_elements)
            << props::describe(*sh);
      }
      int64_t q = 0;
      for (const SeqMeta& m : p.seqs) q += m.seqlen_q;
      (len == 12 ? rows_short : rows_long) = std::max(len == 12 ? rows_short : rows_long, s.slot_mapping.size());
      if (len == 12) prefill_q_short = std::max(prefill_q_short, q);
      if (len != 12) prefill_q_long = std::max(prefill_q_long, q);
      if (len != 12 && !g.cu_seqlens_k.empty()) gathered_long = std::max<int64_t>(gathered_long, g.cu_seqlens_k.back());
    }
  }
  EXPECT_LE(rows_short, 8u);
  EXPECT_GE(rows_long, 20u);
  EXPECT_GE(gathered_long, 20);
  EXPECT_LE(prefill_q_short, 12);
  EXPECT_GT(prefill_q_long, prefill_q_short);
}

TEST(KvDecoders, InvalidInputsAtAUsefulRateAndTheCheckHoldsOnCpu) {
  const auto cpu = backend_by_name("cpu");
  int store_faults = 0, store_raw = 0, gather_faults = 0, gather_raw = 0, wrong_order = 0;
  constexpr int kInputs = 800;  // rates of 1/8 and 1/16 judged on enough inputs to be stable
  for (uint64_t seed = 0; seed < kInputs; ++seed) {
    const auto bytes = random_bytes(seed ^ 0xBEEF, 24 + seed % 96);
    ByteSource a(bytes.data(), bytes.size()), b(bytes.data(), bytes.size()), c(bytes.data(), bytes.size());
    const props::StoreKvScenario s = decode_store_kv(a);
    const props::GatherKvScenario g = decode_gather_kv(b);
    const props::PrefillScenario p = decode_prefill(c);
    store_faults += s.code.has_value(), store_raw += !s.fault.empty() && !s.code;
    gather_faults += g.code.has_value(), gather_raw += !g.fault.empty() && !g.code;
    wrong_order += p.store_before_load;
    EXPECT_EQ(props::check_store_kv(*cpu, s).failure, "") << props::describe(s);
    EXPECT_EQ(props::check_gather_kv(*cpu, g).failure, "") << props::describe(g);
    EXPECT_EQ(props::check_prefill(*cpu, p).failure, "") << props::describe(p);
  }
  EXPECT_GE(store_faults, kInputs / 8);
  EXPECT_GE(store_raw, kInputs / 16);
  EXPECT_GE(gather_faults, kInputs / 8);
  EXPECT_GE(gather_raw, kInputs / 16);
  EXPECT_GE(wrong_order, kInputs / 16);
}

TEST(KvDecoders, TheChecksFailWhenTheDemandedCodeIsNotThrown) {
  const auto cpu = backend_by_name("cpu");
  ByteSource a(nullptr, 0), b(nullptr, 0);
  props::StoreKvScenario s = decode_store_kv(a);
  s.fault = "pretend";
  s.code = ErrorCode::kDuplicateSlot;
  const std::string fs = props::check_store_kv(*cpu, s).failure;
  EXPECT_NE(fs.find("expected duplicate-slot"), std::string::npos) << fs;
  props::GatherKvScenario g = decode_gather_kv(b);
  g.fault = "pretend";
  g.code = ErrorCode::kBlockOutOfRange;
  const std::string fg = props::check_gather_kv(*cpu, g).failure;
  EXPECT_NE(fg.find("expected block-out-of-range"), std::string::npos) << fg;
}

}  // namespace
}  // namespace kvcheck::fuzz
