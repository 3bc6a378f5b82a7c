#include "properties/classes.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "impl/slot_mapping.h"

namespace kvcheck::props {
namespace {

struct CaseState {
  bool open = false;
  std::set<std::string> current;
  std::vector<std::set<std::string>> held;  // the classes of each case that held, in order
};

CaseState& state() {
  thread_local CaseState s;
  return s;
}

}  // namespace

void note_class(std::string_view name) {
  if (state().open) state().current.emplace(name);
}

void note_slot_space_class(int64_t n, int64_t num_slots, int32_t block_size) {
  const int64_t limit = slot_bitmap_max_slots(n);
  if (num_slots > limit) note_class("slot space past the bitmap limit (hash map)");
  else if (num_slots > limit - block_size) note_class("slot space at the bitmap limit");
}

void begin_case() {
  state().open = true;
  state().current.clear();
}

void end_case() {
  CaseState& s = state();
  if (!s.open) return;
  s.held.push_back(std::move(s.current));
  s.current.clear();
  s.open = false;
}

ClassCounts take_class_counts(size_t first) {
  CaseState& s = state();
  ClassCounts out;
  for (size_t i = 0; i < s.held.size() && i < first; ++i)
    for (const auto& c : s.held[i]) ++out[c];
  s.held.clear();
  s.current.clear();
  s.open = false;
  return out;
}

bool class_bound_applies(const ClassBound& b, const ClassBoundContext& context) {
  if (!context.unrestricted) return false;
  if (b.needs == ClassBound::Needs::kThreadKnob && !context.thread_knob) return false;
  if (b.needs == ClassBound::Needs::kHostMemory && !context.host_memory) return false;
  return true;
}

std::string check_class_bounds(const std::vector<ClassBound>& bounds, const ClassCounts& counts, int cases,
                               const ClassBoundContext& context) {
  if (cases <= 0) return "";
  std::string out;
  for (const auto& b : bounds) {
    if (!class_bound_applies(b, context)) continue;
    const auto it = counts.find(b.name);
    const int n = it == counts.end() ? 0 : it->second;
    const double f = static_cast<double>(n) / cases;
    if (f < b.min_fraction)
      out += fmt::format("{}: {} of {} cases ({:.1f}%), floor {:.0f}%\n", b.name, n, cases, 100 * f,
                         100 * b.min_fraction);
    if (f > b.max_fraction)
      out += fmt::format("{}: {} of {} cases ({:.1f}%), ceiling {:.0f}%\n", b.name, n, cases, 100 * f,
                         100 * b.max_fraction);
  }
  return out;
}

std::string encode_class_counts(const ClassCounts& counts) {
  std::string out;
  for (const auto& [name, n] : counts) out += (out.empty() ? "" : ";") + name + "=" + std::to_string(n);
  return out;
}

ClassCounts decode_class_counts(const std::string& text) {
  ClassCounts out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(';', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    const size_t eq = item.rfind('=');
    if (eq != std::string::npos) out[item.substr(0, eq)] += std::atoi(item.c_str() + eq + 1);
    at = end + 1;
  }
  return out;
}

}  // namespace kvcheck::props
