// The plugin seam's one declaration per operation. Names, capability bits, table
// entries and argument structs come from KVCHECK_OPS (include/kvcheck/backend_abi.h);
// each operation's declare() (op_decl.cpp) says, once, what its arguments are: the
// capability gate its caches pass, the checks that bound its buffers, and every
// pointer argument with its role (read or written), its extent in bytes, its guard
// band and which pointers may alias. One adapter runs on these declarations alone
// (plugin_backend.h): a host plugin's entry is called on the harness's buffers, a
// device plugin's through the transport (device_backend.cpp), which uploads, calls,
// downloads and checks generically. Adding an operation: its KVCHECK_OPS line, its
// argument struct, its declare(), and a Backend method that fills the struct
// (plugin_backend.cpp) — docs/plugins.md §4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "impl/capabilities.h"
#include "include/kvcheck/backend_abi.h"

namespace kvcheck::plugin {

/// Name, bit and table entry of the operation whose argument struct is Args.
template <class Args>
struct Op;
#define KVCHECK_OP_TRAITS(entry_name, op_bit, args_t)                      \
  template <>                                                             \
  struct Op<args_t> {                                                     \
    static constexpr const char* name = #entry_name;                      \
    static constexpr uint32_t bit = op_bit;                               \
    static constexpr auto entry = &kvcheck_backend_v1_t::entry_name;      \
  };
KVCHECK_OPS(KVCHECK_OP_TRAITS)
#undef KVCHECK_OP_TRAITS

/// One pointer argument as the harness holds it: its host address, how many bytes
/// from it the operation may touch, and where the adapter stores the address the
/// plugin gets instead (the device copy's).
struct ArgView {
  const void* host = nullptr;
  size_t bytes = 0;
  std::function<void(uint8_t*)> set;
};

/// The pointer `field` of an argument struct as a view of `bytes` bytes.
template <class T>
ArgView view(T*& field, size_t bytes) {
  return {field, bytes, [&field](uint8_t* p) { field = reinterpret_cast<T*>(p); }};
}

/// Buffers whose views may alias (K and V caches of one allocation, key and value rows
/// of one packed tensor) travel together: overlapping views as one copy of their union.
struct ArgGroup {
  const char* what;  // in reports: "the cache", "slot_mapping", "out_k/out_v"
  bool written;      // output or cache the op writes: downloaded after the call, even a
                     // refused one; else read only: it must come back unchanged
  size_t guard;      // guard band bytes on each side; 0 = the exact bytes (sanitizers
                     // then see an overread of small metadata)
  std::vector<ArgView> views;
  bool host = false;  // host memory for every plugin (launch metadata such as
                      // copy_blocks' views): never uploaded, must come back unchanged
  bool pinned = false;  // a device plugin gets a guarded copy in PAGE-LOCKED HOST memory
                        // instead of device memory (swap_blocks' host side)
};

/// What an operation declares about one call (op_decl.cpp: a `declare` per operation,
/// the only per-operation code the adapters have). The declaration runs in order:
/// the capability gate of its caches, then bound() — the checks that read no
/// metadata, so the extents after it stay inside the harness's host buffers — then
/// every pointer argument with its role, extent, guard band and aliasing.
class ArgDecl {
 public:
  ArgDecl(const BackendCapabilities& caps, const std::string& backend, const char* op, bool device)
      : caps_(caps), backend_(backend), op_(op), device_(device) {}

  /// Throws Error(kUnsupported) when the cache is outside the capabilities (format,
  /// K/V dtype, block size): the plugin is not called.
  void paged_cache(const kvcheck_paged_cache& c) const;
  void kv_cache(const kvcheck_kv_cache& c) const;
  /// store_kv's gate on its FP8 recipe: kUnsupported for a known recipe the plugin's
  /// contract does not declare (SPEC §7.3.1).
  void kv_store_recipe(const kvcheck_kv_cache& c) const;
  /// Host plugins: false (they get the harness's buffers as they are; nothing more is
  /// declared). Device plugins: runs `check` (throws the reference's Error), which
  /// returns false when there is nothing to do (no token): the plugin is not called.
  template <class Check>
  bool bound(Check check) {
    if (!device_) return false;
    nothing_to_do_ = !check();
    return !nothing_to_do_;
  }
  /// A group of views the op only reads (must come back unchanged) / writes;
  /// `pinned`: a device plugin gets it in page-locked host memory (ArgGroup::pinned).
  void read(const char* what, size_t guard, std::vector<ArgView> views, bool pinned = false) {
    groups_.push_back({what, false, guard, std::move(views), false, pinned});
  }
  void write(const char* what, size_t guard, std::vector<ArgView> views, bool pinned = false) {
    groups_.push_back({what, true, guard, std::move(views), false, pinned});
  }
  /// `n` int32 / int64 / float entries of metadata the op reads (exact extent, no guard).
  void ints(const char* what, const int32_t*& p, int64_t n);
  void int64s(const char* what, const int64_t*& p, int64_t n);
  void floats(const char* what, const float*& p, int64_t n);
  /// Metadata the op reads in HOST memory whatever the plugin's memory space.
  void host_int64s(const char* what, const int64_t* p, int64_t n);

  bool nothing_to_do() const { return nothing_to_do_; }
  const std::vector<ArgGroup>& groups() const { return groups_; }

 private:
  const BackendCapabilities& caps_;  // the caller's, alive for the declaration
  std::string backend_;
  const char* op_;
  bool device_;
  bool nothing_to_do_ = false;
  std::vector<ArgGroup> groups_;
};

/// The declaration of one operation (op_decl.cpp); may adjust size fields of `a` to
/// the extent that travels to the device (a paged cache's size_bytes).
#define KVCHECK_OP_DECLARE(entry_name, op_bit, args_t) void declare(args_t& a, ArgDecl& d);
KVCHECK_OPS(KVCHECK_OP_DECLARE)
#undef KVCHECK_OP_DECLARE

}  // namespace kvcheck::plugin
