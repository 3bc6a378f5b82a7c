// Printers of the K/V family's scenarios (one per type): RapidCheck counterexamples,
// fuzz reports and `kvcheck explain` all print these.
#include <fmt/format.h>

#include <ostream>
#include <sstream>

#include "properties/gen/ops/kv/kv_gen.h"

namespace kvcheck::props {
namespace {

const char* alloc_name(KvAlloc a) {
  switch (a) {
    case KvAlloc::kSeparate: return "separate";
    case KvAlloc::kNanoVllm: return "nano-vllm [2, L, ...]";
    case KvAlloc::kFlashInfer: return "flashinfer [nb, 2, ...]";
    case KvAlloc::kLayerPages: return "layer pages [nb, L, 2, ...]";
    case KvAlloc::kNvfp4Pages: return "vLLM nvfp4 pages [K data | K scales | V data | V scales]";
  }
  return "?";
}

std::string ints(const std::vector<int32_t>& v, size_t max = 48) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() > max) s += fmt::format(", ... ({} total)", v.size());
  return s + "]";
}

// "\n  fault: ... (must throw kSlotOutOfRange)", or "" for a valid case.
std::string fault_line(const std::string& fault, const std::optional<ErrorCode>& code) {
  if (fault.empty()) return "";
  return "\n  fault: " + fault +
         (code ? " (must throw " + std::string(to_string(*code)) + ")" : std::string(" (raw values: the reference's outcome)"));
}

std::string floats(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += fmt::format("{}{:g}", i ? ", " : "", v[i]);
  if (v.size() > 8) s += ", ...";
  return s + "]";
}

}  // namespace

std::string describe(const KvCacheShape& s) {
  std::string scales;
  if (is_fp8(s.dtype))
    scales = fmt::format(", {} k_scale {} v_scale {}, recipe {}", to_string(s.scale_kind), floats(s.k_scale),
                         floats(s.v_scale), to_string(s.recipe));
  if (is_nvfp4(s.dtype))
    scales = fmt::format(", global decode scales k {} v {}, {} e4m3 block scales", floats(s.k_scale), floats(s.v_scale),
                         to_string(s.sf_layout));
  return fmt::format("{} {} cache: {} blocks x {} tokens x {} heads x {} (pads head {} token {} page {}), {}{}{}",
                     to_string(s.dtype), to_string(s.order), s.num_blocks, s.block_size, s.num_kv_heads,
                     s.head_dim, s.pad_head, s.pad_token, s.pad_page, alloc_name(s.alloc),
                     s.alloc == KvAlloc::kNanoVllm || s.alloc == KvAlloc::kLayerPages
                         ? fmt::format(" layer {} of {}", s.layer, s.num_layers)
                         : "",
                     scales);
}

namespace {
// A fused RoPE of the key rows (docs/spec.md §8.4), or "".
std::string rope_line(const std::optional<ScenarioRope>& r) {
  if (!r) return "";
  std::ostringstream os;
  os << "\n  key ";
  showValue(*r, os);
  return os.str();
}
}  // namespace

std::string describe(const StoreKvScenario& s) {
  return fmt::format("store_kv {}\n  n={} slot_mapping={}\n  key {} rows={} token_stride={} head_stride={}; "
                     "value {} rows={} token_stride={} head_stride={}{}",
                     describe(s.cache), s.slot_mapping.size(), ints(s.slot_mapping), to_string(s.key.dtype),
                     s.key.rows, s.key.token_stride, s.key.head_stride, to_string(s.value.dtype), s.value.rows,
                     s.value.token_stride, s.value.head_stride, fault_line(s.fault, s.code)) +
         (s.slot_tail.empty() ? "" : "\n  slot_mapping buffer goes on: " + ints(s.slot_tail)) +
         (s.threads > 0 ? fmt::format("\n  threads {}", s.threads) : "") + rope_line(s.rope);
}

std::string describe(const GatherKvScenario& s) {
  return fmt::format("gather_kv {}\n  cu_seqlens_k={} max_blocks={} block_table={}\n  out_k {} out_v {} "
                     "out_rows={} pads head {} token {}{}",
                     describe(s.cache), ints(s.cu_seqlens_k), s.max_blocks, ints(s.block_table),
                     to_string(s.out_k_dtype), to_string(s.out_v_dtype), s.out_rows, s.out_pad_head,
                     s.out_pad_token, fault_line(s.fault, s.code)) +
         (s.seq_starts.empty() ? ""
                               : fmt::format("\n  seq_starts={} ({}s)", ints(s.seq_starts),
                                             s.seq_start_unit == SeqStartUnit::kBlock ? "block" : "token")) +
         (s.out_offset > 0 ? fmt::format("\n  outputs start {} elements into their buffers", s.out_offset) : "") +
         (s.out_v_rows || s.out_v_pad_token
              ? fmt::format("\n  out_v alone: out_rows={} token pad {}", s.rows_of(1), s.pad_token_of(1))
              : "") +
         (s.threads > 0 ? fmt::format("\n  threads {}", s.threads) : "");
}

std::string describe(const KvStepScenario& s) {
  std::string seqs;
  for (size_t i = 0; i < s.num_tokens.size(); ++i)
    seqs += fmt::format("\n  seq {}: num_cached {} num_tokens {} block_table {}", i, s.num_cached[i],
                        s.num_tokens[i], ints(s.block_tables[i]));
  return fmt::format("kv_step ({}) {}\n  key {} value {} graph_padding {}{}",
                     s.decode ? "decode" : s.page_table ? "prefill, slots from FlashInfer's page table" : "prefill",
                     describe(s.cache), to_string(s.key_dtype), to_string(s.value_dtype), s.graph_padding, seqs);
}

void showValue(const KvCacheShape& s, std::ostream& os) { os << describe(s); }
void showValue(const KvRows& r, std::ostream& os) {
  os << to_string(r.dtype) << " rows=" << r.rows << " token_stride=" << r.token_stride
     << " head_stride=" << r.head_stride;
}
void showValue(const StoreKvScenario& s, std::ostream& os) { os << describe(s); }
void showValue(const GatherKvScenario& s, std::ostream& os) { os << describe(s); }
void showValue(const KvStepScenario& s, std::ostream& os) { os << describe(s); }

}  // namespace kvcheck::props
