// swap_blocks' one check (docs/spec.md §8.3): the backend and reference/swap_blocks.cpp
// on two copies of the same two allocations (src from a pattern, dst from another), each
// framed by canary bands, compared whole; two invariants stated without the reference
// (only dst blocks a pair names change, each to its src block's bytes), so a bug both
// sides share still shows. src must come back unchanged in every case.
#include "properties/ops/swap_blocks/swap_blocks_check.h"

#include <algorithm>

#include "include/kvcheck/backend_abi.h"
#include "properties/classes.h"
#include "properties/gen/splitmix.h"
#include "reference/swap_blocks.h"

namespace kvcheck::props {
namespace {

constexpr int64_t kGuard = kGuardBytes;
constexpr uint32_t kDstFill = 0x5a5a5a5au;  // dst's pattern differs from src's

/// src and dst with canary bands: two buffers, or one holding both when the scenario
/// puts dst inside src's allocation (the overlap fault).
struct Pools {
  Buffer src_buf, dst_buf;
  const SwapBlocksScenario* s;
  explicit Pools(const SwapBlocksScenario& sc)
      : src_buf(static_cast<size_t>(
            (sc.dst_inside_src >= 0 ? std::max(sc.src.size_bytes, sc.dst_inside_src + sc.dst.size_bytes)
                                    : sc.src.size_bytes) +
            2 * kGuard)),
        dst_buf(static_cast<size_t>(sc.dst_inside_src >= 0 ? 0 : sc.dst.size_bytes + 2 * kGuard)),
        s(&sc) {
    fill_pattern(src_buf.span(), sc.fill_seed);
    fill_pattern(dst_buf.span(), sc.fill_seed ^ kDstFill);
  }
  Pools(const Pools& o) : src_buf(o.src_buf.clone()), dst_buf(o.dst_buf.clone()), s(o.s) {}
  uint8_t* src() { return src_buf.data() + kGuard; }
  uint8_t* dst() { return s->dst_inside_src >= 0 ? src() + s->dst_inside_src : dst_buf.data() + kGuard; }
  bool operator==(const Pools& o) const { return src_buf == o.src_buf && dst_buf == o.dst_buf; }
};

SwapBlocksArgs args_of(const SwapBlocksScenario& s, Pools& p) {
  SwapBlocksArgs a;
  a.src = p.src();
  a.src_pool = {s.src.size_bytes, s.src.num_blocks, s.src.block_stride, s.src.host};
  a.dst = p.dst();
  a.dst_pool = {s.dst.size_bytes, s.dst.num_blocks, s.dst.block_stride, s.dst.host};
  a.views = s.views;
  a.block_mapping = s.block_mapping;
  return a;
}

/// dst as a valid swap leaves it, from the prior bytes alone: every dst block a pair
/// names set to its src block's bytes, per view.
Buffer expected_by_rule(const SwapBlocksScenario& s, const Pools& before, std::vector<bool>& written) {
  Buffer out = before.dst_buf.clone();
  written.assign(static_cast<size_t>(s.dst.size_bytes), false);
  for (size_t v = 0; v + 2 < s.views.size(); v += 3)
    for (size_t p = 0; p + 1 < s.block_mapping.size(); p += 2) {
      const int64_t from = s.block_mapping[p], to = s.block_mapping[p + 1];
      if (from == -1 || to == -1) continue;
      for (int64_t i = 0; i < s.views[v + 2]; ++i) {
        const int64_t at = s.views[v + 1] + to * s.dst.block_stride + i;
        out.data()[kGuard + at] = before.src_buf.data()[kGuard + s.views[v] + from * s.src.block_stride + i];
        written[static_cast<size_t>(at)] = true;
      }
    }
  return out;
}

}  // namespace

void note_scenario_classes(const SwapBlocksScenario& s) {
  note_class("direction: " + direction(s));
  note_class(std::string("src layout: ") + to_string(s.src.layout));
  note_class(std::string("dst layout: ") + to_string(s.dst.layout));
  if (s.src.layout != s.dst.layout) note_class("layout changes across the swap");
  bool padding = false;
  for (size_t p = 0; p + 1 < s.block_mapping.size(); p += 2)
    padding |= s.block_mapping[p] == -1 || s.block_mapping[p + 1] == -1;
  if (padding) note_class("padding pair");
  bool unaligned = false;
  for (size_t v = 0; v + 2 < s.views.size(); v += 3)
    unaligned |= (s.views[v] | s.views[v + 1] | s.views[v + 2] | s.src.block_stride | s.dst.block_stride) % 16 != 0;
  note_class(unaligned ? "byte path (unaligned view)" : "16-byte path");
  if (!s.fault.empty()) note_class("error");
}

Verdict check_swap_blocks(const Backend& b, const SwapBlocksScenario& s, unsigned invariants) {
  if (!(b.capabilities().ops & KVCHECK_OP_SWAP_BLOCKS)) return {"", "swap_blocks: the backend has no swap_blocks"};
  const Pools before(s);
  Pools ref(before), be(before);
  const Outcome r = capture([&] { ref::swap_blocks(args_of(s, ref)); });
  Outcome o;
  {
    const int64_t work = static_cast<int64_t>(s.block_mapping.size() / 2) * static_cast<int64_t>(s.views.size() / 3);
    const ScopedParallelism split(&b, s.threads, work);
    o = capture([&] { b.swap_blocks(args_of(s, be)); });
  }
  const bool unchanged = be == before;
  if (Verdict v; judge_unsupported(o, false, unchanged, "swap_blocks", b.name(), v)) return v;
  std::string fail = expect_outcomes(s.fault, s.code, r, o, b.name());
  const int64_t src_size = s.dst_inside_src >= 0 ? static_cast<int64_t>(before.src_buf.size()) - 2 * kGuard
                                                 : s.src.size_bytes;
  if (s.dst_inside_src < 0)  // src is only read: every byte and canary comes back
    fail += first_framed_difference(src_size, before.src_buf, be.src_buf, "src", "src changed");
  if ((invariants & kSwapErrorChangesNothing) && o.code && !unchanged)
    fail += "swap_blocks threw (" + o.message + ") but wrote: " +
            first_framed_difference(src_size, before.src_buf, be.src_buf, "src", "first change") +
            first_framed_difference(s.dst.size_bytes, before.dst_buf, be.dst_buf, "dst", "first change");
  // dst inside src's allocation is always refused when there is a view; a call that
  // returns (no view) must leave the shared allocation as the reference does.
  if (!o.code && !r.code && s.dst_inside_src >= 0)
    fail += first_framed_difference(src_size, ref.src_buf, be.src_buf, "the shared allocation",
                                    "against the reference");
  if (!o.code && !r.code && s.dst_inside_src < 0) {
    if (invariants & kSwapMatchesReference)
      fail += first_framed_difference(s.dst.size_bytes, ref.dst_buf, be.dst_buf, "dst", "against the reference");
    if (invariants & (kSwapTouchesOnlyDestinations | kSwapDestinationsAreSources)) {
      std::vector<bool> written;
      const Buffer want = expected_by_rule(s, before, written);
      const std::string diff =
          first_framed_difference(s.dst.size_bytes, want, be.dst_buf, "dst", "against docs/spec.md §8.3's rule");
      if (!diff.empty()) {
        // Which invariant the first difference breaks: a byte no copy writes, or a
        // destination byte that is not its source's.
        const auto m = std::mismatch(want.span().begin(), want.span().end(), be.dst_buf.span().begin());
        const int64_t at = (m.first - want.span().begin()) - kGuard;
        const bool dst = at >= 0 && at < s.dst.size_bytes && written[static_cast<size_t>(at)];
        if ((dst && (invariants & kSwapDestinationsAreSources)) || (!dst && (invariants & kSwapTouchesOnlyDestinations)))
          fail += (dst ? "a dst block does not hold its src block's bytes: "
                       : "a dst byte outside every destination block changed: ") + diff;
      }
    }
  }
  if (!fail.empty()) fail = "op=swap_blocks backend=" + std::string(b.name()) + " (" + direction(s) + ")\n" + fail;
  return {fail, ""};
}

}  // namespace kvcheck::props
