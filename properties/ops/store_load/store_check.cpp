// store_kv_cache's one check (SPEC §5.1): reference and backend store into identical
// caches holding a pattern inside canary bands. See op_checks.h for the invariants.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "properties/diff.h"
#include "properties/ops/store_load/op_checks.h"
#include "properties/harness.h"
#include "reference/layout.h"
#include "reference/numerics.h"
#include "reference/rope.h"

namespace kvcheck::props {
namespace {

// The bytes a valid store may write, by the reference formula (reference/layout.h):
// data and scales of each valid row's record, sorted and merged.
std::vector<ByteRange> record_ranges(const StoreScenario& s, int64_t size) {
  const KVCacheFormat& f = s.shape.format;
  const int32_t bs = s.shape.block_size;
  const int64_t num_slots = int64_t{s.shape.num_blocks} * bs;
  std::vector<ByteRange> r;
  for (int32_t slot : s.slot_mapping) {
    if (slot < 0 || slot >= num_slots) continue;  // (a backend that accepted a bad slot fails the outcome)
    const int64_t d = ref::data_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride);
    r.push_back({d, d + f.quantized_bytes()});
    if (f.is_quantized()) {
      const int64_t sc = ref::scale_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride);
      r.push_back({sc, sc + f.sf_bytes()});
    }
    if (f.bf16_tail_elements > 0) {
      const int64_t t = ref::tail_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride);
      r.push_back({t, t + f.tail_bytes()});
    }
  }
  return merge_ranges(std::move(r), size);
}

// "" or the first byte outside the records of valid rows that changed.
std::string untouched_violation(const char* who, const StoreScenario& s, std::span<const uint8_t> before,
                                std::span<const uint8_t> after) {
  const int64_t size = static_cast<int64_t>(after.size());
  const int64_t bad = first_change_outside(record_ranges(s, size), size, {{before.data(), after.data()}});
  if (bad < 0) return "";
  const auto loc = locate_cache_byte(s.shape.format, s.shape.block_size, bad, s.shape.block_stride);
  return fmt::format("{}: byte {} changed but no valid row stores there (block {}, token {}, {}): 0x{:02X} -> 0x{:02X}\n",
                     who, bad, loc.block, loc.token,
                     loc.kind == CacheByteLocation::Kind::kPadding ? "block padding" : "record of a -1 or absent row",
                     before[static_cast<size_t>(bad)], after[static_cast<size_t>(bad)]);
}

// BF16: the record of each valid row equals its input row; a quantised record's BF16
// tail equals the row's last bf16_tail_elements (SPEC §2).
std::string bf16_violation(const char* who, const StoreScenario& s, const uint8_t* after) {
  const KVCacheFormat& f = s.shape.format;
  if (!f.is_bf16() && f.bf16_tail_elements == 0) return "";
  const int64_t first = f.is_bf16() ? 0 : f.quantized_elements();
  if (s.row_stride < f.elements) return "";  // rows that do not hold a record's elements (a regression file's)
  const int32_t bs = s.shape.block_size;
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0) continue;
    const uint8_t* rec = after + (f.is_bf16() ? ref::data_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride)
                                              : ref::tail_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride));
    const bf16_bits* row = s.kv.data() + static_cast<int64_t>(r) * s.row_stride;
    for (int64_t e = first; e < f.elements && f.e4m3_tail; ++e) {  // SPEC §4.9: unscaled e4m3 casts
      const uint8_t want = ref::cvt_e4m3(ref::bf16_to_float(row[e]));
      if (rec[e - first] != want)
        return fmt::format("{}: e4m3 tail of row {} (slot {}) element {} is 0x{:02X}, cvt_e4m3 of the input 0x{:04X} "
                           "is 0x{:02X}\n",
                           who, r, slot, e, rec[e - first], row[e], want);
    }
    for (int64_t e = first; e < f.elements && !f.e4m3_tail; ++e) {
      const int64_t at = 2 * (e - first);
      const uint16_t got = static_cast<uint16_t>(rec[at] | (rec[at + 1] << 8));
      if (got != row[e])
        return fmt::format("{}: BF16 {} of row {} (slot {}) element {} is 0x{:04X}, the input is 0x{:04X}\n", who,
                           f.is_bf16() ? "record" : "tail", r, slot, e, got, row[e]);
    }
  }
  return "";
}

std::string ue8m0_violation(const StoreScenario& s, const uint8_t* after) {
  const KVCacheFormat& f = s.shape.format;
  if (f.sf_format == SfFormat::kE4M3RoundUp) {  // SPEC §4.9: t >= 2^-9 rounded up, at most 448
    const int32_t bs = s.shape.block_size;
    for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
      const int32_t slot = s.slot_mapping[r];
      if (slot < 0 || slot >= int64_t{s.shape.num_blocks} * bs) continue;
      const int64_t off = ref::scale_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride);
      for (int64_t g = 0; g < f.num_scales(); ++g)
        if (after[off + g] == 0 || after[off + g] > 0x7E)
          return fmt::format("row {} (slot {}) scale byte {} is 0x{:02X}: §4.9's scales are 0x01 (2^-9, the floor) "
                             "to 0x7E (448), never zero, negative or NaN\n",
                             r, slot, g, after[off + g]);
    }
    return "";
  }
  const bool floor_after = f.sf_format == SfFormat::kUE8M0FloorAfter;
  if (f.sf_format != SfFormat::kUE8M0 && !floor_after) return "";
  const int32_t bs = s.shape.block_size;
  for (size_t r = 0; r < s.slot_mapping.size(); ++r) {
    const int32_t slot = s.slot_mapping[r];
    if (slot < 0 || slot >= int64_t{s.shape.num_blocks} * bs) continue;
    const int64_t off = ref::scale_offset(f, bs, slot / bs, slot % bs, s.shape.block_stride);
    for (int64_t g = 0; g < f.num_scales(); ++g) {
      if (!floor_after && after[off + g] == 0xFF)
        return fmt::format("row {} (slot {}) scale group {} is 0xFF (E8M0 NaN; SPEC §4 clamps k to [-126, 126])\n", r,
                           slot, g);
      // SPEC §4.8: t >= 1e-4 after the division, so k >= -13 (byte 114) whatever the tile.
      if (floor_after && after[off + g] < 114)
        return fmt::format("row {} (slot {}) scale group {} is 0x{:02X} = 2^{}, below the 2^-13 the 1e-4 floor "
                           "after the division allows (SPEC §4.8)\n",
                           r, slot, g, after[off + g], int{after[off + g]} - 127);
    }
  }
  return "";
}

// Split caches (docs/spec.md §8.2): k_pe's store as a scenario of its own, so the
// invariants above judge pe_cache as they judge the cache (whose rows' first
// kv_lora_rank elements are kv_c's).
StoreScenario pe_scenario(const StoreScenario& s) {
  StoreScenario p;
  p.shape = *s.pe_shape;
  p.slot_mapping = s.slot_mapping;
  p.row_stride = s.rope_dim;
  const int64_t rows = s.kv_rows();
  p.kv.assign(static_cast<size_t>(rows * std::max(s.rope_dim, 0)), 0);
  // Only the elements inside a kv row: a fault may set kv_lora_rank + rope_dim past the
  // row stride (as ConcatSources builds k_pe).
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t e = 0; s.kv_lora_rank >= 0 && e < s.rope_dim && s.kv_lora_rank + e < s.row_stride; ++e)
      p.kv[static_cast<size_t>(r * s.rope_dim + e)] = s.kv[static_cast<size_t>(r * s.row_stride + s.kv_lora_rank + e)];
  return p;
}

// docs/spec.md §8.4: the scenario with its k_pe values (kv row elements [kv_lora_rank,
// + rope_dim) of rows < n) rotated by the reference, so the invariants that read the
// rows (a BF16 record or tail holds them) judge what the fused store must write. Valid
// scenarios only (the caller's reference returned).
StoreScenario with_rotated_k_pe(const StoreScenario& s) {
  const int64_t n = static_cast<int64_t>(s.slot_mapping.size());
  // No rows (kv may be empty), or rows that do not hold k_pe (a regression file's: the
  // reference may take a kv_c stride of kv_lora_rank with k_pe a buffer of its own).
  if (!s.rope || n == 0 || s.kv_lora_rank < 0 || s.kv_lora_rank + int64_t{s.rope_dim} > s.row_stride ||
      s.kv_rows() < n)
    return s;
  StoreScenario r = s;
  const std::vector<bf16_bits> pe =
      ref::rope_rows({s.kv.data() + s.kv_lora_rank, n, s.row_stride}, s.rope_dim, n, rope_args(*s.rope));
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(pe.begin() + i * s.rope_dim, s.rope_dim, r.kv.begin() + i * s.row_stride + s.kv_lora_rank);
  return r;
}

/// The invariants `which` names on one cache: `s` as the rows it stores, the caches
/// after the reference's and the backend's calls, `before` the bytes both started from.
std::string cache_failures(const StoreScenario& s, const char* name, const Outcome& ref, const Outcome& be,
                           const Cache& ref_cache, const Cache& be_cache, std::span<const uint8_t> before,
                           unsigned which) {
  std::string fail;
  const std::string in = name[0] ? std::string(" (") + name + ")" : "";
  if (const std::string r = ref_cache.canary_report(); !r.empty()) fail += "the reference wrote into the " + r + in + "\n";
  if (const std::string r = be_cache.canary_report(); !r.empty()) fail += "wrote into the " + r + in + "\n";
  if (which & kStoreErrorChangesNothing) {
    if (ref.code) {
      const std::string d = diff_cache(ref_cache.layout(), before, ref_cache.bytes());
      if (!d.empty()) fail += "reference changed the cache" + in + " although it threw:\n" + d + "\n";
    }
    if (be.code) {
      const std::string d = diff_cache(be_cache.layout(), before, be_cache.bytes());
      if (!d.empty()) fail += "the cache" + in + " changed although the store threw:\n" + d + "\n";
    }
  }
  if (which & kStoreTouchesOnlyRecords) {
    if (!ref.code) fail += untouched_violation("reference", s, before, ref_cache.bytes());
    if (!ref.code) fail += bf16_violation("reference", s, ref_cache.data());
    if (!be.code) fail += untouched_violation("backend", s, before, be_cache.bytes());
    if (!be.code) fail += bf16_violation("backend", s, be_cache.data());
  }
  if ((which & kStoreUe8m0NeverFF) && !be.code) fail += ue8m0_violation(s, be_cache.data());
  if ((which & kStoreMatchesReference) && !ref.code && !be.code) {
    const std::string d = diff_cache(be_cache.layout(), ref_cache.bytes(), be_cache.bytes());
    if (!d.empty()) fail += (name[0] ? std::string(name) + ": " : std::string()) + d + "\n";
  }
  return fail;
}

}  // namespace

Verdict check_store(const Backend& b, const StoreFaultScenario& c, unsigned which) {
  const StoreScenario& s = c.scenario;
  const CacheShape& sh = s.shape;
  Cache ref_cache = make_cache(sh);
  Cache be_cache = copy_cache(ref_cache);
  Buffer before_buf(ref_cache.bytes().size());
  std::memcpy(before_buf.data(), ref_cache.data(), before_buf.size());
  const std::span<const uint8_t> before = before_buf.span();
  // Split caches: pe_cache's own pair (none when the fault puts it inside the cache).
  std::optional<Cache> ref_pe, be_pe;
  std::vector<uint8_t> pe_before;
  if (s.pe_shape && s.pe_inside_cache < 0) {
    ref_pe.emplace(make_cache(*s.pe_shape));
    be_pe.emplace(copy_cache(*ref_pe));
    pe_before.assign(ref_pe->bytes().begin(), ref_pe->bytes().end());
  }
  std::string ref_wrote, be_wrote;  // an input the call wrote (concat's sources are only read)
  const Outcome ref = run_store(nullptr, s, ref_cache, ref_pe ? &*ref_pe : nullptr, &ref_wrote);
  const Outcome be = run_store(&b, s, be_cache, be_pe ? &*be_pe : nullptr, &be_wrote);
  Verdict v;
  // A two-source scenario runs concat_and_cache_mla (docs/spec.md §8.2), judged by the
  // same invariants: its rows joined are the kv rows (or, split, each cache's rows).
  const char* op = s.is_concat() ? "concat_and_cache_mla" : "store";
  const uint32_t ops = !s.is_concat() ? KVCHECK_OP_STORE_KV_CACHE
                                      : KVCHECK_OP_CONCAT_AND_CACHE_MLA |
                                            (s.pe_shape ? KVCHECK_OP_CONCAT_MLA_PE_CACHE : 0u) |
                                            (s.rope ? KVCHECK_OP_CONCAT_MLA_ROPE : 0u);
  const bool outside = outside_paged(b.capabilities(), ops, sh) ||
                       (s.pe_shape && outside_paged(b.capabilities(), ops, *s.pe_shape));
  const bool unchanged =
      std::equal(before.begin(), before.end(), be_cache.bytes().begin()) && be_cache.guards_intact() &&
      (!be_pe || (std::equal(pe_before.begin(), pe_before.end(), be_pe->bytes().begin()) &&
                  be_pe->guards_intact()));
  if (judge_unsupported(be, outside, unchanged, op, b.name(), v)) return v;
  std::string& fail = v.failure;
  fail += expect_outcomes(c.fault, c.code, ref, be, b.name());
  if (!be_wrote.empty()) fail += "the backend wrote an input: " + be_wrote + "\n";
  if (!ref_wrote.empty()) fail += "the reference wrote an input: " + ref_wrote + "\n";
  // The rows as the caches must hold them (k_pe rotated with a RoPE; only when valid).
  const StoreScenario rows = ref.code ? s : with_rotated_k_pe(s);
  fail += cache_failures(rows, s.pe_shape ? "the cache" : "", ref, be, ref_cache, be_cache, before, which);
  if (be_pe)
    fail += cache_failures(pe_scenario(rows), "pe_cache", ref, be, *ref_pe, *be_pe, pe_before, which);
  if (!fail.empty())
    fail = context(op, sh, b.name()) +
           (s.pe_shape ? fmt::format(" pe_cache format={} block_stride={}", s.pe_shape->format.name,
                                     shape_block_stride(*s.pe_shape))
                       : "") +
           (c.fault.empty() ? "" : "\nfault: " + c.fault) + "\n" + fail;
  return v;
}

}  // namespace kvcheck::props
