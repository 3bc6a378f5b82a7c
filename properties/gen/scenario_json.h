// Pieces shared by the scenario types' JSON forms (regression files, SPEC §6): model
// dtype rows as readable hex strings, enums by their stable names, floats exact. Each
// scenario type's to_json / from_json sits with its type's other per-op code
// (store_load_json.cpp, kv_json.cpp); this header is what they share.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
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

/// The ErrorCode named `name` (to_string's stable names: "slot-out-of-range", ...).
ErrorCode error_code_from_name(const std::string& name);

}  // namespace kvcheck::props
