// Writer x reader contracts (docs/spec.md §6.2): a composite backend whose writing
// operations (store_kv_cache, store_kv) are one backend's and whose reading operations
// (load_paged_kv_cache, gather_kv) are another's, so the round-trip and K/V-step
// properties check that what one engine's writer leaves in a cache is what another
// engine's reader expects — the format disagreements (scale encodings, layouts) that
// each side's own tests cannot see. Host layer (docs/layers.md).
#pragma once

#include <memory>
#include <string>

#include "impl/backend.h"

namespace kvcheck {

/// The composite "<writer>-to-<reader>". Its capabilities: the writer's store
/// operations and the reader's load operations, the formats, K/V dtypes, head_dims and
/// block sizes both take, the writer's recipes; host memory only when both are. A
/// family (paged, K/V) whose formats, dtypes, head_dims or block sizes do not overlap
/// loses its operations. Every other operation is kUnsupported.
/// The part of a pair's formats and K/V dtypes a contract run covers (`kvcheck contract
/// --format / --kv-dtype`): masks ANDed into the pair's capabilities, so the generators
/// draw only those; a family left with none loses its operations (its rows are then
/// not exercised).
struct ContractScope {
  uint32_t formats = ~0u;    // KVCHECK_FORMAT_BIT bits
  uint32_t kv_dtypes = ~0u;  // 1 << KvDtype bits
  bool operator==(const ContractScope&) const = default;
};

class ContractBackend final : public Backend {
 public:
  ContractBackend(std::shared_ptr<const Backend> writer, std::shared_ptr<const Backend> reader,
                  ContractScope scope = {});
  std::string_view name() const override { return name_; }
  BackendCapabilities capabilities() const override { return caps_; }
  bool set_test_parallelism(int32_t max_threads, int64_t min_bytes_per_thread) const override;
  void store_kv_cache(const KVInput& kv, std::span<const int32_t> slot_mapping, const CacheView& cache) const override;
  void load_paged_kv_cache(const ConstCacheView& cache, std::span<const int32_t> load_segments, int32_t total_k,
                           const LoadOutput& out) const override;
  void convert_kv_index(const ConvertKvIndexArgs& args, std::span<int32_t> out) const override;
  void kv_index_cat(std::span<const int32_t> left, int32_t wl, std::span<const int32_t> right, int32_t wr,
                    int32_t num_q, int32_t total_k_swa_cached, int32_t total_k_swa_cur,
                    std::span<int32_t> out) const override;
  void expand_swa_index(std::span<const int32_t> pivots, int32_t num_q, int32_t width,
                        std::span<int32_t> out) const override;
  void swa_decode_index(std::span<const int32_t> start_len, int32_t num_q, int32_t width, int32_t ring_size,
                        std::span<int32_t> out) const override;
  void store_kv(const KvTokensIn& key, const KvTokensIn& value, std::span<const int32_t> slot_mapping,
                const KvCacheView& cache, const RopeArgs* rope = nullptr) const override;
  void gather_kv(const GatherKvArgs& args) const override;

  const Backend& writer() const { return *writer_; }
  const Backend& reader() const { return *reader_; }
  const std::shared_ptr<const Backend>& writer_ptr() const { return writer_; }
  const std::shared_ptr<const Backend>& reader_ptr() const { return reader_; }
  const ContractScope& scope() const { return scope_; }
  /// Why a family (paged, K/V) is left out of the pair, "" when neither is: "the K/V
  /// family: no head_dim or row shape both declare; ...". For the "nothing to run" message.
  const std::string& gaps() const { return gaps_; }

 private:
  std::shared_ptr<const Backend> writer_, reader_;
  std::string name_;
  ContractScope scope_;
  std::string gaps_;
  BackendCapabilities caps_;
};

/// `b` (through wrappers, Backend::underlying) as a contract backend, or nullptr.
inline const ContractBackend* as_contract(const Backend& b) {
  return dynamic_cast<const ContractBackend*>(&b.underlying());
}

/// The name of the contract backend of writer `w` and reader `r`: "w-to-r".
std::string contract_name(std::string_view w, std::string_view r);

/// Whether a property of operation `op` (Property::op) checks a writer x reader
/// contract: the round trip (store_kv_cache then load_paged_kv_cache) and the K/V step
/// (store_kv then gather_kv). The other properties run on single backends only.
bool is_contract_op(std::string_view op);

}  // namespace kvcheck
