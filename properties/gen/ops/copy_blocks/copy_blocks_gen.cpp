// copy_blocks scenarios (SPEC §8.1): builder, fault injector, raw values, printer.
#include "properties/gen/ops/copy_blocks/copy_blocks_gen.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/scenario_json.h"
#include "properties/gen/splitmix.h"

namespace kvcheck::props {

using Layout = CopyBlocksScenario::Layout;

int64_t choose_block_bytes(Source& src) {
  // Simplest first; then 16-byte multiples (the vector path), odd sizes (the byte
  // path and tails) and the engines' record sizes (576 BF16 rope, 584/656 MLA FP8).
  return src.pick_weighted<int64_t>({{2, 16}, {2, 64}, {1, 1}, {1, 3}, {1, 17}, {1, 96}, {1, 576},
                                     {1, 584}, {1, 656}, {1, 1152}, {1, src.range(2, 300)}});
}

int64_t views_end(std::span<const int64_t> views, int width, int column, int64_t num_blocks, int64_t block_stride) {
  int64_t end = 0;
  if (num_blocks == 0) return 0;
  for (size_t v = 0; v + width - 1 < views.size(); v += width)
    end = std::max(end, views[v + column] + (num_blocks - 1) * block_stride + views[v + width - 1]);
  return end;
}

std::vector<int64_t> lay_out_views(Source& src, Layout layout, int64_t layers, int64_t bytes, int64_t other,
                                   int64_t num_blocks, int64_t& block_stride) {
  const int64_t views = 2 * layers;
  switch (layout) {
    case Layout::kOneView:
      block_stride = bytes;
      return {0, bytes};
    case Layout::kSeparate: {  // view v: [num_blocks][bytes] at v * num_blocks * bytes (+ a gap)
      block_stride = bytes;
      const int64_t gap = src.pick<int64_t>({0, 0, 1, 64});
      std::vector<int64_t> out;
      for (int64_t v = 0; v < views; ++v) out.insert(out.end(), {v * (num_blocks * bytes + gap), bytes});
      return out;
    }
    case Layout::kInterleaved:
    case Layout::kPadded: {
      const int64_t pad = layout == Layout::kPadded ? src.pick<int64_t>({1, 16, 100}) : 0;
      block_stride = views * bytes + pad;
      std::vector<int64_t> out;
      for (int64_t v = 0; v < views; ++v) out.insert(out.end(), {v * bytes, bytes});
      return out;
    }
    case Layout::kOverlaid: {  // per layer: one page, read as a K/V pair or as one larger record
      const int64_t page = std::max(2 * bytes, other);
      block_stride = layers * page;
      std::vector<int64_t> out;
      for (int64_t l = 0; l < layers; ++l)
        out.insert(out.end(), {l * page, bytes, l * page + bytes, bytes, l * page, other});
      return out;
    }
  }
  return {};
}

int64_t choose_overlaid_bytes(Source& src, int64_t bytes) {
  return std::max<int64_t>(1, src.pick<int64_t>({bytes / 2, bytes * 2, bytes + 1}));
}

namespace {

/// End of the last byte any view owns (the allocation's exact fit).
int64_t allocation_end(const CopyBlocksScenario& s) { return views_end(s.views, 2, 0, s.num_blocks, s.block_stride); }

void set_views(Source& src, CopyBlocksScenario& s) {
  s.layout = static_cast<Layout>(src.weighted({2, 3, 3, 2, 2}));
  const int64_t layers = s.layout == Layout::kOneView ? 1 : src.count(1, 8, 4);
  const int64_t bytes = choose_block_bytes(src);
  const int64_t other = s.layout == Layout::kOverlaid ? choose_overlaid_bytes(src, bytes) : 0;
  s.views = lay_out_views(src, s.layout, layers, bytes, other, s.num_blocks, s.block_stride);
  s.size_bytes = allocation_end(s) + src.pick<int64_t>({0, 0, 1, 7});  // slack past the last view
}

}  // namespace

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::kOneView: return "one view";
    case Layout::kSeparate: return "separate K/V tensors";
    case Layout::kInterleaved: return "layers interleaved";
    case Layout::kPadded: return "interleaved with padding";
    case Layout::kOverlaid: return "two formats overlaid";
  }
  return "?";
}

CopyBlocksScenario build_copy_blocks_scenario(Source& src) {
  CopyBlocksScenario s;
  s.num_blocks = src.count(1, 48, 2);
  set_views(src, s);
  // Destinations distinct, none a source: a shuffle's first k blocks are written, the
  // rest are sources (drawn with repeats: one block forked to several).
  const int64_t k = s.num_blocks < 2 ? 0 : src.count(0, std::min<int64_t>(s.num_blocks - 1, 24), 2);
  SplitMix64 rng{src.seed()};
  const std::vector<int32_t> order = shuffled(rng, s.num_blocks, s.num_blocks);
  const bool padded = src.one_in(3);
  for (int64_t p = 0; p < k; ++p) {
    const int64_t dst = order[static_cast<size_t>(p)];
    const int64_t src_block = order[static_cast<size_t>(k + static_cast<int64_t>(rng.next() % (s.num_blocks - k)))];
    if (padded && rng.next() % 4 == 0) {  // padding: the other entry is never read
      const int64_t junk = static_cast<int64_t>(rng.next() % 3) == 0 ? -1 : static_cast<int64_t>(rng.next() % 1000) - 500;
      s.block_mapping.insert(s.block_mapping.end(), rng.next() % 2 ? std::initializer_list<int64_t>{-1, junk}
                                                                   : std::initializer_list<int64_t>{junk, -1});
    }
    s.block_mapping.insert(s.block_mapping.end(), {src_block, dst});
  }
  s.fill_seed = src.seed();
  s.threads = static_cast<int32_t>(src.pick<int64_t>({0, 2, 3, 4}));
  return s;
}

void inject_copy_blocks_fault(Source& src, CopyBlocksScenario& s) {
  const int64_t pairs = static_cast<int64_t>(s.block_mapping.size()) / 2;
  const auto real = [&](int64_t p) { return s.block_mapping[2 * p] != -1 && s.block_mapping[2 * p + 1] != -1; };
  std::vector<int64_t> real_pairs;
  for (int64_t p = 0; p < pairs; ++p)
    if (real(p)) real_pairs.push_back(p);
  const auto any_real = [&] { return real_pairs[static_cast<size_t>(src.range(0, static_cast<int64_t>(real_pairs.size()) - 1))]; };
  const auto fail = [&](std::string what, ErrorCode code) {
    s.fault = std::move(what);
    s.code = code;
  };
  switch (src.weighted({3, 1, 2, 2, 2, 1, 1, 1, 1, 1})) {
    case 0:  // an entry at num_blocks (or -2): a new pair, or an existing one's entry
    case 1: {
      const int64_t bad = src.coin() ? s.num_blocks : -2;
      const int k = src.coin() ? 1 : 0;
      if (real_pairs.empty()) {
        s.block_mapping.insert(s.block_mapping.end(), {k == 0 ? bad : 0, k == 0 ? 0 : bad});
      } else {
        s.block_mapping[2 * any_real() + k] = bad;
      }
      return fail("a block_mapping entry = " + std::to_string(bad), ErrorCode::kBlockOutOfRange);
    }
    case 2:  // a destination written twice
      if (real_pairs.size() >= 1 && s.num_blocks >= 2) {
        const int64_t q = any_real();
        const int64_t src_block = s.block_mapping[2 * q];
        s.block_mapping.insert(s.block_mapping.end(), {src_block, s.block_mapping[2 * q + 1]});
        return fail("block " + std::to_string(s.block_mapping[2 * q + 1]) + " is the destination of two pairs",
                    ErrorCode::kBlockConflict);
      }
      [[fallthrough]];
    case 3:  // a destination that is a source (its own included)
      if (!real_pairs.empty()) {
        const int64_t p = any_real(), q = src.coin() ? p : any_real();
        s.block_mapping[2 * p + 1] = s.block_mapping[2 * q];
        return fail("block_mapping[" + std::to_string(p) + "] writes block " + std::to_string(s.block_mapping[2 * q]) +
                        ", a source",
                    ErrorCode::kBlockConflict);
      }
      s.block_mapping.insert(s.block_mapping.end(), {0, 0});
      return fail("block_mapping copies block 0 onto itself", ErrorCode::kBlockConflict);
    case 4:  // the allocation one byte short of the last view's last block
      s.size_bytes = allocation_end(s) - 1;
      return fail("the allocation is one byte short of the last view", ErrorCode::kShapeMismatch);
    case 5: {
      const size_t v = static_cast<size_t>(src.range(0, static_cast<int64_t>(s.views.size()) / 2 - 1));
      s.views[2 * v + 1] = s.block_stride + 1;
      s.size_bytes = allocation_end(s);
      return fail("views[" + std::to_string(v) + "] block_bytes = block_stride + 1", ErrorCode::kInvalidArgument);
    }
    case 6: {
      const size_t v = static_cast<size_t>(src.range(0, static_cast<int64_t>(s.views.size()) / 2 - 1));
      s.views[2 * v] = -1;
      return fail("views[" + std::to_string(v) + "] offset = -1", ErrorCode::kInvalidArgument);
    }
    case 7: {  // a view one byte into another, a block long: it straddles two of its blocks
      // First or last: the rule then meets it as the later view (its block j overlaps
      // block j + 1 of the other) or as the earlier one (block j + 1 overlaps block j).
      if (s.num_blocks >= 2) {
        const int64_t n = static_cast<int64_t>(s.views.size()) / 2, v = src.range(0, n - 1);
        const bool first = src.coin();
        const int64_t offset = s.views[2 * v] + 1;
        s.views.insert(first ? s.views.begin() : s.views.end(), {offset, s.block_stride});
        s.size_bytes = std::max(s.size_bytes, allocation_end(s));
        return fail("views[" + std::to_string(first ? 0 : n) + "] starts one byte into views[" +
                        std::to_string(first ? v + 1 : v) + "] and spans a whole block_stride",
                    ErrorCode::kInvalidArgument);
      }
      [[fallthrough]];
    }
    case 8:
      s.block_stride = 0;
      return fail("block_stride = 0", ErrorCode::kInvalidArgument);
    default:
      s.block_mapping.push_back(0);
      return fail("block_mapping has an odd entry count", ErrorCode::kInvalidArgument);
  }
}

void raw_copy_blocks_mapping(Source& src, CopyBlocksScenario& s) {
  const int64_t n = src.count(0, 16, 2);
  s.block_mapping.clear();
  for (int64_t i = 0; i < 2 * n; ++i) s.block_mapping.push_back(src.range(-3, s.num_blocks + 2));
  s.fault = "raw block_mapping";
  s.code.reset();
}

rc::Gen<CopyBlocksScenario> gen_copy_blocks_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_copy_blocks_scenario(src);
  });
}

rc::Gen<CopyBlocksScenario> gen_copy_blocks_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    CopyBlocksScenario s = build_copy_blocks_scenario(src);
    inject_copy_blocks_fault(src, s);
    return s;
  });
}

std::string ints(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size() && i < 96; ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + (v.size() > 96 ? ", ...]" : "]");
}

void showValue(const CopyBlocksScenario& s, std::ostream& os) {
  os << "copy_blocks scenario: " << to_string(s.layout) << ", size_bytes " << s.size_bytes << ", num_blocks "
     << s.num_blocks << ", block_stride " << s.block_stride << ", threads " << s.threads << ", fill seed "
     << s.fill_seed << "\n  views [offset, block_bytes]... " << ints(s.views)
     << "\n  block_mapping [src, dst]... " << ints(s.block_mapping) << "\n";
  if (s.fault.empty())
    os << "  valid: the backend must match the reference\n";
  else if (s.code)
    os << "  fault: " << s.fault << "; must throw " << kvcheck::to_string(*s.code) << " and write nothing\n";
  else
    os << "  " << s.fault << ": the SPEC §8.1 rules decide\n";
}

std::string describe(const CopyBlocksScenario& s) {
  std::ostringstream os;
  showValue(s, os);
  return os.str();
}

void to_json(nlohmann::json& j, const CopyBlocksScenario& s) {
  j = {{"type", "copy_blocks"},     {"layout", to_string(s.layout)},   {"size_bytes", s.size_bytes},
       {"views", s.views},          {"num_blocks", s.num_blocks},      {"block_stride", s.block_stride},
       {"block_mapping", s.block_mapping}, {"fill_seed", s.fill_seed}, {"threads", s.threads}};
  if (!s.fault.empty()) j["fault"] = s.fault;
  if (s.code) j["expected_error"] = std::string(kvcheck::to_string(*s.code));
}

void from_json(const nlohmann::json& j, CopyBlocksScenario& s) {
  if (j.at("type") != "copy_blocks") throw std::runtime_error("scenario type is not copy_blocks");
  s.layout = enum_from_name(j.at("layout").get<std::string>(), Layout::kOneView, Layout::kOverlaid,
                            [](Layout l) { return to_string(l); }, "copy_blocks layout");
  s.size_bytes = int_at<int64_t>(j, "size_bytes");
  s.views = ints_at<int64_t>(j, "views");
  s.num_blocks = int_at<int64_t>(j, "num_blocks");
  s.block_stride = int_at<int64_t>(j, "block_stride");
  s.block_mapping = ints_at<int64_t>(j, "block_mapping");
  s.fill_seed = int_at<uint32_t>(j, "fill_seed");
  s.threads = threads_value(j);
  s.fault = j.value("fault", std::string());
  s.code.reset();
  if (j.contains("expected_error")) s.code = error_code_from_name(j.at("expected_error").get<std::string>());
  // The reference keeps an owner entry of 16 bytes per byte of the allocation: 2^24
  // bytes (16 MiB) is far above what the builder draws and far below what exhausts
  // memory (a 2^30 pool would need 16 GiB).
  if (s.size_bytes < 0 || s.size_bytes > (int64_t{1} << 24))
    throw std::runtime_error("copy_blocks size_bytes must be in [0, 2^24]");
}

}  // namespace kvcheck::props
