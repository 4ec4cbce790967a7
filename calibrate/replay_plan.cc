#include "calibrate/replay_plan.h"

#include <algorithm>
#include <charconv>
#include <list>
#include <stdexcept>
#include <utility>

namespace vramsim::calibrate {
namespace {

// Line-by-line reader of the trace: skips blank and '#' lines, splits on blanks, keeps columns.
class TraceLines {
 public:
  TraceLines(std::istream& in, const std::string& file) : in_(in), file_(file) {}

  // The next meaningful line's words; false at the end of the file.
  bool next() {
    std::string text;
    while (std::getline(in_, text)) {
      ++line_;
      if (!text.empty() && text.back() == '\r') text.pop_back();
      words_.clear();
      for (std::size_t i = 0; i < text.size();) {
        if (text[i] == ' ' || text[i] == '\t') {
          ++i;
          continue;
        }
        std::size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
        words_.push_back({text.substr(i, j - i), i + 1});
        i = j;
      }
      if (!words_.empty() && words_[0].first[0] != '#') return true;
    }
    words_.clear();
    return false;
  }
  std::size_t size() const { return words_.size(); }
  const std::string& word(std::size_t i) const { return words_.at(i).first; }
  std::int64_t integer(std::size_t i, std::int64_t min, std::int64_t max) const {
    if (i >= words_.size()) fail(words_.empty() ? 1 : words_.back().second, "expected more numbers on this line");
    const std::string& w = words_[i].first;
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
    if (ec != std::errc() || end != w.data() + w.size() || v < min || v > max)
      fail(words_[i].second, "expected a whole number in [" + std::to_string(min) + ", " + std::to_string(max) + "], got \"" + w + "\"");
    return v;
  }
  void expect_words(std::size_t n, const std::string& what) const {
    if (words_.size() != n)
      fail(1, what + ": expected " + std::to_string(n) + " fields, got " + std::to_string(words_.size()));
  }
  [[noreturn]] void fail(std::size_t column, const std::string& message) const {
    throw InputError(file_, line_, column, message);
  }

 private:
  std::istream& in_;
  const std::string& file_;
  std::size_t line_ = 0;
  std::vector<std::pair<std::string, std::size_t>> words_;  // word, 1-based column
};

}  // namespace

RoutingTrace read_routing_trace(std::istream& in, const std::string& file) {
  TraceLines lines(in, file);
  RoutingTrace t;
  if (!lines.next() || lines.word(0) != "vramsim-routing-trace")
    lines.fail(1, "not a vramsim routing trace (the first line must be \"vramsim-routing-trace 1\")");
  if (lines.integer(1, 1, 1) != 1) lines.fail(1, "unsupported trace version");
  constexpr std::int64_t kMaxCount = 1LL << 40;
  // Header: "key value" lines up to prefill_order.
  for (;;) {
    if (!lines.next()) lines.fail(1, "the trace ends before its prefill_order");
    const std::string key = lines.word(0);
    lines.expect_words(2, key);
    if (key == "layers") t.layers = static_cast<int>(lines.integer(1, 1, 100000));
    else if (key == "experts") t.experts = static_cast<int>(lines.integer(1, 1, 65535));
    else if (key == "top_k") t.top_k = static_cast<int>(lines.integer(1, 1, 65535));
    else if (key == "expert_bytes") t.expert_bytes = lines.integer(1, 1, kMaxCount);
    else if (key == "scenario_slots") t.scenario_slots = lines.integer(1, 0, kMaxCount);
    else if (key == "gen_tokens") t.gen_tokens = lines.integer(1, 1, kMaxCount);
    else if (key == "tokens") t.tokens = lines.integer(1, 1, 100'000'000);
    else if (key == "prefill_order") break;
    else lines.fail(1, "unknown header key \"" + key + "\"");
  }
  if (!t.layers || !t.experts || !t.top_k || !t.expert_bytes || !t.tokens)
    lines.fail(1, "prefill_order before layers, experts, top_k, expert_bytes and tokens are all given");
  if (t.top_k > t.experts) lines.fail(1, "top_k exceeds experts");
  const std::int64_t pairs = static_cast<std::int64_t>(t.layers) * t.experts;
  if (lines.integer(1, pairs, pairs) != pairs) lines.fail(1, "prefill_order must list every (layer, expert) pair");
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(pairs), 0);
  while (static_cast<std::int64_t>(t.prefill_order.size()) < pairs) {
    if (!lines.next()) lines.fail(1, "the trace ends inside its prefill_order");
    if (lines.size() % 2) lines.fail(1, "prefill_order: expected \"layer expert\" pairs");
    for (std::size_t i = 0; i < lines.size(); i += 2) {
      const auto id = static_cast<std::uint32_t>(lines.integer(i, 0, t.layers - 1) * t.experts + lines.integer(i + 1, 0, t.experts - 1));
      if (seen[id]++) lines.fail(1, "prefill_order lists a pair twice");
      t.prefill_order.push_back(id);
    }
  }
  const auto k = static_cast<std::size_t>(t.top_k);
  // Reserved up to what a header can claim without the lines behind it (the vector grows
  // past that as they are read): a header's token count alone never allocates gigabytes.
  constexpr std::size_t kReserveAtMost = std::size_t{1} << 24;
  t.routes.reserve(std::min(kReserveAtMost, static_cast<std::size_t>(t.tokens) * static_cast<std::size_t>(t.layers) * k));
  for (std::int64_t token = 0; token < t.tokens; ++token) {
    if (!lines.next()) lines.fail(1, "the trace ends at token " + std::to_string(token) + " of " + std::to_string(t.tokens));
    lines.expect_words(4, "token line");
    if (lines.word(0) != "token" || lines.word(2) != "request") lines.fail(1, "expected \"token T request R\"");
    lines.integer(1, token, token);
    t.request.push_back(lines.integer(3, 0, kMaxCount));
    for (int layer = 0; layer < t.layers; ++layer) {
      if (!lines.next()) lines.fail(1, "the trace ends inside token " + std::to_string(token));
      lines.expect_words(k, "layer " + std::to_string(layer) + " of token " + std::to_string(token));
      for (std::size_t i = 0; i < k; ++i) t.routes.push_back(static_cast<std::uint16_t>(lines.integer(i, 0, t.experts - 1)));
    }
  }
  if (lines.next()) lines.fail(1, "more data after the last token");
  return t;
}

ReplayPlan plan_replay(const RoutingTrace& t, std::int64_t slots, ReplayPolicy policy, std::int64_t warmup_tokens) {
  const std::int64_t pairs = static_cast<std::int64_t>(t.layers) * t.experts;
  if (slots < 0 || slots > pairs)
    throw std::invalid_argument("cache slots " + std::to_string(slots) + " outside [0, " + std::to_string(pairs) + "]");
  if (policy == ReplayPolicy::Lru && slots < t.top_k)
    throw std::invalid_argument("an LRU cache needs at least top_k (" + std::to_string(t.top_k) + ") slots");
  ReplayPlan p;
  p.slots = slots;
  p.policy = policy;
  p.warmup_tokens = warmup_tokens;
  p.initial.assign(t.prefill_order.begin(), t.prefill_order.begin() + slots);
  std::vector<std::int32_t> slot_of(static_cast<std::size_t>(pairs), -1);
  for (std::int64_t s = 0; s < slots; ++s) slot_of[p.initial[static_cast<std::size_t>(s)]] = static_cast<std::int32_t>(s);
  // Lru: slots ordered by last use, least recent at the front; pre-filled hottest first, so
  // the coldest pre-filled slot is evicted first.
  std::list<std::int32_t> recency;
  std::vector<std::list<std::int32_t>::iterator> where(static_cast<std::size_t>(slots));
  std::vector<std::uint32_t> holder(p.initial);
  if (policy == ReplayPolicy::Lru)
    for (std::int64_t s = slots - 1; s >= 0; --s) where[static_cast<std::size_t>(s)] = recency.insert(recency.end(), static_cast<std::int32_t>(s));

  const auto k = static_cast<std::size_t>(t.top_k);
  p.slot.resize(t.routes.size());
  p.miss.resize(t.routes.size());
  p.layer_has_miss.resize(static_cast<std::size_t>(t.tokens) * static_cast<std::size_t>(t.layers));
  for (std::int64_t token = 0; token < t.tokens; ++token) {
    const bool counted = token >= warmup_tokens;
    p.counted_tokens += counted ? 1 : 0;
    for (int layer = 0; layer < t.layers; ++layer) {
      const std::size_t base = (static_cast<std::size_t>(token) * static_cast<std::size_t>(t.layers) + static_cast<std::size_t>(layer)) * k;
      const std::uint16_t* experts = t.route(token, layer);
      bool any_miss = false;
      for (std::size_t i = 0; i < k; ++i) {
        const auto id = static_cast<std::uint32_t>(layer * t.experts + experts[i]);
        std::int32_t s = slot_of[id];
        const bool hit = s >= 0;
        if (!hit && policy == ReplayPolicy::Lru && slots > 0) {
          s = recency.front();  // evict the least recently used
          slot_of[holder[static_cast<std::size_t>(s)]] = -1;
          holder[static_cast<std::size_t>(s)] = id;
          slot_of[id] = s;
        }
        if (policy == ReplayPolicy::Lru && s >= 0) recency.splice(recency.end(), recency, where[static_cast<std::size_t>(s)]);
        p.slot[base + i] = (hit || policy == ReplayPolicy::Lru) ? s : -1;
        p.miss[base + i] = hit ? 0 : 1;
        any_miss = any_miss || !hit;
        if (counted) {
          ++p.lookups;
          p.hits += hit ? 1 : 0;
        }
      }
      p.layer_has_miss[base / k] = any_miss ? 1 : 0;
      if (counted && any_miss) ++p.layers_with_miss;
    }
  }
  return p;
}

std::uint64_t replay_vram_bytes(std::int64_t slots, std::uint64_t stride_bytes, int top_k, std::int64_t dense_bytes) {
  const std::uint64_t staging = 2 * static_cast<std::uint64_t>(top_k > 0 ? top_k : 0);
  return stride_bytes * (static_cast<std::uint64_t>(slots > 0 ? slots : 0) + staging) +
         static_cast<std::uint64_t>(dense_bytes > 0 ? dense_bytes : 0);
}

std::vector<bool> replay_sizes_that_fit(const std::vector<std::int64_t>& slots, std::uint64_t stride_bytes, int top_k,
                                        std::int64_t dense_bytes, std::uint64_t budget_bytes) {
  std::vector<bool> fits;
  fits.reserve(slots.size());
  for (std::int64_t s : slots) fits.push_back(replay_vram_bytes(s, stride_bytes, top_k, dense_bytes) <= budget_bytes);
  return fits;
}

std::int64_t option_integer(const std::string& option, const std::string& text, std::int64_t low, std::int64_t high) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < low || v > high)
    throw std::invalid_argument(option + ": expected a whole number from " + std::to_string(low) + " to " + std::to_string(high) +
                                ", got \"" + text + "\"");
  return v;
}

double option_number(const std::string& option, const std::string& text, double low, double high) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !(v >= low && v <= high))
    throw std::invalid_argument(option + ": expected a number from " + std::to_string(low) + " to " + std::to_string(high) +
                                ", got \"" + text + "\"");
  return v;
}

}  // namespace vramsim::calibrate
