// Host properties of the K/V family: impl/kv_layout.h against the reference's own
// formulas and rules (SPEC §7.2, §7.3), and scheduler-state slot mappings against the
// reference's slot formula (SPEC §7.6).
#include <fmt/format.h>
#include <rapidcheck.h>

#include <optional>
#include <vector>

#include "impl/kv_layout.h"
#include "impl/kv_slot_mapping.h"
#include "properties/kv_harness.h"
#include "properties/registry.h"
#include "reference/kv_layout.h"
#include "reference/slot_mapping.h"

namespace kvcheck::props {
namespace {

void prop_kv_layout_offsets_match_reference(const Backend&) {
  const auto shape = *gen_kv_cache_shape();
  const KvCacheLayout l = kv_layout_of(shape);
  for (int i = 0; i < 16; ++i) {
    const int64_t b = *rc::gen::inRange<int64_t>(0, l.num_blocks), t = *rc::gen::inRange<int64_t>(0, l.block_size);
    const int64_t h = *rc::gen::inRange<int64_t>(0, l.num_kv_heads), d = *rc::gen::inRange<int64_t>(0, l.head_dim);
    const int64_t impl = kv_offset(l, b, t, h) + d, slot = kv_slot_offset(l, b * l.block_size + t, h) + d;
    const int64_t ref = ref::kv_element_offset(l, b, t, h, d);
    if (impl != ref || slot != ref)
      RC_FAIL(fmt::format("{}\n(block {}, token {}, head {}, d {}): kv_offset {} kv_slot_offset {} reference {}",
                          describe(shape), b, t, h, d, impl, slot, ref));
  }
}

std::optional<ErrorCode> code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

void prop_kv_view_validation_matches_reference(const Backend&) {
  auto shape = *gen_kv_cache_shape();
  KvBuffers buf(shape);
  KvCacheView v = buf.view();
  // Perturb strides and capacities towards the edges of the rules.
  const std::vector<int64_t> deltas{0, 0, 0, -1, 1, -shape.head_dim};
  v.layout.stride_page += *rc::gen::elementOf(deltas);
  v.layout.stride_token += *rc::gen::elementOf(deltas);
  v.layout.stride_head += *rc::gen::elementOf(deltas);
  v.k_capacity += *rc::gen::elementOf(std::vector<int64_t>{0, 0, -1, 1});
  v.v_capacity += *rc::gen::elementOf(std::vector<int64_t>{0, 0, -1, 1});
  if (*rc::gen::elementOf(std::vector<int>{0, 0, 0, 1})) v.v = v.k + kv_dtype_bytes(v.layout.dtype) * *rc::gen::inRange<int64_t>(-2, 3);
  const auto impl = code_of([&] {
    validate_kv_cache(v);
    validate_kv_scales(v.layout, v.scales);
  });
  const auto ref = code_of([&] { ref::check_kv_cache(v); });
  if (impl != ref)
    RC_FAIL(fmt::format("{}\nstrides page {} token {} head {}, capacities {} {}, v - k = {} bytes: impl {}, reference {}",
                        describe(shape), v.layout.stride_page, v.layout.stride_token, v.layout.stride_head,
                        v.k_capacity, v.v_capacity, v.v - v.k, impl ? to_string(*impl) : "valid",
                        ref ? to_string(*ref) : "valid"));
}

void prop_kv_slot_mapping_matches_reference(const Backend&) {
  const int32_t bs = *rc::gen::elementOf(std::vector<int32_t>{1, 2, 4, 16, 133, 256});
  const int n = *rc::gen::inRange(0, 5);
  std::vector<std::vector<int32_t>> tables;
  std::vector<PagedSeq> seqs;
  for (int i = 0; i < n; ++i) {
    const int32_t tokens = *rc::gen::inRange<int32_t>(1, 3 * bs + 2);
    const int32_t cached = *rc::gen::inRange<int32_t>(0, tokens + 1);
    std::vector<int32_t> t;
    for (int32_t j = 0; j * bs < tokens; ++j) t.push_back(*rc::gen::inRange<int32_t>(0, 1000));
    if (*rc::gen::arbitrary<bool>()) t.push_back(-1);
    tables.push_back(t);
    seqs.push_back({{}, cached, tokens});
  }
  for (int i = 0; i < n; ++i) seqs[static_cast<size_t>(i)].block_table = tables[static_cast<size_t>(i)];
  const int32_t graph = *rc::gen::elementOf(std::vector<int32_t>{0, n, n + 3});
  const PrefillMetadata p = prepare_prefill(seqs, bs);
  const DecodeMetadata d = prepare_decode(seqs, bs, graph);
  std::vector<int32_t> want;
  for (const auto& s : seqs) {
    const auto part = ref::paged_slots(s.block_table, bs, s.num_cached, s.num_tokens);
    want.insert(want.end(), part.begin(), part.end());
  }
  RC_ASSERT(p.slot_mapping == want);
  for (size_t i = 0; i < d.slot_mapping.size(); ++i) {
    const int64_t w = i < seqs.size() ? ref::paged_slot(seqs[i].block_table, bs, seqs[i].num_tokens - 1) : -1;
    if (d.slot_mapping[i] != w)
      RC_FAIL(fmt::format("decode row {} (bs {}): slot {} expected {}", i, bs, d.slot_mapping[i], w));
  }
  RC_ASSERT(d.slot_mapping.size() == static_cast<size_t>(graph != 0 ? graph : n));
  RC_ASSERT(p.cu_seqlens_k.back() == [&] { int32_t k = 0; for (auto& s : seqs) k += s.num_tokens; return k; }());
}

}  // namespace

void register_kv_layout_properties(Registry& r) {
  r.add({"prop_kv_layout_offsets_match_reference", "kv_layout",
         "impl kv_offset / kv_slot_offset equal the reference's own offset formula for every shape", false,
         prop_kv_layout_offsets_match_reference});
  r.add({"prop_kv_view_validation_matches_reference", "kv_layout",
         "impl and reference accept or reject the same K/V views (strides, capacities, K/V aliasing) with the same code",
         false, prop_kv_view_validation_matches_reference});
  r.add({"prop_kv_slot_mapping_matches_reference", "kv_slot_mapping",
         "prepare_prefill / prepare_decode slots equal the reference slot formula; graph padding rows are -1", false,
         prop_kv_slot_mapping_matches_reference});
}

}  // namespace kvcheck::props
