// The one printer of each store/load scenario type: RapidCheck shows counterexamples
// with it, and the fuzz targets and `kvcheck explain` print decoded inputs with it.
#include <algorithm>
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "impl/layout.h"
#include "properties/gen/ops/store_load/store_load_gen.h"

namespace kvcheck {
void showValue(const KVCacheFormat& f, std::ostream& os) { os << f.name; }
}  // namespace kvcheck

namespace kvcheck::props {
namespace {

void show_expectation(const std::string& fault, const std::optional<ErrorCode>& code, std::ostream& os) {
  if (fault.empty())
    os << "\n  valid: reference and backend must return";
  else if (code)
    os << "\n  fault: " << fault << "; both sides must throw " << to_string(*code) << " and change nothing";
  else
    os << "\n  " << fault << ": the backend must do what the reference does";
}

}  // namespace

void showValue(const CacheShape& s, std::ostream& os) {
  os << "{format " << s.format.name << ", block_size " << s.block_size << ", num_blocks " << s.num_blocks
     << ", fill_seed " << s.fill_seed;
  if (s.block_stride != 0) os << ", block_stride " << s.block_stride << " (packed " << block_stride_for(s.format, s.block_size) << ")";
  os << "}";
}

void showValue(const StoreScenario& s, std::ostream& os) {
  const int64_t num_slots = int64_t{s.shape.num_blocks} * s.shape.block_size;
  os << "store ";
  showValue(s.shape, os);
  os << " n=" << s.slot_mapping.size() << " row_stride=" << s.row_stride;
  if (s.kv_rows() != static_cast<int64_t>(s.slot_mapping.size())) os << " kv_rows=" << s.kv_rows();
  os << " slot_mapping=" << format_ints(s.slot_mapping, 96) << " (" << slot_mapping_kind(s.slot_mapping, num_slots)
     << ") kv[0][0..7]=[";
  for (size_t i = 0; i < std::min<size_t>(8, s.kv.size()); ++i)
    os << (i ? " " : "") << "0x" << std::hex << s.kv[i] << std::dec;
  os << "]";
  if (!s.slot_tail.empty()) os << " slot_tail=" << format_ints(s.slot_tail);
  if (s.far_row_stride > 0) os << " far_row_stride=" << s.far_row_stride;
  if (s.is_concat()) {
    os << " concat_and_cache_mla kv_lora_rank=" << s.kv_lora_rank << " rope_dim=" << s.rope_dim;
    if (s.pe_row_stride == 0) os << " k_pe=view of the kv rows";
    else os << " k_pe_row_stride=" << s.pe_row_stride << " k_pe_rows=" << (s.pe_rows < 0 ? s.kv_rows() : s.pe_rows);
    if (s.pe_shape) {
      os << " pe_cache=";
      showValue(*s.pe_shape, os);
    }
    if (s.pe_inside_cache >= 0) os << " (pe_cache " << s.pe_inside_cache << " bytes into the cache's buffer)";
    if (s.rope) {
      os << " ";
      showValue(*s.rope, os);
    }
  }
  if (s.threads > 0) os << " threads=" << s.threads;
}

void showValue(const LoadScenario& s, std::ostream& os) {
  os << "load ";
  showValue(s.shape, os);
  os << " total_k=" << s.total_k << " out_rows=" << s.out_rows << " out_seed=" << s.out_seed;
  os << " load_segments=[";
  for (size_t i = 0; i + 3 < s.load_segments.size(); i += 4)
    os << (i ? ", " : "") << "[" << s.load_segments[i] << ", " << s.load_segments[i + 1] << ", "
       << s.load_segments[i + 2] << ", " << s.load_segments[i + 3] << "]";
  for (size_t i = s.load_segments.size() / 4 * 4; i < s.load_segments.size(); ++i)
    os << (i ? ", " : "") << s.load_segments[i] << " (stray)";
  os << "]";
  if (s.out_data_pad != 16 || s.out_scale_pad != 16 || s.out_offset != 0)
    os << " out_data_pad=" << s.out_data_pad << " out_scale_pad=" << s.out_scale_pad << " out_offset=" << s.out_offset;
  if (s.threads > 0) os << " threads=" << s.threads;
}

void showValue(const StoreFaultScenario& s, std::ostream& os) {
  showValue(s.scenario, os);
  show_expectation(s.fault, s.code, os);
}

void showValue(const LoadFaultScenario& s, std::ostream& os) {
  showValue(s.scenario, os);
  show_expectation(s.fault, s.code, os);
}

std::string describe(const StoreFaultScenario& s) {
  std::ostringstream o;
  showValue(s, o);
  return o.str() + "\n";
}

std::string describe(const LoadFaultScenario& s) {
  std::ostringstream o;
  showValue(s, o);
  return o.str() + "\n";
}

}  // namespace kvcheck::props
