#include "sim/telemetry.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "core/json.h"
#include <fmt/printf.h>

#include "core/units.h"

namespace vramsim::sim {

// The engines' own log lines are written in their printf formats, through fmt::sprintf.

std::string strata_startup_lines(const Scenario& s, const RunResult& r) {
  std::string out;
  // No expert cache (a dense model, or experts with their layer as in llama.cpp): nothing to
  // size, probe a split for or pre-fill.
  if (!s.model.moe || !s.engine.expert_cache) return out;
  // Each card sizes its own cache: one line per card, first card first (one card: one line).
  for (const VramPlan& p : r.cards)
    out += fmt::sprintf("strata generate: expert cache auto: %.2f GiB free, %.0f MiB reserved (+%.0f MiB for the draft head) -> %lld slots\n",
                  p.free_at_start / units::kGiB, p.reserve / units::kMiB, p.draft_head / units::kMiB,
                  static_cast<long long>(p.slots));
  out += fmt::sprintf("strata generate: PCIe probe: %.1f GB/s host -> device -> pcie_frac %.2f (default %.2f )\n",
                s.link.h2d_bandwidth / 1e9, r.pcie_frac, s.engine.physics.default_pcie_frac);
  // The pre-fill phase as a whole: slots and bytes summed over every card, in the phase's wall
  // time (the cards fill at once; the slowest card, or a shared switch uplink, sets it), and
  // the rate those give (10^6 bytes per second). One card: its own slots, bytes, time and rate.
  std::int64_t slots = 0;
  double bytes = 0;
  for (const VramPlan& p : r.cards) {
    slots += p.slots;
    bytes += p.cache_bytes;
  }
  out += fmt::sprintf("strata generate: pre-filled %lld of %lld slots from the profile in %.1f s (%.0f MB/s)\n",
                static_cast<long long>(slots), static_cast<long long>(slots), r.prefill_fill_s,
                r.prefill_fill_s > 0 ? bytes / r.prefill_fill_s / 1e6 : 0.0);
  return out;
}

std::string strata_request_lines(const Scenario& s, const RequestRecord& r) {
  const double prefill_ms = r.prefill_s * 1e3;
  const double decode_ms = (r.end_s - r.first_token_s) * 1e3;
  // The engine's own figures: every generated token over its decode time (1 / TPOT is the
  // tokens after the first over it), and no NaN where nothing was decoded or looked up.
  const double tok_s = decode_ms > 0 ? static_cast<double>(r.gen_tokens) / decode_ms * 1e3 : 0.0;
  const double hit_rate = r.lookups > 0 ? r.hit_rate : 0.0;
  const double overflow = r.routed > 0 ? r.pcie_overflow : 0.0;
  std::string out = fmt::sprintf(
      "strata serve: prompt %lld tokens = %lld reused + %lld read in %.0f ms, %lld generated in %.0f ms (%.1f tok/s), drafts accepted %lld/%lld\n",
      static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.reused_tokens),
      static_cast<long long>(r.prompt_tokens - r.reused_tokens), prefill_ms,
      static_cast<long long>(r.gen_tokens), decode_ms, tok_s, static_cast<long long>(r.accepted),
      static_cast<long long>(r.drafted));
  if (!s.model.moe) return out;  // no routed experts: no hit-rate line
  out += fmt::sprintf(
      "strata serve: decode expert cache hit rate: %.1f%% (%lld hits / %lld lookups); %lld more read by the GPU over PCIe or from another GPU (%.2f%% of all %lld routed)\n",
      100.0 * hit_rate, static_cast<long long>(r.lookup_hits), static_cast<long long>(r.lookups),
      static_cast<long long>(r.pcie_reads), 100.0 * overflow, static_cast<long long>(r.routed));
  return out;
}

std::string llama_server_request_lines(const RequestRecord& r) {
  const double prompt_ms = r.prefill_s * 1e3;
  const double eval_ms = (r.end_s - r.first_token_s) * 1e3;
  const long long prompt = static_cast<long long>(r.prompt_tokens - r.reused_tokens), gen = static_cast<long long>(r.gen_tokens);
  // As server.cpp prints them: "%10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)".
  auto line = [](const char* label, double ms, long long n) {
    return fmt::sprintf("%s = %10.2f ms / %5lld tokens (%8.2f ms per token, %8.2f tokens per second)\n", label, ms, n,
                  n > 0 ? ms / static_cast<double>(n) : 0.0, ms > 0 ? 1e3 * static_cast<double>(n) / ms : 0.0);
  };
  return line("prompt eval time", prompt_ms, prompt) + line("       eval time", eval_ms, gen) +
         fmt::sprintf("      total time = %10.2f ms / %5lld tokens\n", prompt_ms + eval_ms, prompt + gen);
}

std::string chrome_trace(const std::vector<TraceEvent>& events) {
  std::map<std::string, int> tracks;
  json::Writer j(false);
  j.begin_object().key("traceEvents").begin_array();
  for (const auto& e : events) {
    auto [it, added] = tracks.emplace(e.track, static_cast<int>(tracks.size()) + 1);
    if (added) {
      j.begin_object().field("name", "thread_name").field("ph", "M").field("pid", 1).field("tid", it->second);
      j.key("args").begin_object().field("name", e.track).end_object().end_object();
    }
    j.begin_object()
        .field("name", e.name)
        .field("ph", "X")
        .field("pid", 1)
        .field("tid", it->second)
        .field("ts", e.start_s * 1e6)
        .field("dur", e.duration_s * 1e6)
        .end_object();
  }
  j.end_array().field("displayTimeUnit", "ms").end_object();
  return j.str() + "\n";
}

}  // namespace vramsim::sim
