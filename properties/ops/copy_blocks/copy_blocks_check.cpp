// copy_blocks' one check (SPEC §8.1): the backend and reference/copy_blocks.cpp on two
// copies of one allocation filled with a pattern and framed by canary bands, compared
// whole; two invariants stated without the reference (only destination blocks change,
// each to its source's prior bytes), so a bug both sides share still shows.
#include "properties/ops/copy_blocks/copy_blocks_check.h"

#include <algorithm>

#include "include/kvcheck/backend_abi.h"
#include "properties/classes.h"
#include "properties/gen/splitmix.h"
#include "reference/copy_blocks.h"

namespace kvcheck::props {
namespace {

constexpr int64_t kGuard = kGuardBytes;

struct Allocation {
  Buffer buf;
  explicit Allocation(const CopyBlocksScenario& s) : buf(static_cast<size_t>(s.size_bytes + 2 * kGuard)) {
    fill_pattern(buf.span(), s.fill_seed);
  }
  Allocation(const Allocation& o) : buf(o.buf.clone()) {}
  uint8_t* base() { return buf.data() + kGuard; }
};

CopyBlocksArgs args_of(const CopyBlocksScenario& s, uint8_t* base) {
  return {base, s.size_bytes, s.views, s.num_blocks, s.block_stride, s.block_mapping};
}

/// Bytes each view's destination blocks hold after a valid copy, worked out from the
/// prior bytes alone: the allocation with every dst block set to its src's bytes.
Buffer expected_by_rule(const CopyBlocksScenario& s, const Buffer& before, std::vector<bool>& written) {
  Buffer out = before.clone();
  written.assign(static_cast<size_t>(s.size_bytes), false);
  for (size_t v = 0; v + 1 < s.views.size(); v += 2)
    for (size_t p = 0; p + 1 < s.block_mapping.size(); p += 2) {
      const int64_t src = s.block_mapping[p], dst = s.block_mapping[p + 1];
      if (src == -1 || dst == -1) continue;
      for (int64_t i = 0; i < s.views[v + 1]; ++i) {
        const int64_t to = s.views[v] + dst * s.block_stride + i;
        out.data()[kGuard + to] = before.data()[kGuard + s.views[v] + src * s.block_stride + i];
        written[static_cast<size_t>(to)] = true;
      }
    }
  return out;
}

}  // namespace

void note_scenario_classes(const CopyBlocksScenario& s) {
  note_class(std::string("layout: ") + to_string(s.layout));
  bool padding = false;
  for (size_t p = 0; p + 1 < s.block_mapping.size(); p += 2)
    padding |= s.block_mapping[p] == -1 || s.block_mapping[p + 1] == -1;
  if (padding) note_class("padding pair");
  if (s.views.size() >= 4) note_class("several views");
  bool unaligned = false;
  for (size_t v = 0; v + 1 < s.views.size(); v += 2) unaligned |= (s.views[v] | s.views[v + 1] | s.block_stride) % 16 != 0;
  note_class(unaligned ? "byte path (unaligned view)" : "16-byte path");
  if (!s.fault.empty()) note_class("error");
}

Verdict check_copy_blocks(const Backend& b, const CopyBlocksScenario& s, unsigned invariants) {
  if (!(b.capabilities().ops & KVCHECK_OP_COPY_BLOCKS)) return {"", "copy_blocks: the backend has no copy_blocks"};
  const Allocation before(s);
  Allocation ref(before), be(before);
  const Outcome r = capture([&] { ref::copy_blocks(args_of(s, ref.base())); });
  Outcome o;
  {
    const int64_t work = static_cast<int64_t>(s.block_mapping.size() / 2) * static_cast<int64_t>(s.views.size() / 2);
    const ScopedParallelism split(&b, s.threads, work);
    o = capture([&] { b.copy_blocks(args_of(s, be.base())); });
  }
  const bool unchanged = be.buf == before.buf;
  if (Verdict v; judge_unsupported(o, false, unchanged, "copy_blocks", b.name(), v)) return v;
  std::string fail = expect_outcomes(s.fault, s.code, r, o, b.name());
  if ((invariants & kCopyErrorChangesNothing) && o.code && !unchanged)
    fail += "copy_blocks threw (" + o.message + ") but wrote: " +
            first_framed_difference(s.size_bytes, before.buf, be.buf, "allocation", "first change");
  if (!o.code && !r.code) {
    if (invariants & kCopyMatchesReference)
      fail += first_framed_difference(s.size_bytes, ref.buf, be.buf, "allocation", "against the reference");
    if (invariants & (kCopyTouchesOnlyDestinations | kCopyDestinationsAreSources)) {
      std::vector<bool> written;
      const Buffer want = expected_by_rule(s, before.buf, written);
      const std::string diff =
          first_framed_difference(s.size_bytes, want, be.buf, "allocation", "against SPEC §8.1's rule");
      if (!diff.empty()) {
        // Which invariant the first difference breaks: a byte no copy writes, or a
        // destination byte that is not its source's.
        const auto m = std::mismatch(want.span().begin(), want.span().end(), be.buf.span().begin());
        const int64_t at = (m.first - want.span().begin()) - kGuard;
        const bool dst = at >= 0 && at < s.size_bytes && written[static_cast<size_t>(at)];
        if ((dst && (invariants & kCopyDestinationsAreSources)) || (!dst && (invariants & kCopyTouchesOnlyDestinations)))
          fail += (dst ? "a destination block does not hold its source's prior bytes: "
                       : "a byte outside every destination block changed: ") + diff;
      }
    }
  }
  if (!fail.empty()) fail = "op=copy_blocks backend=" + std::string(b.name()) + "\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
