// Decoder of the index target (SPEC §5.5): one of the four transforms per input.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <climits>
#include <sstream>

#include "fuzzers/decoders.h"

namespace kvcheck::fuzz {

IndexScenario decode_index(FuzzedDataProvider& fdp) {
  IndexScenario s;
  s.op = static_cast<IndexScenario::Op>(fdp.ConsumeIntegralInRange<int>(0, 3));
  s.num_q = fdp.ConsumeIntegralInRange<int32_t>(0, 16);
  SplitMix64 rng{fdp.ConsumeIntegral<uint64_t>()};
  auto below = [&](int64_t n) { return static_cast<int32_t>(rng.next() % static_cast<uint64_t>(n)); };
  const auto q = static_cast<size_t>(s.num_q);
  switch (s.op) {
    case IndexScenario::Op::kConvert: {
      s.block_size = fdp_block_size(fdp);
      s.k = fdp.ConsumeIntegralInRange<int32_t>(0, 32);
      s.max_blocks = fdp.ConsumeIntegralInRange<int32_t>(1, 16);
      const int32_t num_seqs = fdp.ConsumeIntegralInRange<int32_t>(1, 8);
      s.block_table.resize(static_cast<size_t>(num_seqs * s.max_blocks));
      for (auto& b : s.block_table) b = below(64);
      if (fdp.ConsumeBool())
        for (size_t i = 0; i < q; ++i) s.seq_ids.push_back(below(num_seqs));
      const int64_t capacity = int64_t{s.max_blocks} * s.block_size;
      for (size_t i = 0; i < q; ++i) s.context_lens.push_back(below(capacity + 1));
      for (size_t i = 0; i < q * static_cast<size_t>(s.k); ++i) {
        const int32_t ctx = s.context_lens[i / static_cast<size_t>(s.k)];
        switch (below(6)) {
          case 0: s.topk.push_back(-1); break;
          case 1: s.topk.push_back(fdp.PickValueInArray(kAwkward)); break;
          case 2: s.topk.push_back(ctx); break;  // first index past the context: -1
          default: s.topk.push_back(ctx > 0 ? below(ctx) : -1);
        }
      }
      if (q > 0 && fdp.ConsumeIntegralInRange<int>(0, 7) == 0) {
        // A -1 table entry that some query's context needs.
        const size_t qi = fdp.ConsumeIntegralInRange<size_t>(0, q - 1);
        const int32_t seq = s.seq_ids.empty() ? static_cast<int32_t>(qi) : s.seq_ids[qi];
        if (seq < num_seqs && s.context_lens[qi] > 0) {
          const int32_t blk = below((s.context_lens[qi] + s.block_size - 1) / s.block_size);
          s.block_table[static_cast<size_t>(seq * s.max_blocks + blk)] = -1;
          s.invalid = "block_table[" + std::to_string(seq) + "][" + std::to_string(blk) + "] = -1";
        }
      }
      if (s.seq_ids.empty() && s.num_q > num_seqs && s.invalid.empty())
        s.invalid = "num_q > num_seqs without seq_ids";
      break;
    }
    case IndexScenario::Op::kCat: {
      s.wl = fdp.ConsumeIntegralInRange<int32_t>(0, 16);
      s.wr = fdp.ConsumeIntegralInRange<int32_t>(0, 16);
      s.total_k_swa_cached = fdp.ConsumeIntegralInRange<int32_t>(0, 1 << 20);
      s.total_k_swa_cur = fdp.ConsumeIntegralInRange<int32_t>(0, 1 << 20);
      for (size_t i = 0; i < q * static_cast<size_t>(s.wl); ++i)
        s.left.push_back(below(4) == 0 ? fdp.PickValueInArray(kAwkward) : below(1 << 20));
      for (size_t i = 0; i < q * static_cast<size_t>(s.wr); ++i)
        s.right.push_back(below(3) == 0 ? -1 : below(1 << 20));
      break;
    }
    case IndexScenario::Op::kExpand: {
      s.width = fdp.ConsumeIntegralInRange<int32_t>(0, 48);
      for (size_t i = 0; i < q; ++i) {  // len1 + len2 <= width (the CPU backend's rule)
        const int32_t len1 = below(s.width + 1);
        s.pivots.insert(s.pivots.end(), {below(1 << 16), len1, below(1 << 16), below(s.width - len1 + 1)});
      }
      break;
    }
    case IndexScenario::Op::kSwaDecode: {
      s.ring_size = fdp.ConsumeIntegralInRange<int32_t>(1, 300);
      s.width = fdp.ConsumeIntegralInRange<int32_t>(0, 48);
      for (size_t i = 0; i < q; ++i)
        s.start_len.insert(s.start_len.end(), {below(8) * s.ring_size + below(s.ring_size),
                                               below(std::min(s.width, s.ring_size) + 1)});
      break;
    }
  }
  return s;
}

std::string describe(const IndexScenario& s) {
  static const char* kOps[] = {"convert_kv_index", "kv_index_cat", "expand_swa_index",
                               "swa_decode_index"};
  std::ostringstream o;
  o << "index scenario: " << kOps[static_cast<int>(s.op)] << ", num_q " << s.num_q << "\n";
  switch (s.op) {
    case IndexScenario::Op::kConvert:
      o << "  k " << s.k << ", block_size " << s.block_size << ", max_blocks " << s.max_blocks
        << "\n  block_table " << props::format_ints(s.block_table) << "\n  seq_ids "
        << props::format_ints(s.seq_ids) << "\n  context_lens " << props::format_ints(s.context_lens)
        << "\n  topk " << props::format_ints(s.topk) << "\n";
      break;
    case IndexScenario::Op::kCat:
      o << "  wl " << s.wl << ", wr " << s.wr << ", total_k_swa_cached " << s.total_k_swa_cached
        << ", total_k_swa_cur " << s.total_k_swa_cur << "\n  L " << props::format_ints(s.left)
        << "\n  R " << props::format_ints(s.right) << "\n";
      break;
    case IndexScenario::Op::kExpand:
      o << "  width " << s.width << "\n  pivots [off1, len1, off2, len2]... "
        << props::format_ints(s.pivots) << "\n";
      break;
    case IndexScenario::Op::kSwaDecode:
      o << "  width " << s.width << ", ring_size " << s.ring_size
        << "\n  start_len [start_slot, valid_len]... " << props::format_ints(s.start_len) << "\n";
      break;
  }
  if (!s.invalid.empty()) o << "  invalid on purpose: " << s.invalid << "\n";
  return o.str();
}

}  // namespace kvcheck::fuzz
