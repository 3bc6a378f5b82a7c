// Host properties of the K/V family: impl/kv_layout.h against the reference's own
// formulas and rules (SPEC §7.2, §7.3), and scheduler-state slot mappings against the
// reference's slot formula (SPEC §7.6).
#include <fmt/format.h>
#include <rapidcheck.h>

#include <optional>
#include <vector>

#include "impl/kv_layout.h"
#include "properties/ops/kv/kv_harness.h"
#include "properties/metadata_checks.h"
#include "properties/registry.h"
#include "reference/kv_layout.h"

namespace kvcheck::props {
namespace {

void prop_kv_layout_offsets_match_reference(const Backend&) {
  const auto shape = *gen_kv_cache_shape();
  const KvCacheLayout l = kv_layout_of(shape);
  const KvPagedLayout p = kv_paged_layout(l);
  for (int i = 0; i < 16; ++i) {
    const int64_t b = *rc::gen::inRange<int64_t>(0, l.num_blocks), t = *rc::gen::inRange<int64_t>(0, l.block_size);
    const int64_t h = *rc::gen::inRange<int64_t>(0, l.num_kv_heads), d = *rc::gen::inRange<int64_t>(0, l.head_dim);
    const int side = *rc::gen::inRange(0, 2);  // K or V: the v1 ABI gives both the view's strides
    const int64_t impl = p.offset(side, b, t, h) + d, slot = p.slot_offset(side, b * l.block_size + t, h) + d;
    const int64_t ref = ref::kv_element_offset(l, b, t, h, d);
    if (impl != ref || slot != ref)
      RC_FAIL(fmt::format("{}\n(block {}, token {}, head {}, d {}, side {}): offset {} slot_offset {} reference {}",
                          describe(shape), b, t, h, d, side, impl, slot, ref));
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
  // Half the cases an NVFP4 view, whose scale caches have rules of their own (§7.9).
  auto shape = *rc::gen::inRange(0, 2) ? *rc::gen::suchThat(gen_kv_cache_shape(), [](const KvCacheShape& c) {
    return c.dtype == KvDtype::kE2M1;
  })
                                       : *gen_kv_cache_shape();
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
  if (v.layout.dtype == KvDtype::kE2M1) {
    // The scale caches (SPEC §7.9): strides to the rules' edges and past int64's (a page
    // stride near INT64_MAX is valid with one block), either base moved onto the
    // other's bytes or into the data, capacities around the span, a layout value no
    // engine has.
    const std::vector<int64_t> sf_deltas{0, 0, 0, -1, 1, -16};
    const auto stride = [&](int64_t& s) {
      s = *rc::gen::elementOf(std::vector<int>{0, 0, 0, 0, 1}) ? INT64_MAX - *rc::gen::inRange<int64_t>(0, 4)
                                                            : s + *rc::gen::elementOf(sf_deltas);
    };
    const int kind = *rc::gen::inRange(0, 6);
    if (kind != 3) {
      stride(v.sf.stride_page);
      stride(v.sf.stride_token);
      stride(v.sf.stride_head);
    }
    v.k_sf_capacity += *rc::gen::elementOf(std::vector<int64_t>{0, 0, -1, 1});
    v.v_sf_capacity += *rc::gen::elementOf(std::vector<int64_t>{0, 0, -1, 1});
    switch (kind) {
      case 0: v.v_sf = v.k_sf + *rc::gen::inRange<int64_t>(-2, 3); break;  // on or next to k_sf's bytes
      case 1: v.k_sf = v.k + *rc::gen::inRange<int64_t>(-1, 3); break;    // into K's data
      case 2: v.sf.layout = static_cast<KvSfLayout>(*rc::gen::elementOf(std::vector<int32_t>{2, -1})); break;
      case 3:  // one block, any page stride (INT64_MAX), v_sf a byte before k_sf: its window overlaps
               // k_sf's first byte, and d + window passes INT64_MAX (a helper's finding)
        v.layout.num_blocks = 1;
        v.sf.stride_page = INT64_MAX - *rc::gen::elementOf(std::vector<int64_t>{0, 0, 0, 1});
        v.v_sf = v.k_sf - 1;
        break;
      default: break;
    }
  }
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

// The K/V step metadata (SPEC §7.6) through the slot mappings' one check
// (metadata_checks.h), as the slot_mapping fuzz target runs it.
void prop_kv_slot_mapping_matches_reference(const Backend&) {
  using Op = SlotMappingScenario::Op;
  for (const Op op : {Op::kPreparePrefill, Op::kPrepareDecode}) {
    const Verdict v = check_slot_mapping(*gen_slot_mapping_scenario(op), kSlotMatchesReference | kSlotMetadata);
    if (!v.failure.empty()) RC_FAIL(v.failure);
  }
}

}  // namespace

void register_kv_layout_properties(Registry& r) {
  r.add({"prop_kv_layout_offsets_match_reference", "kv_layout",
         "impl KvPagedLayout offset / slot_offset equal the reference's own offset formula for every shape", false,
         prop_kv_layout_offsets_match_reference});
  r.add({"prop_kv_view_validation_matches_reference", "kv_layout",
         "impl and reference accept or reject the same K/V views (strides, capacities, K/V aliasing; an e2m1 view's "
         "scale caches too) with the same code",
         false, prop_kv_view_validation_matches_reference});
  r.add({"prop_kv_slot_mapping_matches_reference", "kv_slot_mapping",
         "prepare_prefill / prepare_decode slots equal the reference slot formula, cu_seqlens / context_lens / "
         "padded block tables as SPEC §7.6; graph padding rows are -1", false,
         prop_kv_slot_mapping_matches_reference});
}

}  // namespace kvcheck::props
