// slot_mapping target (SPEC §5.4, §7.6): host slot mappings and K/V step metadata,
// the input decoded by decode_slot_mapping and checked by the slot-mapping
// properties' own check (properties/metadata_checks.h) with every invariant: prefill,
// decode and SWA store slots equal the reference, the SWA decode window the SPEC
// formula; prefill slots distinct, SWA store rows -1 exactly before the last ring_size
// and distinct in the state's ring, the prefix of `out` kept; prepare_prefill /
// prepare_decode metadata (cu_seqlens, context_lens, padded block tables, graph
// padding rows -1); on a fault the code and blamed entry of the SPEC rules. The
// backend is not involved (host code); it is accepted for the common signature.
#include "fuzzers/checks.h"
#include "properties/metadata_checks.h"

namespace kvcheck::fuzz {

CheckResult check_slot_mapping(const uint8_t* data, size_t size, const Backend&) {
  return decode_and_check(data, size, decode_slot_mapping,
                          [](const auto& s) { return props::Verdict{props::check_slot_mapping(s).failure, ""}; });
}

}  // namespace kvcheck::fuzz
