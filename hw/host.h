// The host: CPU sockets and system RAM. Units: bytes, bytes per second, FLOP per second.
#pragma once

#include <optional>
#include <string>

#include "core/config_tree.h"

namespace vramsim::hw {

struct HostSpec {
  std::string name;
  std::string display_name;
  int sockets = 1;
  int cores = 0;                          // physical cores, all sockets
  int threads = 0;
  std::string simd;                       // avx2 | avx512 | avx512-bf16 | amx | neon
  std::optional<double> fp32_flops;       // peak fp32 of all cores, FLOP per second
  double memory_bytes = 0;
  int memory_channels = 0;
  std::string memory_type;
  double memory_bandwidth = 0;            // peak, all sockets, bytes per second
  int numa_nodes = 1;
  // Between NUMA nodes (sockets): bytes per second per direction; 0 for one node.
  double inter_socket_bandwidth = 0;
  // The CPU packages' power, all sockets together (cpu.power: {full_load, idle}), watts: the
  // host's share of a run's energy as idle + (full_load - idle) x the share of the run the host computes
  // (sim/power.h). None: not modelled (power and J/token are the GPU boards').
  std::optional<double> cpu_full_load_watts, cpu_idle_watts;
};

HostSpec decode_host(const config::Node& node, const std::string& key_path);

}  // namespace vramsim::hw
