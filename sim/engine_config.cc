#include "sim/engine_config.h"

#include <algorithm>
#include <cstdlib>

#include "sim/engines/engine_family.h"
#include "workloads/layer_split.h"

namespace vramsim::sim {

using config::Lower;
using config::MapReader;
using config::Node;
using units::Dimension;

EngineSetup decode_engine(const Node& ref, const config::Catalogue& catalogue, const workloads::FormatTables& formats,
                          const workloads::ModelSpec& model, int cards) {
  // The engine section refines an engine preset (configs/engines/), expert-cache by default.
  Node with_preset = ref;
  if (ref.is_map() && !ref.find("preset")) with_preset.set("preset", Node::scalar("expert-cache", ref.origin()));
  if (ref.is_null()) {
    with_preset = Node::map(ref.origin());
    with_preset.set("preset", Node::scalar("expert-cache", ref.origin()));
  }
  const Node resolved = catalogue.resolve("engines", "engine", with_preset, "engine");
  MapReader e(resolved, "engine");
  EngineSetup s;
  s.preset = e.string("name");
  const std::string family = e.string("family");
  if (!engines::find_family(family, &s.family)) {
    std::string names;
    for (const auto& n : engines::family_names()) names += (names.empty() ? "" : ", ") + n;
    e.fail_at("family", "unknown engine family \"" + family + "\" (expected one of " + names + ")");
  }
  e.ignore("source");
  if (const Node* bias = e.node().find("decode_bias"); bias && !bias->is_null()) {
    if (!bias->is_map()) e.fail_at("decode_bias", "expected a mapping of card names to notes");
    const auto gpus = catalogue.names("gpus");
    for (const auto& [card, note] : bias->entries()) {
      if (!note.is_scalar() || note.text().empty()) config::fail(note, "engine.decode_bias." + card, "expected a note (text)");
      if (std::find(gpus.begin(), gpus.end(), card) == gpus.end())
        config::fail(note, "engine.decode_bias." + card, "no card \"" + card + "\" in the catalogue (vramsim list gpus)");
      s.decode_bias[card] = note.text();
    }
  }
  e.ignore("decode_bias");
  // `model`: the model's own maximum (vLLM's --max-model-len default).
  if (const Node& c = e.any("context"); c.is_scalar() && c.text() == "model")
    s.context = model.max_context;
  else
    s.context = e.integer("context", 1, std::int64_t{1} << 32);
  if (s.context > model.max_context)
    e.fail_at("context", "exceeds " + model.name + "'s maximum of " + std::to_string(model.max_context) + " tokens");
  const std::string kv = e.string("kv_type");
  if (!formats.kv(kv)) e.fail_at("kv_type", "unknown KV-cache type \"" + kv + "\" (see `vramsim list formats`)");
  s.kv = *formats.kv(kv);
  // `auto`: the engine's own default for the card it runs on (vLLM's max_num_seqs), set by the
  // family once the cards are known (EngineFamily::fit_to_cards).
  // (Another family's `auto` is refused after that family's own sections: their errors come first.)
  if (const Node* p = e.node().find("parallel"); p && p->is_scalar() && p->text() == "auto") {
    e.ignore("parallel");
    s.parallel = 0;
    s.parallel_auto = true;
  } else {
    s.parallel = static_cast<int>(e.optional_integer("parallel", 1, 1024).value_or(1));
  }
  // At least 1: the queue holds an arriving request until a slot takes it, so 0 would turn
  // every request away, even on an idle engine.
  if (auto cap = e.optional_integer("max_queue", 1, 1 << 30)) s.max_queue = static_cast<int>(*cap);
  const std::string scheduling = e.choice("slot_scheduling", {"serial", "overlapped", "batched"});
  s.scheduling = scheduling == "serial"       ? SlotScheduling::Serial
                 : scheduling == "overlapped" ? SlotScheduling::Overlapped
                                              : SlotScheduling::Batched;
  if (const auto rule = e.optional_string("vram_rule")) {
    if (*rule != "budget" && *rule != "engine") e.fail_at("vram_rule", "expected one of budget, engine, got \"" + *rule + "\"");
    if (*rule == "engine" && (e.has("expert_cache") || e.has("kv_pool")))
      e.fail_at("vram_rule", "applies to an engine whose weights stay with their layers (llama.cpp): this one sizes an "
                             "expert cache or a KV pool from the free VRAM");
    s.engine_vram_rule = *rule == "engine";
    s.vram_rule_given = true;
  }
  const std::string split = e.optional_string("split").value_or(cards > 1 ? "pipeline" : "single");
  if (split != "single" && split != "pipeline" && split != "tensor" && split != "expert")
    e.fail_at("split", "expected one of single, pipeline, tensor, expert, got \"" + split + "\"");
  s.split = split == "pipeline" ? Split::Pipeline
            : split == "tensor" ? Split::Tensor
            : split == "expert" ? Split::Expert
                                : Split::Single;
  if (s.split == Split::Expert && model.moe && !e.has("expert_cache"))
    e.fail_at("split", "an expert split deals an expert cache over the cards: this engine has none (its experts stay with "
                       "their layer); use split: pipeline");
  if (s.split == Split::Expert && !model.moe)
    e.fail_at("split", model.name + " is a dense model: an expert split needs routed experts (use pipeline or tensor)");
  if (cards > 1 && s.split == Split::Single)
    e.fail_at("split", std::to_string(cards) + " cards need a split: pipeline, tensor or expert");
  if (cards == 1) s.split = Split::Single;  // a split over one card is that card
  if (s.split == Split::Tensor) {
    const auto& a = model.attention;
    if (a.query_heads % cards != 0 || a.kv_heads % cards != 0)
      e.fail_at("split", "a tensor split over " + std::to_string(cards) + " cards needs head counts that divide by " +
                             std::to_string(cards) + ": " + model.name + " has " + std::to_string(a.query_heads) +
                             " query heads and " + std::to_string(a.kv_heads) + " KV heads");
    // A paged-pool engine (vLLM) has no expert cache: each card holds 1/N of every expert.
    if (model.moe && !e.has("kv_pool"))
      e.fail_at("split", e.has("expert_cache")
                             ? "a tensor split of an MoE expert cache is not modelled; use split: pipeline"
                             : "a tensor split of an MoE model is modelled for a paged-KV engine (vLLM) only; use split: pipeline");
    if (a.layout == workloads::AttentionLayout::Mla && e.has("kv_pool"))
      e.fail_at("split", "vLLM keeps an MLA model's latent KV whole on every tensor-parallel rank: not modelled (one card)");
  }
  // engine.layer_split: GPU layers per card, summed against gpu_layers below.
  const Node* layer_split = e.has("layer_split") ? &e.any("layer_split") : nullptr;
  if (layer_split) {
    const Node& list = *layer_split;
    if (!list.is_sequence() || static_cast<int>(list.items().size()) != cards)
      e.fail_at("layer_split", "expected a list of layer counts, one per card (" + std::to_string(cards) + ")");
    for (const Node& item : list.items()) {
      const std::string& t = item.is_scalar() ? item.text() : std::string();
      char* end = nullptr;
      const long v = std::strtol(t.c_str(), &end, 10);
      if (t.empty() || *end != '\0' || v < 0 || v > model.layers)
        config::fail(item, "engine.layer_split",
                     "expected a layer count from 0 to " + std::to_string(model.layers) + ", got \"" + t + "\"");
      s.layer_split.push_back(static_cast<int>(v));
    }
    if (s.split != Split::Pipeline) e.fail_at("layer_split", "only a pipeline split has layer ranges");
  }
  if (auto w = e.optional_map("weights")) {
    auto format = [&](const char* key) {
      const bool experts = std::string_view(key) == "experts";
      std::string name = w->optional_string(key).value_or(experts ? model.expert_format_name() : model.native_format);
      // A model file's own format (GGUF) names the file's tensors: for the routed experts, the
      // file's expert tensors (GGUF_EXPERTS), so `--quant GGUF` is the file as it is.
      if (experts && !model.native_expert_format.empty() && workloads::upper(name) == workloads::upper(model.native_format))
        name = model.native_expert_format;
      if (!formats.weight(name)) w->fail_at(key, "unknown weights format \"" + name + "\"");
      if (const std::string why = workloads::native_only_refusal(*formats.weight(name), model.name, model.native_format);
          !why.empty())
        w->fail_at(key, why);
      return *formats.weight(name);
    };
    s.expert_format = format("experts");
    s.other_format = format("other");
    w->finish();
  } else {
    s.expert_format = *formats.weight(model.expert_format_name());
    s.other_format = *formats.weight(model.native_format);
  }
  // No expert cache unless the family decodes one (the expert-cache families).
  s.expert_cache = false;  // experts live with their layer: in VRAM, or in RAM for CPU layers / --n-cpu-moe
  engines::family(s.family).decode(e, s, model, cards);
  if (s.parallel_auto && s.family != EngineFamilyId::Vllm)
    config::fail(*e.node().find("parallel"), "engine.parallel",
                 "auto is vLLM's card-dependent max_num_seqs default (family vllm); give this engine's slots as a number");
  // As llama.cpp's -ngl: a count above the model's layers (the customary 99) means every layer
  // and the LM head. llama.cpp counts the output layer as layer n_layer and offloads
  // min(-ngl, n_layer + 1) layers (src/llama-model.cpp, load_tensors). Builds since PR 18148
  // (ngl_output_first) take the output first: -ngl N >= 1 is the head and the last N - 1 layers.
  // Earlier ones take it last: -ngl N <= n_layer is the last N layers, the head on the CPU
  // (their log then says "offloaded 32/33 layers to GPU").
  // An engine with an expert cache keeps every layer on the GPU: -ngl counts layers alone there.
  // It describes a llama.cpp build: an engine that keeps the head on the GPU has no such choice.
  if ((s.expert_cache || s.kv_pool) && e.has("ngl_output_first"))
    e.fail_at("ngl_output_first", "a llama.cpp build's -ngl convention; this engine keeps every layer and the LM head on "
                                  "the GPU(s)");
  s.ngl_output_first = e.boolean("ngl_output_first", true) && !s.expert_cache;
  const auto ngl = e.optional_integer("gpu_layers", 0, 100000);
  const std::int64_t ngl_value = ngl.value_or(model.layers + 1);
  const bool head_gpu = s.expert_cache || ngl_value > model.layers || (s.ngl_output_first && ngl_value >= 1);
  s.head_on_cpu = !head_gpu;
  if (s.ngl_output_first && ngl_value == 1)
    e.fail_at("gpu_layers", "-ngl 1 in a build that offloads the output layer first (ngl_output_first) puts the LM head "
                            "alone on the GPU, every layer on the CPU: not modelled; 0 keeps everything on the CPU, 2 "
                            "adds the last layer");
  s.gpu_layers = static_cast<int>(std::min<std::int64_t>(
      s.ngl_output_first && ngl_value <= model.layers ? std::max<std::int64_t>(ngl_value - 1, 0) : ngl_value, model.layers));
  // llama.cpp's -ts deals the GPU layers (-ngl) over the cards: the counts add up to them.
  if (layer_split) {
    int sum = 0;
    for (int v : s.layer_split) sum += v;
    if (sum != s.gpu_layers)
      e.fail_at("layer_split", "the counts add up to " + std::to_string(sum) + " layers; the cards hold " +
                                   std::to_string(s.gpu_layers) + " (" +
                                   (s.gpu_layers == model.layers ? model.name + "'s layers"
                                    : s.ngl_output_first && !s.head_on_cpu
                                        ? "engine.gpu_layers " + std::to_string(ngl_value) + ": the LM head and " +
                                              std::to_string(s.gpu_layers) + " of " + model.name + "'s " +
                                              std::to_string(model.layers) + " layers (engine.ngl_output_first)"
                                        : "engine.gpu_layers, of " + model.name + "'s " + std::to_string(model.layers)) +
                                   ")");
  }
  if (e.has("cpu_moe_layers")) {
    const Node& n = e.any("cpu_moe_layers");
    s.cpu_moe_layers = n.is_scalar() && n.text() == "all" ? model.layers
                                                           : static_cast<int>(e.integer("cpu_moe_layers", 0, model.layers));
    if (!model.moe) e.fail_at("cpu_moe_layers", model.name + " is a dense model: it has no routed experts to keep on the CPU");
  }
  if ((s.gpu_layers < model.layers || s.cpu_moe_layers > 0) && s.expert_cache)
    e.fail_at(s.gpu_layers < model.layers ? "gpu_layers" : "cpu_moe_layers",
              "an engine with an expert cache keeps every layer on the GPU (use an engine without one, e.g. preset: llama.cpp)");
  if (s.gpu_layers < model.layers && cards > 1 && s.split != Split::Pipeline)
    e.fail_at("gpu_layers", "CPU layers combine with a pipeline split only");
  if (s.head_on_cpu && cards > 1 && s.split != Split::Pipeline)
    e.fail_at("gpu_layers", "gpu_layers " + std::to_string(model.layers) + " (llama.cpp's -ngl equal to " + model.name +
                                "'s layer count, in a build before the output layer went first: engine.ngl_output_first: "
                                "false) keeps the LM head on the CPU, which is modelled with a pipeline split only; "
                                "gpu_layers: 99 puts the head on the GPUs too");
  if (auto sp = e.optional_map("speculative")) {
    const std::string kind = sp->choice("kind", {"none", "mtp"});
    s.speculative = kind == "mtp";
    // MTP drafts with the checkpoint's own multi-token-prediction head: a model without one
    // (its file has no mtp_head: true) has nothing to draft with, so no speed-up to simulate.
    if (s.speculative && !model.mtp_head)
      sp->fail_at("kind", "kind: mtp drafts with the model's multi-token-prediction head, and " + model.name +
                              " has none (its model file has no mtp_head: true): kind: none, or a model with an MTP "
                              "head (deepseek-v3)");
    if (s.speculative) {
      s.draft_tokens = static_cast<int>(sp->integer("draft_tokens", 1, 64));
      s.acceptance = sp->number("acceptance", Lower::NonNegative);
      if (s.acceptance >= 1)
        sp->fail_at("acceptance", "an acceptance rate is a share of the drafts, below 1, got " + sp->node().find("acceptance")->text());
      s.draft_head_bytes = sp->quantity("head", Dimension::Bytes, Lower::NonNegative);
    } else {
      // kind: none switches MTP off; its settings may stay in the file (e.g. --set ...kind=none).
      sp->ignore("draft_tokens");
      sp->ignore("acceptance");
      sp->ignore("head");
    }
    sp->finish();
  }
  if (s.scheduling == SlotScheduling::Batched && s.split == Split::Expert)
    e.fail_at("slot_scheduling", "continuous batching over an expert split is not modelled (use serial or overlapped)");
  s.physics = decode_physics(e, model.moe.has_value(), s.expert_cache, !s.misses_on_cpu);
  s.numa_worker_groups = e.has("host_expert_numa") && e.choice("host_expert_numa", {"none", "per-socket"}) == "per-socket";
  if ((s.gpu_layers < model.layers || s.head_on_cpu || s.cpu_moe_layers > 0) && s.physics.cpu_bandwidth_efficiency <= 0)
    e.fail_at(s.gpu_layers < model.layers || s.head_on_cpu ? "gpu_layers" : "cpu_moe_layers",
              "CPU layers, an LM head or experts on the CPU need the engine's cpu_bandwidth_efficiency");
  engines::family(s.family).check(e, s, model, cards);
  e.finish();
  return s;
}

// llama.cpp's flags for the scenario's placement, e.g. "-ngl 39", "-ngl 99 --n-cpu-moe 12".
std::string describe_placement(const Scenario& s) {
  const auto& e = s.engine;
  const bool all = e.gpu_layers == s.model.layers && !e.head_on_cpu;
  std::string flags =
      engines::llama_cpp_placement_flags(e.gpu_layers, e.cpu_moe_layers, s.model.layers, e.head_on_cpu, e.ngl_output_first);
  if (!e.layer_split.empty()) flags += ", layers per card " + workloads::counts_text(e.layer_split);  // engine.layer_split
  if (all) return flags + ", every layer on the GPU";
  if (e.gpu_layers == s.model.layers) return flags + ", every layer on the GPU but the LM head on the CPU";
  return flags + ", " + std::to_string(e.gpu_layers) + " of " + std::to_string(s.model.layers) + " layers on the GPU, the LM head on the " +
         (e.head_on_cpu ? "CPU" : "GPU");
}
}  // namespace vramsim::sim
