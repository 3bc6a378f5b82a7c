// The backend registry of this process: the built-in backends and the user's plugins,
// all loaded as plugins (impl/plugin/). Plugin-host layer (docs/layers.md): harness code
// that picks backends by name includes this; a backend implementation never does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "impl/backend.h"
#include "impl/contract_backend.h"

namespace kvcheck {

/// Backends compiled into this build, in order (cpu first). `why_missing` gets a
/// line per backend that is built but cannot run here (e.g. "cuda: no device").
std::vector<std::shared_ptr<const Backend>> available_backends(
    std::vector<std::string>* why_missing = nullptr);

/// "" unless plugins were named ($KVCHECK_PLUGIN, `--plugin`) and none of their
/// backends can run here; then why not, plugin by plugin. Callers testing "the plugin"
/// refuse to run instead of testing the built-in backends in its place.
std::string user_plugins_unavailable();

/// The writer x reader contract backend of two backends (impl/contract_backend.h),
/// one object per pair and scope in this process (the default scope: everything both
/// take).
std::shared_ptr<const Backend> contract_backend(const std::shared_ptr<const Backend>& writer,
                                                const std::shared_ptr<const Backend>& reader,
                                                const ContractScope& scope = {});

/// The backend called `name`, or for "<writer>-to-<reader>" (two backends here) their
/// contract backend; throws Error(kUnsupported) with its probe's reason when
/// it loaded but cannot run here ("backend reshape-and-cache: no usable CUDA device:
/// ..."), else Error(kInvalidArgument) listing the names available here.
std::shared_ptr<const Backend> backend_by_name(const std::string& name);

}  // namespace kvcheck
