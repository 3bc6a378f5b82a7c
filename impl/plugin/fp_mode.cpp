#include "impl/plugin/fp_mode.h"

#include <cstdio>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define KVCHECK_X86_MXCSR 1
#endif

namespace kvcheck::plugin {
namespace {

#ifdef KVCHECK_X86_MXCSR
constexpr uint32_t kMxcsrControl = 0xFFC0u;  // bits 6-15: DAZ, masks, rounding, FTZ (0-5: sticky flags)
constexpr uint32_t kFtz = 1u << 15, kDaz = 1u << 6, kMasks = 0x3Fu << 7, kRounding = 3u << 13;
#endif

const char* rounding_name(int r) {
  switch (r) {
    case FE_TONEAREST: return "rounding to nearest";
    case FE_DOWNWARD: return "rounding down";
    case FE_UPWARD: return "rounding up";
    case FE_TOWARDZERO: return "rounding toward zero";
    default: return "an unknown rounding mode";
  }
}

}  // namespace

FpMode FpMode::current() {
  FpMode m;
  std::fegetenv(&m.env);
  m.round = std::fegetround();
#ifdef KVCHECK_X86_MXCSR
  m.mxcsr = _mm_getcsr() & kMxcsrControl;
#endif
  return m;
}

void FpMode::apply() const {
  std::fesetenv(&env);
#ifdef KVCHECK_X86_MXCSR
  // fesetenv need not restore FTZ/DAZ: the MXCSR's control bits explicitly, the
  // thread's sticky flags kept.
  _mm_setcsr((_mm_getcsr() & ~kMxcsrControl) | mxcsr);
#endif
}

// Compared on what current() captured (after every plugin call: no mode is set to
// find out).
bool FpMode::same_as(const FpMode& o) const { return round == o.round && mxcsr == o.mxcsr; }

std::string FpMode::differences_from(const FpMode& base) const {
  std::string out;
  const auto add = [&out](const std::string& s) { out += (out.empty() ? "" : ", ") + s; };
  if (round != base.round) add(rounding_name(round));
#ifdef KVCHECK_X86_MXCSR
  if ((mxcsr & kFtz) != (base.mxcsr & kFtz)) add(mxcsr & kFtz ? "flush-to-zero" : "no flush-to-zero");
  if ((mxcsr & kDaz) != (base.mxcsr & kDaz)) add(mxcsr & kDaz ? "denormals-are-zero" : "no denormals-are-zero");
  if ((mxcsr & kMasks) != (base.mxcsr & kMasks)) add("other floating-point exception masks");
  if ((mxcsr & kRounding) != (base.mxcsr & kRounding) && round == base.round) add("another SSE rounding mode");
#endif
  return out;
}

PluginFpScope::~PluginFpScope() {
  const FpMode left = FpMode::current();
  const FpMode had = plugin_.get();
  if (!left.same_as(had)) {
    bool say = false;
    {
      const std::lock_guard<std::mutex> lock(plugin_.m_);
      plugin_.mode_ = left;
      say = !plugin_.call_noted_;
      plugin_.call_noted_ = true;
    }
    const std::string d = left.differences_from(harness_);
    if (say)
      std::fprintf(stderr,
                   "kvcheck: plugin '%s' changed the floating-point mode in a call (now %s): its later calls run "
                   "under it, kvcheck's reference under its own\n",
                   plugin_.name.c_str(), d.empty() ? "kvcheck's own" : d.c_str());
  }
  harness_.apply();
}

}  // namespace kvcheck::plugin
