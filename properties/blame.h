// Error blame (SPEC §5.2: messages name the index and the value): an error property
// checks not only the code but that the backend blames the same entry as the
// reference, so a validator that reports the wrong row of a duplicate is caught.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "impl/error.h"

namespace kvcheck::props {

/// The first "name[i]... = value" of an error message ("slot_mapping[7] = 12",
/// "load_segments[3] = [0, 1, 4, 9]", "block_table[1][2] = -7"); "" when it has none.
std::string error_blame(std::string_view message);

/// "" when the backend's outcome agrees with the reference's on an input that must
/// throw `want`: both threw `want`, and when the reference's message blames an entry
/// the backend's blames the same one (then the case class "error blames an entry" is
/// noted); else what differs, both messages quoted.
std::string compare_errors(ErrorCode want, const std::optional<ErrorCode>& ref, const std::string& ref_message,
                           const std::optional<ErrorCode>& backend, const std::string& backend_message);

}  // namespace kvcheck::props
