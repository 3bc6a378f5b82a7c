// Decoder of the load target: the load builder on the input bytes.
#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

props::LoadFaultScenario decode_load(ByteSource& src) {
  props::LoadFaultScenario c;
  c.scenario = props::build_load_scenario(src, props::build_cache_shape(src));
  c.scenario.threads = 0;  // no work split: see decoders.h
  const int64_t kind = src.range(0, 7);  // 0-4: valid, 5-6: one fault, 7: raw segments
  if (kind == 5 || kind == 6) {
    props::inject_load_fault(src, c);
  } else if (kind == 7) {
    c.scenario.load_segments = props::raw_load_segments(src, c.scenario.shape, c.scenario.total_k);
    c.fault = "raw load_segments";
  }
  return c;
}

}  // namespace kvcheck::fuzz
