// FlashInfer page metadata (SPEC §7.8): CSR page tables, append positions, slots.
#include "impl/kv_page_table.h"

#include <algorithm>
#include <limits>
#include <string>

#include "impl/error.h"

namespace kvcheck {
namespace {

std::string str(int64_t v) { return std::to_string(v); }
size_t at(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

PageTable page_table_from_seqs(std::span<const PagedSeq> seqs, int32_t page_size) {
  PageTable pt;
  pt.indptr.push_back(0);
  for (size_t i = 0; i < seqs.size(); ++i) {
    const PagedSeq& s = seqs[i];
    if (s.num_cached < 0 || s.num_cached > s.num_tokens)
      throw Error(ErrorCode::kInvalidArgument, "sequence " + str(static_cast<int64_t>(i)) +
                                                   ": need 0 <= num_cached <= num_tokens, got " + str(s.num_cached) +
                                                   ", " + str(s.num_tokens));
    if (s.num_tokens > 0 && page_size < 1) paged_slot(s.block_table, page_size, 0);  // throws its error
    const int64_t pages = s.num_tokens > 0 ? (int64_t{s.num_tokens} + page_size - 1) / page_size : 0;
    for (int64_t j = 0; j < pages; ++j) {
      // The page's last token: every token of a page fails alike, except a slot past
      // int32, which the last one reaches first.
      const int64_t last = std::min<int64_t>((j + 1) * page_size, s.num_tokens) - 1;
      paged_slot(s.block_table, page_size, static_cast<int32_t>(last));
      pt.indices.push_back(s.block_table[at(j)]);
    }
    if (int64_t{pt.indptr.back()} + pages > std::numeric_limits<int32_t>::max())
      throw Error(ErrorCode::kInvalidArgument, "the batch's pages overflow int32 indptr");
    pt.indptr.push_back(static_cast<int32_t>(pt.indptr.back() + pages));
    pt.last_page_len.push_back(pages > 0 ? static_cast<int32_t>(s.num_tokens - (pages - 1) * page_size) : 0);
  }
  return pt;
}

AppendPositions batch_indices_positions(std::span<const int32_t> append_indptr, std::span<const int32_t> seq_lens) {
  if (append_indptr.size() != seq_lens.size() + 1)
    throw Error(ErrorCode::kShapeMismatch, "append_indptr has " + str(static_cast<int64_t>(append_indptr.size())) +
                                               " entries, not seq_lens' " +
                                               str(static_cast<int64_t>(seq_lens.size())) + " + 1");
  if (append_indptr[0] != 0)
    throw Error(ErrorCode::kInvalidArgument, "append_indptr[0] = " + str(append_indptr[0]) + " is not 0");
  for (size_t b = 0; b < seq_lens.size(); ++b) {
    const int64_t n = int64_t{append_indptr[b + 1]} - append_indptr[b];
    if (n < 0)
      throw Error(ErrorCode::kInvalidArgument, "append_indptr[" + str(static_cast<int64_t>(b + 1)) + "] = " +
                                                   str(append_indptr[b + 1]) + " < append_indptr[" +
                                                   str(static_cast<int64_t>(b)) + "]");
    if (n > seq_lens[b])
      throw Error(ErrorCode::kInvalidArgument, "sequence " + str(static_cast<int64_t>(b)) + " appends " + str(n) +
                                                   " tokens but seq_lens[" + str(static_cast<int64_t>(b)) +
                                                   "] = " + str(seq_lens[b]));
  }
  AppendPositions out;
  const size_t nnz = static_cast<size_t>(append_indptr.back());
  out.batch_indices.reserve(nnz);
  out.positions.reserve(nnz);
  for (size_t b = 0; b < seq_lens.size(); ++b) {
    const int32_t n = append_indptr[b + 1] - append_indptr[b];
    for (int32_t k = 0; k < n; ++k) {
      out.batch_indices.push_back(static_cast<int32_t>(b));
      out.positions.push_back(seq_lens[b] - n + k);
    }
  }
  return out;
}

std::vector<int32_t> page_table_slot_mapping(const PageTable& t, std::span<const int32_t> batch_indices,
                                             std::span<const int32_t> positions, int32_t page_size,
                                             int64_t num_blocks) {
  if (page_size < 1) throw Error(ErrorCode::kInvalidArgument, "page_size must be >= 1, got " + str(page_size));
  if (t.indptr.empty()) throw Error(ErrorCode::kShapeMismatch, "indptr is empty (it has batch_size + 1 entries)");
  if (t.indptr[0] != 0) throw Error(ErrorCode::kInvalidArgument, "indptr[0] = " + str(t.indptr[0]) + " is not 0");
  const int64_t b = static_cast<int64_t>(t.indptr.size()) - 1;
  for (int64_t i = 0; i < b; ++i)
    if (t.indptr[at(i + 1)] < t.indptr[at(i)])
      throw Error(ErrorCode::kInvalidArgument, "indptr[" + str(i + 1) + "] = " + str(t.indptr[at(i + 1)]) +
                                                   " < indptr[" + str(i) + "] = " + str(t.indptr[at(i)]));
  if (t.indptr.back() != static_cast<int64_t>(t.indices.size()))
    throw Error(ErrorCode::kShapeMismatch, "indptr[" + str(b) + "] = " + str(t.indptr.back()) + " but indices has " +
                                               str(static_cast<int64_t>(t.indices.size())) + " entries");
  if (static_cast<int64_t>(t.last_page_len.size()) != b)
    throw Error(ErrorCode::kShapeMismatch, "last_page_len has " + str(static_cast<int64_t>(t.last_page_len.size())) +
                                               " entries, not batch_size " + str(b));
  for (int64_t i = 0; i < b; ++i) {
    const int32_t pages = t.indptr[at(i + 1)] - t.indptr[at(i)], last = t.last_page_len[at(i)];
    if (pages > 0 ? last < 1 || last > page_size : last != 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "last_page_len[" + str(i) + "] = " + str(last) + " is not in " +
                      (pages > 0 ? "[1, page_size = " + str(page_size) + "]" : std::string("{0} (no page)")));
  }
  if (batch_indices.size() != positions.size())
    throw Error(ErrorCode::kShapeMismatch, "batch_indices has " + str(static_cast<int64_t>(batch_indices.size())) +
                                               " entries, positions " + str(static_cast<int64_t>(positions.size())));
  std::vector<int32_t> slots;
  slots.reserve(positions.size());
  for (size_t j = 0; j < positions.size(); ++j) {
    const int32_t bi = batch_indices[j], p = positions[j];
    const std::string entry = "entry " + str(static_cast<int64_t>(j)) + " (batch_indices[" +
                              str(static_cast<int64_t>(j)) + "] = " + str(bi) + ", positions[" +
                              str(static_cast<int64_t>(j)) + "] = " + str(p) + ")";
    if (bi < 0 || bi >= b) throw Error(ErrorCode::kInvalidArgument, entry + ": no sequence " + str(bi));
    const int64_t pages = t.indptr[at(bi + 1)] - t.indptr[at(bi)];
    const int64_t len = pages > 0 ? (pages - 1) * page_size + t.last_page_len[at(bi)] : 0;
    if (p < 0 || p >= len)
      throw Error(ErrorCode::kRangeOutOfTable, entry + ": sequence " + str(bi) + " holds " + str(len) + " tokens");
    const int64_t k = t.indptr[at(bi)] + p / page_size;
    const int32_t page = t.indices[at(k)];
    if (page < 0 || page >= num_blocks)
      throw Error(ErrorCode::kBlockOutOfRange, entry + ": indices[" + str(k) + "] = " + str(page) +
                                                   " is not in [0, num_blocks = " + str(num_blocks) + ")");
    const int64_t slot = int64_t{page} * page_size + p % page_size;
    if (slot > std::numeric_limits<int32_t>::max())
      throw Error(ErrorCode::kInvalidArgument, entry + ": slot " + str(slot) + " overflows int32");
    slots.push_back(static_cast<int32_t>(slot));
  }
  return slots;
}

}  // namespace kvcheck
