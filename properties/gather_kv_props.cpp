// Properties of gather_kv (SPEC §7.5), each stating one invariant.
#include <fmt/format.h>
#include <rapidcheck.h>

#include <climits>
#include <limits>
#include <vector>

#include "properties/blame.h"
#include "properties/class_bounds.h"
#include "properties/classes.h"
#include "properties/kv_harness.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

bool skip(const Backend& b) { return !b.capabilities().kv_family; }

std::string ctx(const GatherKvScenario& s, const Backend& b) {
  return fmt::format("op=gather_kv backend={}\n{}", b.name(), describe(s));
}

void prop_gather_kv_matches_reference(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const auto s = *gen_gather_kv_scenario();
  note_kv_classes(s);
  const KvBuffers cache(s.cache);
  KvOutBuffers expected(s), actual(s);
  std::string ref_what, be_what;
  const auto ref_err = run_gather_kv(nullptr, s, cache, expected, &ref_what);
  const auto err = run_gather_kv(&b, s, cache, actual, &be_what);
  if (ref_err || err)
    RC_FAIL(fmt::format("{}\nvalid scenario: reference {}, backend {}", ctx(s, b), ref_err ? ref_what : "returned",
                        err ? be_what : "returned"));
  const auto from = static_cast<size_t>(actual.offset_bytes);  // the bytes before row 0: the mask check below
  const std::string dk = diff_kv_out("out_k", actual.out_k, s.cache.num_kv_heads, s.cache.head_dim,
                                     std::span<const uint8_t>(expected.k).subspan(from),
                                     std::span<const uint8_t>(actual.k).subspan(from));
  const std::string dv = diff_kv_out("out_v", actual.out_v, s.cache.num_kv_heads, s.cache.head_dim,
                                     std::span<const uint8_t>(expected.v).subspan(from),
                                     std::span<const uint8_t>(actual.v).subspan(from));
  if (!dk.empty() || !dv.empty()) RC_FAIL(ctx(s, b) + "\n" + dk + (dk.empty() ? "" : "\n") + dv);
  // Independent of both sides: only the elements of rows [0, cu_seqlens_k[b]) may change.
  const KvOutBuffers pristine(s);
  const int64_t total = s.cu_seqlens_k.back(), ts = actual.out_k.token_stride, hs = actual.out_k.head_stride;
  std::vector<bool> mask(actual.k.size(), false);
  for (int64_t r = 0; r < total; ++r)
    for (int64_t h = 0; h < s.cache.num_kv_heads; ++h)
      for (int64_t e = 0; e < 2 * int64_t{s.cache.head_dim}; ++e) mask[from + static_cast<size_t>(2 * (r * ts + h * hs) + e)] = true;
  for (size_t i = 0; i < mask.size(); ++i)
    if (!mask[i] && (actual.k[i] != pristine.k[i] || actual.v[i] != pristine.v[i]))
      RC_FAIL(fmt::format("{}\noutput byte {} is outside every gathered row's elements (row padding or past "
                          "cu_seqlens_k[b] = {}) but changed", ctx(s, b), i, total));
}

ErrorCode inject_gather_kv_fault(GatherKvScenario& s) {
  const int64_t num_seqs = static_cast<int64_t>(s.cu_seqlens_k.size()) - 1;
  const int64_t total = s.cu_seqlens_k.back();
  std::vector<int> kinds{2, 3, 4, 6};
  std::vector<int64_t> busy;  // sequences with tokens
  for (int64_t i = 0; i < num_seqs; ++i)
    if (s.cu_seqlens_k[static_cast<size_t>(i + 1)] > s.cu_seqlens_k[static_cast<size_t>(i)]) busy.push_back(i);
  if (!busy.empty()) kinds.insert(kinds.end(), {0, 1, 5});
  if (is_fp8(s.cache.dtype)) kinds.push_back(7);
  if (total > 1) kinds.push_back(8);
  switch (*rc::gen::elementOf(kinds)) {
    case 0:
    case 1: {
      const int64_t i = *rc::gen::elementOf(busy);
      const int64_t len = s.cu_seqlens_k[static_cast<size_t>(i + 1)] - s.cu_seqlens_k[static_cast<size_t>(i)];
      const int64_t j = *rc::gen::inRange<int64_t>(0, (len + s.cache.block_size - 1) / s.cache.block_size);
      int32_t& entry = s.block_table[static_cast<size_t>(i * s.max_blocks + j)];
      const bool minus_one = *rc::gen::arbitrary<bool>();
      entry = minus_one ? -1 : *rc::gen::elementOf(std::vector<int32_t>{s.cache.num_blocks, INT32_MAX, -2, INT32_MIN});
      s.fault = fmt::format("block_table[{}][{}] = {} is needed", i, j, entry);
      return minus_one ? ErrorCode::kRangeOutOfTable : ErrorCode::kBlockOutOfRange;
    }
    case 2:
      if (num_seqs == 0) {
        s.cu_seqlens_k[0] = 1;
        s.fault = "cu_seqlens_k[0] = 1";
      } else {
        const auto i = static_cast<size_t>(*rc::gen::inRange<int64_t>(0, num_seqs));
        s.cu_seqlens_k[i + 1] = s.cu_seqlens_k[i] - 1;
        s.fault = fmt::format("cu_seqlens_k[{}] decreases", i + 1);
      }
      return ErrorCode::kInvalidArgument;
    case 3:
      s.cu_seqlens_k.clear();
      s.fault = "cu_seqlens_k is empty";
      return ErrorCode::kShapeMismatch;
    case 4:
      s.block_table.push_back(0);
      s.fault = "block_table has one entry too many";
      return ErrorCode::kShapeMismatch;
    case 5:
      s.out_rows = total - 1;
      s.fault = "out rows < cu_seqlens_k[b]";
      return ErrorCode::kShapeMismatch;
    case 6:
      s.out_v_dtype = *rc::gen::elementOf(std::vector<KvDtype>{KvDtype::kE4M3, KvDtype::kE5M2});
      s.fault = "out_v dtype " + to_string(s.out_v_dtype);
      return ErrorCode::kInvalidArgument;
    case 7: {
      auto& v = s.cache.v_scale;
      v[0] = *rc::gen::elementOf(std::vector<float>{0.0f, -2.0f, std::numeric_limits<float>::quiet_NaN(),
                                                    -std::numeric_limits<float>::infinity()});
      s.fault = fmt::format("v_scale[0] = {}", v[0]);
      return ErrorCode::kInvalidArgument;
    }
    default:
      s.out_pad_token = -(s.cache.num_kv_heads * (s.cache.head_dim + s.out_pad_head));  // token_stride 0
      s.fault = "output rows overlap (token_stride 0)";
      return ErrorCode::kInvalidArgument;
  }
}

void prop_gather_kv_invalid_input_throws_and_writes_nothing(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  auto s = *gen_gather_kv_scenario();
  const ErrorCode want = inject_gather_kv_fault(s);
  note_class("error");
  const KvBuffers cache(s.cache);
  KvOutBuffers pristine(s), ref_out(s), out(s);
  std::string ref_what, be_what;
  const auto ref_err = run_gather_kv(nullptr, s, cache, ref_out, &ref_what);
  const auto err = run_gather_kv(&b, s, cache, out, &be_what);
  if (const std::string bad = compare_errors(want, ref_err, ref_what, err, be_what); !bad.empty())
    RC_FAIL(ctx(s, b) + "\n" + bad);
  if (out.k != pristine.k || out.v != pristine.v)
    RC_FAIL(ctx(s, b) + "\nan output changed although gather_kv threw (" + be_what + ")");
}

}  // namespace

void register_gather_kv_properties(Registry& r) {
  r.add({"prop_gather_kv_matches_reference", "gather_kv",
         "both outputs (rows, row padding, rows past cu_seqlens_k[b], tail) are bit-identical to the reference, "
         "and only the gathered rows' elements changed", true,
         prop_gather_kv_matches_reference, {}, nullptr, bounds::gather_kv()});
  r.add({"prop_gather_kv_invalid_input_throws_and_writes_nothing", "gather_kv",
         "a bad table entry, cu_seqlens_k, output or scale throws the right kvcheck::Error and writes nothing", true,
         prop_gather_kv_invalid_input_throws_and_writes_nothing, {}, nullptr, bounds::gather_kv_fault()});
}

}  // namespace kvcheck::props
