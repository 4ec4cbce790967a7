#include "reports/run_summary.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include "core/json.h"
#include "sim/stats.h"
#include "core/units.h"

namespace vramsim::reports {
namespace {

// A decode step under this, seconds, is one where an unmeasured fixed cost per step would matter.
constexpr double kShortStep_s = 5e-3;

double pct(const std::vector<double>& v, double q) { return sim::percentile(v, q); }

using units::fixed;

// One per-request figure of the completed requests, in completion order (`inverse`: 1 / the
// figure, e.g. time per output token from decode tok/s); requests without it (NaN: decode
// tok/s of a request whose only token came from its prefill) are left out. Built one at a
// time, so that the summary holds a single such vector besides the 24-byte samples (memory
// flat in long runs).
std::vector<double> figure(const sim::RunResult& r, float sim::RequestSample::*field, bool inverse = false) {
  std::vector<double> v;
  v.reserve(r.samples.size());
  for (const auto& x : r.samples) {
    const double value = x.*field;
    if (std::isnan(value)) continue;
    v.push_back(!inverse ? value : value > 0 ? 1.0 / value : 0.0);
  }
  return v;
}

void write_breakdown(json::Writer& j, const sim::StepCosts& c) {
  const double t = c.total();
  j.begin_object()
      .field("compute", c.compute / t)
      .field("transfer", c.transfer / t)
      .field("stall", c.stall / t)
      .field("cpu_experts", c.cpu_experts / t)
      .field("launch_sync", c.launch_sync / t)
      .field("cpu_layers", c.cpu_layers / t)
      .end_object();
}

// A figure with nothing to take it over (a dense model's expert coverage): null in the JSON.
constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

// Every card's part of the model and its use, and every link's traffic.
// How the engine serves its misses, after pcie_frac on the summary's cache line.
std::string host_split_text(const sim::Scenario& s, const sim::RunResult& r) {
  if (sim::copies_every_miss(s.engine.policy)) return " (unused: this policy copies every miss into the cache)";
  if (s.engine.misses_on_cpu || r.host_expert_slots.empty()) return {};
  if (s.engine.physics.host_expert_workers == 0) return " (no host workers: every miss is read over PCIe)";
  std::string text = ": the host computes up to " + std::to_string(r.host_expert_slots.front()) + " missed experts a layer";
  for (std::size_t c = 1; c < r.host_expert_slots.size(); ++c)
    if (r.host_expert_slots[c] != r.host_expert_slots.front())
      text += " (card " + std::to_string(c) + ": " + std::to_string(r.host_expert_slots[c]) + ")";
  return text + ", PCIe reads the rest";
}

void write_cards(json::Writer& j, const sim::Scenario& s, const sim::RunResult& r) {
  const double t = r.makespan_s > 0 ? r.makespan_s : 1.0;
  j.field("split", std::string(sim::to_string(s.engine.split)));
  j.key("cards").begin_array();
  for (std::size_t c = 0; c < r.cards.size(); ++c) {
    const auto& plan = r.cards[c];
    j.begin_object()
        .field("gpu", s.cards[c].gpu.spec.name)
        .field("link", s.cards[c].link.spec.name)
        .field("numa_node", static_cast<std::int64_t>(s.cards[c].link.numa_node))
        .field("link_rate_source", s.cards[c].link.source)
        .field("calibration", s.cards[c].gpu.spec.calibration ? std::optional<std::string>(s.cards[c].gpu.spec.calibration->file) : std::nullopt)
        .field("experts_gb_s", s.cards[c].link.experts_bandwidth / 1e9)
        .field("first_layer", static_cast<std::int64_t>(plan.first_layer))
        .field("end_layer", static_cast<std::int64_t>(plan.end_layer))
        .field("shard", plan.shard)
        .field("weights_gib", plan.non_expert_weights / units::kGiB)
        .field("kv_gib", plan.kv_cache / units::kGiB)
        .field("free_at_start_mib", plan.free_at_start / units::kMiB)
        .field("cache_slots", plan.slots)
        .field("coverage", s.model.moe ? plan.coverage() : kNone)
        .field("util", std::min(1.0, r.card_use[c].busy_s / t))
        .field("host_expert_slots", c < r.host_expert_slots.size() ? std::optional<std::int64_t>(r.host_expert_slots[c]) : std::nullopt)
        .end_object();
  }
  j.end_array();
  j.key("links").begin_array();
  for (const auto& l : r.links)
    j.begin_object().field("name", l.name).field("bandwidth_gb_s", l.bandwidth / 1e9).field("gb", l.bytes / 1e9)
        .field("util", std::min(1.0, l.bytes / (l.bandwidth * t))).end_object();
  j.end_array();
  j.field("handoff_s", r.handoff_s).field("collective_s", r.collective_s);
  j.key("cpu_layers").begin_object()
      .field("first_layer", static_cast<std::int64_t>(r.host_plan ? r.host_plan->first_layer : 0))
      .field("end_layer", static_cast<std::int64_t>(r.host_plan ? r.host_plan->end_layer : 0))
      .field("ram_gib", r.host_plan ? r.host_plan->fixed / units::kGiB : 0.0)
      .field("busy_s", r.host_busy_s)
      .end_object();
}

// The per-card lines of the table (several cards only).
void card_lines(std::ostream& o, const sim::Scenario& s, const sim::RunResult& r) {
  const double t = r.makespan_s > 0 ? r.makespan_s : 1.0;
  o << "  split           " << sim::to_string(s.engine.split) << " over " << r.cards.size() << " cards";
  if (r.handoff_s > 0) o << "; hand-offs " << fixed(100 * r.handoff_s / t, 1) << "% of the run";
  if (r.collective_s > 0)  // llama.cpp's row split copies each product's input and results instead (sim/row_split.h)
    o << (s.engine.row_split ? "; row-split copies " : "; all-reduces ") << fixed(100 * r.collective_s / t, 1) << "% of the run";
  o << "\n";
  for (std::size_t c = 0; c < r.cards.size(); ++c) {
    const auto& plan = r.cards[c];
    const std::string layers = plan.end_layer > plan.first_layer
                                   ? "layers " + std::to_string(plan.first_layer) + "-" + std::to_string(plan.end_layer - 1)
                                   : std::string("no layers");
    o << "  card " << c << "          " << s.cards[c].gpu.spec.name << " on " << s.cards[c].link.spec.name << ": " << layers
      << (plan.shard < 1 ? " (1/" + std::to_string(r.cards.size()) + " of each)" : "")
      << ", weights " << fixed(plan.non_expert_weights / units::kGiB, 2) << " GiB + KV " << fixed(plan.kv_cache / units::kGiB, 2)
      << " GiB";
    if (s.model.moe && s.engine.expert_cache)
      o << ", cache " << plan.slots << " slots (" << fixed(100 * plan.coverage(), 1) << "%)";
    else if (s.model.moe)
      o << ", experts " << plan.slots << " in VRAM";
    o << ", util " << fixed(100 * std::min(1.0, r.card_use[c].busy_s / t), 1) << "%\n";
  }
  for (const auto& l : r.links)
    o << "  link            " << l.name << ": " << fixed(l.bytes / 1e9, 3) << " GB, util "
      << fixed(100 * std::min(1.0, l.bytes / (l.bandwidth * t)), 2) << "%\n";
}

// The serving figures: prompt-cache reuse, each closed-loop client's rate, the queue's length.
void write_serving(json::Writer& j, const sim::RunResult& r) {
  j.key("prefix_reuse").begin_object().field("requests", r.prefix_hits).field("reused_tokens", r.reused_tokens)
      .field("prefilled_tokens", r.prefilled_tokens).end_object();
  j.key("per_client_tok_s");
  if (r.client_tok_s.empty())
    j.null();  // open loop: no clients
  else
    j.begin_object().field("p50", pct(r.client_tok_s, 0.5)).field("min", pct(r.client_tok_s, 0))
        .field("max", pct(r.client_tok_s, 1)).end_object();
  j.key("queue_length").begin_object().field("mean", r.queue.mean).field("max", r.queue.max)
      .field("interval_s", r.queue.interval_s).key("series").begin_array();
  for (double v : r.queue.series) j.value(v);
  j.end_array().end_object();
}

// Continuous batching (slot_scheduling: batched) and the paged KV pool (engine.kv_pool); only
// for such engines, so that other runs' output is unchanged.
void write_batching(json::Writer& j, const sim::Scenario& s, const sim::RunResult& r) {
  if (s.engine.scheduling != sim::SlotScheduling::Batched) return;
  const auto& b = r.batch;
  auto per = [](std::int64_t a, std::int64_t n) { return n ? static_cast<double>(a) / static_cast<double>(n) : 0.0; };
  j.key("batch").begin_object().field("mean", per(b.requests, b.steps)).field("max", b.max).field("steps", b.steps)
      .field("preempted", b.preempted);
  j.key("experts_per_layer");
  if (!s.model.moe)
    j.null();
  else
    j.begin_object().field("union", per(b.union_experts, b.moe_layer_steps))
        .field("requests_sum", per(b.request_experts, b.moe_layer_steps)).end_object();
  j.end_object();
  if (!s.engine.kv_pool) return;
  const int block = s.engine.kv_pool->block_size;
  j.key("kv_pool").begin_object()
      .field("budget_gib", r.plan.kv_budget / units::kGiB)
      .field("gib", r.plan.kv_cache / units::kGiB)
      .field("blocks", r.plan.kv_blocks)
      .field("block_tokens", static_cast<std::int64_t>(block))
      .field("tokens", r.plan.kv_blocks * block)
      .field("peak_blocks", b.kv_blocks_peak)
      .end_object();
}

}  // namespace

std::string run_summary_json(const sim::Scenario& s, const sim::RunResult& r, const sim::PowerSummary& p, double wall) {
  using S = sim::RequestSample;
  json::Writer j;
  j.begin_object().field("scenario", s.source).field("seed", static_cast<std::int64_t>(s.seed));
  // What stderr said about the scenario (suspicious input, uncalibrated parts, known biases).
  j.key("warnings").begin_array();
  for (const auto& w : s.warnings) j.value(w);
  j.end_array();
  j.key("vram").begin_object()
      .field("card_mib", r.plan.card_total / units::kMiB)
      .field("others_mib", r.plan.others / units::kMiB)
      .field("fixed_mib", r.plan.fixed / units::kMiB)
      .field("free_at_start_mib", r.plan.free_at_start / units::kMiB)
      .field("free_measured", r.plan.free_measured)
      .end_object();
  j.key("cache").begin_object()
      .field("policy", std::string(sim::to_string(s.engine.policy)))
      .field("slots", r.plan.slots)
      .field("slot_mib", r.plan.slot_bytes / units::kMiB)
      .field("coverage", s.model.moe ? r.plan.coverage() : kNone)
      .field("prefill_s", r.prefill_fill_s)
      .end_object();
  j.field("pcie_frac", r.pcie_frac);
  // Only an expert cache with misses split between the host and PCIe has the count (the
  // first card's here; each card's in cards[]).
  j.key("host_expert_slots");
  if (!r.host_expert_slots.empty())
    j.value(static_cast<std::int64_t>(r.host_expert_slots.front()));
  else
    j.null();
  write_cards(j, s, r);
  auto dist = [&](const char* name, const std::vector<double>& v) {
    j.key(name).begin_object().field("p50", pct(v, 0.5)).field("mean", sim::mean(v)).field("p5", pct(v, 0.05))
        .field("p95", pct(v, 0.95)).field("min", pct(v, 0)).field("max", pct(v, 1)).end_object();
  };
  auto tail = [&](const char* name, const std::vector<double>& v) {
    j.key(name).begin_object().field("p50", pct(v, 0.5)).field("p95", pct(v, 0.95)).field("p99", pct(v, 0.99))
        .field("max", pct(v, 1)).end_object();
  };
  dist("expert_hit_rate", figure(r, &S::hit_rate));
  dist("pcie_overflow", figure(r, &S::pcie_overflow));
  dist("decode_tok_s", figure(r, &S::decode_tok_s));
  tail("ttft_s", figure(r, &S::ttft_s));
  tail("tpot_s", figure(r, &S::decode_tok_s, true));
  tail("e2e_s", figure(r, &S::e2e_s));
  {
    const auto prefill = figure(r, &S::prefill_tok_s);
    j.key("prefill_tok_s").begin_object().field("p50", pct(prefill, 0.5)).field("mean", sim::mean(prefill)).end_object();
  }
  j.key("step_time_breakdown");
  write_breakdown(j, r.decode);
  j.field("decode_step_contended_ms", r.contended_steps ? r.contended_step_s / static_cast<double>(r.contended_steps) * 1e3
                                                         : std::numeric_limits<double>::quiet_NaN());
  j.field("decode_step_ms", r.decode_steps ? r.decode.total() / static_cast<double>(r.decode_steps) * 1e3
                                             : std::numeric_limits<double>::quiet_NaN());  // null: no decode step
  j.key("gpu").begin_object().field("cards", static_cast<std::int64_t>(p.cards)).field("util", p.util)
      .field("useful_fraction", p.useful_fraction).field("avg_power_w", p.avg_power_w)
      .field("uncapped_power_w", p.uncapped_power_w).field("power_capped", p.power_capped).end_object();
  j.key("host_cpu").begin_object().field("busy_share", p.host_busy_share);
  j.key("avg_power_w").value(p.host_power_w);
  j.end_object();
  j.key("energy").begin_object().field("j_per_token", p.j_per_token).field("total_j", p.energy_j);
  j.key("j_per_token_with_host").value(p.j_per_token_with_host);
  j.end_object();
  j.key("requests").begin_object().field("completed", r.completed).field("rejected", r.rejected())
      .field("truncated", r.truncated);
  j.key("rejected_by_reason").begin_object().field("prompt_exceeds_context", r.rejected_context)
      .field("prompt_plus_output_exceeds_context", r.rejected_output).field("queue_full", r.rejected_queue)
      .field("prompt_exceeds_kv_pool", r.rejected_pool).end_object();
  j.end_object();
  j.field("generated_tokens", r.generated_tokens);
  j.field("makespan_s", r.makespan_s);
  j.field("throughput_tok_s", r.makespan_s > 0 ? static_cast<double>(r.generated_tokens) / r.makespan_s : 0.0);
  write_serving(j, r);
  write_batching(j, s, r);
  j.key("sim").begin_object().field("wall_s", wall).field("decode_steps", r.decode_steps)
      .field("simgrid_activities", r.simgrid_activities)
      .field("simgrid_activities_per_token",
             r.generated_tokens ? static_cast<double>(r.simgrid_activities) / static_cast<double>(r.generated_tokens) : 0.0)
      .end_object();
  j.end_object();
  return j.str() + "\n";
}

std::string run_summary_table(const sim::Scenario& s, const sim::RunResult& r, const sim::PowerSummary& p, double wall) {
  const auto& plan = r.plan;
  std::ostringstream o;
  // The cards and their links: "2x <card>" when they are alike, each named when they differ.
  std::string gpus, links;
  bool same_gpu = true, same_link = true;
  for (const auto& c : s.cards) {
    same_gpu = same_gpu && c.gpu.spec.name == s.gpu.spec.name;
    same_link = same_link && c.link.spec.name == s.link.spec.name && c.link.h2d_bandwidth == s.link.h2d_bandwidth &&
                c.link.source == s.link.source;
  }
  for (std::size_t c = 0; c < s.cards.size(); ++c) {
    const auto& l = s.cards[c].link;
    const bool calibrated = l.source != "typical" && l.source != "measured_h2d" && !s.cards[c].gpu.spec.unified();
    const std::string link = (s.cards[c].gpu.spec.unified() ? std::string("unified memory") : l.spec.name) + " at " +
                             units::format_bandwidth(l.h2d_bandwidth) + (calibrated ? " (calibrated: " + l.source + ")" : std::string());
    if (!same_gpu) gpus += (c ? " + " : "") + s.cards[c].gpu.spec.display_name;
    if (!same_link || c == 0) links += (c ? " + " : "") + link;
  }
  if (same_gpu) gpus = (s.cards.size() > 1 ? std::to_string(s.cards.size()) + "x " : "") + s.gpu.spec.display_name;
  o << "vramsim run: " << s.source << " (seed " << s.seed << ")\n"
    << "  " << s.model.display_name << " on " << gpus << ", " << links << ", host " << s.host.name << ", engine "
    << s.engine.preset << "\n";
  // What a card's calibration changed (the link rate shows above when it came from it), once per file.
  std::set<std::string> shown;
  for (const auto& c : s.cards) {
    const auto& cal = c.gpu.spec.calibration;
    if (!cal || !shown.insert(cal->file).second) continue;
    std::string used;
    if (cal->zero_copy_efficiency) used = "zero-copy efficiency " + fixed(*cal->zero_copy_efficiency, 2);
    if (c.link.source == cal->file) used += std::string(used.empty() ? "" : ", ") + "link rate and latency";
    const std::string unused = cal->h2d_bandwidth && c.link.source != cal->file
                                   ? std::string(" (its link rate unused: ") +
                                         (c.link.source == "measured_h2d" ? "the scenario's measured_h2d wins)" : "above this link's nominal)")
                                   : "";
    o << "  calibration " << cal->file << ": " << (used.empty() ? "no figure this run uses" : used) << unused << "\n";
  }
  if (s.cards.size() > 1) card_lines(o, s, r);
  if (r.host_plan) {
    const auto& h = *r.host_plan;
    const std::string layers = h.layers() == 0   ? "no layer (-ngl " + std::to_string(s.model.layers) + ")"
                               : h.layers() == 1 ? "layer " + std::to_string(h.first_layer)
                                                 : "layers " + std::to_string(h.first_layer) + "-" + std::to_string(h.end_layer - 1);
    o << "  CPU   " << layers << (h.head_bytes > 0 ? ", the embedding table and the LM head" : ", the embedding table")
      << " from RAM (" << fixed(h.fixed / units::kGiB, 2)
      << " GiB" << (h.layers() == 0 ? "" : s.model.moe ? " with their KV and experts" : " with their KV") << "), busy "
      << fixed(100 * r.host_busy_s / std::max(r.makespan_s, 1e-12), 1) << "% of the run\n";
  }
  if (s.expert_memory.spilled)
    o << "  RAM   the experts (" << units::format_gib(sim::host_ram(s).experts) << ") exceed NUMA node 0 of " << s.host.name
      << " (" << units::format_gib(s.host.memory_bytes / s.host.numa_nodes) << "): spread over its " << s.host.numa_nodes
      << " nodes, read as interleaved (hardware.host.expert_memory)\n";
  o << "  VRAM  " << fixed(plan.card_total / units::kMiB, 0) << " MiB card - " << fixed(plan.others / units::kMiB, 0)
    << " others - " << fixed(plan.fixed / units::kMiB, 0) << " fixed = " << fixed(plan.free_at_start / units::kMiB, 0)
    << " MiB free" << (plan.free_measured ? " (measured)" : "") << (s.cards.size() > 1 ? " (card 0)" : "") << "\n";
  if (!s.model.moe) {
    o << "  dense model: no expert cache\n\n";
  } else if (!s.engine.expert_cache) {
    // Experts live with their layer: those of the GPU layers past --n-cpu-moe are in VRAM.
    // A tensor split's cards each hold a shard of the same experts: count them once.
    const bool sharded = s.engine.split == sim::Split::Tensor;
    std::int64_t on_gpu = 0;
    for (const auto& c : r.cards) on_gpu = sharded ? std::max(on_gpu, c.slots) : on_gpu + c.slots;
    const auto all = static_cast<std::int64_t>(s.model.moe->experts) * s.model.moe->layers;
    if (on_gpu >= all)
      o << "  experts all " << all << " in VRAM, with their layers" << (sharded ? " (each card a shard of each)" : "") << "\n\n";
    else
      o << "  experts " << on_gpu << " of " << all << " in VRAM (" << fixed(100.0 * static_cast<double>(on_gpu) / static_cast<double>(all), 1)
        << "%, with their layers); the rest in RAM, computed by the CPU\n\n";
  } else
    o << "  cache " << plan.slots << " slots of " << fixed(plan.slot_bytes / units::kMiB, 3) << " MiB ("
    << fixed(100 * plan.coverage(), 1) << "% of " << plan.total_experts << " experts, policy "
    << sim::to_string(s.engine.policy) << "), pre-filled in " << fixed(r.prefill_fill_s, 2) << " s; pcie_frac "
    << fixed(r.pcie_frac, 2)
    << host_split_text(s, r)
    << "\n\n";
  o << "  requests        " << r.completed << " completed, " << r.rejected() << " rejected"
    << (r.rejected() ? " (" + std::to_string(r.rejected_context) + " prompt over the context window, " +
                           (r.rejected_output ? std::to_string(r.rejected_output) + " prompt + output over it, " : std::string()) +
                           (r.rejected_pool ? std::to_string(r.rejected_pool) + " prompt over the KV pool, " : std::string()) +
                           std::to_string(r.rejected_queue) + " queue full)"
                     : std::string())
    << (r.truncated ? ", " + std::to_string(r.truncated) + " stopped at the full context window" : std::string())
    << "; " << r.generated_tokens << " tokens in " << fixed(r.makespan_s, 1) << " s ("
    << fixed(r.makespan_s > 0 ? static_cast<double>(r.generated_tokens) / r.makespan_s : 0.0, 1) << " tok/s)\n";
  if (r.completed == 0) {
    o << "  no request completed: nothing else to summarise\n";
    return o.str();
  }
  using S = sim::RequestSample;
  if (s.model.moe) {
    const auto hit = figure(r, &S::hit_rate), overflow = figure(r, &S::pcie_overflow);
    if (hit.empty())
      o << "  hit rate        none: no request had a decode step to look experts up\n";
    else
      o << "  hit rate        p50 " << fixed(100 * pct(hit, 0.5), 1) << "%  (p5 " << fixed(100 * pct(hit, 0.05), 1)
        << "%, p95 " << fixed(100 * pct(hit, 0.95), 1) << "%)\n"
        << "  PCIe overflow   p50 " << fixed(100 * pct(overflow, 0.5), 2) << "%  (p95 " << fixed(100 * pct(overflow, 0.95), 2)
        << "%, max " << fixed(100 * pct(overflow, 1), 2) << "%)\n";
  }
  const auto decode = figure(r, &S::decode_tok_s), ttft = figure(r, &S::ttft_s), tpot = figure(r, &S::decode_tok_s, true);
  if (decode.empty())
    o << "  decode tok/s    none: every request's one token came from its prefill\n";
  else
    o << "  decode tok/s    p50 " << fixed(pct(decode, 0.5), 1) << "  mean " << fixed(sim::mean(decode), 1) << "  p5 "
      << fixed(pct(decode, 0.05), 1) << "  p95 " << fixed(pct(decode, 0.95), 1) << "  (range "
      << fixed(pct(decode, 0), 0) << "-" << fixed(pct(decode, 1), 0) << ")\n";
  o << "  TTFT            p50 " << fixed(1e3 * pct(ttft, 0.5), 0) << " ms  p95 " << fixed(1e3 * pct(ttft, 0.95), 0) << " ms\n";
  if (tpot.empty())
    o << "  TPOT            none\n";
  else
    o << "  TPOT            p50 " << fixed(1e3 * pct(tpot, 0.5), 2) << " ms  p95 " << fixed(1e3 * pct(tpot, 0.95), 2) << " ms\n";
  o << "  queue           mean " << fixed(r.queue.mean, 2) << " waiting, max " << r.queue.max << "\n";
  if (s.engine.scheduling == sim::SlotScheduling::Batched) {
    const auto& b = r.batch;
    o << "  batching        mean " << fixed(b.steps ? static_cast<double>(b.requests) / static_cast<double>(b.steps) : 0.0, 2)
      << " requests per decode step, max " << b.max << " (" << b.steps << " steps)";
    if (s.engine.kv_pool)
      o << "; KV pool " << r.plan.kv_blocks << " blocks of " << s.engine.kv_pool->block_size << " tokens ("
        << fixed(r.plan.kv_cache / units::kGiB, 2) << " GiB), peak " << b.kv_blocks_peak << ", " << b.preempted << " preempted";
    o << "\n";
  }
  if (r.reused_tokens > 0)
    o << "  prefix reuse    " << r.prefix_hits << " requests: " << r.reused_tokens << " prompt tokens reused + "
      << r.prefilled_tokens << " read\n";
  const auto& c = r.decode;
  const double t = c.total();
  if (r.decode_steps == 0)
    o << "  decode step     none\n";
  else
    o << "  decode step     " << fixed(t / static_cast<double>(r.decode_steps) * 1e3, 2) << " ms: compute "
      << fixed(100 * c.compute / t, 0) << "%, transfer " << fixed(100 * c.transfer / t, 0) << "%, stall "
      << fixed(100 * c.stall / t, 0) << "%, host experts " << fixed(100 * c.cpu_experts / t, 0) << "%, launch/sync "
      << fixed(100 * c.launch_sync / t, 0) << "%"
      << (c.cpu_layers > 0 ? ", CPU layers " + fixed(100 * c.cpu_layers / t, 0) + "%" : std::string()) << "\n";
  // A preset with no fixed cost per step or layer (hybrid-cpu-experts: none measured) times a
  // short step as its bytes alone. The other presets' measured per-step costs (vLLM 0.3 ms, the
  // expert cache 1.4 ms) would be 6% or more of a step under 5 ms: say the speed is an upper bound.
  if (r.decode_steps > 0 && s.engine.physics.no_fixed_costs() && t / static_cast<double>(r.decode_steps) < kShortStep_s)
    o << "  fixed costs     none in this engine preset (none measured): a step this short is its bytes alone, "
         "so its speed is an upper bound\n";
  if (r.contended_steps > 0 && r.contended_step_s / static_cast<double>(r.contended_steps) > 1.005 * t / static_cast<double>(r.decode_steps))
    // the breakdown above is each slot's step alone
    o << "  overlapped      those are a step's own costs, alone on the card; with the slots sharing it, a step took "
      << fixed(r.contended_step_s / static_cast<double>(r.contended_steps) * 1e3, 2) << " ms from start to end\n";
  o << "  GPU             " << (p.cards > 1 ? "(" + std::to_string(p.cards) + " cards: mean util, summed power) " : std::string())
    << "util " << fixed(100 * p.util, 1) << "% (useful " << fixed(100 * p.useful_fraction, 1) << "%), mean power "
    << fixed(p.avg_power_w, 0) << " W"
    << (p.power_capped ? " (TDP-limited; model " + fixed(p.uncapped_power_w, 0) + " W)" : std::string()) << ", "
    << fixed(p.j_per_token, 2) << (s.gpu.spec.unified() ? " J/token (the whole machine's power figures)\n" : " J/token (GPU boards only)\n");
  if (p.host_power_w)
    o << "  host CPU        busy " << fixed(100 * p.host_busy_share, 1) << "% of the run, mean power " << fixed(*p.host_power_w, 0)
      << " W (CPU packages); with the GPU boards "
      << (p.j_per_token_with_host ? fixed(*p.j_per_token_with_host, 2) + " J/token\n" : std::string("no token\n"));
  o << "  simulation      " << fixed(wall, 2) << " s wall, " << r.decode_steps << " steps, " << r.simgrid_activities
    << " SimGrid activities\n";
  return o.str();
}

// One JSON line per request.
std::string request_json_line(const sim::RequestRecord& r) {
  json::Writer j(false);
  j.begin_object()
      .field("id", static_cast<std::int64_t>(r.id))
      .field("client", r.client)
      .field("prompt_tokens", r.prompt_tokens)
      .field("gen_tokens", r.gen_tokens)
      .field("hit_rate", r.hit_rate)
      .field("pcie_overflow", r.pcie_overflow)
      .field("decode_tok_s", r.decode_tok_s)
      .field("ttft_s", r.ttft_s)
      .field("prefill_s", r.prefill_s)
      .field("e2e_s", r.end_s - r.arrival_s)
      .field("arrival_s", r.arrival_s)
      .field("request_share", r.request_share)
      .field("steps", r.steps)
      .field("lookups", r.lookups)
      .field("routed", r.routed)
      .field("distinct_lookups", r.distinct_lookups)
      .field("distinct_hits", r.distinct_hits)
      .field("pcie_reads", r.pcie_reads)
      .field("reused_tokens", r.reused_tokens)
      .end_object();
  return j.str() + "\n";
}

}  // namespace vramsim::reports
