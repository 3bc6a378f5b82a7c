#include "properties/registry.h"

namespace kvcheck::props {

std::function<std::string(const BackendCapabilities&)> needs_op(uint32_t bit, std::string name) {
  return [bit, name = std::move(name)](const BackendCapabilities& c) {
    return (c.ops & bit) == bit ? std::string() : "no " + name;  // every bit named
  };
}

const Registry& registry() {
  static const Registry r = [] {
    Registry r;
    register_layout_properties(r);
    register_numerics_properties(r);
    register_store_properties(r);
    register_load_properties(r);
    register_round_trip_properties(r);
    register_plan_properties(r);
    register_slot_mapping_properties(r);
    register_index_properties(r);
    register_prefill_properties(r);
    register_kv_layout_properties(r);
    register_store_kv_properties(r);
    register_gather_kv_properties(r);
    register_kv_step_properties(r);
    register_far_offset_properties(r);
    register_copy_blocks_properties(r);
    register_swap_blocks_properties(r);
    register_concat_and_cache_mla_properties(r);
    return r;
  }();
  return r;
}

}  // namespace kvcheck::props
