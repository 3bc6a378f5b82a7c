// Loading backend plugins (include/kvcheck/backend_abi.h): dlopen a shared library,
// resolve its entry symbol, check the ABI version and table, and wrap the table as a
// kvcheck::Backend (host plugins: called on the harness's host buffers; device
// plugins: through the guarded device harness, device_backend.cpp).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/plugin/fp_mode.h"
#include "include/kvcheck/backend_abi.h"

namespace kvcheck::plugin {

/// One loaded library: its path, dlopen handle and table (valid while this lives).
struct Library {
  std::string path;
  void* handle = nullptr;
  const kvcheck_backend_v1_t* table = nullptr;
  // The floating-point mode its code runs under (fp_mode.h): what loading it left (its
  // constructors, its entry), then what its calls leave.
  mutable PluginFpMode fp_mode;
  ~Library();
};

/// The table's contract: NULL when the table is too old to have the field or leaves it
/// NULL (backend_abi.h kvcheck_contract).
const kvcheck_contract* table_contract(const kvcheck_backend_v1_t& t);

/// dlopen(path) + the entry symbol, dlopen first tried in a forked child (its
/// constructors may end or stall the process). Throws Error(kInvalidArgument) naming
/// the path and the problem: no such file, a child whose dlopen did not return (how it
/// ended: "exited with status 0", a signal) or ran past KVCHECK_PLUGIN_TIMEOUT, dlopen's error, no symbol kvcheck_backend_v1, ABI
/// version mismatch (both numbers), a table too small or with a bad name/memory space,
/// an ops bit without its function, a contract out of range (unknown recipe bits,
/// head_dims), a device plugin in a harness built without CUDA.
/// A plugin that declines (entry returns UNSUPPORTED) throws Error(kUnsupported)
/// with its reason. The calling thread's floating-point mode is as before the call
/// (what loading set is kept in Library::fp_mode and said on stderr).
std::shared_ptr<Library> load_library(const std::string& path);

/// Runs the table's probe (when it has one) in a forked child, so the calling process
/// never initialises CUDA (campaigns fork after this). "" = usable (the probe returned
/// OK), else why not: its message, "probe did not return within N s" (the child is
/// killed at KVCHECK_PLUGIN_TIMEOUT), or a probe that ended the process (exit(), any
/// status, or a signal) instead of returning.
std::string probe_in_child(const Library& lib);

/// A check the waits of load_library's and probe_in_child's children poll (nullptr =
/// none): once it returns true (a tool's stop signal, e.g. Ctrl-C), the child is killed
/// at once and the load refused / the probe said "interrupted", instead of waiting for
/// it up to KVCHECK_PLUGIN_TIMEOUT. The children take SIGINT/SIGTERM/SIGHUP's defaults.
void set_stop_requested(bool (*stop_requested)());

/// The Backend over a loaded library (plugin_backend.h; a device plugin's calls go
/// through the device transport).
std::shared_ptr<const Backend> make_backend(std::shared_ptr<Library> lib);

/// The directory holding the project's own plugins (libkvcheck_cpu.so,
/// libkvcheck_cuda.so): $KVCHECK_PLUGIN_DIR, else the build's plugins/ directory.
std::string builtin_plugin_dir();

/// The paths of $KVCHECK_PLUGIN (colon-separated; empty entries ignored).
std::vector<std::string> env_plugins();

}  // namespace kvcheck::plugin
