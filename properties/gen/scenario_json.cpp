#include "properties/gen/scenario_json.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace kvcheck::props {

std::string hex_row(const uint16_t* row, int64_t n) {
  std::string s;
  s.reserve(static_cast<size_t>(5 * n));
  char buf[8];
  for (int64_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%s%04x", i ? " " : "", row[i]);
    s += buf;
  }
  return s;
}

void parse_hex_row(const std::string& s, std::vector<uint16_t>& out) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (s[pos] == ' ') {
      ++pos;
      continue;
    }
    // Four hex digits exactly (std::stoul took "+1", "-0" and leading blanks, and said
    // only "stoul" for a word that starts with no digit).
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = pos + k < s.size() ? s[pos + k] : ' ';
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) throw std::runtime_error("bad 16-bit hex value at '" + s.substr(pos, 8) + "' (four hex digits each)");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint16_t>(v));
    pos += 4;
  }
}

nlohmann::json hex_rows(const std::vector<uint16_t>& values, int64_t per_row) {
  nlohmann::json rows = nlohmann::json::array();
  const size_t step = per_row > 0 ? static_cast<size_t>(per_row) : values.size();
  for (size_t i = 0; i < values.size(); i += step)
    rows.push_back(hex_row(values.data() + i, static_cast<int64_t>(std::min(step, values.size() - i))));
  return rows;
}

std::vector<uint16_t> parse_hex_rows(const nlohmann::json& rows) {
  std::vector<uint16_t> out;
  for (const auto& row : rows) parse_hex_row(row.get<std::string>(), out);
  return out;
}

nlohmann::json exact_float(float f) {
  if (std::isfinite(f)) return static_cast<double>(f);
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", std::bit_cast<uint32_t>(f));
  return buf;
}

float exact_float_from(const nlohmann::json& j) {
  if (j.is_number()) return static_cast<float>(j.get<double>());
  const std::string s = j.get<std::string>();
  size_t used = 0;
  const unsigned long bits = s.size() == 10 && s.rfind("0x", 0) == 0 ? std::stoul(s.substr(2), &used, 16) : 0;
  if (used != 8) throw std::runtime_error("a float is a number or its bits as 0x%08x, not '" + s + "'");
  return std::bit_cast<float>(static_cast<uint32_t>(bits));
}

ErrorCode error_code_from_name(const std::string& name) {
  return enum_from_name(name, ErrorCode::kInvalidFormat, kLastErrorCode,
                        [](ErrorCode c) { return to_string(c); }, "error code");
}

namespace {

// Another value of the same kind as v (check_scenario_fields).
nlohmann::json other_value(const nlohmann::json& v) {
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_unsigned()) return v.get<uint64_t>() == UINT64_MAX ? v.get<uint64_t>() - 1 : v.get<uint64_t>() + 1;
  if (v.is_number_integer()) return v.get<int64_t>() == INT64_MAX ? v.get<int64_t>() - 1 : v.get<int64_t>() + 1;
  if (v.is_number_float()) return v.get<double>() == 0 ? 1.0 : -v.get<double>();  // +1 can round back to v
  if (v.is_string()) return v.get<std::string>() + "~";
  if (v.is_array()) {
    if (v.empty()) return nlohmann::json::array({0});
    nlohmann::json shorter = v;
    shorter.erase(shorter.size() - 1);
    return shorter;
  }
  return 0;  // an object or null
}

// A field's path as the message shows it: "cache.block_size".
std::string field_name(const nlohmann::json::json_pointer& p) {
  std::string name;
  for (nlohmann::json::json_pointer q = p; !q.empty(); q.pop_back()) name = q.back() + (name.empty() ? "" : ".") + name;
  return name;
}

struct FieldCheck {
  const nlohmann::json& root;
  const nlohmann::json& canon;
  const std::function<nlohmann::json(const nlohmann::json&)>& canonical;
  int tries = 0;

  // Whether the case reads `field` at `value`: the canonical form changes, or the
  // reader refuses it.
  bool reads(const nlohmann::json::json_pointer& field, nlohmann::json value) {
    // Each try parses the whole scenario: a file of thousands of extra fields (an
    // object of junk keys) would take minutes; no writer leaves out more than a few.
    if (++tries > 256)
      throw std::runtime_error("scenario has more than 256 fields its canonical form lacks: not a scenario kvcheck "
                               "wrote (first: '" + field_name(field) + "')");
    nlohmann::json tried = root;
    tried[field] = std::move(value);
    try {
      return canonical(tried) != canon;
    } catch (...) {  // the reader took the value and refused it
      return true;
    }
  }

  // `at`: an object of the input; canon_here: the canonical form there (null: none).
  void walk(const nlohmann::json::json_pointer& at, const nlohmann::json* canon_here) {
    const nlohmann::json& here = root.at(at);
    for (auto it = here.begin(); it != here.end(); ++it) {
      const nlohmann::json::json_pointer field = at / it.key();
      const nlohmann::json* c = nullptr;
      if (canon_here != nullptr && canon_here->is_object())
        if (const auto f = canon_here->find(it.key()); f != canon_here->end()) c = &*f;
      if (c != nullptr) {
        // The readers iterate an object's values as an array's: rows keyed by any name
        // were taken, in the keys' order.
        if (c->is_array() && !it->is_array())
          throw std::runtime_error("scenario field '" + field_name(field) + "' is " + it->type_name() +
                                   " where the case has an array");
        if (c->is_object() && it->is_object()) walk(field, c);  // read: its own fields may not be
        continue;
      }
      if (!reads(field, other_value(*it)))
        throw std::runtime_error("scenario field '" + field_name(field) +
                                 "' has no effect on the case: misspelt, or meaningless in this scenario (no kvcheck "
                                 "writer puts it there); remove or correct it");
      // An object the canonical form lacks whose replacement the reader refused (an
      // optional structure the writer drops, such as a pe_cache on a plain store): each
      // of its fields must take effect on its own.
      if (it->is_object()) walk(field, nullptr);
    }
  }
};

}  // namespace

void check_json_depth(const nlohmann::json& j, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> todo{{&j, 0}};
  while (!todo.empty()) {
    const auto [v, depth] = todo.back();
    todo.pop_back();
    if (!v->is_structured()) continue;
    if (depth >= max_depth)
      throw std::runtime_error("JSON nested deeper than " + std::to_string(max_depth) + " levels");
    for (const nlohmann::json& e : *v) todo.emplace_back(&e, depth + 1);
  }
}

void check_scenario_fields(const nlohmann::json& scenario,
                           const std::function<nlohmann::json(const nlohmann::json&)>& canonical) {
  check_json_depth(scenario, 32);
  if (!scenario.is_object()) throw std::runtime_error("the scenario is not an object");
  const nlohmann::json canon = canonical(scenario);
  FieldCheck{scenario, canon, canonical}.walk(nlohmann::json::json_pointer(), &canon);
}

}  // namespace kvcheck::props
