// round_trip target (SPEC §4, §5.1-5.2): a valid store decoded by decode_round_trip,
// checked by the round-trip properties' own check (properties/ops/store_load/op_checks.h) with their
// invariants: each stored row loaded back equals the reference quantise-dequantise
// (BF16: the input), and the error stays within the bound. (The reference's own store
// and load are the oracle of the store and load targets.)
#include "fuzzers/checks.h"
#include "properties/ops/store_load/op_checks.h"

namespace kvcheck::fuzz {

CheckResult check_round_trip(const uint8_t* data, size_t size, const Backend& backend) {
  ByteSource src(data, size);
  const props::StoreScenario s = decode_round_trip(src);
  const props::Verdict v =
      props::check_round_trip(backend, s, props::kRoundTripMatchesRecipe | props::kRoundTripErrorWithinBound);
  return {props::describe(props::StoreFaultScenario{s, "", std::nullopt}), v.failure, v.skipped};
}

}  // namespace kvcheck::fuzz
