// The operations of the plugin seam by name and capability bit, in table order: made
// from KVCHECK_OPS (include/kvcheck/backend_abi.h), the one list of operations.
#pragma once

#include <cstdint>

#include "include/kvcheck/backend_abi.h"

namespace kvcheck {

struct OpName {
  const char* name;  // the table entry's name: "store_kv_cache", "gather_kv", ...
  uint32_t bit;      // its KVCHECK_OP_* bit
};

inline constexpr OpName kOpNames[] = {
#define KVCHECK_OP_NAME(entry, bit, args_t) {#entry, bit},
    KVCHECK_OPS(KVCHECK_OP_NAME)
#undef KVCHECK_OP_NAME
};

}  // namespace kvcheck
