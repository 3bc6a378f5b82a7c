// Pieces shared by the scenario types' JSON forms (regression files, SPEC §6): model
// dtype rows as readable hex strings, enums by their stable names, floats exact. Each
// scenario type's to_json / from_json sits with its type's other per-op code
// (store_load_json.cpp, kv_json.cpp); this header is what they share.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <vector>

#include "impl/error.h"

namespace kvcheck::props {

/// One row of 16-bit values (bf16 / fp16 bits) as "4943 c609 ...": four lower-case
/// hex digits per value, space separated.
std::string hex_row(const uint16_t* row, int64_t n);
/// Appends the values of a hex_row string to `out`; throws std::runtime_error on
/// anything but groups of exactly four hex digits.
void parse_hex_row(const std::string& s, std::vector<uint16_t>& out);

/// `values` as hex_row strings of `per_row` values each (the last may be shorter;
/// per_row <= 0: one string), so any length round-trips and a row stays a line.
nlohmann::json hex_rows(const std::vector<uint16_t>& values, int64_t per_row);
/// The values of hex_rows, concatenated.
std::vector<uint16_t> parse_hex_rows(const nlohmann::json& rows);

/// A float exactly: a JSON number when finite (the double dump round-trips every
/// float, -0 included), else its bits as "0x7fc00000" (NaN payloads and infinities
/// survive, which JSON numbers cannot hold).
nlohmann::json exact_float(float f);
float exact_float_from(const nlohmann::json& j);

/// Parses a name produced by one of the to_string overloads over [first, last];
/// throws std::runtime_error("unknown <what> '<name>'").
template <class E, class ToString>
E enum_from_name(const std::string& name, E first, E last, ToString to_str, const char* what) {
  for (int v = static_cast<int>(first); v <= static_cast<int>(last); ++v)
    if (std::string(to_str(static_cast<E>(v))) == name) return static_cast<E>(v);
  throw std::runtime_error(std::string("unknown ") + what + " '" + name + "'");
}

/// Whether `v` is a JSON integer (no float, no string) within T's range (nlohmann's
/// get<T> wraps: 2^32 + 16 read as int32_t is 16, 2.5 is 2, so a corrupted regression
/// file would replay another scenario and pass). Summaries' counts are checked by it too.
template <class T>
bool fits_integer(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T>);
  using L = std::numeric_limits<T>;
  return v.is_number_unsigned()  ? v.get<uint64_t>() <= static_cast<uint64_t>(L::max())
         : v.is_number_integer() ? v.get<int64_t>() >= static_cast<int64_t>(L::min()) &&
                                       (v.get<int64_t>() < 0 ||
                                        static_cast<uint64_t>(v.get<int64_t>()) <= static_cast<uint64_t>(L::max()))
                                 : false;
}

/// `v` as an integer of type T, else std::runtime_error naming `what`.
template <class T>
T int_of(const nlohmann::json& v, const std::string& what) {
  using L = std::numeric_limits<T>;
  if (!fits_integer<T>(v))
    throw std::runtime_error("field '" + what + "': " + v.dump() + " is not an integer in [" + std::to_string(L::min()) +
                             ", " + std::to_string(L::max()) + "]");
  return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>()) : static_cast<T>(v.get<int64_t>());
}
/// int_of of j.at(key).
template <class T>
T int_at(const nlohmann::json& j, const char* key) {
  return int_of<T>(j.at(key), key);
}
/// j.at(key), an array of integers of type T (each checked as int_of does).
template <class T>
std::vector<T> ints_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& a = j.at(key);
  if (!a.is_array()) throw std::runtime_error(std::string("field '") + key + "': not an array");
  std::vector<T> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.push_back(int_of<T>(a[i], std::string(key) + "[" + std::to_string(i) + "]"));
  return out;
}

/// int_at of an optional field: `fallback` when j has no `key`.
template <class T>
T int_value(const nlohmann::json& j, const char* key, T fallback) {
  return j.contains(key) ? int_at<T>(j, key) : fallback;
}
/// ints_at of an optional field: empty when j has no `key`.
template <class T>
std::vector<T> ints_value(const nlohmann::json& j, const char* key) {
  return j.contains(key) ? ints_at<T>(j, key) : std::vector<T>{};
}
/// Throws std::runtime_error naming `what` when `value` > `max`: a regression file asks
/// for no more memory than the generators could (they stay far below each cap), so a
/// corrupted or crafted number cannot exhaust the machine before anything runs.
inline void check_at_most(int64_t value, int64_t max, const char* what) {
  if (value > max)
    throw std::runtime_error(std::string(what) + " " + std::to_string(value) + " is more than a scenario may ask for (" +
                             std::to_string(max) + ")");
}

/// A scenario's optional "threads" (the backend splits the call as on that many threads;
/// 0 or absent: its default). The generators draw 0-4; a file may ask for up to 64,
/// never a negative count.
inline int32_t threads_value(const nlohmann::json& j) {
  const int32_t t = int_value<int32_t>(j, "threads", 0);
  if (t < 0 || t > 64) throw std::runtime_error("threads " + std::to_string(t) + " is not in [0, 64]");
  return t;
}

/// The ErrorCode named `name` (to_string's stable names: "slot-out-of-range", ...).
ErrorCode error_code_from_name(const std::string& name);

/// Throws std::runtime_error when `j` nests arrays or objects deeper than `max_depth`
/// levels (walked without recursion: nlohmann's copy and dump recurse).
void check_json_depth(const nlohmann::json& j, int max_depth);

/// Refuses a scenario field that changes nothing: a misspelt optional field ("threadz",
/// "rope_ofset") would otherwise read as its default and the file replay another case.
/// `canonical` parses a scenario object and writes it back (from_json then to_json; the
/// writers omit default-valued optional fields). Every field of `scenario`, at any depth
/// of nested objects, that the canonical form lacks is tried with another value (a
/// number +1 or negated, a string with a suffix, a bool flipped, an array one shorter or
/// [0], anything else 0): a field the reader takes changes the canonical form or makes
/// the parse throw; one it never reads changes neither, and std::runtime_error names it
/// ("scenario field 'cache.blok_size' has no effect ..."). An object the canonical form
/// lacks but the reader takes (its replacement refused) has each of its own fields
/// tried the same way. Also refused: a field the canonical form holds as an array given
/// as anything else (the readers iterate an object's values), more than 256 tries, and
/// nesting deeper than 32 levels. Not caught: a meaningless field the reader still
/// validates (its other value refused), fields inside arrays. A field written by a
/// kvcheck writer is in the canonical form and costs nothing. Throws what `canonical`
/// throws on `scenario` itself.
void check_scenario_fields(const nlohmann::json& scenario,
                           const std::function<nlohmann::json(const nlohmann::json&)>& canonical);

}  // namespace kvcheck::props
