// The end-to-end step of seed 004 (SPEC §7.7): an earlier step stored each sequence's
// cached prefix, this step stores its new tokens (slot_mapping from prepare_prefill,
// CUDA-graph padding rows), then gather_kv reads every sequence back through the
// step's block tables and cu_seqlens_k. Each sequence must see exactly its tokens.
#include <fmt/format.h>
#include <rapidcheck.h>

#include <vector>

#include "impl/contract_backend.h"
#include "impl/kv_page_table.h"
#include "impl/kv_slot_mapping.h"
#include "properties/gen/gen_caps.h"
#include "properties/ops/kv/kv_harness.h"
#include "properties/registry.h"
#include "reference/kv_numerics.h"
#include "reference/store_kv.h"

namespace kvcheck::props {
namespace {

constexpr uint64_t kValueSalt = 0x76616C7565ull;  // V values differ from K values

// Rows of `dtype` for tokens [begin, end) of each sequence (in order), plus padding
// rows of NaN; element (seq, t, h, d) = kv_value_bits(seed, seq, t, h, d).
KvRows step_rows(const KvStepScenario& s, KvDtype dtype, uint64_t seed, const std::vector<int32_t>& begin,
                 const std::vector<int32_t>& end, int32_t padding) {
  const int64_t h = s.cache.num_kv_heads, d = s.cache.head_dim;
  // Dense rows, unless the backend declares an alignment d elements do not meet.
  const int64_t hs = kv_aligned_elements(d, kv_dtype_bytes(dtype));
  const uint16_t nan = dtype == KvDtype::kFP16 ? 0x7E00 : 0x7FC0;
  KvRows r{dtype, 0, h * hs, hs, {}};
  for (size_t i = 0; i < begin.size(); ++i)
    for (int32_t t = begin[i]; t < end[i]; ++t)
      for (int64_t hh = 0; hh < h; ++hh) {
        for (int64_t dd = 0; dd < d; ++dd) r.data.push_back(kv_value_bits(dtype, seed, static_cast<int64_t>(i), t, hh, dd));
        r.data.resize(r.data.size() + static_cast<size_t>(hs - d), nan);
      }
  r.data.resize(r.data.size() + static_cast<size_t>(padding * h * hs), nan);
  r.rows = static_cast<int64_t>(r.data.size()) / (h * hs);
  return r;
}

// SPEC §7.3: what a gathered element must be.
uint16_t expected_element(const KvStepScenario& s, bool is_v, KvDtype in, KvDtype out, uint16_t x, int64_t h) {
  if (!is_fp8(s.cache.dtype)) return x;
  const auto& sc = is_v ? s.cache.v_scale : s.cache.k_scale;
  const float scale = sc[s.cache.scale_kind == KvScaleKind::kPerHead ? static_cast<size_t>(h) : 0];
  const uint8_t q = ref::quantize_kv(s.cache.dtype, ref::model_to_float(in, x), scale, s.cache.recipe);
  return ref::float_to_model(out, ref::dequantize_kv(s.cache.dtype, q, scale));
}

// SPEC §7.9: what a gathered element of an e2m1 cache must be: its group of 16 (the
// values of kv_value_bits at elements [16*(d/16), +16)) quantised, then dequantised.
uint16_t expected_nvfp4_element(const KvStepScenario& s, bool is_v, KvDtype in, KvDtype out, uint64_t seed, int64_t i,
                                int64_t t, int64_t h, int64_t d) {
  float x[16];
  for (int e = 0; e < 16; ++e)
    x[e] = ref::model_to_float(in, kv_value_bits(in, seed, i, t, h, d / 16 * 16 + e));
  const float g = (is_v ? s.cache.v_scale : s.cache.k_scale)[0];
  const uint8_t sf = ref::nvfp4_group_scale(x, g);
  const uint8_t q = ref::nvfp4_code(x[d % 16], ref::nvfp4_group_inv(x, sf, g));
  return ref::float_to_model(out, ref::dequantize_nvfp4(q, sf, g));
}

std::vector<int32_t> seq_lens_of(const std::vector<PagedSeq>& seqs) {
  std::vector<int32_t> out;
  for (const PagedSeq& q : seqs) out.push_back(q.num_tokens);
  return out;
}

void prop_kv_step_each_sequence_sees_its_tokens(const Backend& b) {
  const auto s = *gen_kv_step_scenario();
  const std::string ctx = fmt::format("op=kv_step backend={}\n{}", b.name(), describe(s));
  KvBuffers cache(s.cache);
  const size_t n = s.num_tokens.size();
  std::vector<PagedSeq> prefix, step;
  for (size_t i = 0; i < n; ++i) {
    prefix.push_back({s.block_tables[i], 0, s.num_cached[i]});
    step.push_back({s.block_tables[i], s.num_cached[i], s.num_tokens[i]});
  }
  const std::vector<int32_t> zeros(n, 0);
  try {
    // Earlier step: the cached prefixes.
    const PrefillMetadata first = prepare_prefill(prefix, s.cache.block_size);
    const KvRows k0 = step_rows(s, s.key_dtype, s.value_seed, zeros, s.num_cached, 0);
    const KvRows v0 = step_rows(s, s.value_dtype, s.value_seed ^ kValueSalt, zeros, s.num_cached, 0);
    b.store_kv(KvRowsCopy(k0).in, KvRowsCopy(v0).in, first.slot_mapping, cache.view());
    // This step: new tokens, padded with -1 rows as a captured CUDA graph would be.
    PrefillMetadata m = prepare_prefill(step, s.cache.block_size);
    if (s.decode) {  // decode: prepare_decode's slots, padded to a captured graph's batch
      const int32_t graph = static_cast<int32_t>(n) + s.graph_padding;
      const DecodeMetadata dm = prepare_decode(step, s.cache.block_size, s.graph_padding ? graph : 0);
      std::vector<int32_t> want = m.slot_mapping;
      want.resize(want.size() + static_cast<size_t>(s.graph_padding), -1);
      if (dm.slot_mapping != want)
        RC_FAIL(fmt::format("{}\nprepare_decode slots differ from the last tokens' prefill slots", ctx));
      m.slot_mapping = dm.slot_mapping;
    } else {
      if (s.page_table) {  // store_kv addressed by FlashInfer's metadata (SPEC §7.8)
        note_class("slots from FlashInfer's page table");
        const PageTable pages = page_table_from_seqs(step, s.cache.block_size);
        const AppendPositions append = batch_indices_positions(m.cu_seqlens_q, seq_lens_of(step));
        m.slot_mapping = page_table_slot_mapping(pages, append.batch_indices, append.positions, s.cache.block_size,
                                                 s.cache.num_blocks);
      }
      m.slot_mapping.resize(m.slot_mapping.size() + static_cast<size_t>(s.graph_padding), -1);
    }
    const KvRows k1 = step_rows(s, s.key_dtype, s.value_seed, s.num_cached, s.num_tokens, s.graph_padding);
    const KvRows v1 = step_rows(s, s.value_dtype, s.value_seed ^ kValueSalt, s.num_cached, s.num_tokens, s.graph_padding);
    b.store_kv(KvRowsCopy(k1).in, KvRowsCopy(v1).in, m.slot_mapping, cache.view());
    // A contract's diagnosis compares the writer's cache as the stores left it.
    const std::vector<uint8_t> written =
        as_contract(b) ? std::vector<uint8_t>(cache.bytes.data(), cache.bytes.data() + cache.bytes.size())
                       : std::vector<uint8_t>();
    // Prefill with a prefix-cache hit reads the paged cache.
    GatherKvScenario g;
    g.cache = s.cache;
    g.block_table = m.block_tables;
    g.max_blocks = m.max_blocks;
    g.cu_seqlens_k = m.cu_seqlens_k;
    g.out_k_dtype = is_quantized_kv(s.cache.dtype) ? s.key_dtype : s.cache.dtype;
    g.out_v_dtype = is_quantized_kv(s.cache.dtype) ? s.value_dtype : s.cache.dtype;
    g.out_rows = m.cu_seqlens_k.back();
    g.out_pad_head = static_cast<int32_t>(kv_aligned_elements(s.cache.head_dim, 2) - s.cache.head_dim);
    KvOutBuffers out(g);
    b.gather_kv({cache.view(), g.block_table, g.max_blocks, g.cu_seqlens_k, {}, SeqStartUnit::kToken, out.out_k,
                 out.out_v});
    for (size_t i = 0; i < n; ++i)
      for (int32_t t = 0; t < s.num_tokens[i]; ++t)
        for (int side = 0; side < 2; ++side) {
          const KvTokensOut& o = side ? out.out_v : out.out_k;
          const KvDtype in = side ? s.value_dtype : s.key_dtype;
          const uint64_t seed = side ? s.value_seed ^ kValueSalt : s.value_seed;
          const int64_t row = m.cu_seqlens_k[i] + t;
          for (int64_t h = 0; h < s.cache.num_kv_heads; ++h)
            for (int64_t d = 0; d < s.cache.head_dim; ++d) {
              const uint8_t* p = o.data + 2 * (row * o.token_stride + h * o.head_stride + d);
              const uint16_t got = static_cast<uint16_t>(p[0] | (p[1] << 8));
              const uint16_t want =
                  is_nvfp4(s.cache.dtype)
                      ? expected_nvfp4_element(s, side == 1, in, o.dtype, seed, static_cast<int64_t>(i), t, h, d)
                      : expected_element(s, side == 1, in, o.dtype,
                                         kv_value_bits(in, seed, static_cast<int64_t>(i), t, h, d), h);
              if (got != want) {
                const uint8_t w[2] = {static_cast<uint8_t>(want & 0xFF), static_cast<uint8_t>(want >> 8)};
                // A writer x reader contract (docs/spec.md §6.2): which side broke it. The
                // same two stores by the reference, against the writer's cache.
                std::string side_note;
                if (const auto* pair = as_contract(b)) {
                  KvBuffers ref_cache(s.cache);
                  ref::store_kv(kv_tokens(k0), kv_tokens(v0), first.slot_mapping, ref_cache.view());
                  ref::store_kv(kv_tokens(k1), kv_tokens(v1), m.slot_mapping, ref_cache.view());
                  const std::string diff = diff_kv_buffers(cache, ref_cache.bytes.span(), written);
                  side_note = diff.empty()
                                  ? fmt::format("\ncontract: the writer {}'s K/V cache is the reference store's byte "
                                                "for byte: the reader {} gathers it differently",
                                                pair->writer().name(), pair->reader().name())
                                  : fmt::format("\ncontract: the writer {}'s K/V cache differs from the reference "
                                                "store's (what the reader {} is judged against):\n{}",
                                                pair->writer().name(), pair->reader().name(), diff);
                }
                RC_FAIL(fmt::format("{}\nsequence {} token {} ({} in this step) {} head {} element {} (output row {}):\n"
                                    "  expected: {}\n  actual:   {}{}",
                                    ctx, i, t, t >= s.num_cached[i] ? "stored" : "cached earlier", side ? "V" : "K",
                                    h, d, row, show_kv_element(o.dtype, w), show_kv_element(o.dtype, p), side_note));
              }
            }
        }
    if (!cache.guards_intact()) RC_FAIL(ctx + "\nwrote into the canary band around the cache");
  } catch (const Error& e) {
    RC_FAIL(ctx + "\na valid step threw: " + e.what());
  }
}

}  // namespace

void register_kv_step_properties(Registry& r) {
  r.add({"prop_kv_step_each_sequence_sees_its_tokens", "kv_step",
         "after storing a step's K/V, gather_kv returns every sequence's tokens in order: cached and new, "
         "bit-exact (FP8: the SPEC §7.3 round trip)",
         true, prop_kv_step_each_sequence_sees_its_tokens});
}

}  // namespace kvcheck::props
