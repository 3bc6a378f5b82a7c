// Properties of store_kv (SPEC §7.4), each stating one invariant.
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
#include "reference/kv_layout.h"

namespace kvcheck::props {
namespace {

bool skip(const Backend& b) { return !b.capabilities().kv_family; }

std::string ctx(const StoreKvScenario& s, const Backend& b) {
  return fmt::format("op=store_kv backend={}\n{}", b.name(), describe(s));
}

void prop_store_kv_matches_reference(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const auto s = *gen_store_kv_scenario();
  note_kv_classes(s);
  KvBuffers expected(s.cache), actual(s.cache);
  std::string ref_what, be_what;
  const auto ref_err = run_store_kv(nullptr, s, expected, &ref_what);
  const auto err = run_store_kv(&b, s, actual, &be_what);
  if (ref_err || err)
    RC_FAIL(fmt::format("{}\nvalid scenario: reference {}, backend {}", ctx(s, b),
                        ref_err ? ref_what : "returned", err ? be_what : "returned"));
  const std::string d = diff_kv_buffers(actual, expected.bytes, actual.bytes);
  if (!d.empty()) RC_FAIL(ctx(s, b) + "\n" + d);
}

// Which body bytes a valid store may write: the K and V records of valid slots
// (reference formula, SPEC §7.2).
std::vector<bool> written_bytes(const StoreKvScenario& s, const KvBuffers& buf) {
  std::vector<bool> mask(static_cast<size_t>(buf.body_bytes), false);
  const KvCacheLayout& l = buf.layout;
  const int64_t eb = kv_dtype_bytes(l.dtype);
  for (int32_t slot : s.slot_mapping) {
    if (slot < 0) continue;
    for (int side = 0; side < 2; ++side)
      for (int64_t h = 0; h < l.num_kv_heads; ++h)
        for (int64_t d = 0; d < l.head_dim; ++d) {
          const int64_t off = (side ? buf.v_offset : buf.k_offset) +
                              eb * ref::kv_element_offset(l, slot / l.block_size, slot % l.block_size, h, d);
          for (int64_t i = 0; i < eb; ++i) mask[static_cast<size_t>(off + i)] = true;
        }
  }
  return mask;
}

void prop_store_kv_touches_only_written_records(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  const auto s = *gen_store_kv_scenario();
  note_kv_classes(s);
  const KvBuffers before(s.cache);
  KvBuffers buf(s.cache);
  std::string what;
  if (run_store_kv(&b, s, buf, &what)) RC_FAIL(ctx(s, b) + "\nvalid scenario threw: " + what);
  if (!buf.guards_intact()) RC_FAIL(ctx(s, b) + "\nwrote into the canary band around the buffer");
  const auto mask = written_bytes(s, buf);
  for (size_t i = 0; i < mask.size(); ++i)
    if (!mask[i] && buf.body()[i] != before.body()[i])
      RC_FAIL(fmt::format("{}\nbyte {} changed but no valid row stores there ({}): 0x{:02X} -> 0x{:02X}", ctx(s, b), i,
                          locate_kv_byte(buf, static_cast<int64_t>(i)), before.body()[i], buf.body()[i]));
}

// One fault of SPEC §7.4 on a valid scenario, and the code it must raise.
ErrorCode inject_store_kv_fault(StoreKvScenario& s) {
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  const bool fp8 = is_fp8(s.cache.dtype);
  std::vector<int> kinds{6, 7};
  if (n > 0) kinds.insert(kinds.end(), {0, 2, 3, 9});
  bool has_valid = false;
  for (int32_t x : s.slot_mapping) has_valid |= x >= 0;
  if (n >= 2 && has_valid) kinds.push_back(1);
  if (fp8) kinds.insert(kinds.end(), {4, 5});
  if (s.cache.num_kv_heads > 1) kinds.push_back(8);
  switch (*rc::gen::elementOf(kinds)) {
    case 0: {
      const auto row = static_cast<size_t>(*rc::gen::inRange<int64_t>(0, n));
      const int32_t bad = *rc::gen::elementOf(std::vector<int32_t>{
          -2, INT32_MIN, INT32_MAX, static_cast<int32_t>(s.cache.num_slots()), -1000});
      s.slot_mapping[row] = bad;
      s.fault = fmt::format("slot_mapping[{}] = {}", row, bad);
      return ErrorCode::kSlotOutOfRange;
    }
    case 1: {
      size_t src = 0;
      while (s.slot_mapping[src] < 0) ++src;
      size_t dst = static_cast<size_t>(*rc::gen::inRange<int64_t>(0, n - 1));
      if (dst >= src) ++dst;
      s.slot_mapping[dst] = s.slot_mapping[src];
      s.fault = fmt::format("rows {} and {} both store slot {}", src, dst, s.slot_mapping[src]);
      return ErrorCode::kDuplicateSlot;
    }
    case 2:
      (*rc::gen::arbitrary<bool>() ? s.key : s.value).rows = n - 1;
      s.fault = "key or value holds one row fewer than slot_mapping";
      return ErrorCode::kShapeMismatch;
    case 3:
      s.value.data.clear();
      s.fault = "value data is null";
      return ErrorCode::kShapeMismatch;
    case 4: {
      auto& v = *rc::gen::arbitrary<bool>() ? s.cache.k_scale : s.cache.v_scale;
      const float bad = *rc::gen::elementOf(std::vector<float>{0.0f, -1.0f, -0.0f,
          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()});
      v[static_cast<size_t>(*rc::gen::inRange<int64_t>(0, static_cast<int64_t>(v.size())))] = bad;
      s.fault = fmt::format("a scale is {}", bad);
      return ErrorCode::kInvalidArgument;
    }
    case 5:
      s.cache.v_scale.push_back(1.0f);
      s.fault = "v_scale has one float too many";
      return ErrorCode::kShapeMismatch;
    case 6:
      s.key.dtype = *rc::gen::elementOf(std::vector<KvDtype>{KvDtype::kE4M3, KvDtype::kE5M2});
      if (!fp8 && *rc::gen::arbitrary<bool>())
        s.key.dtype = s.cache.dtype == KvDtype::kBF16 ? KvDtype::kFP16 : KvDtype::kBF16;
      s.fault = "key dtype " + to_string(s.key.dtype) + " does not go with the cache";
      return ErrorCode::kInvalidArgument;
    case 7:
      s.cache.capacity_cut = *rc::gen::inRange<int64_t>(1, 3);
      s.fault = "k_cache's buffer ends before the view does";
      return ErrorCode::kShapeMismatch;
    case 8:
      s.cache.pad_head = -1;  // stride_head = D - 1 (NHD) / heads overlap by a token (HND)
      if (s.cache.order == KvHeadLayout::kHND) s.cache.pad_head = -s.cache.head_dim - s.cache.pad_token;
      s.fault = "heads overlap (stride_head too small)";
      return ErrorCode::kInvalidArgument;
    default:
      s.key.head_stride = -1;
      s.fault = "key head_stride = -1";
      return ErrorCode::kInvalidArgument;
  }
}

void prop_store_kv_invalid_input_throws_and_writes_nothing(const Backend& b) {
  RC_SUCCEED_IF(skip(b));
  auto s = *gen_store_kv_scenario();
  const ErrorCode want = inject_store_kv_fault(s);
  note_class("error");
  const KvBuffers pristine(s.cache);
  KvBuffers ref_buf(s.cache), buf(s.cache);
  std::string ref_what, be_what;
  const auto ref_err = run_store_kv(nullptr, s, ref_buf, &ref_what);
  const auto err = run_store_kv(&b, s, buf, &be_what);
  if (const std::string bad = compare_errors(want, ref_err, ref_what, err, be_what); !bad.empty())
    RC_FAIL(ctx(s, b) + "\n" + bad);
  const std::string d = diff_kv_buffers(buf, pristine.bytes, buf.bytes);
  if (!d.empty()) RC_FAIL(ctx(s, b) + "\nthe buffer changed although the store threw (" + be_what + "):\n" + d);
}

}  // namespace

void register_store_kv_properties(Registry& r) {
  r.add({"prop_store_kv_matches_reference", "store_kv",
         "the whole K/V buffer (records, stride padding, gaps, canaries) is bit-identical to the reference", true,
         prop_store_kv_matches_reference, {}, nullptr, bounds::store_kv()});
  r.add({"prop_store_kv_touches_only_written_records", "store_kv",
         "bytes outside the K/V records of valid slots (-1 rows, other slots, padding, other layers) are unchanged",
         true, prop_store_kv_touches_only_written_records, {}, nullptr, bounds::store_kv()});
  r.add({"prop_store_kv_invalid_input_throws_and_writes_nothing", "store_kv",
         "a bad slot, row shape, dtype, scale or view throws the right kvcheck::Error and changes no byte", true,
         prop_store_kv_invalid_input_throws_and_writes_nothing, {}, nullptr, bounds::store_kv_fault()});
}

}  // namespace kvcheck::props
