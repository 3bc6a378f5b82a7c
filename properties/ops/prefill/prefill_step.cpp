#include "properties/ops/prefill/prefill_step.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "impl/error.h"
#include "impl/kv_cache.h"
#include "impl/slot_mapping.h"

namespace kvcheck::props {
namespace {

// What a KV row holds. Zero rows (zero fill) decode as kZero.
enum Kind : int32_t { kZero = 0, kSwa = 1, kCompressed = 2, kStale = 3, kSentinel = 4, kGarbage = 5 };
struct Identity {
  int32_t kind = kZero, seq = 0, pos = 0;
  auto operator<=>(const Identity&) const = default;
};

std::string show(const Identity& id) {
  static const char* names[] = {"zero row", "swa", "compressed", "stale ring slot",
                                "never-written buffer row", "garbage"};
  if (id.kind == kZero) return "zero row";
  std::string s = std::string(names[id.kind]) + " (seq " + std::to_string(id.seq) + ", ";
  return s + (id.kind == kStale ? "slot " : "pos ") + std::to_string(id.pos) + ")";
}

// Identities are written as base-16 digits in the first 8 elements: each digit is an
// integer in [0, 15], exact in BF16 and (with a group amax <= 15) in V41's e4m3
// after the power-of-two scale, so a load returns them bit-exactly.
constexpr int kCodeElements = 8;
constexpr int32_t kMarker = 15;

bf16_bits bf16_of(int32_t digit) {
  const float f = static_cast<float>(digit);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<bf16_bits>(u >> 16);  // exact: small integers have short mantissas
}

void encode(const Identity& id, int32_t elements, bf16_bits* row) {
  std::fill(row, row + elements, bf16_of(0));
  const int32_t digits[kCodeElements] = {id.kind,           id.seq >> 4,        id.seq & 15,
                                         (id.pos >> 12) & 15, (id.pos >> 8) & 15, (id.pos >> 4) & 15,
                                         id.pos & 15,        kMarker};
  for (int i = 0; i < kCodeElements; ++i) row[i] = bf16_of(digits[i]);
}

Identity decode(const bf16_bits* row, int32_t elements) {
  if (std::all_of(row, row + elements, [](bf16_bits b) { return b == 0; })) return {kZero, 0, 0};
  int32_t d[kCodeElements];
  for (int i = 0; i < kCodeElements; ++i) {
    const uint32_t u = uint32_t{row[i]} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    if (!(f >= 0 && f <= 15 && f == static_cast<float>(static_cast<int32_t>(f))))
      return {kGarbage, -1, row[i]};
    d[i] = static_cast<int32_t>(f);
  }
  if (d[7] != kMarker || d[0] < kSwa || d[0] > kSentinel) return {kGarbage, -1, 0};
  return {d[0], d[1] * 16 + d[2], ((d[3] * 16 + d[4]) * 16 + d[5]) * 16 + d[6]};
}

// Newest position h < end with h % ring == r, or -1.
int64_t newest_at(int64_t end, int32_t ring, int32_t r) {
  if (end - 1 - r < 0) return -1;
  return r + int64_t{ring} * ((end - 1 - r) / ring);
}

std::string validate(const PrefillScenario& s) {
  if (!(s.format.is_bf16() || s.format.do_cast) || s.format.elements < kCodeElements)
    return "format must be BF16(E) or a do_cast format";
  if (s.seqs.size() > 255) return "at most 255 sequences";
  if (s.topk.size() != s.seqs.size()) return "topk needs one entry per sequence";
  for (size_t i = 0; i < s.seqs.size(); ++i) {
    const SeqMeta& q = s.seqs[i];
    if (q.seqlen_k >= (1 << 16)) return "positions must be < 65536";
    if (s.topk[i].size() != static_cast<size_t>(std::max(q.seqlen_q, 0)) *
                                static_cast<size_t>(std::max(s.topk_width, 0)))
      return "topk of sequence " + std::to_string(i) + " is not seqlen_q x topk_width";
    if (q.state_id >= s.num_swa_states) return "state_id past num_swa_states";
  }
  return "";
}

class Step {
 public:
  Step(const PrefillScenario& s, const Backend& b) : s_(s), b_(b), e_(s.format.elements) {}

  std::string run() {
    if (auto bad = validate(s_); !bad.empty()) return "invalid scenario: " + bad;
    KVCache swa = KVCache::with_canaries(CacheLayout::make(s_.format, s_.num_swa_states, s_.ring_size));
    KVCache comp = KVCache::with_canaries(CacheLayout::make(s_.format, s_.num_compressed_blocks, s_.block_size / s_.ratio));
    fill_caches(swa, comp);

    const LoadPlan comp_plan = build_compressed_plan(s_.seqs, s_.block_size, s_.ratio);
    const LoadPlan swa_plan = build_swa_plan(s_.seqs, s_.window, s_.ring_size);
    int32_t total_q = 0;
    std::vector<int32_t> store_slots;
    for (const SeqMeta& q : s_.seqs) {
      total_q += q.seqlen_q;
      append_swa_store_slots(store_slots, q.state_id, s_.ring_size, q.seqlen_k, q.seqlen_q);
    }
    const int32_t total_k_swa = swa_plan.total_k;
    const int64_t main_offset = int64_t{total_k_swa} + total_q;
    total_kv_ = main_offset + comp_plan.total_k;

    kv_.assign(static_cast<size_t>(total_kv_ * e_), 0);
    for (int64_t r = 0; r < total_kv_; ++r) encode({kSentinel, 0, 0}, e_, row(r));
    std::vector<bf16_bits> chunk(static_cast<size_t>(int64_t{total_q} * e_));
    for (size_t i = 0, r = 0; i < s_.seqs.size(); ++i)
      for (int32_t j = 0; j < s_.seqs[i].seqlen_q; ++j, ++r)
        encode({kSwa, static_cast<int32_t>(i), history_end(i) + j}, e_, &chunk[r * e_]);

    auto store_chunk = [&] { store(swa, chunk, store_slots); };
    if (s_.store_before_load) store_chunk();
    load(swa, swa_plan, 0);
    load(comp, comp_plan, main_offset);
    std::copy(chunk.begin(), chunk.end(), kv_.begin() + static_cast<int64_t>(total_k_swa) * e_);
    if (!s_.store_before_load) store_chunk();  // SPEC §5.4 order rule

    const auto pivots = build_swa_prefill_pivots(s_.seqs, s_.window, s_.ring_size);
    std::vector<int32_t> left(static_cast<size_t>(total_q) * s_.window);
    b_.expand_swa_index(pivots, total_q, s_.window, left);
    std::vector<int32_t> right;
    for (size_t i = 0; i < s_.seqs.size(); ++i)
      for (int32_t x : s_.topk[i]) right.push_back(x == -1 ? -1 : comp_plan.row_starts[i] + x);
    width_ = s_.window + s_.topk_width;
    index_.assign(static_cast<size_t>(total_q) * width_, 0);
    b_.kv_index_cat(left, s_.window, right, s_.topk_width, total_q, total_k_swa, total_q, index_);

    if (auto msg = check_canaries(swa, comp); !msg.empty()) return msg;
    if (auto msg = check_rows(); !msg.empty()) return msg;
    if (auto msg = check_rings(swa); !msg.empty()) return msg;
    return check_canaries(swa, comp);
  }

 private:
  int32_t history_end(size_t i) const { return s_.seqs[i].seqlen_k - s_.seqs[i].seqlen_q; }
  bf16_bits* row(int64_t r) { return kv_.data() + r * e_; }

  void store(KVCache& cache, const std::vector<bf16_bits>& rows, const std::vector<int32_t>& slots) {
    const KVInput in{rows.data(), static_cast<int64_t>(rows.size()) / e_, e_};
    b_.store_kv_cache(in, slots, cache.view());
  }

  void load(const KVCache& cache, const LoadPlan& plan, int64_t first_row) {
    const int64_t row_bytes = int64_t{e_} * 2;
    const LoadOutput out{reinterpret_cast<uint8_t*>(row(first_row)), row_bytes, nullptr, 0,
                         plan.total_k};
    b_.load_paged_kv_cache(cache.view(),
                           flatten_segments(plan.segments), plan.total_k, out);
  }

  // The caches before the step (written through the backend's store).
  void fill_caches(KVCache& swa, KVCache& comp) {
    std::vector<bf16_bits> rows(static_cast<size_t>(e_));
    std::vector<bf16_bits> swa_rows, comp_rows;
    std::vector<int32_t> swa_slots, comp_slots;
    for (size_t i = 0; i < s_.seqs.size(); ++i) {
      const SeqMeta& q = s_.seqs[i];
      const int32_t seq = static_cast<int32_t>(i);
      for (int32_t r = 0; r < s_.ring_size; ++r) {
        const int64_t h = newest_at(history_end(i), s_.ring_size, r);
        const Identity id = h >= 0 && h >= q.swa_valid_start
                                ? Identity{kSwa, seq, static_cast<int32_t>(h)}
                                : Identity{kStale, seq, r};
        encode(id, e_, rows.data());
        swa_rows.insert(swa_rows.end(), rows.begin(), rows.end());
        swa_slots.push_back(q.state_id * s_.ring_size + r);
      }
      const int32_t tokens_per_block = s_.block_size / s_.ratio;
      for (int32_t c = 0; c < q.seqlen_k / s_.ratio; ++c) {
        encode({kCompressed, seq, c}, e_, rows.data());
        comp_rows.insert(comp_rows.end(), rows.begin(), rows.end());
        comp_slots.push_back(paged_slot(q.block_table, tokens_per_block, c));
      }
    }
    store(swa, swa_rows, swa_slots);
    store(comp, comp_rows, comp_slots);
  }

  // Both caches are framed by canary bands of at least a block stride: a store or
  // load past either end of its cache is reported here, decoded.
  std::string check_canaries(const KVCache& swa, const KVCache& comp) const {
    for (const auto& [name, cache] : {std::pair<const char*, const KVCache*>{"SWA", &swa}, {"compressed", &comp}})
      if (const std::string c = cache->canary_report(); !c.empty())
        return "prefill (backend " + std::string(b_.name()) + ", " + s_.format.name + "): " + name +
               " cache: " + c;
    return "";
  }

  std::string where(size_t i, int32_t j) const {
    return "prefill (backend " + std::string(b_.name()) + ", " + s_.format.name + "): sequence " +
           std::to_string(i) + ", chunk row " + std::to_string(j) + " (position " +
           std::to_string(history_end(i) + j) + "): ";
  }

  std::string check_rows() {
    int64_t q_row = 0;
    for (size_t i = 0; i < s_.seqs.size(); ++i) {
      const SeqMeta& q = s_.seqs[i];
      const int32_t seq = static_cast<int32_t>(i);
      for (int32_t j = 0; j < q.seqlen_q; ++j, ++q_row) {
        const int32_t p = history_end(i) + j;
        std::vector<Identity> expected;
        for (int32_t t = std::max(p - s_.window + 1, 0); t <= p; ++t)
          if (t >= history_end(i) || t >= q.swa_valid_start) expected.push_back({kSwa, seq, t});
        for (int32_t c = 0; c < s_.topk_width; ++c) {
          const int32_t x = s_.topk[i][static_cast<size_t>(j) * s_.topk_width + c];
          if (x != -1) expected.push_back({kCompressed, seq, x});
        }
        std::sort(expected.begin(), expected.end());
        std::vector<Identity> actual;
        std::vector<int32_t> column;  // column of each actual entry, for the report
        for (int32_t c = 0; c < width_; ++c) {
          const int32_t r = index_[static_cast<size_t>(q_row * width_ + c)];
          if (r == -1) continue;
          if (r < 0 || r >= total_kv_)
            return where(i, j) + "index column " + std::to_string(c) + " selects row " +
                   std::to_string(r) + " outside the KV buffer [0, " + std::to_string(total_kv_) + ")";
          actual.push_back(decode(row(r), e_));
          column.push_back(c);
        }
        std::vector<Identity> sorted = actual;
        std::sort(sorted.begin(), sorted.end());
        if (sorted == expected) continue;
        // Report the first selected row that is not (or no longer) expected, else a miss.
        std::vector<Identity> left = expected;
        for (size_t a = 0; a < actual.size(); ++a) {
          const auto it = std::lower_bound(left.begin(), left.end(), actual[a]);
          if (it == left.end() || *it != actual[a]) {
            const bool dup = std::binary_search(expected.begin(), expected.end(), actual[a]);
            const int32_t r = index_[static_cast<size_t>(q_row * width_ + column[a])];
            return where(i, j) + "index column " + std::to_string(column[a]) + " selects row " +
                   std::to_string(r) + " holding " + show(actual[a]) + ", which " +
                   (dup ? "an earlier column already selected" : "it must not see");
          }
          left.erase(it);
        }
        return where(i, j) + "no index column selects " + show(left.front()) + " (" +
               std::to_string(left.size()) + " visible tokens missing)";
      }
    }
    return "";
  }

  // After the step every ring slot holds the newest position that maps to it.
  std::string check_rings(const KVCache& swa) {
    std::vector<bf16_bits> ring(static_cast<size_t>(s_.ring_size) * e_);
    for (size_t i = 0; i < s_.seqs.size(); ++i) {
      const SeqMeta& q = s_.seqs[i];
      const std::vector<int32_t> seg{q.state_id, 0, s_.ring_size, 0};
      const LoadOutput out{reinterpret_cast<uint8_t*>(ring.data()), int64_t{e_} * 2, nullptr, 0,
                           s_.ring_size};
      b_.load_paged_kv_cache(swa.view(), seg, s_.ring_size, out);
      for (int32_t r = 0; r < s_.ring_size; ++r) {
        const int64_t h = newest_at(q.seqlen_k, s_.ring_size, r);
        const Identity want = h >= 0 && (h >= history_end(i) || h >= q.swa_valid_start)
                                  ? Identity{kSwa, static_cast<int32_t>(i), static_cast<int32_t>(h)}
                                  : Identity{kStale, static_cast<int32_t>(i), r};
        const Identity got = decode(&ring[static_cast<size_t>(r) * e_], e_);
        if (got != want)
          return "prefill (backend " + std::string(b_.name()) + "): after the step, ring slot " +
                 std::to_string(r) + " of sequence " + std::to_string(i) + " (state " +
                 std::to_string(q.state_id) + "): expected " + show(want) + ", actual " + show(got);
      }
    }
    return "";
  }

  const PrefillScenario& s_;
  const Backend& b_;
  int32_t e_;
  int64_t total_kv_ = 0;
  int32_t width_ = 0;
  std::vector<bf16_bits> kv_;
  std::vector<int32_t> index_;
};

}  // namespace

std::string run_prefill_step(const PrefillScenario& s, const Backend& backend) {
  try {
    return Step(s, backend).run();
  } catch (const Error& e) {
    return "prefill (backend " + std::string(backend.name()) + "): threw " + e.what();
  }
}

bool store_overlaps_visible_history(const PrefillScenario& s) {
  for (const SeqMeta& q : s.seqs) {
    const int32_t he = q.seqlen_k - q.seqlen_q;
    std::set<int32_t> stored;
    for (int32_t p = std::max(he, q.seqlen_k - s.ring_size); p < q.seqlen_k; ++p)
      stored.insert(p % s.ring_size);
    if (q.seqlen_q == 0) continue;
    for (int32_t h = std::max({he - s.window + 1, q.swa_valid_start, 0}); h < he; ++h)
      if (stored.count(h % s.ring_size)) return true;
  }
  return false;
}

}  // namespace kvcheck::props
