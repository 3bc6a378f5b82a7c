// Offsets past 2^31 elements in the index transforms (SPEC §5.5, §6 "Reach of the
// property layer"): kv_index_cat writes all num_q*(wl+wr) entries of its output, so a
// row offset kept in 32 bits shows only with more than 2^31 output entries. The output
// and `right` are 8 GiB of virtual memory each over one 16 MiB memfd (far_memory.h),
// behind an 8 GiB canary band (another memfd) where a wrapped offset lands. Because
// `right` repeats with the output's period and wl = 0, every write that lands on one
// physical entry writes the same value, in any order. One case costs 2^31 writes
// (seconds), so the property runs one case per run (Property::max_cases_per_run).
#include <fmt/format.h>
#include <rapidcheck.h>

#include <algorithm>
#include <vector>

#include "properties/far_memory.h"
#include "properties/gen/source.h"
#include "properties/gen/splitmix.h"
#include "properties/gen/ops/index/index_gen.h"
#include "properties/registry.h"
#include "reference/index_transforms.h"

namespace kvcheck::props {
namespace {

constexpr int32_t kCanary = 0x5A5A5A5A, kUnwritten = 0x6B6B6B6B;
constexpr size_t kBand = size_t{8} << 30;  // an int32 offset wraps at most 2^31 entries back
constexpr int64_t kMaxEntries = (int64_t{1} << 31) + (int64_t{1} << 22) + (int64_t{1} << 21);
constexpr size_t kMaxRegion = (static_cast<size_t>(kMaxEntries) * sizeof(int32_t) + kUnitBytes - 1) / kUnitBytes * kUnitBytes;

// One far kv_index_cat case: num_q rows of `width` entries, num_q * width > 2^31.
struct FarCatScenario {
  int32_t width = 0, num_q = 0, cached = 0, cur = 0;
  int minus_one_pct = 0;  // share of -1 entries in `right`
  uint32_t seed = 0;      // `right`'s values
  int64_t entries() const { return int64_t{num_q} * width; }
  std::string describe() const {
    return fmt::format("kv_index_cat wl=0 wr={} num_q={} ({} output entries, 2^31 + {}), cached={} cur={}, "
                       "{}% -1 in right, seed {}",
                       width, num_q, entries(), entries() - (int64_t{1} << 31), cached, cur, minus_one_pct, seed);
  }
};

FarCatScenario build_far_cat(Source& src) {
  FarCatScenario s;
  s.width = static_cast<int32_t>(src.range(1 << 16, 1 << 21));
  const int64_t past = src.range(1, int64_t{1} << 22);  // entries past 2^31
  s.num_q = static_cast<int32_t>(((int64_t{1} << 31) + past + s.width - 1) / s.width);
  s.cached = static_cast<int32_t>(src.range(0, 1 << 20));
  s.cur = static_cast<int32_t>(src.range(0, 1 << 20));
  s.minus_one_pct = src.pick({0, 10, 50});
  s.seed = src.seed();
  return s;
}

// Why this machine cannot run the property, or "" (probes the mappings it needs).
std::string far_memory_missing() {
  Reservation space(kBand + 2 * kMaxRegion);
  if (!space.base()) return fmt::format("cannot reserve {} GiB of address space", (kBand + 2 * kMaxRegion) >> 30);
  AliasedRegion probe(space.base(), kUnitBytes, "kvcheck-probe");
  return probe.error().empty() ? "" : "aliased mappings unavailable: " + probe.error();
}

void prop_kv_index_cat_far_output_matches_reference(const Backend& b) {
  RcSource src;
  const FarCatScenario s = build_far_cat(src);
  const size_t region = (static_cast<size_t>(s.entries()) * sizeof(int32_t) + kUnitBytes - 1) / kUnitBytes * kUnitBytes;
  Reservation space(kBand + 2 * region);
  RC_ASSERT(space.base() != nullptr);  // needs() probed the same reservation
  uint8_t* const base = space.base();
  AliasedRegion canary(base, kBand, "kvcheck-canary"), out(base + kBand, region, "kvcheck-out"),
      right(base + kBand + region, region, "kvcheck-right");
  for (const AliasedRegion* r : {&canary, &out, &right})
    if (!r->error().empty()) RC_FAIL("aliased mappings: " + r->error());
  SplitMix64 rng{s.seed};
  for (size_t i = 0; i < kUnitEntries; ++i) {
    canary.unit()[i] = kCanary;
    out.unit()[i] = kUnwritten;
    right.unit()[i] = static_cast<int>(rng.next() % 100) < s.minus_one_pct ? -1 : static_cast<int32_t>(rng.next() % (1u << 20));
  }
  const auto n = static_cast<size_t>(s.entries());
  b.kv_index_cat({}, 0, std::span<const int32_t>(reinterpret_cast<const int32_t*>(base + kBand + region), n), s.width,
                 s.num_q, s.cached, s.cur, std::span<int32_t>(reinterpret_cast<int32_t*>(base + kBand), n));
  // Every output entry i is f(right[i]) and both repeat with period kUnitEntries: the
  // expected unit is the reference on the unit as one row.
  const std::vector<int64_t> expected = ref::kv_index_cat(
      {}, 0, std::span<const int32_t>(right.unit(), kUnitEntries), static_cast<int32_t>(kUnitEntries), 1, s.cached, s.cur);
  size_t bad_canary = 0, bad_out = 0, first_bad = kUnitEntries;
  for (size_t i = 0; i < kUnitEntries; ++i) {
    bad_canary += canary.unit()[i] != kCanary;
    if (out.unit()[i] != expected[i]) {
      ++bad_out;
      first_bad = std::min(first_bad, i);
    }
  }
  if (bad_canary)
    RC_FAIL(fmt::format("{} on {}: {} entries of the 8 GiB band before `out` were written (rows past entry 2^31 "
                        "landed before the output: a 32-bit row offset)",
                        s.describe(), b.name(), bad_canary));
  if (bad_out)
    RC_FAIL(fmt::format("{} on {}: {} output entries (mod {}) differ from the reference, first {}: expected {}, "
                        "actual {}",
                        s.describe(), b.name(), bad_out, kUnitEntries, first_bad, expected[first_bad],
                        out.unit()[first_bad]));
}

}  // namespace

void register_far_offset_properties(Registry& r) {
  r.add({"prop_kv_index_cat_far_output_matches_reference", "index",
         "kv_index_cat with more than 2^31 output entries writes every entry as the reference does and "
         "nothing before the output",
         true, prop_kv_index_cat_far_output_matches_reference, {},
         [](const BackendCapabilities& caps) -> std::string {
           // A device backend would copy 8 GiB each way; the memfd trick is host memory.
           const IndexOpInfo& cat = index_op_info(IndexScenario::Op::kCat);
           if (const std::string no = needs_op(cat.bit, cat.name)(caps); !no.empty()) return no;
           if (!caps.host_memory) return "needs a host-memory backend (8 GiB of aliased virtual output)";
           return far_memory_missing();
         },
         {}, 1, 10.0});
}

}  // namespace kvcheck::props
