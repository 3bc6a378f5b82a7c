// Buffers, runners and decoded diffs of the K/V family (SPEC §7.7), shared by the
// properties, the fuzz target and explain: each cache pair lives in one buffer
// pre-filled with a pattern and framed by canaries, so any stray byte shows.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/error.h"
#include "properties/gen/ops/kv/kv_gen.h"
#include "properties/harness.h"  // kGuardBytes: the harness's one canary-band size

namespace kvcheck::props {

/// The strides of a shape (dense NHD/HND plus pads; FlashInfer doubles stride_page).
KvCacheLayout kv_layout_of(const KvCacheShape& shape);

/// A K/V cache pair in one allocation: [canary | body | canary], body laid out by
/// shape.alloc, everything but the canaries filled from shape.fill_seed. The bytes are
/// a pooled Buffer (harness.h): a case reuses the last cases' memory instead of
/// mapping, zero-filling and faulting in fresh pages.
struct KvBuffers {
  KvCacheShape shape;
  KvCacheLayout layout;
  int64_t body_bytes = 0;
  int64_t k_offset = 0, v_offset = 0;      // bytes from the body's start
  int64_t k_capacity = 0, v_capacity = 0;  // elements
  // e2m1 caches (SPEC §7.9): the block-scale caches, in the same body.
  int64_t k_sf_offset = 0, v_sf_offset = 0;      // bytes from the body's start
  int64_t k_sf_capacity = 0, v_sf_capacity = 0;  // bytes
  KvSfGeometry sf;
  Buffer bytes;  // after the geometry above: its size comes from it
  explicit KvBuffers(const KvCacheShape& shape);
  /// The same bytes in a new buffer (a copy: cheaper than filling the pattern again).
  KvBuffers(const KvBuffers& o);
  KvBuffers& operator=(const KvBuffers&) = delete;
  uint8_t* body() { return bytes.data() + kGuardBytes; }
  const uint8_t* body() const { return bytes.data() + kGuardBytes; }
  KvCacheView view();
  ConstKvCacheView view() const;
  bool guards_intact() const;

 private:
  int64_t place();  // sets the geometry from shape and layout; returns body_bytes
};

/// Output rows of gather_kv: out_rows rows with padded strides and a 64-byte tail,
/// pre-filled from out_seed (pooled Buffers, as KvBuffers).
struct KvOutBuffers {
  int64_t offset_bytes = 0;  // where row 0 starts in k and v (s.out_offset elements)
  Buffer k, v;
  KvTokensOut out_k, out_v;
  KvOutBuffers(const GatherKvScenario& s);
  /// The same bytes in new buffers, out_k and out_v pointing into them.
  KvOutBuffers(const KvOutBuffers& o);
  KvOutBuffers& operator=(const KvOutBuffers&) = delete;
};

KvTokensIn kv_tokens(const KvRows& rows);

/// Rows as the harness hands them to a backend: a pooled copy (256-byte aligned, as
/// every harness buffer, so a declared kv_alignment holds for their address) and the
/// view of it. The scenario's own rows are never handed out.
struct KvRowsCopy {
  Buffer bytes;
  KvTokensIn in;
  explicit KvRowsCopy(const KvRows& rows);
};

/// What one side did: nullopt when it returned, else the code (message in *what).
/// `inputs_written` (when given) gets "" or which rows (key, value) the call wrote.
std::optional<ErrorCode> run_store_kv(const Backend* backend /*nullptr = reference*/,
                                      const StoreKvScenario& s, KvBuffers& buffers,
                                      std::string* what = nullptr, std::string* inputs_written = nullptr);
std::optional<ErrorCode> run_gather_kv(const Backend* backend /*nullptr = reference*/,
                                       const GatherKvScenario& s, const KvBuffers& buffers,
                                       KvOutBuffers& out, std::string* what = nullptr);

/// "" when every K/V address and byte stride a call on these buffers hands the backend
/// is a multiple of `alignment` bytes (kvcheck_contract.kv_alignment), else the first
/// that is not ("key token_stride 130 bytes"). Host addresses stand for device ones:
/// the device copies keep them modulo 256 (impl/plugin/device_memory.h). The rows'
/// and outputs' pooled copies start 256-byte aligned, so their strides and the
/// outputs' offset are what can be off.
std::string kv_misalignment(const StoreKvScenario& s, const KvBuffers& cache, int64_t alignment);
std::string kv_misalignment(const GatherKvScenario& s, const KvBuffers& cache, int64_t alignment);

/// Where byte `offset` of the body lives: "K block 1 token 3 head 5 element 7", "V ...",
/// or "not in K or V (stride padding / gap)".
std::string locate_kv_byte(const KvBuffers& b, int64_t offset);
/// "" when equal, else the first differing byte of the whole buffer (canaries too)
/// decoded, expected and actual values decoded, and the count of differing bytes.
std::string diff_kv_buffers(const KvBuffers& b, std::span<const uint8_t> expected,
                            std::span<const uint8_t> actual);
/// The same for one gather output ("out_k" / "out_v"): row, head, element or padding.
std::string diff_kv_out(const char* what, const KvTokensOut& layout, int32_t num_kv_heads,
                        int32_t head_dim, std::span<const uint8_t> expected,
                        std::span<const uint8_t> actual);
/// Notes the case classes (classes.h) of a scenario: "padding rows", "kv longer than
/// slot_mapping", "odd output stride", "misaligned output base", ...
void note_kv_classes(const StoreKvScenario& s);
void note_kv_classes(const GatherKvScenario& s);

/// "bf16 0x3F80 = 1" etc.
std::string show_kv_element(KvDtype dtype, const uint8_t* p);

}  // namespace kvcheck::props
