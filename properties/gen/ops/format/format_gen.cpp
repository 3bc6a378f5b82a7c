#include "properties/gen/ops/format/format_gen.h"

#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"

namespace kvcheck::props {
namespace {

// Field values at and around the SPEC §2 rules (0, negative, not a multiple of 8 or of
// the group, past 4096; groups that do not divide, 0, -1).
constexpr int32_t kElements[] = {0, -8, 8, 16, 96, 128, 130, 512, 513, 4096, 4104};
constexpr int32_t kGroups[] = {0, -1, 1, 3, 16, 32, 64, 128, 512};
// Record sizes of the SPEC §2 table (528, 288, 68, 132: three formats; 656; 584; 352; 512,
// 4096: BF16 elements) and near misses.
constexpr int64_t kDims[] = {1, 528, 288, 68, 132, 512, 4096, 4104, 0, -1, 130, 1024, 656, 655, 584, 576, 352, 353};

QuantizedDtype any_dtype(Source& src) { return static_cast<QuantizedDtype>(src.range(0, 2)); }
SfFormat any_sf(Source& src) { return static_cast<SfFormat>(src.range(0, 7)); }
// Tails at and around the SPEC §2 rules (a multiple of 8 below elements).
constexpr int32_t kTails[] = {64, 8, 0, -8, 4, 512, 576};

// A valid format with one field changed (valid or not).
void mutate(Source& src, KVCacheFormat& f) {
  f.name += "~mutated";
  switch (src.range(0, 7)) {
    case 0: f.elements = src.pick(std::span<const int32_t>(kElements)); break;
    case 1: f.elements_per_sf = src.pick(std::span<const int32_t>(kGroups)); break;
    case 2: f.sf_format = any_sf(src); break;
    case 3: f.do_cast = !f.do_cast; break;
    case 4: f.token_interleaved = !f.token_interleaved; break;
    case 5: f.e4m3_tail = !f.e4m3_tail; break;
    case 6: f.scales_last = !f.scales_last; break;
    default: f.bf16_tail_elements = src.pick(std::span<const int32_t>(kTails)); break;
  }
}

// Every field arbitrary: mostly invalid.
KVCacheFormat arbitrary(Source& src) {
  KVCacheFormat f;
  f.name = "fuzzed";
  f.quantized_dtype = any_dtype(src);
  f.sf_format = any_sf(src);
  f.elements = src.pick(std::span<const int32_t>(kElements));
  f.elements_per_sf = src.pick(std::span<const int32_t>(kGroups));
  f.do_cast = src.coin();
  f.token_interleaved = src.coin();
  f.bf16_tail_elements = src.one_in(4) ? src.pick(std::span<const int32_t>(kTails)) : 0;
  f.e4m3_tail = src.one_in(4);
  f.scales_last = src.one_in(4);
  return f;
}

}  // namespace

FormatScenario build_format_scenario(Source& src, FormatFields fields) {
  FormatScenario s;
  const size_t kind = fields == FormatFields::kValid ? 0 : src.weighted({1, 1, 1});
  s.format = kind == 2 ? arbitrary(src) : choose_format(src);
  if (kind == 1) mutate(src, s.format);
  s.block_size = choose_block_size(src);
  s.num_blocks = src.pick<int64_t>({1, 2, 1000, 70000, int64_t{1} << 20});
  s.block = src.range(0, s.num_blocks - 1);
  s.token = src.range(0, s.block_size - 1);
  s.dtype = src.pick({CacheDtype::kUInt8, CacheDtype::kBF16});
  const int64_t rank = src.count(0, 4, 3);
  for (int64_t i = 0; i < rank; ++i)
    s.shape.push_back(src.weighted({3, 1}) == 0 ? src.pick(std::span<const int64_t>(kDims)) : src.range(-4, 9000));
  s.sf_choice = static_cast<int>(src.range(0, 7));
  return s;
}

rc::Gen<FormatScenario> gen_format_scenario(FormatFields fields) {
  return rc::gen::exec([fields] {
    RcSource src;
    return build_format_scenario(src, fields);
  });
}

void showValue(const FormatScenario& s, std::ostream& o) {
  const KVCacheFormat& f = s.format;
  o << "format scenario\n  fields: name '" << f.name << "', quantized " << to_string(f.quantized_dtype)
    << ", elements " << f.elements << ", elements_per_sf " << f.elements_per_sf << ", sf "
    << to_string(f.sf_format) << ", do_cast " << f.do_cast << ", interleaved " << f.token_interleaved
    << ", bf16_tail " << f.bf16_tail_elements << ", e4m3_tail " << f.e4m3_tail << ", scales_last "
    << f.scales_last << "\n";
  o << "  offsets at block " << s.block << ", token " << s.token << " of num_blocks " << s.num_blocks
    << ", block_size " << s.block_size << "\n  resolve_format("
    << (s.dtype == CacheDtype::kBF16 ? "bf16" : "uint8") << ", [";
  for (size_t i = 0; i < s.shape.size(); ++i) o << (i ? ", " : "") << s.shape[i];
  o << "], sf " << (s.sf_choice ? to_string(static_cast<SfFormat>(s.sf_choice)) : "unset") << ")";
}

std::string describe(const FormatScenario& s) {
  std::ostringstream o;
  showValue(s, o);
  return o.str() + "\n";
}

}  // namespace kvcheck::props
