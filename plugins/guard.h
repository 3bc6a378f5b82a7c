// The project's own plugins' side of the ABI: run a C++ call and turn its outcome into
// a status (kvcheck::Error -> its code, anything else -> INTERNAL), the message into
// the harness's buffer (no exception crosses the C boundary); and the table's entries
// filled from KVCHECK_OPS.
#pragma once

#include <cstdint>
#include <exception>

#include "impl/error.h"
#include "impl/plugin/abi_convert.h"

namespace kvcheck::plugin {

template <typename F>
int guarded(char* msg, size_t msg_size, F&& f) noexcept {
  try {
    f();
    return KVCHECK_STATUS_OK;
  } catch (const Error& e) {
    write_message(e.what(), msg, msg_size);
    return to_status(e.code());
  } catch (const std::exception& e) {
    write_message(e.what(), msg, msg_size);
    return KVCHECK_STATUS_INTERNAL;
  } catch (...) {
    write_message("unknown exception", msg, msg_size);
    return KVCHECK_STATUS_INTERNAL;
  }
}

/// Every KVCHECK_OP_* bit of KVCHECK_OPS, and the feature bits of their entries.
inline constexpr uint32_t kAllOps = KVCHECK_OP_GATHER_KV_SEQ_STARTS | KVCHECK_OP_ANY_BLOCK_STRIDE | KVCHECK_OP_CONCAT_MLA_PE_CACHE |
                                  KVCHECK_OP_CONCAT_MLA_ROPE | KVCHECK_OP_STORE_KV_ROPE | KVCHECK_OP_RECORD_FLAGS |
                                  KVCHECK_OP_KV_NVFP4
#define KVCHECK_OP_BIT(entry, bit, args_t) | (bit)
    KVCHECK_OPS(KVCHECK_OP_BIT)
#undef KVCHECK_OP_BIT
    ;
// A bit added to the header but not to KVCHECK_OPS_KNOWN would make the loader refuse
// kvcheck's own plugins.
static_assert((kAllOps & ~KVCHECK_OPS_KNOWN) == 0, "KVCHECK_OPS_KNOWN lacks an ops bit");
// A bit in the header but not here would leave kvcheck's own plugins without a feature.
static_assert(kAllOps == KVCHECK_OPS_KNOWN, "kAllOps lacks a bit of KVCHECK_OPS_KNOWN");

/// The contract of kvcheck's own plugins: every recipe of SPEC §7.3.1 (the call's
/// kvcheck_kv_cache.recipe picks one), any head_dim.
inline constexpr kvcheck_contract kEveryRecipe{sizeof(kvcheck_contract), (1u << kNumKvRecipes) - 1, 0, {}, 0, 0, 0, 0};

}  // namespace kvcheck::plugin

/// Sets every entry of table `t` to the function of the same name in scope (a plugin
/// that implements each operation of KVCHECK_OPS names its entry function after it).
#define KVCHECK_PLUGIN_SET_ENTRY(entry, bit, args_t) t_.entry = entry;
#define KVCHECK_PLUGIN_FILL_ENTRIES(t)            \
  do {                                            \
    kvcheck_backend_v1_t& t_ = (t);               \
    KVCHECK_OPS(KVCHECK_PLUGIN_SET_ENTRY)         \
  } while (0)
