// A host link (PCIe) or a card-to-card link (NVLink). Bandwidths are per direction, in bytes
// per second; both directions run at once (full duplex).
#pragma once

#include <string>

#include "core/config_tree.h"

namespace vramsim::hw {

enum class LinkKind { Pcie, Nvlink };

// How an NVLink preset joins the cards: a bridge between exactly two cards (GeForce, and PCIe
// workstation cards), or the SXM modules' links into a baseboard's NVSwitch (or a direct mesh),
// which the simulator models as one port per GPU into a switch.
enum class NvlinkTopology { None, Bridge, Switch };

struct LinkSpec {
  std::string name;
  LinkKind kind = LinkKind::Pcie;
  int generation = 0;
  int lanes = 0;                   // PCIe lanes, or NVLink links
  double nominal_bandwidth = 0;    // per direction, from signalling rate and line code
  double typical_bandwidth = 0;    // per direction, achieved by pinned DMA copies
  double latency_s = 0;            // fixed cost of one transfer, seconds
  // A copy between two cards without peer-to-peer access (cudaMemcpyPeer falling back to
  // the driver's copy through host memory): its fixed cost, seconds, as p2pBandwidthLatencyTest
  // measures it ("P2P=Disabled Latency"). PCIe only; unset: the two DMA copies' latencies.
  double staged_peer_latency_s = 0;
  NvlinkTopology topology = NvlinkTopology::None;  // NVLink only: `topology: bridge | switch`
};

// Per-lane, per-direction rate of a PCIe generation (1-7), bytes per second; 0 for others.
double pcie_lane_bandwidth(int generation);

// Throws ConfigError. Rejects a typical bandwidth above the nominal one, and a PCIe link whose
// nominal bandwidth is not its generation's lane rate x its lanes (within 2%).
// `scenario_keys`: keys a scenario reads beside the description (named in unknown-key errors).
LinkSpec decode_link(const config::Node& node, const std::string& key_path,
                     std::initializer_list<std::string_view> scenario_keys = {});

}  // namespace vramsim::hw
