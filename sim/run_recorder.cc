#include "sim/run_recorder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string_view>

#include "sim/fabric.h"
#include "sim/platform.h"
#include "sim/request_queue.h"

namespace vramsim::sim {

RunRecorder::RunRecorder(const Scenario& s, const RunOptions& o, RunResult& out) : s_(s), options_(o), out_(out) {
  out_.card_use.assign(out_.cards.size(), RunResult::CardUse{});
  link_bytes_.assign(out_.cards.size(), 0.0);
  client_use_.assign(static_cast<std::size_t>(std::max(0, s.workload.clients)), ClientUse{});
}

void RunRecorder::progress() const {
  if (options_.on_progress) options_.on_progress(static_cast<int>(out_.completed + out_.rejected()), s_.workload.requests);
}

void RunRecorder::sent(int client, double now_s) {
  if (client >= 0 && client_use_[static_cast<std::size_t>(client)].first_send < 0)
    client_use_[static_cast<std::size_t>(client)].first_send = now_s;
}

void RunRecorder::rejected(const RejectedRequest& r) {
  const std::string_view reason = r.reason;
  if (reason == "prompt_exceeds_context")
    ++out_.rejected_context;
  else if (reason == "prompt_plus_output_exceeds_context")
    ++out_.rejected_output;
  else if (reason == "prompt_exceeds_kv_pool")
    ++out_.rejected_pool;
  else if (reason == "queue_full")
    ++out_.rejected_queue;
  else
    throw std::logic_error("a rejection for an unknown reason: " + std::string(reason));
  if (options_.on_reject) options_.on_reject(r);
  progress();
}

RequestRecord RunRecorder::start(const Job& job, RequestRunner& runner, bool prefix_cached, double now_s) {
  RequestRecord rec;
  rec.id = job.id;
  rec.client = job.client;
  rec.prompt_tokens = job.shape.prompt_tokens;
  rec.gen_tokens = job.shape.gen_tokens;
  rec.arrival_s = job.arrival;
  rec.start_s = now_s;
  if (prefix_cached) {
    rec.reused_tokens = std::min(job.shape.prefix_tokens, rec.prompt_tokens - 1);
    runner.set_reused(rec.reused_tokens);
    out_.reused_tokens += rec.reused_tokens;
    out_.prefix_hits += rec.reused_tokens > 0 ? 1 : 0;
  }
  return rec;
}

void RunRecorder::complete(const Job& job, RequestRecord& rec, const RequestRunner& runner, std::int64_t prefilled,
                           double now_s) {
  rec.end_s = now_s;
  const auto& c = runner.counters();
  rec.lookups = c.lookups;
  rec.lookup_hits = c.lookup_hits;
  // The engine's "routed": top-k look-ups per MoE layer for every decoded token (480 per
  // token in the case study; the first token is the prefill's), the denominator of its PCIe
  // overflow ratio. A dense model routes nothing.
  rec.routed = s_.model.moe ? static_cast<std::int64_t>(s_.model.moe->experts_per_token) * s_.model.moe->layers * runner.decoded()
                            : 0;
  rec.distinct_lookups = c.distinct_lookups;
  rec.distinct_hits = c.distinct_hits;
  rec.pcie_reads = c.pcie_reads;
  rec.steps = c.steps;
  rec.drafted = c.drafted;
  rec.accepted = c.accepted;
  rec.request_share = runner.alpha();
  // A request that looked no expert up (a dense model, or an MoE request without a decode
  // step) has no figure: NaN, left out of the percentiles, null in the JSON.
  const double none = std::numeric_limits<double>::quiet_NaN();
  rec.hit_rate = c.lookups ? static_cast<double>(c.lookup_hits) / static_cast<double>(c.lookups) : none;
  rec.pcie_overflow = rec.routed ? static_cast<double>(c.pcie_reads) / static_cast<double>(rec.routed) : none;
  // The tokens after the first (the prefill's) over the time from the first to the last:
  // 1 / TPOT. None for a one-token request.
  const double decode_time = rec.end_s - rec.first_token_s;
  rec.decode_tok_s = runner.decoded() > 0 && decode_time > 0 ? static_cast<double>(runner.decoded()) / decode_time : none;
  rec.ttft_s = rec.first_token_s - rec.arrival_s;
  out_.generated_tokens += runner.generated();
  ++out_.completed;
  out_.samples.push_back(RequestSample{static_cast<float>(rec.hit_rate), static_cast<float>(rec.pcie_overflow),
                                       static_cast<float>(rec.decode_tok_s), static_cast<float>(rec.ttft_s),
                                       static_cast<float>(rec.end_s - rec.arrival_s),
                                       static_cast<float>(rec.prefill_s > 0 ? static_cast<double>(prefilled) / rec.prefill_s : 0)});
  if (job.client >= 0) {
    auto& use = client_use_[static_cast<std::size_t>(job.client)];
    use.tokens += runner.generated();
    use.last_end = rec.end_s;
  }
  if (options_.on_request) options_.on_request(rec);
  progress();
}

void RunRecorder::kernel_on(double now_s) {
  if (resident_slots_++ == 0) resident_since_ = now_s;
}

void RunRecorder::kernel_off(double now_s) {
  if (--resident_slots_ > 0) return;
  const double span = now_s - resident_since_;
  out_.gpu_resident_s += span;
  out_.card_use.front().busy_s += span;  // one card: overlapped slots are single-card only
}

void RunRecorder::account_gpu(const StepCosts& c, bool staged, bool resident_measured) {
  if (!resident_measured) out_.gpu_resident_s += c.total() - c.host_idle;
  out_.gpu_busy_useful_s += c.compute;
  if (!staged) use_card(0, c, resident_measured);
}

void RunRecorder::use_card(int card, const StepCosts& c, bool resident_measured) {
  // A card index past the cards is a placement the scenario decoder should have refused (CPU
  // layers under a row split): stop rather than write past the accounting.
  if (card < 0 || static_cast<std::size_t>(card) >= out_.card_use.size())
    throw std::logic_error("a step charged to card " + std::to_string(card) + " of " + std::to_string(out_.card_use.size()));
  auto& u = out_.card_use[static_cast<std::size_t>(card)];
  if (!resident_measured) u.busy_s += c.total() - c.host_idle;
  u.compute_s += c.compute;
  u.vram_bytes += c.vram_bytes;
  u.flops += c.flops;
  link_bytes_[static_cast<std::size_t>(card)] += c.pcie_bytes;
}

void RunRecorder::trace(std::string name, std::string track, double start_s, double duration_s) {
  out_.trace.push_back({std::move(name), std::move(track), start_s, duration_s});
}

void RunRecorder::trace_step(double t0, const StepResult& step, const StepCosts& fixed, const std::string& suffix) {
  double t = t0;
  trace("host step work", "host" + suffix, t, fixed.host_idle);
  t += fixed.host_idle;
  trace("LM head + draft", "GPU" + suffix, t, fixed.total() - fixed.host_idle);
  t += fixed.total() - fixed.host_idle;
  for (std::size_t l = 0; l < step.layers.size(); ++l) {
    const auto& layer = step.layers[l];
    const auto& c = layer.costs;
    const std::string name = "layer " + std::to_string(l);
    trace(name + " compute", "GPU" + suffix, t, c.compute + c.launch_sync);
    const double after = t + c.compute + c.launch_sync;
    if (c.stall > 0) trace(name + " bubble (" + std::to_string(layer.experts.misses) + " misses)", "GPU stall" + suffix, after, c.stall);
    if (c.cpu_experts > 0) trace(name + " host experts", "GPU stall" + suffix, after + c.stall, c.cpu_experts);
    if (c.transfer > 0)
      trace(name + " PCIe reads (" + std::to_string(layer.experts.pcie_reads) + ")", "PCIe" + suffix, after + c.stall, c.transfer);
    t += c.total();
  }
}

void RunRecorder::finish(double makespan_s, const PlatformSpec& spec, const Fabric& fabric) {
  out_.makespan_s = makespan_s;
  queue_meter_.finish(makespan_s);
  out_.queue = RunResult::QueueLength{queue_meter_.mean(), queue_meter_.max(), queue_meter_.interval_s(), queue_meter_.series()};
  for (const auto& c : client_use_)
    out_.client_tok_s.push_back(c.last_end > c.first_send ? static_cast<double>(c.tokens) / (c.last_end - c.first_send) : 0.0);
  out_.simgrid_activities += fabric.communications();
  // Each link's traffic in its busier direction: the expert path's bytes (inside the step
  // model's times; host to card, the activations' return being small) plus what the fabric
  // carried (hand-offs, all-reduces) in each direction.
  for (std::size_t c = 0; c < spec.card_links.size(); ++c) {
    const int card = static_cast<int>(c);
    out_.links.push_back(LinkUse{spec.card_links[c].name + " (" + s_.cards[c].link.spec.name + ")", spec.card_links[c].bandwidth,
                                 std::max(link_bytes_[c] + fabric.card_link_down(card), fabric.card_link_up(card))});
  }
  if (spec.pcie_switch)
    out_.links.push_back(LinkUse{"switch uplink (" + s_.pcie_switch->spec.name + ")", spec.pcie_switch->bandwidth,
                                 std::max(fabric.switch_down() + std::accumulate(link_bytes_.begin(), link_bytes_.end(), 0.0),
                                          fabric.switch_up())});
  if (spec.gpu_link)
    out_.links.push_back(LinkUse{"card-to-card (" + s_.gpu_link->spec.name + ")", spec.gpu_link->bandwidth, fabric.gpu_link_busiest()});
}

}  // namespace vramsim::sim
