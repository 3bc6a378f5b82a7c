// Decoder of the format target (SPEC §2, §3): arbitrary, mutated and table formats,
// offsets at a location, resolve_format inputs.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

FormatScenario decode_format(FuzzedDataProvider& fdp) {
  FormatScenario s;
  const int kind = fdp.ConsumeIntegralInRange<int>(0, 2);
  const int base = fdp.ConsumeIntegralInRange<int>(0, 5);
  s.format = supported_formats()[static_cast<size_t>(base)];
  constexpr int32_t kElements[] = {0, -8, 8, 16, 96, 128, 130, 512, 513, 4096, 4104};
  constexpr int32_t kGroups[] = {0, -1, 1, 3, 16, 32, 64, 128, 512};
  if (kind == 2) {  // every field arbitrary
    s.format.name = "fuzzed";
    s.format.quantized_dtype = static_cast<QuantizedDtype>(fdp.ConsumeIntegralInRange<int>(0, 2));
    s.format.sf_format = static_cast<SfFormat>(fdp.ConsumeIntegralInRange<int>(0, 3));
    s.format.elements = fdp.PickValueInArray(kElements);
    s.format.elements_per_sf = fdp.PickValueInArray(kGroups);
    s.format.do_cast = fdp.ConsumeBool();
    s.format.token_interleaved = fdp.ConsumeBool();
    s.format.bf16_tail_elements = fdp.ConsumeIntegralInRange<int>(0, 3) == 0 ? 64 : 0;
  } else if (kind == 1) {  // a supported format with one field changed
    s.format.name += "~mutated";
    switch (fdp.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: s.format.elements = fdp.PickValueInArray(kElements); break;
      case 1: s.format.elements_per_sf = fdp.PickValueInArray(kGroups); break;
      case 2: s.format.sf_format = static_cast<SfFormat>(fdp.ConsumeIntegralInRange<int>(0, 3)); break;
      case 3: s.format.do_cast = !s.format.do_cast; break;
      case 4: s.format.token_interleaved = !s.format.token_interleaved; break;
      default: s.format.bf16_tail_elements = 64; break;
    }
  } else if (base == 5) {  // BF16(E) with E random
    s.format = KVCacheFormat::BF16(8 * fdp.ConsumeIntegralInRange<int32_t>(1, 512));
  }
  s.block_size = fdp_block_size(fdp);
  s.block = fdp.ConsumeIntegralInRange<int64_t>(0, 1 << 20);
  s.token = fdp.ConsumeIntegralInRange<int64_t>(0, s.block_size - 1);
  s.dtype = fdp.ConsumeBool() ? CacheDtype::kBF16 : CacheDtype::kUInt8;
  const int rank = fdp.ConsumeIntegralInRange<int>(0, 4);
  constexpr int64_t kDims[] = {1, 528, 288, 68, 132, 512, 4096, 4104, 0, -1, 130, 1024};
  for (int i = 0; i < rank; ++i)
    s.shape.push_back(fdp.ConsumeBool() ? fdp.PickValueInArray(kDims)
                                        : fdp.ConsumeIntegralInRange<int64_t>(-4, 9000));
  s.sf_choice = fdp.ConsumeIntegralInRange<int>(0, 3);
  return s;
}

std::string describe(const FormatScenario& s) {
  const KVCacheFormat& f = s.format;
  std::ostringstream o;
  o << "format scenario\n  fields: name '" << f.name << "', quantized " << to_string(f.quantized_dtype)
    << ", elements " << f.elements << ", elements_per_sf " << f.elements_per_sf << ", sf "
    << to_string(f.sf_format) << ", do_cast " << f.do_cast << ", interleaved "
    << f.token_interleaved << ", bf16_tail " << f.bf16_tail_elements << "\n";
  o << "  offsets at block " << s.block << ", token " << s.token << ", block_size " << s.block_size
    << "\n  resolve_format(" << (s.dtype == CacheDtype::kBF16 ? "bf16" : "uint8") << ", [";
  for (size_t i = 0; i < s.shape.size(); ++i) o << (i ? ", " : "") << s.shape[i];
  o << "], sf " << (s.sf_choice ? to_string(static_cast<SfFormat>(s.sf_choice)) : "unset")
    << ")\n";
  return o.str();
}

}  // namespace kvcheck::fuzz
