#include "sim/scenario.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>

#include "core/config_reader.h"
#include "sim/engine_config.h"
#include "sim/host_experts.h"
#include "sim/vram_plan.h"
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

// A scenario's own keys beside a catalogue description of a GPU or a link (each `preset` is
// the catalogue's: named in unknown-key messages, resolved by Catalogue::resolve).
const std::initializer_list<std::string_view> kGpuOwnKeys = {"count", "vram_used_by_others", "free_vram"};
const std::initializer_list<std::string_view> kGpuKeys = {"preset", "count", "vram_used_by_others", "free_vram"};
const std::initializer_list<std::string_view> kLinkOwnKeys = {"measured_h2d", "numa_node"};
const std::initializer_list<std::string_view> kLinkKeys = {"preset", "measured_h2d", "numa_node"};

// Splits a placement mapping into the scenario-level keys (`own`) and the catalogue reference.
Node without_keys(const Node& ref, std::initializer_list<std::string_view> keys) {
  if (!ref.is_map()) return ref;
  Node out = Node::map(ref.origin());
  for (const auto& [k, v] : ref.entries()) {
    bool skip = false;
    for (auto key : keys) skip = skip || k == key;
    if (!skip) out.set(k, v);
  }
  return out;
}

// The scenario-level keys of a placement mapping (`own`), as a mapping of their own.
Node only_keys(const Node& ref, std::initializer_list<std::string_view> keys) {
  Node own = Node::map(ref.origin());
  for (const auto& [k, v] : ref.entries())
    for (auto key : keys)
      if (k == key) own.set(k, v);
  return own;
}

GpuSetup decode_gpu_setup(const Node& ref, const config::Catalogue& catalogue, const std::string& path) {
  GpuSetup g;
  const Node resolved = catalogue.resolve("gpus", "GPU", without_keys(ref, kGpuOwnKeys), path);
  g.spec = hw::decode_gpu(resolved, path, kGpuKeys);
  // The simulation takes the driver's total as the card's (vram_plan.h). It is a little less
  // than the marketed capacity (read as GiB), never much more or much less: a capacity changed
  // without it (a what-if) would otherwise leave the old card's total in force.
  if (const auto& total = g.spec.driver_total_bytes;
      total && (*total > g.spec.memory_bytes * 1.05 || *total < g.spec.memory_bytes * 0.9)) {
    const Node* memory = resolved.find("memory");
    const Node* at = memory && memory->find("driver_total") ? memory->find("driver_total") : &ref;
    throw config::ConfigError(at->origin(), path + ".memory.driver_total",
                              "the driver's total (" + units::format_gib(*total) + ") does not belong to a card of " +
                                  units::format_gib(g.spec.memory_bytes) +
                                  " (expected 0.9 to 1.05 x memory.capacity): change memory.driver_total with the "
                                  "capacity, or clear it (--set " + path + ".memory.driver_total=)");
  }
  if (ref.is_map()) {
    // Read the scenario-level keys from a view that holds only them.
    const Node own = only_keys(ref, kGpuOwnKeys);
    MapReader r(own, path);
    g.count = static_cast<int>(r.optional_integer("count", 1, 64).value_or(1));
    g.vram_used_by_others = r.optional_quantity("vram_used_by_others", Dimension::Bytes, Lower::NonNegative).value_or(0);
    g.free_vram = r.optional_quantity("free_vram", Dimension::Bytes);
    const double total = g.spec.driver_total_bytes.value_or(g.spec.memory_bytes);
    if (g.vram_used_by_others >= total)
      r.fail_at("vram_used_by_others", "other tenants cannot hold the whole card (" + units::format_gib(total) + ")");
    if (g.free_vram && *g.free_vram > total) r.fail_at("free_vram", "more free VRAM than the card has");
    r.finish();
  }
  return g;
}

LinkSetup decode_link_setup(const Node& ref, const config::Catalogue& catalogue, const std::string& path) {
  LinkSetup l;
  l.spec = hw::decode_link(catalogue.resolve("links", "link", without_keys(ref, kLinkOwnKeys), path), path, kLinkKeys);
  l.h2d_bandwidth = l.spec.typical_bandwidth;
  if (ref.is_map()) {
    const Node own = only_keys(ref, kLinkOwnKeys);
    MapReader r(own, path);
    l.numa_node = static_cast<int>(r.optional_integer("numa_node", 0, 63).value_or(0));
    if (auto measured = r.optional_quantity("measured_h2d", Dimension::Bandwidth)) {  // `measured_h2d:` unsets it
      l.h2d_bandwidth = *measured;
      l.measured = true;
      l.source = "measured_h2d";
      if (l.h2d_bandwidth > l.spec.nominal_bandwidth)
        r.fail_at("measured_h2d", "a measured bandwidth cannot exceed the link's nominal " +
                                      units::format_bandwidth(l.spec.nominal_bandwidth) +
                                      " (another link's probe? unset it with --set hardware.link.measured_h2d= to use the "
                                      "link's typical rate)");
    }
    r.finish();
  }
  return l;
}

// A PCIe link trains at the lower generation and width of its two ends: a slot faster or wider
// than the card runs at the card's (a Gen4 card in a Gen5 x16 slot is a Gen4 x16 link). The
// link becomes the catalogue's preset of that generation and width, noted in `trained_from`;
// a measured rate stays, and must fit the trained link.
void train_link(LinkSetup& link, const hw::GpuSpec& card, const Node& at, const std::string& path,
                const config::Catalogue& catalogue) {
  const int generation = std::min(link.spec.generation, card.pcie_generation);
  const int lanes = std::min(link.spec.lanes, card.pcie_lanes);
  if (generation == link.spec.generation && lanes == link.spec.lanes) return;
  const std::string trained = "pcie-gen" + std::to_string(generation) + "-x" + std::to_string(lanes);
  const std::string why = link.spec.name + " is a PCIe Gen" + std::to_string(link.spec.generation) + " x" +
                          std::to_string(link.spec.lanes) + " link and the " + card.name + " a Gen" +
                          std::to_string(card.pcie_generation) + " x" + std::to_string(card.pcie_lanes) +
                          " card, so the link trains at Gen" + std::to_string(generation) + " x" + std::to_string(lanes);
  const auto presets = catalogue.names("links");
  if (std::find(presets.begin(), presets.end(), trained) == presets.end())
    config::fail(at, path, why + ", and no link preset " + trained + " describes that: add one under configs/links/");
  LinkSetup down = link;
  down.spec = hw::decode_link(catalogue.resolve("links", "link", Node::scalar(trained, at.origin()), path), path);
  down.trained_from = link.spec.name;
  if (!down.measured) {
    down.h2d_bandwidth = down.spec.typical_bandwidth;
  } else if (down.h2d_bandwidth > down.spec.nominal_bandwidth) {
    config::fail(at, path + ".measured_h2d",
                 why + ", whose nominal " + units::format_bandwidth(down.spec.nominal_bandwidth) +
                     " is below the measured " + units::format_bandwidth(down.h2d_bandwidth));
  }
  link = down;
}

// hardware.gpu (a card with an optional count, or a list of cards) and hardware.link (every
// card's, or a list with one per card).
std::vector<CardSetup> decode_cards(MapReader& hw, const config::Catalogue& catalogue) {
  std::vector<GpuSetup> gpus;
  const Node& gpu = hw.any("gpu");
  if (gpu.is_sequence()) {
    if (gpu.items().empty()) config::fail(gpu, "hardware.gpu", "an empty list of cards");
    for (std::size_t i = 0; i < gpu.items().size(); ++i) {
      const std::string path = "hardware.gpu[" + std::to_string(i) + "]";
      gpus.push_back(decode_gpu_setup(gpu.items()[i], catalogue, path));
      if (gpu.items()[i].is_map() && gpu.items()[i].find("count"))
        config::fail(*gpu.items()[i].find("count"), path + ".count", "a list names each card once: no count in its entries");
    }
  } else {
    GpuSetup one = decode_gpu_setup(gpu, catalogue, "hardware.gpu");
    gpus.assign(static_cast<std::size_t>(one.count), one);
  }
  for (auto& g : gpus) g.count = static_cast<int>(gpus.size());
  for (const auto& g : gpus)
    if (g.spec.unified())  // its memory is the host's: no VRAM beside RAM, no PCIe link between them
      config::fail(gpu, "hardware.gpu", g.spec.name + " is a unified-memory part: `run` simulates discrete cards on a "
                                        "PCIe link (see `vramsim fit` for this part)");

  const Node& link = hw.any("link");
  std::vector<LinkSetup> links;
  if (link.is_sequence()) {
    if (link.items().size() != gpus.size())
      config::fail(link, "hardware.link",
                   "a list of links needs one per card: " + std::to_string(link.items().size()) + " links for " +
                       std::to_string(gpus.size()) + " cards");
    for (std::size_t i = 0; i < link.items().size(); ++i)
      links.push_back(decode_link_setup(link.items()[i], catalogue, "hardware.link[" + std::to_string(i) + "]"));
  } else {
    links.assign(gpus.size(), decode_link_setup(link, catalogue, "hardware.link"));
  }
  std::vector<CardSetup> cards;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (links[i].spec.kind == hw::LinkKind::Pcie)
      train_link(links[i], gpus[i].spec, link.is_sequence() ? link.items()[i] : link,
                 link.is_sequence() ? "hardware.link[" + std::to_string(i) + "]" : std::string("hardware.link"), catalogue);
    // A calibrated card: its measured copy rate and latency stand for the link's typical ones
    // (the scenario's measured_h2d still wins), if the link can carry them.
    const auto& cal = gpus[i].spec.calibration;
    if (cal && cal->h2d_bandwidth && !links[i].measured && *cal->h2d_bandwidth <= links[i].spec.nominal_bandwidth) {
      links[i].h2d_bandwidth = *cal->h2d_bandwidth;
      if (cal->h2d_latency) links[i].spec.latency_s = *cal->h2d_latency;
      links[i].source = cal->file;
    }
    if (links[i].spec.kind != hw::LinkKind::Pcie)
      config::fail(link, "hardware.link", links[i].spec.name + " is not a PCIe link: cards reach the host over PCIe "
                                          "(put NVLink under hardware.gpu_link)");
    cards.push_back(CardSetup{gpus[i], links[i]});
  }
  return cards;
}

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
  const Node& links = hw.any("link");  // every card's, or a list with one per card
  for (std::size_t c = 0; c < s.cards.size(); ++c)
    if (const auto& card = s.cards[c]; card.link.numa_node >= nodes)
      config::fail(at(links.is_sequence() && c < links.items().size() ? links.items()[c] : links, "numa_node"),
                   "hardware.link.numa_node",
                   "node " + std::to_string(card.link.numa_node) + " does not exist: " + s.host.name + " has " +
                       std::to_string(nodes) + " NUMA node(s)");
  set_expert_paths(s);
}

// SXM modules come only on NVLink baseboards (HGX: every module on the NVSwitch), so several of
// one NVLink generation are joined by that generation's switch preset unless gpu_link says
// otherwise; "" for other cards (a bridge is an accessory: only a gpu_link adds one).
std::string default_gpu_link(const std::vector<CardSetup>& cards) {
  if (cards.size() < 2) return "";
  const int generation = cards.front().gpu.spec.nvlink_generation;
  for (const auto& c : cards)
    if (c.gpu.spec.nvlink_generation == 0 || c.gpu.spec.nvlink_bridge || c.gpu.spec.nvlink_generation != generation) return "";
  return generation == 3 || generation == 4 ? "nvlink" + std::to_string(generation) : "";  // the catalogue's switch presets
}

// A card-to-card link must exist on these cards: an NVLink (there is no card-to-card PCIe
// cable; PCIe peer-to-peer is `pcie.peer_to_peer`), a bridge joins exactly two cards, and every
// card needs an NVLink of that form and generation (the catalogue's `nvlink`).
void check_gpu_link(const LinkSetup& link, const std::vector<CardSetup>& cards, const Node& at) {
  const std::string& name = link.spec.name;
  if (link.spec.kind != hw::LinkKind::Nvlink)
    config::fail(at, "hardware.gpu_link",
                 name + " is a PCIe link: a card-to-card link is an NVLink (bridge or switch); cards copy to each "
                        "other over PCIe through their own links (pcie.peer_to_peer, or staged through the host)");
  const bool bridge = link.spec.topology == hw::NvlinkTopology::Bridge;
  if (bridge && cards.size() != 2)
    config::fail(at, "hardware.gpu_link",
                 name + " is a bridge between two cards; " + std::to_string(cards.size()) +
                     " cards cannot share one (each card has one bridge connector: use two cards, or no gpu_link)");
  for (const auto& card : cards) {
    const hw::GpuSpec& g = card.gpu.spec;
    if (g.nvlink_generation == 0)
      config::fail(at, "hardware.gpu_link", g.name + " has no NVLink (the GPU catalogue lists none), so " + name +
                                                " cannot join its cards");
    if (g.nvlink_bridge != bridge)
      config::fail(at, "hardware.gpu_link",
                   name + (bridge ? " is a bridge, but " + g.name + " has SXM NVLink (a baseboard's NVSwitch)"
                                  : " joins SXM modules through an NVSwitch, but " + g.name + " has a bridge connector"));
    if (g.nvlink_generation != link.spec.generation)
      config::fail(at, "hardware.gpu_link",
                   name + " is NVLink generation " + std::to_string(link.spec.generation) + ", but " + g.name +
                       " has generation " + std::to_string(g.nvlink_generation));
  }
}

}  // namespace

Scenario decode_scenario(const Node& root, const config::Catalogue& catalogue, const workloads::FormatTables& formats) {
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
    const Node& host = hw.any("host");
    s.host = hw::decode_host(catalogue.resolve("hosts", "host", without_keys(host, {"expert_memory"}), "hardware.host"),
                             "hardware.host");
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
  {
    const Node model = catalogue.resolve("models", "model", r.any("model"), "model");
    s.model = workloads::decode_model(model, "model");
    workloads::check_native_format(model, "model", s.model.native_format, formats);
  }
  const Node* engine = r.optional_any("engine");
  s.engine = decode_engine(engine ? *engine : Node::map(root.origin()), catalogue, formats, s.model,
                           static_cast<int>(s.cards.size()));
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
  // A decode attention kernel of a few blocks covers a share of each card's SMs: it needs their count.
  for (const auto& card : s.cards)
    if (s.engine.physics.decode_attention_blocks > 0 && s.model.attention.layout == workloads::AttentionLayout::Mla && card.gpu.spec.sm_count <= 0)
      config::fail(r.any("hardware"), "hardware.gpu", card.gpu.spec.name + " gives no compute.sm_count, which engine.decode_attention_blocks "
                                                      "needs for an MLA model: add the card's SM count from its datasheet");
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
                         " (cpu.fp32_throughput x engine.cpu_expert_bytes_per_flop); clear cpu_expert_bytes_per_flop "
                         "for the share to set the rate");

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
