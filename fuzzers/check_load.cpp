// load target (SPEC §5.2): reference and backend load from the same cache into output
// buffers holding a sentinel pattern (padded rows, a tail band). Whole output buffers
// must agree bit for bit, errors must carry the same code and change nothing, the
// cache is never written, and (checked on the reference) uncovered rows keep their
// values, zero-fill rows are zero and raw (BF16 / index) rows equal the cache bytes.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "fuzzers/checks.h"
#include "properties/harness.h"
#include "fuzzers/fuzz_data.h"
#include "impl/kv_cache.h"
#include "properties/diff.h"
#include "reference/layout.h"
#include "reference/load.h"

namespace kvcheck::fuzz {
namespace {

std::string first_raw_difference(const char* what, const std::vector<uint8_t>& e,
                                 const std::vector<uint8_t>& a, int64_t row_stride) {
  for (size_t i = 0; i < e.size(); ++i)
    if (e[i] != a[i])
      return std::string(what) + " buffer byte " + std::to_string(i) + " (row " +
             std::to_string(row_stride ? static_cast<int64_t>(i) / row_stride : 0) + ", byte " +
             std::to_string(row_stride ? static_cast<int64_t>(i) % row_stride : 0) +
             ", row padding or tail): expected " + std::to_string(e[i]) + ", actual " +
             std::to_string(a[i]) + "\n";
  return "";
}

// Reference self-check, independent of both implementations' loops.
std::string check_rows(const LoadScenario& s, const uint8_t* cache, const OutBuffers& before,
                       const OutBuffers& after) {
  const KVCacheFormat& f = s.shape.format;
  const int32_t bs = s.shape.block_size;
  const int64_t row_bytes = f.load_row_bytes(), sf_bytes = f.load_scale_row_bytes();
  std::vector<int32_t> block(static_cast<size_t>(s.total_k), -2), token(block.size(), 0);
  for (size_t i = 0; i + 3 < s.segments.size(); i += 4)
    for (int32_t t = s.segments[i + 1]; t < s.segments[i + 2]; ++t) {
      const size_t row = static_cast<size_t>(s.segments[i + 3] + t - s.segments[i + 1]);
      block[row] = s.segments[i];
      token[row] = t;
    }
  const LoadOutput& o = after.out;
  for (size_t r = 0; r < block.size(); ++r) {
    const uint8_t* got = o.data + static_cast<int64_t>(r) * o.data_row_stride;
    const uint8_t* old = before.out.data + static_cast<int64_t>(r) * o.data_row_stride;
    const uint8_t* want = nullptr;
    std::vector<uint8_t> zeros(static_cast<size_t>(std::max(row_bytes, sf_bytes)), 0);
    if (block[r] == -2) want = old;
    else if (block[r] == -1) want = zeros.data();
    else if (f.is_bf16() || f.is_index()) want = cache + ref::data_offset(f, bs, block[r], token[r]);
    if (want && std::memcmp(got, want, static_cast<size_t>(row_bytes)) != 0)
      return "reference: output row " + std::to_string(r) +
             (block[r] == -2 ? " (no segment) changed" : block[r] == -1 ? " (zero fill) is not zero"
                                                                        : " differs from its cache record") + "\n";
    if (sf_bytes == 0) continue;
    const uint8_t* sgot = o.scales + static_cast<int64_t>(r) * o.scale_row_stride;
    const uint8_t* swant = block[r] == -2 ? before.out.scales + static_cast<int64_t>(r) * o.scale_row_stride
                           : block[r] == -1 ? zeros.data()
                                            : cache + ref::scale_offset(f, bs, block[r], token[r]);
    if (std::memcmp(sgot, swant, static_cast<size_t>(sf_bytes)) != 0)
      return "reference: scales of output row " + std::to_string(r) + " wrong (segment block " +
             std::to_string(block[r]) + ")\n";
  }
  return "";
}

}  // namespace

OutBuffers::OutBuffers(const LoadScenario& s) {
  const KVCacheFormat& f = s.shape.format;
  out.rows = s.out_rows;
  out.data_row_stride = f.load_row_bytes() + s.data_row_pad;  // may be too small on purpose
  data.resize(static_cast<size_t>(s.out_rows * (f.load_row_bytes() + 64)) + kTail);
  props::fill_pattern(data, s.out_seed);
  out.data = data.data();
  if (f.load_scale_row_bytes() > 0) {
    out.scale_row_stride = f.load_scale_row_bytes() + s.scale_row_pad;
    scales.resize(static_cast<size_t>(s.out_rows * (f.load_scale_row_bytes() + 16)) + kTail);
    props::fill_pattern(scales, s.out_seed ^ 0x5CA1E5ull);
    out.scales = scales.data();
  }
}

CheckResult check_load(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const LoadScenario s = decode_load(fdp);
  CheckResult result{describe(s), "", ""};
  const CacheShape& sh = s.shape;
  const CacheLayout layout = CacheLayout::make(sh.format, sh.num_blocks, sh.block_size);
  KVCache cache = KVCache::with_canaries(layout);
  fill_cache_bytes(sh, s.cache_seed, cache.data());
  const std::vector<uint8_t> cache_before(cache.bytes().begin(), cache.bytes().end());
  const OutBuffers before(s);
  OutBuffers ref_out(s), be_out(s);

  const Outcome ref = capture([&] {
    ref::load_paged_kv_cache(cache.bytes(), sh.format, sh.num_blocks, sh.block_size, s.segments,
                             s.total_k, ref_out.out);
  });
  const Outcome be = capture([&] {
    backend.load_paged_kv_cache(std::as_const(cache).view(), s.segments, s.total_k,
                                be_out.out);
  });
  if (be.code == ErrorCode::kUnsupported) {
    result.skipped = "load: " + be.message;
    return result;
  }

  std::string& fail = result.failure;
  fail += compare_outcomes(ref, be, backend.name());
  if (const std::string c = cache.canary_report(); !c.empty()) fail += "the load wrote into the " + c + "\n";
  if (!std::equal(cache_before.begin(), cache_before.end(), cache.data())) fail += "the cache changed during load\n";
  auto same = [](const OutBuffers& a, const OutBuffers& b) {
    return a.data == b.data && a.scales == b.scales;
  };
  if (ref.code && !same(ref_out, before)) fail += "reference wrote output although it threw\n";
  if (be.code && !same(be_out, before)) fail += "backend wrote output although it threw\n";
  if (!ref.code) fail += check_rows(s, cache.data(), before, ref_out);
  if (!ref.code && !be.code && !same(ref_out, be_out)) {
    std::string d = props::diff_load_output(sh.format, s.out_rows, ref_out.out, be_out.out);
    if (d.empty())
      d = first_raw_difference("data", ref_out.data, be_out.data, ref_out.out.data_row_stride) +
          first_raw_difference("scale", ref_out.scales, be_out.scales, ref_out.out.scale_row_stride);
    fail += "load output differs (expected = reference):\n" + d + "\n";
  }
  if (!fail.empty()) fail = "op=load backend=" + std::string(backend.name()) + "\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
