// Format and layout properties (SPEC §2, §3), each stating one invariant of the one
// format check (format_check.h) on scenarios of the one format builder
// (gen/ops/format/format_gen.h): valid formats for the layout, any fields for validation, sizes
// and resolve_format.
#include <rapidcheck.h>

#include "properties/ops/format/format_check.h"
#include "properties/registry.h"

namespace kvcheck::props {
namespace {

template <unsigned Invariant, FormatFields Fields>
void format_property(const Backend&) {
  require(check_format(*gen_format_scenario(Fields), Invariant));
}

Property host(std::string name, std::string op, std::string invariant, void (*body)(const Backend&)) {
  return {std::move(name), std::move(op), std::move(invariant), false, body};
}

}  // namespace

void register_layout_properties(Registry& r) {
  r.add(host("prop_layout_offsets_match_reference", "layout",
             "block_stride and every token's data/scale offset equal the reference formulas (64-bit)",
             format_property<kLayoutMatchesReference, FormatFields::kValid>));
  r.add(host("prop_layout_records_inside_block", "layout",
             "records fit in block_stride, which is a multiple of 32 (and of bytes_per_token when interleaved)",
             format_property<kLayoutRecordsInsideBlock, FormatFields::kValid>));
  r.add(host("prop_format_validate_throws_only_invalid_format", "format",
             "validate() of any format fields returns or throws invalid-format; a table name means the table entry",
             format_property<kFormatValidation, FormatFields::kAny>));
  r.add(host("prop_format_sizes_match_spec", "format",
             "quantized_bytes, num_scales, sf_bytes, bytes_per_token, token_alignment of valid formats = SPEC §2",
             format_property<kFormatSizesMatchSpec, FormatFields::kAny>));
  r.add(host("prop_resolve_format_matches_table", "format",
             "resolve_format(dtype, shape, sf) = the SPEC §2 table; 132 bytes without sf is ambiguous, naming both",
             format_property<kResolveMatchesTable, FormatFields::kAny>));
}

}  // namespace kvcheck::props
