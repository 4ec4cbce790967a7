#include "hw/host.h"

#include <string>

#include "core/config_reader.h"

namespace vramsim::hw {

using config::MapReader;
using units::Dimension;

HostSpec decode_host(const config::Node& node, const std::string& key_path) {
  MapReader r(node, key_path);
  HostSpec h;
  h.name = r.string("name");
  h.display_name = r.optional_string("display_name").value_or(h.name);
  r.ignore("source");
  {
    MapReader c = r.map("cpu");
    c.ignore("model");
    h.sockets = static_cast<int>(c.integer("sockets", 1, 16));
    h.cores = static_cast<int>(c.integer("cores", 1, 4096));
    h.threads = static_cast<int>(c.integer("threads", h.cores, 8192));
    h.simd = c.choice("simd", {"avx2", "avx512", "avx512-bf16", "amx", "neon"});
    h.fp32_flops = c.optional_quantity("fp32_throughput", Dimension::FlopRate);
    if (auto power = c.optional_map("power")) {
      h.cpu_full_load_watts = power->quantity("full_load", Dimension::Power);
      h.cpu_idle_watts = power->quantity("idle", Dimension::Power, config::Lower::NonNegative);
      // The largest server CPUs are rated ~500 W a socket (AMD EPYC 9965: 500 W).
      if (*h.cpu_full_load_watts > 600.0 * h.sockets)
        power->fail_at("full_load", "above 600 W a socket is no CPU package's sustained power (the largest are rated ~500 W); check the unit and that it sums the sockets");
      if (*h.cpu_idle_watts >= *h.cpu_full_load_watts) power->fail_at("idle", "the idle power must be below the full-load power");
      power->finish();
    }
    c.finish();
  }
  {
    MapReader m = r.map("memory");
    h.memory_bytes = m.quantity("capacity", Dimension::Bytes);
    h.memory_channels = static_cast<int>(m.integer("channels", 1, 64));
    h.memory_type = m.optional_string("type").value_or("");
    h.memory_bandwidth = m.quantity("bandwidth", Dimension::Bandwidth);
    m.finish();
  }
  h.numa_nodes = static_cast<int>(r.integer("numa_nodes", 1, 64));
  // A node is a socket or a cluster of its cores, each with its memory controllers: the model
  // places threads and experts on nodes by their cores (sim/host_experts.h).
  if (h.numa_nodes > h.cores)
    r.fail_at("numa_nodes", std::to_string(h.numa_nodes) + " NUMA nodes for " + std::to_string(h.cores) +
                                " cores: each node holds at least one core (a socket or a cluster of cores)");
  if (h.numa_nodes > 1)
    h.inter_socket_bandwidth = r.quantity("inter_socket_bandwidth", Dimension::Bandwidth);
  else if (r.has("inter_socket_bandwidth"))
    r.fail_at("inter_socket_bandwidth", "a host with one NUMA node has no inter-socket link");
  r.finish();
  return h;
}

}  // namespace vramsim::hw
