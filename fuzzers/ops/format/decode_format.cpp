// Decoder of the format target (SPEC §2, §3): the format builder on the input bytes.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::FormatScenario decode_format(ByteSource& src) {
  return props::build_format_scenario(src, props::FormatFields::kAny);
}

}  // namespace kvcheck::fuzz
