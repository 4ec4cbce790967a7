#include "sim/host_experts.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace vramsim::sim {

double per_socket_expert_bandwidth(const hw::HostSpec& host, const ExpertMemory& placement) {
  const int nodes = std::max(1, host.numa_nodes);
  if (nodes == 1) return host.memory_bandwidth;
  const double node_bw = host.memory_bandwidth / nodes;
  const double remote_bw = std::min(node_bw, host.inter_socket_bandwidth);
  std::vector<double> share(static_cast<std::size_t>(nodes), 0.0);  // f_n
  if (placement.replicated) return host.memory_bandwidth;  // every group reads its own node's copy
  if (placement.interleaved)
    std::fill(share.begin(), share.end(), 1.0 / nodes);
  else
    share[static_cast<std::size_t>(placement.node)] = 1.0;
  // Each group's uncapped rate, then one scale for all so that no node exceeds its bandwidth
  // (the groups' traffic to node n is sum_g r_g f_n).
  double total = 0;
  for (int g = 0; g < nodes; ++g) {
    double seconds_per_byte = 0;
    bool reaches = true;  // a group with no path to some of the experts (no inter-socket link) idles
    for (int n = 0; n < nodes; ++n) {
      const double f = share[static_cast<std::size_t>(n)];
      const double bw = n == g ? node_bw : remote_bw;
      if (f <= 0) continue;
      if (bw <= 0) reaches = false;
      else seconds_per_byte += f / bw;
    }
    if (reaches && seconds_per_byte > 0) total += 1.0 / seconds_per_byte;
  }
  double scale = 1.0;
  for (int n = 0; n < nodes; ++n) {
    const double demand = total * share[static_cast<std::size_t>(n)];
    if (demand > node_bw) scale = std::min(scale, node_bw / demand);
  }
  return total * scale;
}

double host_expert_memory_rate(const Scenario& s) {
  const double bandwidth =
      s.engine.numa_worker_groups ? per_socket_expert_bandwidth(s.host, s.expert_memory) : s.host.memory_bandwidth;
  return bandwidth * s.engine.physics.cpu_expert_share;
}

namespace {
// The share of the host's fp32 peak the engine's expert kernels run on: its busy cores.
double busy_share(const Scenario& s) { return host_busy_cores(s) / std::max(1, s.host.cores); }
}  // namespace

double host_expert_rate(const Scenario& s) {
  const double memory = host_expert_memory_rate(s);
  const double per_flop = s.engine.physics.cpu_expert_bytes_per_flop;
  if (per_flop <= 0 || !s.host.fp32_flops) return memory;
  return std::min(memory, *s.host.fp32_flops * busy_share(s) * per_flop);
}

namespace {
int isa_rank(const std::string& isa) {
  if (isa == "avx2") return 1;
  if (isa == "avx512") return 2;
  if (isa == "avx512-bf16") return 3;
  if (isa == "amx") return 4;
  return 0;  // neon, or none
}
}  // namespace

double isa_matrix_factor(const std::string& host_simd, const std::string& isa, double bits) {
  const bool int8 = bits < 16, bf16 = !int8 && bits < 32;
  if (host_simd == "neon") return int8 ? 4.0 : 1.0;  // SDOT; NEON has no other path here
  // The engine's path, capped by what the host has.
  const int path = std::min(isa.empty() ? isa_rank(host_simd) : isa_rank(isa), isa_rank(host_simd));
  if (path >= 4) return int8 ? 32.0 : bf16 ? 16.0 : 1.0;
  if (path >= 2) return int8 ? 4.0 : bf16 && path >= 3 ? 2.0 : 1.0;
  if (path == 1) return int8 ? 2.0 : 1.0;
  return 1.0;
}

std::vector<int> first_job_node_threads(int threads, int nodes, const std::vector<int>& jobs) {
  std::vector<int> on(static_cast<std::size_t>(nodes), 0);
  for (int id = 0; id < threads; ++id) {
    int n = threads;  // a later job that uses every thread
    for (int tasks : jobs)
      if (id < std::min(threads, tasks)) {
        n = std::min(threads, tasks);
        break;
      }
    // 64-bit: thread_id x nodes as the engine computes it, without overflow at any count.
    ++on[static_cast<std::size_t>(static_cast<long long>(id) * nodes / n)];
  }
  return on;
}

double host_busy_cores(const Scenario& s) {
  const auto& ph = s.engine.physics;
  const int cores = std::max(1, s.host.cores);
  const int threads = ph.cpu_threads > 0 ? ph.cpu_threads : cores;
  const int nodes = std::max(1, s.host.numa_nodes);
  // The rule is the USE_NUMA build's, and that build copies every expert onto each node
  // (llamafile/moe.cpp L25-48): with one copy (interleaved, or on one node) the threads are
  // the operating system's to spread.
  if (ph.numa_first_job_stride <= 0 || nodes == 1 || !s.expert_memory.replicated || !s.model.moe ||
      s.model.hidden_size <= 0)
    return std::min(threads, cores);
  // kTransformers' first jobs: the first MoE layer's warm-up, one expert's forward_one: its
  // gate/up rows in tasks of `stride` rows, then its down projection's (ktransformers_ext/
  // operators/llamafile/moe.cpp, MOE::forward_one; KExpertsCPU.load(warmup=True)).
  const double stride = ph.numa_first_job_stride;
  const double intermediate = s.model.moe->expert_params / (3.0 * s.model.hidden_size);
  const std::vector<int> jobs{std::max(1, static_cast<int>(std::round(intermediate) / stride)),
                              std::max(1, static_cast<int>(s.model.hidden_size / stride))};
  const std::vector<int> on = first_job_node_threads(threads, nodes, jobs);
  double busy = 0;
  for (int k = 0; k < nodes; ++k) {
    // Node k's cores: the host's cores dealt over its nodes (a remainder to the later ones).
    const long long node_cores = static_cast<long long>(cores) * (k + 1) / nodes - static_cast<long long>(cores) * k / nodes;
    busy += static_cast<double>(std::min<long long>(on[static_cast<std::size_t>(k)], node_cores));
  }
  return busy;
}

double host_matrix_rate(const Scenario& s) {
  const auto& ph = s.engine.physics;
  if (ph.cpu_matrix_efficiency <= 0 || !s.host.fp32_flops || !s.model.moe) return 0.0;
  const double bits = s.engine.expert_format.bits_per_weight;
  return *s.host.fp32_flops * isa_matrix_factor(s.host.simd, ph.cpu_matrix_isa, bits) * busy_share(s) * ph.cpu_matrix_efficiency;
}

}  // namespace vramsim::sim
