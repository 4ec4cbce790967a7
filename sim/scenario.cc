#include "sim/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "core/config_reader.h"
#include "sim/engine_config.h"
#include "sim/engines/engine_family.h"
#include "sim/hardware_setup.h"
#include "sim/host_experts.h"
#include "sim/kernel_rates.h"
#include "sim/vram_plan.h"
#include "workloads/gguf_model.h"
#include "workloads/layer_split.h"

namespace vramsim::sim {

using config::Lower;
using config::MapReader;
using config::Node;
using units::Dimension;

std::string_view to_string(Split s) {
  switch (s) {
    case Split::Single: return "single";
    case Split::Pipeline: return "pipeline";
    case Split::Tensor: return "tensor";
    case Split::Expert: return "expert";
  }
  return "?";
}

namespace {

// Each link's host -> card rate for reading the experts (LinkSetup::experts_bandwidth), from
// where the experts are (s.expert_memory) and the link's NUMA node.
void set_expert_paths(Scenario& s) {
  const int nodes = s.host.numa_nodes;
  for (auto& card : s.cards) {
    auto& l = card.link;
    const double remote = s.expert_memory.replicated    ? 0.0
                          : s.expert_memory.interleaved ? 1.0 - 1.0 / nodes
                                                        : (s.expert_memory.node == l.numa_node ? 0.0 : 1.0);
    const double crossing = remote > 0 ? std::min(l.h2d_bandwidth, s.host.inter_socket_bandwidth) : l.h2d_bandwidth;
    l.experts_bandwidth = remote > 0 ? 1.0 / ((1.0 - remote) / l.h2d_bandwidth + remote / crossing) : l.h2d_bandwidth;
  }
}

// hardware.host.expert_memory (`interleave` or a NUMA node, default node 0) and each link's
// numa_node: the host -> card rate for reading the experts (LinkSetup::experts_bandwidth).
void decode_numa(Scenario& s, const Node& host, MapReader& hw) {
  if (host.is_map())
    if (const Node* m = host.find("expert_memory"); m && !m->is_null()) {
      s.expert_memory.given = true;
      if (m->is_scalar() && m->text() == "interleave") {
        s.expert_memory.interleaved = true;
      } else if (m->is_scalar() && m->text() == "replicate") {
        s.expert_memory.replicated = true;
      } else {
        const Node own = only_keys(host, {"expert_memory"});
        MapReader r(own, "hardware.host");
        s.expert_memory.node = static_cast<int>(r.integer("expert_memory", 0, 63));
        r.finish();
      }
    }
  const int nodes = s.host.numa_nodes;
  // Errors point at the value itself (a --set names its option, a file its line).
  auto at = [](const Node& parent, const char* key) -> const Node& {
    const Node* n = parent.is_map() ? parent.find(key) : nullptr;
    return n && !n->is_null() ? *n : parent;
  };
  if (s.expert_memory.node >= nodes)
    config::fail(at(host, "expert_memory"), "hardware.host.expert_memory", "node " + std::to_string(s.expert_memory.node) + " does not exist: " +
                                                          s.host.name + " has " + std::to_string(nodes) + " NUMA node(s)");
  // Every card's link, or a list with one per card (a unified part has none: its numa_node is 0).
  const Node* links = hw.optional_any("link");
  for (std::size_t c = 0; c < s.cards.size(); ++c)
    if (const auto& card = s.cards[c]; links && card.link.numa_node >= nodes)
      config::fail(at(links->is_sequence() && c < links->items().size() ? links->items()[c] : *links, "numa_node"),
                   "hardware.link.numa_node",
                   "node " + std::to_string(card.link.numa_node) + " does not exist: " + s.host.name + " has " +
                       std::to_string(nodes) + " NUMA node(s)");
  set_expert_paths(s);
}

}  // namespace

Scenario decode_scenario(const Node& root, const config::Catalogue& catalogue, const workloads::FormatTables& tables) {
  MapReader r(root, "");
  Scenario s;
  s.source = root.origin().source;
  {
    MapReader hw = r.map("hardware");
    s.cards = decode_cards(hw, catalogue);
    s.gpu = s.cards.front().gpu;
    s.link = s.cards.front().link;
    for (const auto& card : s.cards)
      if (!card.link.trained_from.empty()) {
        const std::string note = "hardware.link: the " + card.gpu.spec.name + " is a PCIe Gen" +
                                 std::to_string(card.gpu.spec.pcie_generation) + " x" +
                                 std::to_string(card.gpu.spec.pcie_lanes) + " card, so the " + card.link.trained_from +
                                 " slot trains at " + card.link.spec.name + ": simulated as " + card.link.spec.name +
                                 " (that preset's figures)";
        if (std::find(s.warnings.begin(), s.warnings.end(), note) == s.warnings.end()) s.warnings.push_back(note);
      }
    // A measured rate well under the preset's typical one was most likely measured on another
    // link (a Gen3 probe kept after `--set hardware.link.preset=pcie-gen4-x16`: 13.9 of 26 GB/s);
    // a healthy link's pinned copies reach 85-100% of it. The 3/4 line is a warning's heuristic
    // (a probe through a remote NUMA node can fall near it: the warning says what to check).
    for (const auto& card : s.cards)
      if (card.link.h2d_bandwidth < 0.75 * card.link.spec.typical_bandwidth) {
        const bool measured = card.link.source == "measured_h2d";
        const std::string from = measured ? std::string("hardware.link.measured_h2d") : "the calibration " + card.link.source;
        s.warnings.push_back("the host -> card rate from " + from + " (" + units::format_bandwidth(card.link.h2d_bandwidth) +
                             ") is under 3/4 of " + card.link.spec.name + "'s typical " +
                             units::format_bandwidth(card.link.spec.typical_bandwidth) +
                             "; the simulation uses that figure (if it was measured on another link, " +
                             (measured ? "unset it with `--set hardware.link.measured_h2d=` for the preset's typical rate, or "
                                       : "") +
                             "measure it anew)");
        break;
      }
    if (const Node* sw = hw.optional_any("switch")) {
      s.pcie_switch = decode_link_setup(*sw, catalogue, "hardware.switch");
      if (s.pcie_switch->spec.kind != hw::LinkKind::Pcie)
        config::fail(*sw, "hardware.switch", "a PCIe switch's upstream link is a PCIe link");
    }
    if (const Node* gl = hw.optional_any("gpu_link")) {
      s.gpu_link = decode_link_setup(*gl, catalogue, "hardware.gpu_link");
      if (s.cards.size() < 2) config::fail(*gl, "hardware.gpu_link", "a card-to-card link needs at least two cards");
      check_gpu_link(*s.gpu_link, s.cards, *gl);
    } else if (const std::string preset = default_gpu_link(s.cards); !preset.empty()) {
      const Node ref = Node::scalar(preset, hw.node().origin());
      s.gpu_link = decode_link_setup(ref, catalogue, "hardware.gpu_link");
      check_gpu_link(*s.gpu_link, s.cards, hw.node());
    }
    // A unified-memory part's host is its own chip's CPU (GpuSpec::soc_host), given or not.
    const bool soc = s.gpu.spec.unified();
    const Node& host = soc && !hw.has("host") ? Node::scalar(s.gpu.spec.soc_host, hw.node().origin()) : hw.any("host");
    s.host = hw::decode_host(catalogue.resolve("hosts", "host", without_keys(host, {"expert_memory"}), "hardware.host"),
                             "hardware.host");
    if (soc && s.host.name != s.gpu.spec.soc_host)
      config::fail(host, "hardware.host", s.gpu.spec.name + " is a unified-memory part: its host is its own CPU, " +
                                              s.gpu.spec.soc_host + " (leave hardware.host out), not " + s.host.name);
    if (soc && s.host.cpu_full_load_watts)
      config::fail(host, "hardware.host.cpu.power", s.gpu.spec.name + " is a unified-memory part: its power figures are the whole "
                                                    "machine's, CPU included; leave the host's cpu.power out");
    decode_numa(s, host, hw);
    // A what-if on the core count alone leaves the host's arithmetic as it was: say what sets it.
    if (const Node* cpu = host.is_map() ? host.find("cpu") : nullptr;
        cpu && cpu->is_map() && cpu->find("cores") && !cpu->find("fp32_throughput") && s.host.fp32_flops)
      s.warnings.push_back("hardware.host.cpu.cores set without cpu.fp32_throughput: the host's arithmetic stays " +
                           units::format_flops(*s.host.fp32_flops) +
                           " (what its expert and layer work follows, with its memory bandwidth); set cpu.fp32_throughput "
                           "for a CPU with more or faster cores");
    s.link = s.cards.front().link;
    hw.finish();
  }
  // The catalogue's formats and the model file's own (a GGUF file's tensor types).
  workloads::FormatTables formats;
  {
    const Node model = workloads::resolve_model(catalogue, r.any("model"), "model");
    s.model = workloads::decode_model(model, "model");
    formats = tables.with_file_formats(s.model.file_formats, model, "model");
    workloads::check_native_format(model, "model", s.model.native_format, formats);
  }
  const Node* engine = r.optional_any("engine");
  s.engine = decode_engine(engine ? *engine : Node::map(root.origin()), catalogue, formats, s.model,
                           static_cast<int>(s.cards.size()));
  engines::family(s.engine.family).fit_to_cards(s, engine ? *engine : root);
  // An expert cache needs to know which experts are hot; experts that live with their layer
  // do not (every routed expert of a layer is equally resident).
  // An empty hot set (expert_cache.size: 0) holds nothing hot.
  const bool empty_cache = s.engine.cache_slots == std::int64_t{0} ||
                           (s.engine.cache_size_bytes && *s.engine.cache_size_bytes <= 0);
  if (s.model.moe && !s.model.moe->routing && s.engine.expert_cache && !empty_cache)
    config::fail(r.any("model"), "model.moe.routing", "missing: the routing statistics (coverage points) of " + s.model.name +
                                                          (s.engine.misses_on_cpu ? " (a hot set is chosen from them; "
                                                                                    "engine.expert_cache.size: 0 runs without one)"
                                                                                  : ""));
  // A unified-memory part runs llama.cpp's Metal backend with every layer on its GPU: a "CPU
  // layer" would read the same memory, which the host model does not share with the GPU's.
  if (s.gpu.spec.unified() &&
      (s.engine.family != EngineFamilyId::LlamaCpp || s.engine.gpu_layers < s.model.layers || s.engine.cpu_moe_layers > 0 || s.engine.head_on_cpu))
    config::fail(engine ? *engine : root, "engine", s.gpu.spec.name + " is a unified-memory part: modelled with a llama.cpp engine and every "
                                                    "layer on its GPU (Metal's default), not " + s.engine.preset +
                                                    (s.engine.family == EngineFamilyId::LlamaCpp ? " with CPU layers or experts" : ""));
  // On a unified-memory part (Metal) a step streams at the part's own measured share of its peak
  // (memory.stream_share) and each layer costs its kernels' dispatches (compute.dispatch_latency
  // x the engine's metal_dispatches_per_layer) instead of the preset's CUDA-fitted figures; a
  // value the scenario or a --set gives the engine itself is kept.
  auto& physics = s.engine.physics;
  if (s.gpu.spec.unified()) {
    auto given = [&](const char* key) { return engine && engine->is_map() && engine->find(key); };
    if (s.gpu.spec.stream_share && !given("gpu_bandwidth_efficiency"))
      physics.gpu_bandwidth_efficiency = *s.gpu.spec.stream_share;
    // Metal's flash-attention kernels skip every KV block the mask fills with -INF, causal or
    // windowed, at any micro-batch (ggml-metal.metal kernel_flash_attn_ext at ggml a42bdfd2:
    // `if (smax == -INFINITY) continue;`; kernel_flash_attn_ext_blk at ggml d99724f2).
    if (!given("attention_skips_window")) physics.attention_skips_window = true;
    if (!given("attention_skip_min_rows")) physics.attention_skip_min_rows = 0;
    if (s.gpu.spec.dispatch_latency && physics.metal_dispatches_per_layer > 0 && !physics.layer_launch_given) {
      physics.layer_launch = *s.gpu.spec.dispatch_latency * physics.metal_dispatches_per_layer;
      physics.layer_launch_given = true;
    }
  }
  // The per-layer cost in SM cycles (engine.layer_launch_cycles) at the card's boost clock: the
  // first card's (a machine of mixed cards pays its first card's; docs/engines.md).
  if (!physics.layer_launch_given) {
    if (!s.gpu.spec.boost_clock)
      config::fail(r.any("hardware"), "hardware.gpu",
                   s.gpu.spec.name + " gives no compute.boost_clock, which the engine's layer_launch_cycles needs: add the card's "
                                     "boost clock from its datasheet, or set engine.layer_launch");
    physics.layer_launch = physics.layer_launch_cycles / *s.gpu.spec.boost_clock;
  }
  // A decode attention kernel of a few blocks covers a share of each card's SMs: it needs their count.
  for (const auto& card : s.cards)
    if (s.engine.physics.decode_attention_blocks > 0 && s.model.attention.layout == workloads::AttentionLayout::Mla && card.gpu.spec.sm_count <= 0)
      config::fail(r.any("hardware"), "hardware.gpu", card.gpu.spec.name + " gives no compute.sm_count, which engine.decode_attention_blocks "
                                                      "needs for an MLA model: add the card's SM count from its datasheet");
  // llama.cpp's row split multiplies a prompt's row slices with cuBLAS SGEMM (sim/row_split.h) where
  // cuBLAS multiplies them (16-bit weights; quantized ones past mmq_max_rows): it needs each
  // card's fp32 rate.
  if (s.cards.size() > 1 && s.engine.row_split && (!dequantizing_gemms(s) || s.engine.physics.mmq_max_rows > 0))
    for (const auto& card : s.cards)
      if (card.gpu.spec.dense_fp32_flops <= 0)
        config::fail(r.any("hardware"), "hardware.gpu",
                     card.gpu.spec.name + " gives no compute.dense_fp32, which llama.cpp's row split (engine.split: tensor) needs: "
                                          "its prompts' row slices run cuBLAS SGEMM on the CUDA cores; add the card's FP32 rate "
                                          "from its datasheet");
  s.workload = workloads::decode_workload(r.map("workload"), s.engine.context);
  s.seed = static_cast<std::uint64_t>(r.optional_integer("seed", 0, std::int64_t{1} << 53).value_or(1));
  // An expert split's cards read their experts in the same layer at once: behind a PCIe switch
  // they share its uplink (the step model's per-card rate is then at most uplink / cards).
  if (s.pcie_switch && s.engine.split == Split::Expert) {
    const double share = s.pcie_switch->h2d_bandwidth / static_cast<double>(s.cards.size());
    for (auto& card : s.cards) card.link.experts_bandwidth = std::min(card.link.experts_bandwidth, share);
    s.link = s.cards.front().link;
  }
  r.finish();
  // The experts of a natively low-bit model (MXFP4) sized in another format: said, not refused
  // (its other weights may be kept wider, as published files keep them).
  if (const workloads::WeightFormat* native = formats.weight(s.model.native_format))
    if (std::string why = workloads::requantized_native_warning(s.engine.expert_format, s.model.name, *native); !why.empty())
      s.warnings.push_back(std::move(why));
  // The preset's known decode bias on a card (out-of-sample measurements), once per card model.
  for (std::set<std::string> said; const auto& card : s.cards)
    if (const auto bias = s.engine.decode_bias.find(card.gpu.spec.name);
        bias != s.engine.decode_bias.end() && said.insert(bias->first).second)
      s.warnings.push_back(s.engine.preset + " on " + bias->first + ": " + bias->second + " (docs/validation.md, out-of-sample)");
  // llama.cpp's row split (--split-mode row, sim/row_split.h): its layout is that of the builds
  // before ggml-org/llama.cpp PR 10026 (KV cache on the main card), and builds since PR 24216
  // have none.
  if (s.cards.size() > 1 && s.engine.row_split)
    s.warnings.push_back("llama.cpp's row split (--split-mode row) is simulated as ggml-cuda runs it: every split product's "
                         "input copied to each card and the result slices back, 128 tokens at a time, attention and the "
                         "KV cache on the main card (builds before PR 10026, October 2024, placed the KV cache so); "
                         "builds since PR 24216 (June 2026) have no row split; docs/multi-card.md");
  // Each host worker group computes one expert at a time on its own cores. Set by the scenario,
  // more groups than cores is an error; the preset's count (its own machine's) becomes one group
  // per core on a smaller host, and the run says so.
  if (const int workers = s.engine.physics.host_expert_workers; s.model.moe && s.host.cores > 0 && workers > s.host.cores) {
    if (const Node* given = engine && engine->is_map() ? engine->find("host_expert_workers") : nullptr)
      config::fail(*given, "engine.host_expert_workers",
                   std::to_string(workers) + " worker groups need at least a core each: " + s.host.name + " has " +
                       std::to_string(s.host.cores) + " cores");
    s.engine.physics.host_expert_workers = s.host.cores;
    s.warnings.push_back("the engine preset's " + std::to_string(workers) + " host worker groups exceed " + s.host.name + "'s " +
                         std::to_string(s.host.cores) + " cores: one group per core (" + std::to_string(s.host.cores) +
                         "); set engine.host_expert_workers to choose");
  }
  // The host computes missed experts (the lru/lfu policies copy every miss in; no worker, no
  // host work): its rate may follow its arithmetic, which needs the host's fp32 peak.
  const auto& ph = s.engine.physics;
  const bool host_computes = s.model.moe && ph.host_expert_workers > 0 &&
                             (!s.engine.expert_cache || !copies_every_miss(s.engine.policy));
  if (host_computes && ph.cpu_expert_bytes_per_flop > 0 && !s.host.fp32_flops)
    config::fail(r.any("hardware"), "hardware.host",
                 "cpu.fp32_throughput is missing in " + s.host.name +
                     ": the engine's host expert kernels are compute-bound (engine.cpu_expert_bytes_per_flop); give it "
                     "(--set hardware.host.cpu.fp32_throughput=...), or clear engine.cpu_expert_bytes_per_flop and set "
                     "engine.cpu_expert_share to the kernels' share of the memory bandwidth (0.201 on the case study's host)");
  if (host_computes && ph.cpu_matrix_efficiency > 0 && !s.host.fp32_flops)
    config::fail(r.any("hardware"), "hardware.host",
                 "cpu.fp32_throughput is missing in " + s.host.name +
                     ": the engine's prompt-batch expert products are bound by the host's arithmetic "
                     "(engine.cpu_matrix_efficiency); give it (--set hardware.host.cpu.fp32_throughput=...)");
  // A share the scenario sets that the arithmetic cap overrides would change nothing: say so.
  if (const Node* share = engine && engine->is_map() ? engine->find("cpu_expert_share") : nullptr;
      share && host_computes && host_expert_rate(s) < host_expert_memory_rate(s))
    s.warnings.push_back("engine.cpu_expert_share (" + share->text() + ") does not bind: the host's expert kernels are "
                         "compute-bound at " + units::format_bandwidth(host_expert_rate(s)) +
                         " (cpu.fp32_throughput of the cores its threads keep busy x engine.cpu_expert_bytes_per_flop); "
                         "clear cpu_expert_bytes_per_flop for the share to set the rate");

  // Physically impossible combinations: what the placement keeps in host RAM must fit it
  // (sim::host_ram: the CPU layers' weights and KV, the experts kept in RAM).
  if (const HostRam ram = host_ram(s); !ram.fits()) {
    const Node* at = engine && engine->is_map() && engine->find("gpu_layers") && ram.layer_weights + ram.kv > 0
                         ? engine->find("gpu_layers")
                         : &r.any("hardware");
    config::fail(*at, ram.layer_weights + ram.kv > 0 ? "engine.gpu_layers" : "hardware.host", ram.refusal(s.host.name));
  }
  // A placement the scenario sets (engine.gpu_layers, engine.cpu_moe_layers, engine.layer_split:
  // llama.cpp's -ngl, --n-cpu-moe, -ts) is imposed: one that does not fit its cards is an error
  // here, never replaced by another (`run --model` picks a placement only when none is set).
  if (!s.engine.expert_cache && engine && engine->is_map())
    for (const char* key : {"gpu_layers", "cpu_moe_layers", "layer_split"})
      if (const Node* given = engine->find(key)) {
        if (const auto plans = plan_memory(s); !plans)
          config::fail(*given, std::string("engine.") + key,
                       "the placement set (" + describe_placement(s) + ") does not fit: " + plans.error().message);
        break;
      }
  if (!s.model.moe) return s;
  const double ram_experts = host_ram(s).experts;
  // A placement on one node, or a copy on each, needs one node's share of the RAM to hold them.
  const int nodes = s.host.numa_nodes;
  const double node_ram = s.host.memory_bytes / nodes;
  if (nodes > 1 && !s.expert_memory.interleaved && ram_experts > node_ram) {
    if (s.expert_memory.given)
      config::fail(r.any("hardware"), "hardware.host.expert_memory",
                   "the experts (" + units::format_gib(ram_experts) + ") do not fit in one NUMA node of " + s.host.name + " (" +
                       units::format_gib(node_ram) + (s.expert_memory.replicated ? "; a copy on each node" : "") +
                       "); use expert_memory: interleave");
    // Not given: node 0 fills and the rest spills to the other nodes (Linux's default local
    // policy falls back to the next node); modelled as interleaved over the nodes.
    s.expert_memory.interleaved = true;
    s.expert_memory.spilled = true;
    set_expert_paths(s);
  }
  // An expert cache whose given size the free VRAM cannot hold is refused at the size's line
  // (the same check plan_vram makes when the run starts, which has no place to point at).
  if (s.engine.expert_cache && (s.engine.cache_size_bytes || s.engine.cache_slots) && engine && engine->is_map())
    if (const Node* cache = engine->find("expert_cache"); cache && cache->is_map())
      if (const Node* size = cache->find("size")) {
        const std::string key = "engine.expert_cache.size";
        if (const auto plans = plan_memory(s); !plans) {
          const std::string& why = plans.error().message;
          if (why.rfind(key + ": ", 0) == 0) config::fail(*size, key, why.substr(key.size() + 2));
          // Any other refusal is the run's to make, with its hint.
        }
      }
  return s;
}

}  // namespace vramsim::sim
