// swap_blocks scenarios (docs/spec.md §8.3): builder, fault injector, raw values,
// printer, JSON.
#include "properties/gen/ops/swap_blocks/swap_blocks_gen.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <ostream>
#include <sstream>

#include "properties/gen/choices.h"
#include "properties/gen/scenario_json.h"
#include "properties/gen/splitmix.h"

namespace kvcheck::props {
namespace {

using Layout = CopyBlocksScenario::Layout;

/// One past the last byte the views hold in a pool (column 0: src, 1: dst).
int64_t pool_end(const SwapBlocksScenario& s, int column) {
  const SwapPool& p = column == 0 ? s.src : s.dst;
  return views_end(s.views, 3, column, p.num_blocks, p.block_stride);
}

void fit(SwapBlocksScenario& s) {  // both allocations grown to hold every view
  s.src.size_bytes = std::max(s.src.size_bytes, pool_end(s, 0));
  s.dst.size_bytes = std::max(s.dst.size_bytes, pool_end(s, 1));
}

}  // namespace

std::string direction(const SwapBlocksScenario& s) {
  return std::string(s.src.host ? "host" : "device") + "->" + (s.dst.host ? "host" : "device");
}

SwapBlocksScenario build_swap_blocks_scenario(Source& src) {
  SwapBlocksScenario s;
  s.src.num_blocks = src.count(1, 48, 2);
  s.dst.num_blocks = src.count(1, 48, 2);
  // One set of views (layers, record sizes); each pool lays them out its own way, but
  // one view and overlaid formats are the same shape on both sides.
  const size_t kind = src.weighted({2, 6, 2});  // one view, K/V of layers, overlaid
  const int64_t layers = kind == 0 ? 1 : src.count(1, 8, 4);
  const int64_t bytes = choose_block_bytes(src);
  const int64_t other = kind == 2 ? choose_overlaid_bytes(src, bytes) : 0;
  const auto side_layout = [&] {
    if (kind == 0) return Layout::kOneView;
    if (kind == 2) return Layout::kOverlaid;
    return static_cast<Layout>(1 + src.weighted({3, 3, 2}));  // separate, interleaved, padded
  };
  s.src.layout = side_layout();
  s.dst.layout = side_layout();
  const std::vector<int64_t> from = lay_out_views(src, s.src.layout, layers, bytes, other, s.src.num_blocks,
                                                  s.src.block_stride);
  const std::vector<int64_t> to = lay_out_views(src, s.dst.layout, layers, bytes, other, s.dst.num_blocks,
                                                s.dst.block_stride);
  for (size_t v = 0; v + 1 < from.size(); v += 2) s.views.insert(s.views.end(), {from[v], to[v], from[v + 1]});
  s.src.size_bytes = pool_end(s, 0) + src.pick<int64_t>({0, 0, 1, 7});  // slack past the last view
  s.dst.size_bytes = pool_end(s, 1) + src.pick<int64_t>({0, 0, 1, 7});
  // Destinations distinct (a shuffle's first k dst blocks), sources anything.
  const int64_t k = src.count(0, std::min<int64_t>(s.dst.num_blocks, 24), 2);
  SplitMix64 rng{src.seed()};
  const std::vector<int32_t> order = shuffled(rng, s.dst.num_blocks, s.dst.num_blocks);
  const bool padded = src.one_in(3);
  for (int64_t p = 0; p < k; ++p) {
    if (padded && rng.next() % 4 == 0) {  // padding: the other entry is never read
      const int64_t junk = rng.next() % 3 == 0 ? -1 : static_cast<int64_t>(rng.next() % 1000) - 500;
      s.block_mapping.insert(s.block_mapping.end(), rng.next() % 2 ? std::initializer_list<int64_t>{-1, junk}
                                                                   : std::initializer_list<int64_t>{junk, -1});
    }
    const auto from_block = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(s.src.num_blocks));
    s.block_mapping.insert(s.block_mapping.end(), {from_block, order[static_cast<size_t>(p)]});
  }
  switch (src.weighted({3, 2, 2, 1})) {  // where the pools live (a device backend)
    case 1: s.src.host = true; break;    // reload: host -> device
    case 2: s.dst.host = true; break;    // offload: device -> host
    case 3: s.src.host = s.dst.host = true; break;
    default: break;
  }
  s.fill_seed = src.seed();
  s.threads = static_cast<int32_t>(src.pick<int64_t>({0, 2, 3, 4}));
  return s;
}

void inject_swap_blocks_fault(Source& src, SwapBlocksScenario& s) {
  const int64_t pairs = static_cast<int64_t>(s.block_mapping.size()) / 2;
  std::vector<int64_t> real_pairs;
  for (int64_t p = 0; p < pairs; ++p)
    if (s.block_mapping[2 * p] != -1 && s.block_mapping[2 * p + 1] != -1) real_pairs.push_back(p);
  const auto any_real = [&] {
    return real_pairs[static_cast<size_t>(src.range(0, static_cast<int64_t>(real_pairs.size()) - 1))];
  };
  const int64_t num_views = static_cast<int64_t>(s.views.size()) / 3;
  const auto any_view = [&] { return static_cast<size_t>(src.range(0, num_views - 1)); };
  const auto fail = [&](std::string what, ErrorCode code) {
    s.fault = std::move(what);
    s.code = code;
  };
  using std::to_string;
  switch (src.weighted({2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1})) {
    case 0:  // an entry at its pool's num_blocks (or -2): a new pair, or an existing one's
    case 1: {
      const int k = src.coin() ? 1 : 0;
      const int64_t bad = src.coin() ? (k == 0 ? s.src.num_blocks : s.dst.num_blocks) : -2;
      if (real_pairs.empty())
        s.block_mapping.insert(s.block_mapping.end(), {k == 0 ? bad : 0, k == 0 ? 0 : bad});
      else
        s.block_mapping[2 * any_real() + k] = bad;
      return fail(std::string("a block_mapping ") + (k == 0 ? "src" : "dst") + " entry = " + to_string(bad),
                  ErrorCode::kBlockOutOfRange);
    }
    case 2: {  // a destination written twice
      const int64_t q = real_pairs.empty() ? -1 : any_real();
      const int64_t dst = q < 0 ? 0 : s.block_mapping[2 * q + 1];
      if (q < 0) s.block_mapping.insert(s.block_mapping.end(), {0, 0});
      s.block_mapping.insert(s.block_mapping.end(), {0, dst});
      return fail("dst block " + to_string(dst) + " is the destination of two pairs", ErrorCode::kBlockConflict);
    }
    case 3:
      s.src.size_bytes = pool_end(s, 0) - 1;
      return fail("src's allocation is one byte short of the last view", ErrorCode::kShapeMismatch);
    case 4:
      s.dst.size_bytes = pool_end(s, 1) - 1;
      return fail("dst's allocation is one byte short of the last view", ErrorCode::kShapeMismatch);
    case 5: {
      const size_t v = any_view();
      s.views[3 * v + 2] = std::min(s.src.block_stride, s.dst.block_stride) + 1;
      return fail("views[" + to_string(v) + "] block_bytes one past the smaller block_stride",
                  ErrorCode::kInvalidArgument);
    }
    case 6: {
      const size_t v = any_view();
      const int column = src.coin() ? 1 : 0;
      s.views[3 * v + column] = -1;
      return fail("views[" + to_string(v) + "] " + (column ? "dst" : "src") + "_offset = -1",
                  ErrorCode::kInvalidArgument);
    }
    case 7:  // a one-byte view on the first byte of another's dst block 1: its block 0
             // shares that byte (needs two dst blocks)
      if (s.dst.num_blocks >= 2) {
        const size_t v = any_view();
        const bool first = src.coin();
        const int64_t row[3] = {s.views[3 * v], s.views[3 * v + 1] + s.dst.block_stride, 1};
        s.views.insert(first ? s.views.begin() : s.views.end(), row, row + 3);
        fit(s);
        return fail("a one-byte view on the first byte of views[" + to_string(first ? v + 1 : v) +
                        "]'s dst block 1 (its dst block 0)",
                    ErrorCode::kInvalidArgument);
      }
      [[fallthrough]];
    case 8: {  // a copy of a view reading src one byte further on: one dst byte, two sources
      const size_t v = any_view();
      const int64_t row[3] = {s.views[3 * v] + 1, s.views[3 * v + 1], s.views[3 * v + 2]};
      s.views.insert(s.views.end(), row, row + 3);
      fit(s);
      return fail("views[" + to_string(num_views) + "] fills views[" + to_string(v) +
                      "]'s dst bytes from src one byte further on",
                  ErrorCode::kInvalidArgument);
    }
    case 9:  // dst inside src's allocation
      if (s.src.size_bytes > 0 && s.dst.size_bytes > 0) {
        s.dst_inside_src = src.range(0, s.src.size_bytes - 1);
        return fail("dst starts " + to_string(s.dst_inside_src) + " bytes into src", ErrorCode::kInvalidArgument);
      }
      [[fallthrough]];
    case 10:
      (src.coin() ? s.src : s.dst).block_stride = 0;
      return fail("a block_stride = 0", ErrorCode::kInvalidArgument);
    default:
      if (src.coin()) {
        s.block_mapping.push_back(0);
        return fail("block_mapping has an odd entry count", ErrorCode::kInvalidArgument);
      }
      s.views.push_back(0);
      return fail("views has an entry count that is not a multiple of 3", ErrorCode::kInvalidArgument);
  }
}

void raw_swap_blocks_mapping(Source& src, SwapBlocksScenario& s) {
  const int64_t n = src.count(0, 16, 2);
  s.block_mapping.clear();
  for (int64_t i = 0; i < n; ++i) {
    s.block_mapping.push_back(src.range(-3, s.src.num_blocks + 2));
    s.block_mapping.push_back(src.range(-3, s.dst.num_blocks + 2));
  }
  s.fault = "raw block_mapping";
  s.code.reset();
}

rc::Gen<SwapBlocksScenario> gen_swap_blocks_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    return build_swap_blocks_scenario(src);
  });
}

rc::Gen<SwapBlocksScenario> gen_swap_blocks_fault_scenario() {
  return rc::gen::exec([] {
    RcSource src;
    SwapBlocksScenario s = build_swap_blocks_scenario(src);
    inject_swap_blocks_fault(src, s);
    return s;
  });
}

void showValue(const SwapBlocksScenario& s, std::ostream& os) {
  const auto pool = [&](const char* name, const SwapPool& p) {
    os << "  " << name << ": " << to_string(p.layout) << ", size_bytes " << p.size_bytes << ", num_blocks "
       << p.num_blocks << ", block_stride " << p.block_stride << (p.host ? ", page-locked host" : ", device") << "\n";
  };
  os << "swap_blocks scenario: " << direction(s) << ", threads " << s.threads << ", fill seed " << s.fill_seed << "\n";
  pool("src", s.src);
  pool("dst", s.dst);
  if (s.dst_inside_src >= 0) os << "  dst starts " << s.dst_inside_src << " bytes into src's allocation\n";
  os << "  views [src_offset, dst_offset, block_bytes]... " << ints(s.views) << "\n  block_mapping [src, dst]... "
     << ints(s.block_mapping) << "\n";
  if (s.fault.empty())
    os << "  valid: the backend must match the reference\n";
  else if (s.code)
    os << "  fault: " << s.fault << "; must throw " << kvcheck::to_string(*s.code) << " and write nothing\n";
  else
    os << "  " << s.fault << ": the docs/spec.md §8.3 rules decide\n";
}

std::string describe(const SwapBlocksScenario& s) {
  std::ostringstream os;
  showValue(s, os);
  return os.str();
}

namespace {

nlohmann::json pool_json(const SwapPool& p) {
  return {{"layout", to_string(p.layout)},     {"size_bytes", p.size_bytes}, {"num_blocks", p.num_blocks},
          {"block_stride", p.block_stride},    {"host", p.host}};
}

SwapPool pool_from(const nlohmann::json& j) {
  SwapPool p;
  p.layout = enum_from_name(j.at("layout").get<std::string>(), Layout::kOneView, Layout::kOverlaid,
                            [](Layout l) { return to_string(l); }, "swap_blocks layout");
  p.size_bytes = int_at<int64_t>(j, "size_bytes");
  p.num_blocks = int_at<int64_t>(j, "num_blocks");
  p.block_stride = int_at<int64_t>(j, "block_stride");
  p.host = j.at("host").get<bool>();
  // The reference owns every dst byte in a table of 24 bytes each: 2^24 bytes (16 MiB)
  // is far above what the builder draws and far below what exhausts memory.
  if (p.size_bytes < 0 || p.size_bytes > (int64_t{1} << 24))
    throw std::runtime_error("swap_blocks size_bytes must be in [0, 2^24]");
  return p;
}

}  // namespace

void to_json(nlohmann::json& j, const SwapBlocksScenario& s) {
  j = {{"type", "swap_blocks"},       {"src", pool_json(s.src)},   {"dst", pool_json(s.dst)},
       {"views", s.views},            {"block_mapping", s.block_mapping}, {"dst_inside_src", s.dst_inside_src},
       {"fill_seed", s.fill_seed},    {"threads", s.threads}};
  if (!s.fault.empty()) j["fault"] = s.fault;
  if (s.code) j["expected_error"] = std::string(kvcheck::to_string(*s.code));
}

void from_json(const nlohmann::json& j, SwapBlocksScenario& s) {
  if (j.at("type") != "swap_blocks") throw std::runtime_error("scenario type is not swap_blocks");
  s.src = pool_from(j.at("src"));
  s.dst = pool_from(j.at("dst"));
  s.views = ints_at<int64_t>(j, "views");
  s.block_mapping = ints_at<int64_t>(j, "block_mapping");
  s.dst_inside_src = int_value<int64_t>(j, "dst_inside_src", -1);
  s.fill_seed = int_at<uint32_t>(j, "fill_seed");
  s.threads = threads_value(j);
  s.fault = j.value("fault", std::string());
  s.code.reset();
  if (j.contains("expected_error")) s.code = error_code_from_name(j.at("expected_error").get<std::string>());
  if (s.dst_inside_src >= s.src.size_bytes) throw std::runtime_error("swap_blocks dst_inside_src past src");
  if (s.dst_inside_src < -1)  // -1 is "dst apart"; another negative read as it silently
    throw std::runtime_error("swap_blocks dst_inside_src " + std::to_string(s.dst_inside_src) +
                             ": -1 (dst apart) or a byte offset into src");
}

}  // namespace kvcheck::props
