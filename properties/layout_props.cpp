// Layout properties (SPEC §3): production CacheLayout agrees with the reference's
// own formulas.
#include <fmt/format.h>
#include <rapidcheck.h>

#include "impl/layout.h"
#include "properties/gen/store_load_gen.h"
#include "properties/registry.h"
#include "reference/layout.h"

namespace kvcheck::props {
namespace {

void prop_layout_offsets_match_reference(const Backend&) {
  const auto f = *gen_format();
  const int32_t bs = *gen_block_size();
  const int64_t num_blocks = *rc::gen::elementOf(std::vector<int64_t>{1, 2, 1000, 70000, 1 << 20});
  const CacheLayout l = CacheLayout::make(f, num_blocks, bs);
  RC_ASSERT(l.block_stride == ref::block_stride(f, bs));
  const int64_t block = *rc::gen::inRange<int64_t>(0, num_blocks);
  const int32_t token = *rc::gen::inRange<int32_t>(0, bs);
  const std::string where = fmt::format("format {} block_size {} block {} token {}", f.name, bs, block, token);
  if (l.data_offset(block, token) != ref::data_offset(f, bs, block, token))
    RC_FAIL(fmt::format("{}: data offset {} != reference {}", where, l.data_offset(block, token),
                        ref::data_offset(f, bs, block, token)));
  if (f.is_quantized() && l.scale_offset(block, token) != ref::scale_offset(f, bs, block, token))
    RC_FAIL(fmt::format("{}: scale offset {} != reference {}", where, l.scale_offset(block, token),
                        ref::scale_offset(f, bs, block, token)));
}

void prop_layout_records_inside_block(const Backend&) {
  const auto f = *gen_format();
  const int32_t bs = *gen_block_size();
  const CacheLayout l = CacheLayout::make(f, 1, bs);
  RC_ASSERT(l.block_stride % 32 == 0);
  RC_ASSERT(l.record_bytes() <= l.block_stride);
  if (f.token_interleaved) RC_ASSERT(l.block_stride % f.bytes_per_token() == 0);
  const int64_t last = bs - 1;
  RC_ASSERT(l.data_offset(0, last) + l.data_token_stride() <= l.block_stride);
  if (f.is_quantized()) RC_ASSERT(l.scale_offset(0, last) + f.sf_bytes() <= l.record_bytes());
  RC_ASSERT(l.data_offset(0, 0) % f.token_alignment() == 0);
  RC_ASSERT(l.data_token_stride() % (f.token_interleaved ? f.token_alignment() : 1) == 0);
}

}  // namespace

void register_layout_properties(Registry& r) {
  r.add({"prop_layout_offsets_match_reference", "layout",
         "block_stride and every token's data/scale offset equal the reference formulas (64-bit)", false,
         prop_layout_offsets_match_reference});
  r.add({"prop_layout_records_inside_block", "layout",
         "records fit in block_stride, which is a multiple of 32 (and of bytes_per_token when interleaved)", false,
         prop_layout_records_inside_block});
}

}  // namespace kvcheck::props
