#include "impl/validate_rope.h"

#include <string>

#include "impl/error.h"
#include "impl/validate_errors.h"

namespace kvcheck {

using std::to_string;

void validate_rope_shape(const RopeArgs& rope, int32_t width, const char* width_name) {
  if (rope.rot_dim < 2 || rope.rot_dim % 2 != 0)
    throw Error(ErrorCode::kInvalidArgument, "rot_dim = " + to_string(rope.rot_dim) + ": must be even and at least 2");
  if (rope.rope_offset < 0 || int64_t{rope.rope_offset} + rope.rot_dim > width)
    throw Error(ErrorCode::kInvalidArgument, "rope_offset " + to_string(rope.rope_offset) + " + rot_dim " +
                                                 to_string(rope.rot_dim) + " must lie inside [0, " + width_name +
                                                 " = " + to_string(width) + "]");
  if (rope.max_position < 1)
    throw Error(ErrorCode::kInvalidArgument,
                "max_position = " + to_string(rope.max_position) + ": cos_sin_cache needs at least one row");
}

void validate_rope_inputs(const RopeArgs& rope, int64_t n) {
  if (n == 0) return;
  if (rope.positions_rows < n)
    throw Error(ErrorCode::kShapeMismatch,
                "positions has " + to_string(rope.positions_rows) + " rows but slot_mapping has " + to_string(n));
  if (rope.positions == nullptr) throw Error(ErrorCode::kShapeMismatch, "positions is null");
  if (rope.cos_sin_cache == nullptr) throw Error(ErrorCode::kShapeMismatch, "cos_sin_cache is null");
}

void validate_rope_positions(const RopeArgs& rope, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (rope.positions[i] < 0 || rope.positions[i] >= rope.max_position)
      throw rope_position_error(i, rope.positions[i], rope.max_position);
}

}  // namespace kvcheck
