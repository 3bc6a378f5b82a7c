// The floating-point mode around plugin code. A plugin can change the calling thread's
// mode for good: gcc links crtfastmath.o into a -ffast-math / -Ofast shared library,
// whose constructor turns on flush-to-zero and denormals-are-zero at dlopen; a kernel
// may call fesetround or write MXCSR in a call. Left in place, the reference that runs
// after the plugin in the same process would flush subnormals just as the plugin does,
// and its flushed results would pass. So the plugin's code runs under the mode it set
// (as it would in an engine's process, where nothing resets it) and the harness's
// under the one it had before the plugin was loaded.
#pragma once

#include <cfenv>
#include <cstdint>
#include <mutex>
#include <string>

namespace kvcheck::plugin {

/// One thread's floating-point mode: fenv (rounding, exception masks; on aarch64 FPCR
/// with its flush-to-zero bit) and on x86 the MXCSR (flush-to-zero, denormals-are-zero).
struct FpMode {
  std::fenv_t env{};
  int round = FE_TONEAREST;  // fegetround() when captured
  uint32_t mxcsr = 0;        // x86 only: the MXCSR's control bits (the sticky flags cleared)

  /// The calling thread's mode.
  static FpMode current();
  /// Makes this the calling thread's mode.
  void apply() const;
  /// Whether the two modes round, flush and mask alike (exception flags not compared).
  bool same_as(const FpMode& o) const;
  /// What this mode does that `base` does not, in words: "flush-to-zero,
  /// denormals-are-zero", "rounding toward zero", ...; "" when the same.
  std::string differences_from(const FpMode& base) const;
};

/// A plugin's mode: what its loading left, then what each of its calls left.
class PluginFpMode {
 public:
  /// The constructing thread's mode until set (a Library built without load_library
  /// must not hand its plugin an all-zero MXCSR: every exception unmasked, SIGFPE).
  PluginFpMode() : mode_(FpMode::current()) {}
  std::string name;  // the plugin's, for the note below
  void set(const FpMode& m) {
    const std::lock_guard<std::mutex> lock(m_);
    mode_ = m;
  }
  FpMode get() const {
    const std::lock_guard<std::mutex> lock(m_);
    return mode_;
  }

 private:
  friend class PluginFpScope;
  mutable std::mutex m_;
  FpMode mode_;
  bool call_noted_ = false;  // a call that changed the mode was said once (stderr)
};

/// For the scope of one call into a plugin: the plugin's mode in, the harness's back
/// out, the mode the call left kept for the plugin's next call.
class PluginFpScope {
 public:
  explicit PluginFpScope(PluginFpMode& plugin) : plugin_(plugin), harness_(FpMode::current()) { plugin_.get().apply(); }
  ~PluginFpScope();
  PluginFpScope(const PluginFpScope&) = delete;
  PluginFpScope& operator=(const PluginFpScope&) = delete;

 private:
  PluginFpMode& plugin_;
  FpMode harness_;
};

}  // namespace kvcheck::plugin
