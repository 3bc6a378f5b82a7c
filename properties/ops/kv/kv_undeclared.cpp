#include "properties/ops/kv/kv_undeclared.h"

#include <fmt/format.h>
#include <rapidcheck.h>

#include <utility>

#include "properties/gen/gen_caps.h"

namespace kvcheck::props {
namespace {

// The (cache, rows) pairs the spec allows and `c` leaves out, for the cache dtypes it takes.
std::vector<std::pair<KvDtype, KvDtype>> undeclared_dtype_pairs(const BackendCapabilities& c) {
  std::vector<std::pair<KvDtype, KvDtype>> out;
  for (KvDtype cache : kv_dtypes())
    for (KvDtype rows : kv_row_dtypes())
      if (c.supports_kv_dtype(cache) && is_kv_dtype_pair(cache, rows) && !c.supports_kv_dtype_pair(cache, rows))
        out.emplace_back(cache, rows);
  return out;
}

// (head_dim, num_kv_heads) one head past a row limit, for the head_dims `c` takes; a
// row past kMaxKvRowElements is not drawn (a declared maximum of 2^31-1 ran the
// generators out of memory, blamed on the plugin).
std::vector<std::pair<int64_t, int64_t>> rows_past_limits(const BackendCapabilities& c) {
  std::vector<std::pair<int64_t, int64_t>> past;
  if (c.min_heads_x_head_dim <= 0 && c.max_heads_x_head_dim <= 0) return past;
  std::vector<int32_t> dims = c.head_dims;
  if (dims.empty()) dims = {1, 8, 64, 128};
  for (int64_t d : dims) {
    if (c.max_heads_x_head_dim > 0 && (c.max_heads_x_head_dim / d + 1) * d <= kMaxKvRowElements)
      past.emplace_back(d, c.max_heads_x_head_dim / d + 1);
    if (c.min_heads_x_head_dim > d) past.emplace_back(d, (c.min_heads_x_head_dim - 1) / d);
  }
  return past;
}

// A head_dim outside the declared ones, or one head past a row limit.
BackendCapabilities caps_breaking_shape(BackendCapabilities c) {
  const std::vector<std::pair<int64_t, int64_t>> past = rows_past_limits(c);
  RC_PRE(!past.empty() || !c.head_dims.empty());
  if (!past.empty() && (c.head_dims.empty() || *rc::gen::arbitrary<bool>())) {
    const auto [d, h] = *rc::gen::elementOf(past);
    // The generator draws num_kv_heads in [min/d, max/d]: pinned to h.
    c.head_dims = {static_cast<int32_t>(d)};
    c.min_heads_x_head_dim = c.max_heads_x_head_dim = h * d;
  } else {
    std::vector<int32_t> outside;
    for (int32_t d : {64, 80, 96, 128, 256, 576, 1, 2, 3, 8, 16})
      if (!c.supports_head_dim(d)) outside.push_back(d);
    for (int32_t d = 1; outside.empty(); ++d)
      if (!c.supports_head_dim(d)) outside.push_back(d);
    c.head_dims = {*rc::gen::elementOf(outside)};
    c.min_heads_x_head_dim = c.max_heads_x_head_dim = 0;  // any num_kv_heads: the head_dim is what is outside
  }
  return c;
}

}  // namespace

std::vector<KvLimit> declared_kv_limits(const BackendCapabilities& c) {
  std::vector<KvLimit> out;
  if (!c.head_dims.empty() || !rows_past_limits(c).empty()) out.push_back(KvLimit::kShape);
  // Half the alignment off is a whole number of elements: a >= 4 (2-byte rows and
  // outputs), or a = 2 on a 1-byte FP8 cache.
  const bool fp8 = c.supports_kv_dtype(KvDtype::kE4M3) || c.supports_kv_dtype(KvDtype::kE5M2);
  if (c.kv_alignment >= 4 || (c.kv_alignment == 2 && fp8)) out.push_back(KvLimit::kAlignment);
  if (!undeclared_dtype_pairs(c).empty()) out.push_back(KvLimit::kDtypePair);
  return out;
}

std::function<std::string(const BackendCapabilities&)> needs_declared_kv_limit(uint32_t op, std::string missing) {
  return [op, missing](const BackendCapabilities& c) -> std::string {
    if (!(c.ops & op)) return missing;
    return !declared_kv_limits(c).empty() ? ""
                                          : "declares no K/V shape, dtype pair or alignment limit a valid call can "
                                            "break (kvcheck_contract head_dims, min/max_heads_x_head_dim, "
                                            "kv_dtype_pairs, kv_alignment)";
  };
}

KvLimit draw_kv_limit(const BackendCapabilities& c) {
  const std::vector<KvLimit> kinds = declared_kv_limits(c);
  RC_PRE(!kinds.empty());
  return kinds.size() == 1 ? kinds[0] : kinds[*rc::gen::inRange<size_t>(0, kinds.size())];
}

BackendCapabilities caps_breaking(const BackendCapabilities& c, KvLimit limit) {
  if (limit == KvLimit::kShape) return caps_breaking_shape(c);
  if (limit == KvLimit::kAlignment) return c;
  BackendCapabilities out = c;
  const auto pairs = undeclared_dtype_pairs(c);
  const auto [cache, rows] = pairs[*rc::gen::inRange<size_t>(0, pairs.size())];
  out.kv_dtypes = 1u << static_cast<int>(cache);
  out.kv_dtype_pairs = kv_dtype_pair_bit(cache, rows);  // the generator draws this pair only
  return out;
}

std::vector<int> misalignable_cache_strides(const KvCacheShape& s, int64_t alignment) {
  if (alignment / 2 < kv_dtype_bytes(s.dtype)) return {};
  const bool nhd = s.order == KvHeadLayout::kNHD;
  const bool heads = s.num_kv_heads > 1, tokens = s.block_size > 1;
  std::vector<int> out;
  if (s.num_blocks > 1) out.push_back(0);
  if (nhd ? heads : tokens) out.push_back(1);
  if (nhd ? tokens : heads) out.push_back(2);
  return out;
}

bool misalign_cache(KvCacheShape& s, int64_t alignment, int target) {
  const int64_t eb = kv_dtype_bytes(s.dtype);
  if (alignment / 2 < eb) return false;
  const auto off = static_cast<int32_t>(alignment / 2 / eb);
  const bool nhd = s.order == KvHeadLayout::kNHD;
  switch (target) {
    case 0: s.pad_page += off; break;
    case 1: (nhd ? s.pad_head : s.pad_token) += off; break;
    default: (nhd ? s.pad_token : s.pad_head) += off; break;
  }
  return true;
}

int misalign_one(KvCacheShape& cache, int64_t alignment, std::vector<int> more) {
  std::vector<int> targets = misalignable_cache_strides(cache, alignment);
  targets.insert(targets.end(), more.begin(), more.end());
  if (targets.empty() && alignment / 2 >= kv_dtype_bytes(cache.dtype)) {
    cache.num_blocks = 2;  // one block, one token, one head: a second block makes the page stride used
    targets.push_back(0);
  }
  if (targets.empty()) return -1;
  const int target = targets[*rc::gen::inRange<size_t>(0, targets.size())];
  if (target < 3) misalign_cache(cache, alignment, target);
  return target;
}

std::string kv_outside_contract(const BackendCapabilities& c, const KvCacheShape& cache, KvDtype rows,
                                const std::string& misaligned) {
  if (!c.supports_head_dim(cache.head_dim))
    return fmt::format("head_dim {} outside the declared {}", cache.head_dim, c.describe_kv_shapes());
  if (!c.supports_kv_shape(cache.num_kv_heads, cache.head_dim))
    return fmt::format("num_kv_heads {} x head_dim {} = {} outside the declared {}", cache.num_kv_heads,
                       cache.head_dim, int64_t{cache.num_kv_heads} * cache.head_dim, c.describe_kv_shapes());
  if (!c.supports_kv_dtype_pair(cache.dtype, rows))
    return fmt::format("{} rows with an {} cache outside the declared dtype pairs {{{}}}", to_string(rows),
                       to_string(cache.dtype), describe_kv_dtype_pairs(c.kv_dtype_pairs));
  return misaligned;
}

Verdict judge_declared_refusal(const char* op, std::string_view backend, const std::string& context,
                               const std::string& what, const Outcome& be, const std::string& changed) {
  Verdict v;
  if (what.empty()) {
    v.skipped = fmt::format("{} declares this {} call: a case for the match properties", backend, op);
    return v;
  }
  if (!be.code)
    v.failure += fmt::format("{} ran a case with {}: a kernel built for its declared contract must refuse others "
                             "with KVCHECK_STATUS_UNSUPPORTED (kUnsupported) and write nothing\n", op, what);
  else if (*be.code != ErrorCode::kUnsupported)
    v.failure += fmt::format("{} refused a valid case with {} as {} ({}); expected kUnsupported\n", op, what,
                             to_string(*be.code), be.message);
  if (!changed.empty()) v.failure += "a buffer changed:\n" + changed + "\n";
  if (!v.failure.empty()) v.failure = fmt::format("op={} backend={} {}\n{}", op, backend, context, v.failure);
  return v;
}

}  // namespace kvcheck::props
