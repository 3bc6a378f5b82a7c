// store_kv's one check (SPEC §7.4): reference and backend store into identical K/V
// buffers (pattern-filled, canary-framed, strided or one-allocation views). See
// kv_check.h for the invariants.
#include <fmt/format.h>

#include <vector>

#include "properties/kv_check.h"
#include "properties/kv_harness.h"
#include "reference/kv_layout.h"

namespace kvcheck::props {
namespace {

// Which body bytes a valid store may write: the K and V records of valid slots
// (reference formula, SPEC §7.2).
std::vector<bool> written_bytes(const StoreKvScenario& s, const KvBuffers& buf) {
  std::vector<bool> mask(static_cast<size_t>(buf.body_bytes), false);
  const KvCacheLayout& l = buf.layout;
  const int64_t eb = kv_dtype_bytes(l.dtype);
  for (int32_t slot : s.slot_mapping) {
    if (slot < 0 || slot >= s.cache.num_slots()) continue;  // (a backend that accepted it fails the outcome)
    for (int side = 0; side < 2; ++side)
      for (int64_t h = 0; h < l.num_kv_heads; ++h)
        for (int64_t d = 0; d < l.head_dim; ++d) {
          const int64_t off = (side ? buf.v_offset : buf.k_offset) +
                              eb * ref::kv_element_offset(l, slot / l.block_size, slot % l.block_size, h, d);
          for (int64_t i = 0; i < eb; ++i)
            if (off + i >= 0 && off + i < buf.body_bytes) mask[static_cast<size_t>(off + i)] = true;
        }
  }
  return mask;
}

// "" or the first body byte outside the records of valid slots that changed.
std::string untouched_violation(const char* who, const StoreKvScenario& s, const KvBuffers& before,
                                const KvBuffers& after) {
  const auto mask = written_bytes(s, after);
  for (size_t i = 0; i < mask.size(); ++i)
    if (!mask[i] && after.body()[i] != before.body()[i])
      return fmt::format("{}: byte {} changed but no valid row stores there ({}): 0x{:02X} -> 0x{:02X}\n", who, i,
                         locate_kv_byte(after, static_cast<int64_t>(i)), before.body()[i], after.body()[i]);
  return "";
}

}  // namespace

Verdict check_store_kv(const Backend& b, const StoreKvScenario& s, unsigned which) {
  const KvBuffers pristine(s.cache);
  KvBuffers ref_buf(s.cache), be_buf(s.cache);
  Outcome ref, be;
  ref.code = run_store_kv(nullptr, s, ref_buf, &ref.message);
  be.code = run_store_kv(&b, s, be_buf, &be.message);
  Verdict v;
  if (be.code == ErrorCode::kUnsupported) {
    v.skipped = "store_kv: " + be.message;
    return v;
  }
  std::string& fail = v.failure;
  fail += expect_outcomes(s.fault, s.code, ref, be, b.name());
  if (!ref_buf.guards_intact()) fail += "the reference wrote into the canary band around the buffer\n";
  if (!be_buf.guards_intact()) fail += "wrote into the canary band around the buffer\n";
  if (which & kStoreKvErrorChangesNothing) {
    if (ref.code)
      if (const std::string d = diff_kv_buffers(ref_buf, pristine.bytes, ref_buf.bytes); !d.empty())
        fail += "the reference changed the buffer although it threw:\n" + d + "\n";
    if (be.code)
      if (const std::string d = diff_kv_buffers(be_buf, pristine.bytes, be_buf.bytes); !d.empty())
        fail += "the buffer changed although the store threw (" + be.message + "):\n" + d + "\n";
  }
  if (which & kStoreKvTouchesOnlyRecords) {
    if (!ref.code) fail += untouched_violation("reference", s, pristine, ref_buf);
    if (!be.code) fail += untouched_violation("backend", s, pristine, be_buf);
  }
  if ((which & kStoreKvMatchesReference) && !ref.code && !be.code)
    if (const std::string d = diff_kv_buffers(be_buf, ref_buf.bytes, be_buf.bytes); !d.empty())
      fail += "K/V buffer after store_kv differs (expected = reference):\n" + d + "\n";
  if (!fail.empty())  // the scenario itself is printed by the caller (RapidCheck, the fuzz report, explain)
    fail = fmt::format("op=store_kv backend={} {}\n{}", b.name(), describe(s.cache), fail);
  return v;
}

}  // namespace kvcheck::props
