#include "sim/request_runner.h"

#include <algorithm>
#include <cmath>

namespace vramsim::sim {

double conditional_acceptance(int draft_tokens, double acceptance) {
  if (draft_tokens <= 0 || acceptance <= 0) return 0.0;
  const double target = draft_tokens * acceptance;
  double lo = 0, hi = 1;
  for (int i = 0; i < 100; ++i) {
    double a = 0.5 * (lo + hi), sum = 0, power = 1;
    for (int k = 0; k < draft_tokens; ++k) sum += (power *= a);
    (sum < target ? lo : hi) = a;
  }
  return 0.5 * (lo + hi);
}

RequestRunner::RequestRunner(const Scenario& s, std::vector<Stage> stages, const LayerPopularity& popularity,
                             std::uint64_t request_id, std::int64_t prompt_tokens, std::int64_t gen_tokens,
                             Split split)
    : s_(s),
      stages_(std::move(stages)),
      side_by_side_(split == Split::Tensor),
      expert_split_(split == Split::Expert),
      popularity_(popularity),
      first_moe_(s.model.first_moe_layer()),
      rng_(CounterRng(s.seed).with(0x53544550ULL).with(request_id)),
      prompt_tokens_(prompt_tokens),
      gen_tokens_(gen_tokens) {
  if (s.model.moe) {
    const auto& routing = s.model.moe->routing;  // absent: no per-request preference, no locality
    router_.emplace(popularity,
                    routing ? RoutingParams{routing->request_share_median, routing->request_share_sigma, routing->locality}
                            : RoutingParams{0.0, 0.0, 0.0},
                    CounterRng(s.seed).with(0x524F555445ULL), request_id);
    seen_.assign(static_cast<std::size_t>(popularity.front().experts()), 0);
  }
  if (s.engine.speculative) accept_probability_ = conditional_acceptance(s.engine.draft_tokens, s.engine.acceptance);
}

namespace {
// A tensor split's cards route the same tokens: the experts are looked up once, on the first
// card, and every other card computes its shard of that same lookup.
class SharedRouting {
 public:
  explicit SharedRouting(int layers) : layers_(static_cast<std::size_t>(layers)) {}
  // The routing card (`routes`) keeps its lookup of `layer`; the others take it.
  void share(bool routes, int layer, LayerExperts& e) {
    LayerExperts& kept = layers_[static_cast<std::size_t>(layer)];
    if (routes)
      kept = e;
    else
      e = kept;
  }

 private:
  std::vector<LayerExperts> layers_;
};

// One stage's summed layers, finished and added to the step: never faster than its FLOPs (binds
// only for many verified positions); side by side (a tensor split) every card runs the whole
// step, so its own link work floors it (a pipeline's floor is pipeline_link_floor, once the
// stages are in); the host CPU's stage is CPU time. A pipeline sums its stages; side by side,
// the slowest card sets the pace.
void add_stage(StepResult& out, StepCosts costs, const Stage& stage, int positions, bool side_by_side) {
  // Its kernels, when compute-bound, keep the launch queue ahead of the GPU: their per-layer
  // launches are hidden, as a prefill micro-batch's are (StepModel::prefill).
  // The host's stage streamed to the first card (a batch of 32 positions or more, llama.cpp):
  // link-bound and that card's work, not CPU time (engine.cc runs it there).
  const bool streamed = stage.card < 0 && host_work_on_card(costs);
  const double floor = streamed ? 0.0 : stage.model->compute_floor(positions);
  const double launches = stage.model->layer_launches();
  if (!streamed && floor >= costs.compute + launches) {
    costs.compute = floor;
    costs.launch_sync = std::max(0.0, costs.launch_sync - launches);
  }
  if (side_by_side) costs.transfer += std::max(0.0, costs.link_busy - costs.total());
  if (stage.card < 0 && !streamed) costs = as_cpu_layers(costs);
  if (!side_by_side)
    out.costs += costs;
  else if (costs.total() > out.costs.total())
    out.costs = costs;
  out.stage_costs.push_back(costs);
}
}  // namespace

void pipeline_link_floor(StepResult& out) {
  double start = 0, end = 0;
  for (const StepCosts& c : out.stage_costs) {
    end = std::max(end, start + c.link_busy);
    start += c.total();
  }
  const double wait = std::max(0.0, end - start);
  if (wait <= 0) return;
  out.costs.transfer += wait;
  out.stage_costs.back().transfer += wait;
}

void RequestRunner::take_prefill_token() {
  admit_prompt_experts(prefill_tokens());
  if (generated_ < gen_tokens_) ++generated_;
  recomputed_ = 0;  // the recompute, if any, is done
}

void RequestRunner::admit_prompt_experts(std::int64_t tokens) {
  if (!router_ || tokens <= 0) return;
  constexpr std::uint64_t kPromptStream = 0x50524F4D5054ULL;  // "PROMPT": apart from the step streams
  const CounterRng prompt_rng = rng_.with(kPromptStream).with(counters_.steps);  // a recompute draws afresh
  // Each card's MoE layers in order (an expert split, whose caches admit nothing, is refused a
  // copy-in policy); a tensor split's first card routes for all (step's SharedRouting).
  for (const Stage& stage : stages_) {
    if (copies_misses(stage))
      for (int layer = std::max(stage.first_layer, first_moe_); layer < stage.end_layer; ++layer) {
        const int moe_layer = layer - first_moe_;
        const auto touched = popularity_[static_cast<std::size_t>(moe_layer)].touched_by(static_cast<double>(tokens));
        const CounterRng layer_rng = prompt_rng.with(static_cast<std::uint64_t>(moe_layer));
        const int local = cache_layer(stage, layer);
        for (int e = static_cast<int>(touched->size()); e-- > 0;) {
          if (layer_rng.uniform(static_cast<std::uint64_t>(e)) >= (*touched)[static_cast<std::size_t>(e)]) continue;
          if (stage.cache->resident(local, e))
            stage.cache->touch(local, e);
          else
            stage.cache->insert(local, e);
        }
      }
    if (side_by_side_) break;
  }
}

StepCosts RequestRunner::prefill(std::vector<StepCosts>* per_stage) {
  return prefill_of({prefill_sequence()}, per_stage);
}

StepCosts RequestRunner::prefill_of(const std::vector<PrefillSequence>& sequences, std::vector<StepCosts>* per_stage) const {
  std::int64_t tokens = 0;
  for (const auto& q : sequences) tokens += q.tokens;
  // Expected distinct experts touched per layer: 1 - (1 - pi)^P for each, by the whole pass
  // (P its tokens) and by each of its micro-batches: `full` of `size` tokens and a last one of
  // `rest` (llama.cpp reads, or copies in, what each one touches).
  auto pass_on = [&](const StepModel& model, int first_layer, int end_layer, auto&& resident_here) {
    PrefillPass pass;
    pass.sequences = sequences;
    if (!s_.model.moe) return pass;
    const StepModel::UbatchSplit split = model.ubatch_split(tokens);
    const std::int64_t rest = split.rest;
    for (int layer = std::max(first_layer, first_moe_); layer < end_layer; ++layer) {
      const Popularity& pop = popularity_[static_cast<std::size_t>(layer - first_moe_)];
      const auto touched = pop.touched_by(static_cast<double>(tokens));
      const auto by_full = pop.touched_by(static_cast<double>(split.size));
      const auto by_rest = rest > 0 ? pop.touched_by(static_cast<double>(rest)) : nullptr;
      bool gpu_experts = false;
      for (std::size_t e = 0; e < touched->size(); ++e) {
        const double last = rest > 0 ? (*by_rest)[e] : 0.0;
        if (resident_here(layer, static_cast<int>(e))) {
          gpu_experts = true;
          pass.resident_full_ubatch += (*by_full)[e];
          pass.resident_last_ubatch += last;
        } else {
          pass.missing_experts += (*touched)[e];
          pass.missing_full_ubatch += (*by_full)[e];
          pass.missing_last_ubatch += last;
          pass.missing_routed_per_token += std::min(pop.inclusion()[e], 1.0);
        }
      }
      pass.gpu_expert_layers += gpu_experts ? 1 : 0;
      ++pass.moe_layers;
    }
    return pass;
  };
  StepCosts total;
  if (expert_split_) {
    // The first card runs the prompt's GEMMs; each card's touched experts are resident in its
    // cache or computed by the host; per layer the hidden states go to every card and back.
    const auto n = static_cast<int>(stages_.size());
    const StepModel& first = *stages_.front().model;
    total = first.prefill(pass_on(first, 0, s_.model.layers, [&](int layer, int e) {
      return stages_[static_cast<std::size_t>(e % n)].cache->resident(layer - first_moe_, e / n);
    }));
    double exchange = 0;
    for (std::size_t c = 1; c < exchange_s_.size(); ++c) exchange = std::max(exchange, exchange_s_[c]);
    total.transfer += exchange * (s_.model.layers - first_moe_);  // dense leading layers exchange nothing
    if (per_stage) {
      per_stage->assign(stages_.size(), StepCosts{});
      per_stage->front() = total;
    }
    return total;
  }
  for (const Stage& stage : stages_) {
    const StepCosts c = stage.model->prefill(pass_on(*stage.model, stage.first_layer, stage.end_layer, [&](int layer, int e) {
      return stage.cache ? stage.cache->resident(cache_layer(stage, layer), e) : layer >= stage.cpu_moe_end;
    }));
    if (per_stage) per_stage->push_back(c);
    if (!side_by_side_)
      total += c;
    else if (c.total() > total.total())
      total = c;  // side by side: the slowest card's
  }
  return total;
}

// Routes one MoE layer's verified positions and looks their experts up in the stage's cache.
void RequestRunner::route_layer(const Stage& stage, int layer, int tokens, LayerExperts& e) {
  ExpertCache* cache = stage.cache;
  const int local = cache_layer(stage, layer);
  const bool in_place = layer >= stage.cpu_moe_end;  // without a cache: experts with their layer
  const bool tracks_use = cache && cache->traits().tracks_use();  // pinned profiles keep no recency
  const bool in_vram = stage.card >= 0;  // the hit rate's hits: a CPU layer's experts are in place, in RAM
  ++stamp_;
  missed_.clear();
  for (int t = 0; t < tokens; ++t) {
    for (int expert : router_->route(layer - first_moe_, routed_tokens_ + static_cast<std::uint64_t>(t))) {
      const bool hit = cache ? cache->resident(local, expert) : in_place;
      counters_.lookup_hits += hit && in_vram ? 1 : 0;
      auto& seen = seen_[static_cast<std::size_t>(expert)];
      if (seen == stamp_) continue;  // already looked up in this layer and step
      seen = stamp_;
      if (hit) {
        ++e.hits;
        if (tracks_use) cache->touch(local, expert);
      } else {
        ++e.misses;
        missed_.push_back(expert);
      }
    }
  }
  counters_.lookups += static_cast<std::int64_t>(tokens) * s_.model.moe->experts_per_token;
  counters_.distinct_lookups += e.hits + e.misses;
  counters_.distinct_hits += in_vram ? e.hits : 0;
  if (e.misses > 0) {
    if (copies_misses(stage)) {
      counters_.copies += e.misses;
    } else {
      e.pcie_reads = stage.model->split_misses(e.misses);
      counters_.pcie_reads += e.pcie_reads;
      counters_.cpu_experts += e.misses - e.pcie_reads;
    }
    if (cache && cache->admits_misses())
      for (int expert : missed_) cache->insert(local, expert);
  }
}

void RequestRunner::step_expert_split(int tokens, int drafts, std::int64_t kv_tokens, StepResult& out) {
  const int n = static_cast<int>(stages_.size());
  const StepModel& main = *stages_.front().model;
  out.stage_costs.assign(stages_.size(), StepCosts{});
  out.exchanges.assign(stages_.size(), 0);
  out.costs = main.step_fixed(tokens, drafts);
  out.stage_costs.front() = out.costs;
  const StepCosts attention = main.layer(LayerExperts{}, tokens, kv_tokens);
  for (int layer = 0; layer < s_.model.layers; ++layer) {
    if (layer < first_moe_) {  // a dense layer: the first card alone
      out.stage_costs.front() += attention;
      out.costs += attention;
      continue;
    }
    card_experts_.assign(stages_.size(), LayerExperts{});
    ++stamp_;
    for (int t = 0; t < tokens; ++t) {
      for (int expert : router_->route(layer - first_moe_, routed_tokens_ + static_cast<std::uint64_t>(t))) {
        const int card = expert % n;
        const bool hit = stages_[static_cast<std::size_t>(card)].cache->resident(layer - first_moe_, expert / n);
        counters_.lookup_hits += hit ? 1 : 0;
        auto& seen = seen_[static_cast<std::size_t>(expert)];
        if (seen == stamp_) continue;
        seen = stamp_;
        ++(hit ? card_experts_[static_cast<std::size_t>(card)].hits : card_experts_[static_cast<std::size_t>(card)].misses);
      }
    }
    counters_.lookups += static_cast<std::int64_t>(tokens) * s_.model.moe->experts_per_token;
    // The host's miss capacity is one pool for every card; what it cannot take overflows to
    // each card's own PCIe link.
    int host_budget = main.host_expert_slots();
    StepCosts layer_costs = attention;
    StepCosts slowest;
    double longest_exchange = 0;
    for (int c = 0; c < n; ++c) {
      LayerExperts& e = card_experts_[static_cast<std::size_t>(c)];
      counters_.distinct_lookups += e.hits + e.misses;
      counters_.distinct_hits += e.hits;
      const int host = std::min(e.misses, host_budget);
      host_budget -= host;
      e.pcie_reads = e.misses - host;
      counters_.pcie_reads += e.pcie_reads;
      counters_.cpu_experts += host;
      if (e.hits + e.misses == 0) continue;
      const StepModel& model = *stages_[static_cast<std::size_t>(c)].model;
      StepCosts work = model.layer(e, tokens, c == 0 ? kv_tokens : 0);
      if (c == 0) work -= attention;  // the first card's experts only
      out.stage_costs[static_cast<std::size_t>(c)] += work;
      if (c > 0) {
        work.transfer += exchange_s_.at(static_cast<std::size_t>(c));
        ++out.exchanges[static_cast<std::size_t>(c)];
        longest_exchange = std::max(longest_exchange, exchange_s_.at(static_cast<std::size_t>(c)));
      }
      if (work.total() > slowest.total()) slowest = work;
    }
    out.stage_costs.front() += attention;
    layer_costs += slowest;
    out.costs += layer_costs;
    out.exchange_s += longest_exchange;
  }
}

StepResult RequestRunner::step(bool keep_layers) {
  StepResult out;
  const int drafts = next_drafts();
  const int tokens = 1 + drafts;  // verified positions
  out.positions = tokens;
  out.drafts = drafts;
  const std::int64_t kv_tokens = attended_tokens(s_.model, prompt_tokens_ + generated_);  // KV positions a layer reads

  if (expert_split_) {
    step_expert_split(tokens, drafts, kv_tokens, out);
  } else {
  out.stage_costs.reserve(stages_.size());
  SharedRouting routed(side_by_side_ && router_ ? s_.model.layers : 0);
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const Stage& stage = stages_[i];
    StepCosts costs = stage.model->step_fixed(tokens, drafts);
    const bool routes = router_ && (!side_by_side_ || i == 0);
    for (int layer = stage.first_layer; layer < stage.end_layer; ++layer) {
      LayerExperts e;
      if (routes && layer >= first_moe_) route_layer(stage, layer, tokens, e);  // dense layers route nothing
      if (side_by_side_ && router_ && layer >= first_moe_) routed.share(routes, layer, e);
      StepCosts layer_costs = stage.model->layer(e, tokens, kv_tokens);
      costs += layer_costs;
      if (keep_layers) out.layers.push_back(LayerTrace{layer_costs, e});
    }
    add_stage(out, costs, stage, tokens, side_by_side_);
  }
  if (!side_by_side_) pipeline_link_floor(out);
  }
  out.tokens_out = advance(tokens, drafts);
  return out;
}

int RequestRunner::advance(int tokens, int drafts) {
  CounterRng step_rng = rng_.with(static_cast<std::uint64_t>(counters_.steps));
  routed_tokens_ += static_cast<std::uint64_t>(tokens);
  // Drafts accepted: leading successes, each with the conditional acceptance probability.
  int accepted = 0;
  while (accepted < drafts && step_rng.uniform(1000 + static_cast<std::uint64_t>(accepted)) < accept_probability_)
    ++accepted;
  counters_.drafted += drafts;
  counters_.accepted += accepted;
  const int out = static_cast<int>(std::min<std::int64_t>(1 + accepted, gen_tokens_ - generated_));
  generated_ += out;
  ++counters_.steps;
  return out;
}

// Routes one MoE layer for every request of the batch: each request's own look-ups and
// distinct experts (its counters), the union's hits and misses (the layer's cost).
void BatchStep::route_layer(const std::vector<RequestRunner*>& batch, const Stage& stage, int layer, LayerExperts& e) {
  const RequestRunner& lead = *batch.front();
  ExpertCache* cache = stage.cache;
  const int local = lead.cache_layer(stage, layer);
  const bool in_place = layer >= stage.cpu_moe_end;
  const bool tracks_use = cache && cache->traits().tracks_use();
  const bool in_vram = stage.card >= 0;  // as in RequestRunner::route_layer
  if (seen_.size() < lead.seen_.size()) seen_.assign(lead.seen_.size(), 0);
  ++stamp_;
  missed_.clear();
  for (RequestRunner* r : batch) {
    ++r->stamp_;
    const int tokens = 1 + r->next_drafts();  // this request's verified positions
    int distinct = 0, hits = 0;
    for (int t = 0; t < tokens; ++t) {
      for (int expert : r->router_->route(layer - lead.first_moe_, r->routed_tokens_ + static_cast<std::uint64_t>(t))) {
        const bool hit = cache ? cache->resident(local, expert) : in_place;
        r->counters_.lookup_hits += hit && in_vram ? 1 : 0;
        auto& mine = r->seen_[static_cast<std::size_t>(expert)];
        if (mine == r->stamp_) continue;  // this request already looked it up in this layer and step
        mine = r->stamp_;
        ++distinct;
        hits += hit && in_vram ? 1 : 0;
        auto& ours = seen_[static_cast<std::size_t>(expert)];
        if (ours == stamp_) continue;  // another request of the batch did
        ours = stamp_;
        if (hit) {
          ++e.hits;
          if (tracks_use) cache->touch(local, expert);
        } else {
          ++e.misses;
          missed_.emplace_back(expert, r);
        }
      }
    }
    r->counters_.lookups += static_cast<std::int64_t>(tokens) * r->s_.model.moe->experts_per_token;
    r->counters_.distinct_lookups += distinct;
    r->counters_.distinct_hits += hits;
    request_experts_ += distinct;
  }
  union_experts_ += e.hits + e.misses;
  ++layer_steps_;
  if (e.misses == 0) return;
  const bool copies = lead.copies_misses(stage);
  if (!copies) e.pcie_reads = stage.model->split_misses(e.misses);
  // The host takes the first misses, the rest overflow to PCIe (StepModel::split_misses);
  // each is counted for the request that touched it first.
  for (std::size_t i = 0; i < missed_.size(); ++i) {
    RequestCounters& c = missed_[i].second->counters_;
    if (copies)
      ++c.copies;
    else if (static_cast<int>(i) >= e.misses - e.pcie_reads)
      ++c.pcie_reads;
    else
      ++c.cpu_experts;
  }
  if (cache && cache->admits_misses())
    for (const auto& [expert, r] : missed_) cache->insert(local, expert);
}

StepResult BatchStep::run(const std::vector<RequestRunner*>& batch, bool keep_layers) {
  const RequestRunner& lead = *batch.front();
  const Scenario& s = lead.s_;
  // Each request verifies 1 + its own drafts; the draft passes run once for the batch, as many
  // as the longest draft.
  int positions = 0, drafts = 0;
  for (const RequestRunner* r : batch) {
    positions += 1 + r->next_drafts();
    drafts = std::max(drafts, r->next_drafts());
  }
  // KV is read per request at its own context (each capped by any sliding window): the sum.
  std::int64_t kv_tokens = 0;
  for (const RequestRunner* r : batch) kv_tokens += attended_tokens(s.model, r->context());
  StepResult out;
  out.positions = positions;
  out.drafts = drafts;
  out.stage_costs.reserve(lead.stages_.size());
  SharedRouting routed(lead.side_by_side_ && lead.router_ ? s.model.layers : 0);
  for (std::size_t i = 0; i < lead.stages_.size(); ++i) {
    const Stage& stage = lead.stages_[i];
    StepCosts costs = stage.model->step_fixed(positions, drafts);
    const bool routes = lead.router_ && (!lead.side_by_side_ || i == 0);
    for (int layer = stage.first_layer; layer < stage.end_layer; ++layer) {
      LayerExperts e;
      if (routes && layer >= lead.first_moe_) route_layer(batch, stage, layer, e);  // dense layers route nothing
      if (lead.side_by_side_ && lead.router_ && layer >= lead.first_moe_) routed.share(routes, layer, e);
      StepCosts layer_costs = stage.model->layer(e, positions, kv_tokens);
      costs += layer_costs;
      if (keep_layers) out.layers.push_back(LayerTrace{layer_costs, e});
    }
    add_stage(out, costs, stage, positions, lead.side_by_side_);
  }
  if (!lead.side_by_side_) pipeline_link_floor(out);
  for (RequestRunner* r : batch) {
    const int own = r->next_drafts();
    out.tokens_out += r->advance(1 + own, own);
  }
  return out;
}

}  // namespace vramsim::sim
