// vLLM (`vllm serve`): every weight on the GPU(s) (one, or a tensor split's), a paged KV pool
// allocated at start, continuous batching.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <fmt/format.h>

#include "core/units.h"

#include "sim/engines/engine_family.h"
#include "workloads/formats.h"
#include "workloads/memory_budget.h"

namespace vramsim::sim::engines {
namespace {

// vLLM serves a checkpoint as it is, or a 16-bit one quantized online to FP8 (--quantization
// fp8), every weight alike: the flags printed say no more. A GGUF format goes through its
// experimental GGUF loader, whose kernels nothing here measured. REQUIRES: s's formats decoded.
void check_served_formats(config::MapReader& e, const EngineSetup& s, const workloads::ModelSpec& model) {
  if (!e.has("weights")) return;  // the checkpoint's own format
  const std::string native = workloads::upper(model.native_format);
  const std::string experts = workloads::upper(s.expert_format.name), other = workloads::upper(s.other_format.name);
  const bool sixteen_bit = native == "BF16" || native == "F16";
  auto served = [&](const std::string& f) { return f == native || (sixteen_bit && f == "FP8"); };
  if (experts != other || !served(experts)) {
    const bool experts_refused = !served(experts);
    const char* key = experts_refused ? "experts" : "other";
    const std::string& name = experts_refused ? experts : other;
    const bool gguf = name.starts_with("Q") || name.starts_with("IQ");
    const config::Node& weights = e.any("weights");
    const config::Node* at = weights.find(key);
    config::fail(at ? *at : weights, std::string("engine.weights.") + key,
                 "vLLM is modelled serving the checkpoint as it is (" + model.native_format + ")" +
                     (sixteen_bit ? " or quantized online to FP8 (--quantization fp8)" : std::string()) +
                     ", every weight alike; not " +
                     (experts == other ? name : "experts " + experts + " with other weights " + other) +
                     (gguf ? ": a GGUF file runs through vLLM's experimental GGUF loader, which is not modelled "
                             "(--engine llama.cpp runs GGUF formats)"
                           : std::string()));
  }
}

// engine.kv_pool: the plans of vram_plan.h's paged-pool paragraph, one per card.
Result<std::vector<VramPlan>> plan_paged(const Scenario& s) {
  const auto& m = s.model;
  const auto& pool = *s.engine.kv_pool;
  const int n = static_cast<int>(s.cards.size());
  const double shard = 1.0 / n;
  const auto [head, per_layer] = layer_bytes(s);
  const std::string util = fmt::format("{:.2f}", pool.gpu_memory_utilization);
  const double per_token = workloads::kv_cache_bytes(m, 1, s.engine.kv.bytes_per_element, s.engine.kv.bytes_per_element, 1);
  std::vector<VramPlan> plans;
  for (int c = 0; c < n; ++c) {
    const CardSetup& card = s.cards[static_cast<std::size_t>(c)];
    const std::string on = n > 1 ? " on card " + std::to_string(c) : "";
    VramPlan p;
    p.shard = shard;
    p.first_layer = 0;
    p.end_layer = m.layers;
    p.layer_bytes = per_layer * shard;
    p.head_bytes = head * shard;
    // vLLM ties the head to the table: one matrix on the GPU.
    p.non_expert_weights = shard * (per_layer * m.layers + (m.tied_embeddings ? 1.0 : 2.0) * head);
    if (m.moe) {  // every routed expert resident with its layer (the dense first layers have none), 1/N of each
      p.expert_bytes = p.slot_bytes = shard * m.moe->expert_params * s.engine.expert_format.bits_per_weight / 8.0;
      p.total_experts = p.slots = static_cast<std::int64_t>(m.moe_layers_in(0, m.layers)) * m.moe->experts;
      p.cache_bytes = static_cast<double>(p.slots) * p.slot_bytes;
    }
    p.card_total = card_total(card);
    p.others = card.gpu.vram_used_by_others;
    p.runtime = s.engine.physics.runtime_vram;
    p.kv_budget = pool.gpu_memory_utilization * p.card_total;
    const double weights = p.non_expert_weights + p.cache_bytes;
    if (p.card_total - p.others < p.kv_budget)
      return Error{"the engine takes gpu_memory_utilization " + util + " x " + units::format_gib(p.card_total) +
                                  " = " + units::format_gib(p.kv_budget) + on + " at start, but other tenants leave " +
                                  units::format_gib(p.card_total - p.others) +
                                  " free (lower engine.kv_pool.gpu_memory_utilization)"};
    if (weights + p.runtime > p.kv_budget)
      return Error{m.name + " does not fit " + (n > 1 ? "these cards" : "this card") + ": its weights" +
                                  (n > 1 ? " per card (1/" + std::to_string(n) + ": " : " (") + units::format_gib(weights) +
                                  ") + the engine's runtime (" + units::format_gib(p.runtime) + ") = " +
                                  units::format_gib(weights + p.runtime) + " exceed gpu_memory_utilization " + util + " x " +
                                  units::format_gib(p.card_total) + " = " + units::format_gib(p.kv_budget) +
                                  " (the engine keeps every weight on the GPU: a smaller weights format, a larger card or "
                                  "more cards)"};
    p.kv_block_bytes = shard * per_token * pool.block_size;
    p.kv_blocks = static_cast<std::int64_t>(std::floor((p.kv_budget - weights - p.runtime) / p.kv_block_bytes));
    plans.push_back(p);
  }
  // Every card keeps the same blocks: the fewest any card has room for.
  const VramPlan& fewest = *std::min_element(plans.begin(), plans.end(), [](const VramPlan& a, const VramPlan& b) {
    return a.kv_blocks < b.kv_blocks;
  });
  const std::int64_t blocks = fewest.kv_blocks;
  const std::int64_t tokens = blocks * pool.block_size;
  if (tokens < s.engine.context)
    return Error{"the KV pool (" +
                                units::format_gib(fewest.kv_budget - fewest.non_expert_weights - fewest.cache_bytes - fewest.runtime) +
                                (n > 1 ? " a card" : "") + ": " + std::to_string(blocks) + " blocks of " +
                                std::to_string(pool.block_size) + " tokens = " + std::to_string(tokens) +
                                " tokens) cannot hold one sequence of engine.context = " + std::to_string(s.engine.context) +
                                " tokens (vLLM refuses to start so: lower engine.context, its --max-model-len, or raise "
                                "engine.kv_pool.gpu_memory_utilization)"};
  for (auto& p : plans) {
    p.kv_blocks = blocks;
    p.kv_cache = static_cast<double>(blocks) * p.kv_block_bytes;
    p.fixed = p.non_expert_weights + p.cache_bytes + p.kv_cache + p.runtime;
    p.free_at_start = p.card_total - p.others - p.fixed;
  }
  return plans;
}

class Vllm final : public EngineFamily {
 public:
  std::string_view name() const override { return "vllm"; }

  Result<std::vector<VramPlan>> plan_memory(const Scenario& s) const override { return plan_paged(s); }

  // No placement to choose: the weights and the pool fit, or not.
  SearchSpace search_space(const Scenario& base) const override {
    return only_placement(base, "every layer on the GPU, a paged KV pool",
                          "the weights and one sequence's KV need more than gpu_memory_utilization x the card");
  }

  void decode(config::MapReader& e, EngineSetup& s, const workloads::ModelSpec& model, int) const override {
    if (e.has("expert_cache"))
      e.fail_at("expert_cache", "family vllm keeps every weight on the GPU(s): it has no expert cache (preset: "
                                "expert-cache has one)");
    auto pool = e.optional_map("kv_pool");
    if (!pool)
      e.fail_at("kv_pool", "family vllm allocates a paged KV pool at start: give kv_pool "
                           "{gpu_memory_utilization, block_size} (the vllm preset has one)");
    KvPool p;
    p.gpu_memory_utilization = pool->number("gpu_memory_utilization");
    if (p.gpu_memory_utilization > 1) pool->fail_at("gpu_memory_utilization", "a share of the card's memory is at most 1");
    p.block_size = static_cast<int>(pool->integer("block_size", 1, 1 << 16));
    p.watermark = pool->optional_number("watermark", config::Lower::NonNegative).value_or(0.0);
    if (p.watermark >= 1) pool->fail_at("watermark", "a share of the pool is below 1");
    pool->finish();
    s.kv_pool = p;
    // V1's token budget per step (absent: V0's scheduler, a pass of whole prompts).
    if (const config::Node* budget = e.node().find("max_num_batched_tokens")) {
      StepBudget b;
      if (budget->is_scalar() && budget->text() == "auto") {
        e.ignore("max_num_batched_tokens");
        b.tokens_auto = true;
      } else {
        b.tokens = e.integer("max_num_batched_tokens", 1, std::int64_t{1} << 30);
      }
      s.step_budget = b;
    }
    check_served_formats(e, s, model);
  }

  // vLLM v0.11's defaults for `vllm serve` (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults,
  // UsageContext.OPENAI_API_SERVER): on a device of at least 70 GiB whose name has no "a100"
  // ("Setting large max_num_batched_tokens for A100 reduces throughput, see PR #17885"),
  // max_num_batched_tokens 8192 and max_num_seqs 1024; elsewhere 2048 and 256. The device's
  // memory is its total (torch's get_device_total_memory: the driver's total, memory.driver_total).
  void fit_to_cards(Scenario& sc, const config::Node& at) const override {
    EngineSetup& e = sc.engine;
    const auto& gpu = sc.cards.front().gpu.spec;
    std::string device = gpu.name + " " + gpu.display_name;
    for (auto& ch : device) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const double total = gpu.driver_total_bytes.value_or(gpu.memory_bytes);
    const bool large = total >= 70.0 * units::kGiB && device.find("a100") == std::string::npos;
    if (e.parallel_auto) e.parallel = large ? 1024 : 256;
    if (e.step_budget && e.step_budget->tokens_auto) e.step_budget->tokens = large ? 8192 : 2048;
    // vLLM refuses to start otherwise (SchedulerConfig: "max_num_batched_tokens ... must be
    // greater than or equal to max_num_seqs"): every running request's decode token fits a step.
    if (e.step_budget && e.step_budget->tokens < e.parallel)
      config::fail(at, "engine.max_num_batched_tokens",
                   std::to_string(e.step_budget->tokens) + " tokens a step is fewer than parallel (max_num_seqs) " +
                       std::to_string(e.parallel) + ": vLLM refuses to start with that (each running request's decode token must fit a step)");
  }

  // The pool's engine keeps every weight on its GPUs (one, or a tensor split's) and hands
  // blocks out between batched steps.
  void check(config::MapReader& e, const EngineSetup& s, const workloads::ModelSpec& model, int cards) const override {
    const char* why = cards > 1 && s.split != Split::Tensor ? "a pipeline split (vLLM's --pipeline-parallel-size)"
                      : s.gpu_layers < model.layers         ? "layers on the CPU (gpu_layers)"
                      : s.head_on_cpu ? "the LM head on the CPU (gpu_layers equal to the layer count with ngl_output_first: false; leave it unset)"
                      : s.cpu_moe_layers > 0                ? "experts on the CPU (cpu_moe_layers)"
                                                            : nullptr;
    if (why)
      e.fail_at("kv_pool", std::string("a paged KV pool with ") + why +
                               " is not modelled (every weight stays on one GPU or is split by tensor over the cards)");
    if (s.scheduling != SlotScheduling::Batched)
      e.fail_at("kv_pool", "a paged KV pool's blocks are handed out between the steps of continuous batching: slot_scheduling must be batched");
  }

  // [--tensor-parallel-size N] [--quantization fp8] [--kv-cache-dtype X] --max-model-len C
  // --gpu-memory-utilization U --max-num-seqs N --block-size B.
  EngineCommand command(const Scenario& s) const override {
    const EngineSetup& e = s.engine;
    const std::string kv = e.kv.name;
    std::ostringstream f;
    const std::string native = workloads::upper(s.model.native_format);
    const bool sixteen_bit_checkpoint = native == "BF16" || native == "F16";
    if (s.cards.size() > 1) f << "--tensor-parallel-size " << s.cards.size() << " ";
    if (sixteen_bit_checkpoint && workloads::upper(e.other_format.name) == "FP8") f << "--quantization fp8 ";
    // "auto" (the default) is the model's dtype: a 16-bit cache.
    if (workloads::upper(kv) != "BF16" && workloads::upper(kv) != "F16") f << "--kv-cache-dtype " << kv << " ";
    const std::string utilization = fmt::format("{:g}", e.kv_pool->gpu_memory_utilization);
    f << "--max-model-len " << e.context << " --gpu-memory-utilization " << utilization << " --max-num-seqs " << e.parallel
      << " --block-size " << e.kv_pool->block_size;
    if (e.step_budget) f << " --max-num-batched-tokens " << e.step_budget->tokens;
    return {"vllm serve", f.str()};
  }
};

}  // namespace

const EngineFamily& vllm_family() {
  static const Vllm family;
  return family;
}

}  // namespace vramsim::sim::engines
