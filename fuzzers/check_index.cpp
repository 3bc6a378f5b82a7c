// index target (SPEC §5.5): convert_kv_index, kv_index_cat, expand_swa_index and
// swa_decode_index of the backend against the reference (int64 results, so an
// overflow shows) on valid inputs; on a convert_kv_index whose valid index needs a
// -1 table entry (or a query without a table row), or with a topk entry below -1,
// the backend must throw and leave its output unchanged.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>

#include "fuzzers/checks.h"
#include "fuzzers/decoders.h"
#include "reference/index_transforms.h"

namespace kvcheck::fuzz {
namespace {

constexpr int32_t kSentinel = 0x7A7A7A7A;

// Must convert_kv_index throw? A topk entry below -1 or a query without a block
// table row (the CPU backend's decisions; SPEC is silent), or a valid entry that
// needs a -1 block.
bool invalid_convert(const IndexScenario& s) {
  for (int32_t x : s.topk)
    if (x < -1) return true;
  const int64_t num_seqs = static_cast<int64_t>(s.block_table.size()) / s.max_blocks;
  for (int32_t q = 0; q < s.num_q; ++q)  // a query without a table row, used or not
    if ((s.seq_ids.empty() ? q : s.seq_ids[static_cast<size_t>(q)]) >= num_seqs) return true;
  for (int32_t q = 0; q < s.num_q; ++q) {
    const int64_t seq = s.seq_ids.empty() ? q : s.seq_ids[static_cast<size_t>(q)];
    const int32_t ctx = s.context_lens[static_cast<size_t>(q)];
    for (int32_t j = 0; j < s.k; ++j) {
      const int32_t x = s.topk[static_cast<size_t>(q * s.k + j)];
      if (x < 0 || x >= ctx) continue;
      if (s.block_table[static_cast<size_t>(seq * s.max_blocks + x / s.block_size)] < 0)
        return true;
    }
  }
  return false;
}

std::string compare(const std::string& what, const std::vector<int64_t>& want,
                    const std::vector<int32_t>& got) {
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != got[i])
      return what + "[" + std::to_string(i) + "]: expected (reference) " + std::to_string(want[i]) +
             ", actual " + std::to_string(got[i]) + "\n";
  for (size_t i = want.size(); i < got.size(); ++i)
    if (got[i] != kSentinel) return what + ": wrote past its output at " + std::to_string(i) + "\n";
  return "";
}

}  // namespace

CheckResult check_index(const uint8_t* data, size_t size, const Backend& backend) {
  FuzzedDataProvider fdp(data, size);
  const IndexScenario s = decode_index(fdp);
  CheckResult result{describe(s), "", ""};
  const size_t q = static_cast<size_t>(s.num_q);
  std::vector<int64_t> want;
  std::vector<int32_t> out;
  Outcome be;
  std::string what;
  bool invalid = false;
  switch (s.op) {
    case IndexScenario::Op::kConvert: {
      what = "convert_kv_index";
      const ConvertKvIndexArgs args{s.topk,    s.num_q, s.k,          s.block_table, s.max_blocks,
                                    s.seq_ids, s.context_lens, s.block_size};
      invalid = invalid_convert(s);
      out.assign(q * static_cast<size_t>(s.k) + 8, kSentinel);
      be = capture([&] { backend.convert_kv_index(args, std::span(out).first(out.size() - 8)); });
      if (!invalid && !be.code) want = ref::convert_kv_index(args);
      break;
    }
    case IndexScenario::Op::kCat:
      what = "kv_index_cat";
      out.assign(q * static_cast<size_t>(s.wl + s.wr) + 8, kSentinel);
      be = capture([&] {
        backend.kv_index_cat(s.left, s.wl, s.right, s.wr, s.num_q, s.total_k_swa_cached,
                             s.total_k_swa_cur, std::span(out).first(out.size() - 8));
      });
      if (!be.code)
        want = ref::kv_index_cat(s.left, s.wl, s.right, s.wr, s.num_q, s.total_k_swa_cached,
                                 s.total_k_swa_cur);
      break;
    case IndexScenario::Op::kExpand:
      what = "expand_swa_index";
      out.assign(q * static_cast<size_t>(s.width) + 8, kSentinel);
      be = capture([&] {
        backend.expand_swa_index(s.pivots, s.num_q, s.width, std::span(out).first(out.size() - 8));
      });
      if (!be.code) want = ref::expand_swa_index(s.pivots, s.num_q, s.width);
      break;
    case IndexScenario::Op::kSwaDecode:
      what = "swa_decode_index";
      out.assign(q * static_cast<size_t>(s.width) + 8, kSentinel);
      be = capture([&] {
        backend.swa_decode_index(s.start_len, s.num_q, s.width, s.ring_size,
                                 std::span(out).first(out.size() - 8));
      });
      if (!be.code) want = ref::swa_decode_index(s.start_len, s.num_q, s.width, s.ring_size);
      break;
  }
  if (be.code == ErrorCode::kUnsupported) {
    result.skipped = what + ": " + be.message;
    return result;
  }
  std::string& fail = result.failure;
  const bool untouched = std::all_of(out.begin(), out.end(), [](int32_t v) { return v == kSentinel; });
  if (invalid && !be.code) fail += what + " accepted an invalid input (topk < -1 or an index needing a missing block)\n";
  if (be.code && !untouched) fail += what + " wrote output although it threw\n";
  if (!invalid && be.code) fail += what + " rejected a valid input: " + be.message + "\n";
  if (!invalid && !be.code) fail += compare(what, want, out);
  if (!fail.empty()) fail = "op=index backend=" + std::string(backend.name()) + "\n" + fail;
  return result;
}

}  // namespace kvcheck::fuzz
