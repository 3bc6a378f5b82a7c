// The backend registry: every backend is a plugin (include/kvcheck/backend_abi.h)
// loaded through impl/plugin/loader.h — the project's own cpu and cuda backends
// (libkvcheck_cpu.so, libkvcheck_cuda.so in builtin_plugin_dir()) first, then each
// path of $KVCHECK_PLUGIN. Loaded once per process.
#include <filesystem>
#include <mutex>

#include "impl/backends.h"
#include "impl/contract_backend.h"
#include "impl/error.h"
#include "impl/plugin/loader.h"

namespace kvcheck {
namespace {

// Names a user's plugin may not take: `--backend host` selects the host properties
// (tools/kvcheck/campaign.cpp), and cpu and cuda are the built-in plugins' (cuda even
// where it is not built or cannot run: a plugin must never stand in for it).
constexpr const char* kReservedNames[] = {"host", "cpu", "cuda"};

struct Loaded {
  std::vector<std::shared_ptr<const Backend>> backends;
  std::vector<std::string> why_missing;
  int user_loaded = 0;                   // backends of $KVCHECK_PLUGIN that run here
  std::vector<std::string> user_missing;  // ... and why each of the others cannot
};

const Loaded& loaded() {
  static const Loaded all = [] {
    Loaded l;
    const std::string dir = plugin::builtin_plugin_dir();
    const auto add = [&l](const std::string& path, bool required, bool user) {
      try {
        auto lib = plugin::load_library(path);
        const std::string name = lib->table->name;
        if (user)
          for (const char* reserved : kReservedNames)
            if (name == reserved)
              throw Error(ErrorCode::kInvalidArgument,
                          "plugin " + path + ": backend name '" + name +
                              "' is reserved (host, cpu and cuda: --backend host selects the host properties, "
                              "cpu and cuda are kvcheck's own backends); give the table another name");
        for (const auto& b : l.backends)
          if (b->name() == name)
            throw Error(ErrorCode::kInvalidArgument, "plugin " + path + ": a backend named '" + name +
                                                         "' is already loaded");
        if (const std::string why = plugin::probe_in_child(*lib); !why.empty()) {
          l.why_missing.push_back(name + ": " + why);
          if (user) l.user_missing.push_back(name + ": " + why);
          return;
        }
        l.backends.push_back(plugin::make_backend(std::move(lib)));
        l.user_loaded += user;
      } catch (const Error& e) {
        // A plugin the user named must load (missing file, symbol, version: say so and stop).
        if (required && e.code() != ErrorCode::kUnsupported) throw;
        l.why_missing.push_back(std::filesystem::path(path).stem().string() + ": " + e.what());
        if (user) l.user_missing.push_back(l.why_missing.back());
      }
    };
    add(dir + "/libkvcheck_cpu.so", true, false);
    if (std::filesystem::exists(dir + "/libkvcheck_cuda.so"))
      add(dir + "/libkvcheck_cuda.so", false, false);
    else
      l.why_missing.push_back("cuda: not built (no nvcc when configured)");
    for (const auto& p : plugin::env_plugins()) add(p, true, true);
    return l;
  }();
  return all;
}

}  // namespace

std::vector<std::shared_ptr<const Backend>> available_backends(std::vector<std::string>* why_missing) {
  const Loaded& l = loaded();
  if (why_missing) why_missing->insert(why_missing->end(), l.why_missing.begin(), l.why_missing.end());
  return l.backends;
}

std::string user_plugins_unavailable() {
  const Loaded& l = loaded();
  if (l.user_loaded > 0 || l.user_missing.empty()) return "";
  std::string why;
  for (const auto& m : l.user_missing) why += (why.empty() ? "" : "; ") + m;
  return "no backend of $KVCHECK_PLUGIN / --plugin can run here (" + why + ")";
}

std::shared_ptr<const Backend> contract_backend(const std::shared_ptr<const Backend>& writer,
                                                const std::shared_ptr<const Backend>& reader,
                                                const ContractScope& scope) {
  // One object per pair, scope and process: the campaign and its children name it alike.
  static std::mutex m;
  static std::vector<std::shared_ptr<const ContractBackend>> made;
  const std::lock_guard<std::mutex> lock(m);
  for (const auto& c : made)
    if (&c->writer() == writer.get() && &c->reader() == reader.get() && c->scope() == scope) return c;
  made.push_back(std::make_shared<const ContractBackend>(writer, reader, scope));
  return made.back();
}

std::shared_ptr<const Backend> backend_by_name(const std::string& name) {
  std::string names;
  for (auto& b : available_backends()) {
    if (b->name() == name) return b;
    names += (names.empty() ? "" : ", ") + std::string(b->name());
  }
  // "<writer>-to-<reader>": a writer x reader contract of two backends here (no
  // backend name holds "-to-": the loader refuses it, so the split is unique).
  if (const size_t at = name.find("-to-"); at != std::string::npos) {
    std::shared_ptr<const Backend> w, r;
    for (auto& b : available_backends()) {
      if (b->name() == name.substr(0, at)) w = b;
      if (b->name() == name.substr(at + 4)) r = b;
    }
    if (w && r) return contract_backend(w, r);
  }
  // A backend that loaded but cannot run here (its probe said why): say why.
  for (const auto& why : loaded().why_missing)
    if (why.rfind(name + ": ", 0) == 0)
      throw Error(ErrorCode::kUnsupported, "backend " + why + " (available: " + names + ")");
  throw Error(ErrorCode::kInvalidArgument, "no backend '" + name + "' here; available: " + names);
}

}  // namespace kvcheck
