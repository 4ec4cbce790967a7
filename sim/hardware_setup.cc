#include "sim/hardware_setup.h"

#include <algorithm>
#include <stdexcept>

namespace vramsim::sim {

using config::Lower;
using config::MapReader;
using config::Node;
using units::Dimension;

namespace {

// A scenario's own keys beside a catalogue description of a GPU or a link (each `preset` is
// the catalogue's: named in unknown-key messages, resolved by Catalogue::resolve).
const std::initializer_list<std::string_view> kGpuOwnKeys = {"count", "vram_used_by_others", "free_vram"};
const std::initializer_list<std::string_view> kGpuKeys = {"preset", "count", "vram_used_by_others", "free_vram"};
const std::initializer_list<std::string_view> kLinkOwnKeys = {"measured_h2d", "numa_node"};
const std::initializer_list<std::string_view> kLinkKeys = {"preset", "measured_h2d", "numa_node"};

}  // namespace

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

namespace {

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

}  // namespace

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

namespace {

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

// A unified-memory part's "link": its GPU's own reads of the memory it shares with the CPU, at
// the memory's bandwidth, with no per-copy cost (a buffer is shared, not copied).
LinkSetup unified_link(const hw::GpuSpec& g) {
  LinkSetup l;
  l.spec.name = "unified-memory";
  l.spec.nominal_bandwidth = l.spec.typical_bandwidth = l.h2d_bandwidth = l.experts_bandwidth = g.memory_bandwidth;
  l.source = "unified memory";
  return l;
}

}  // namespace

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
    if (g.spec.unified()) {  // its memory is the host's: no VRAM beside RAM, no link between them
      if (gpus.size() > 1) config::fail(gpu, "hardware.gpu", g.spec.name + " is a unified-memory part: several cannot be combined");
      if (const Node* link = hw.optional_any("link"))
        config::fail(*link, "hardware.link", g.spec.name + " is a unified-memory part: its GPU reads the weights from the memory "
                                             "it shares with the CPU, over no link (leave hardware.link out)");
      return {CardSetup{g, unified_link(g.spec)}};
    }

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

}  // namespace vramsim::sim
