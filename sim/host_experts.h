// The host CPU's expert throughput when its worker groups are pinned one per socket (NUMA node)
// and read the routed experts wherever hardware.host.expert_memory put them (kTransformers'
// per-NUMA-node thread pools; engine key host_expert_numa: per-socket).
//
// Each socket's group reads an expert byte from its own node at that node's bandwidth
// (the host's peak / nodes) or from another node across the inter-socket links at
// min(node bandwidth, inter_socket_bandwidth). A group's memory-path rate is then
//   r_g = 1 / sum_n (f_n / b_gn)      f_n = the share of the expert bytes on node n
// and the groups together are capped by what each node's memory controllers deliver:
//   sum_g r_g f_n <= node bandwidth    for every node n
// The groups split each expert's rows in proportion to their rates (every thread works on
// one expert, as kTransformers' CPUInfer does), so a layer's CPU experts take
// experts x expert bytes / (cpu_expert_share x the total). Closed forms, 2 nodes of B each,
// link L <= B: experts on one node: B (the other socket's reads only share that node's B);
// interleaved: 2 / (0.5/B + 0.5/L) (each group reads half locally, half across the link).
// Replicated (a copy on every node, kTransformers' dual-socket mode): every group reads locally,
// the host's whole bandwidth. One node: the host's whole bandwidth. Units: bytes per second.
#pragma once

#include <vector>

#include "sim/scenario.h"

namespace vramsim::sim {

// The memory-path bandwidth the host's per-socket worker groups reach on the experts (before
// the engine's kernel efficiency cpu_expert_share).
double per_socket_expert_bandwidth(const hw::HostSpec& host, const ExpertMemory& placement);

// The host's expert throughput, all worker groups together, bytes of expert weights per second:
// cpu_expert_share x the memory bandwidth its groups read from (the host's whole bandwidth, or
// per_socket_expert_bandwidth with host_expert_numa: per-socket), capped by the kernels'
// arithmetic when the engine sets cpu_expert_bytes_per_flop: that x the host's fp32 peak x
// host_busy_cores / cores (the cores the engine's threads keep busy).
double host_expert_rate(const Scenario& s);
// The memory-bound part alone (the first term above).
double host_expert_memory_rate(const Scenario& s);

// Multiply-accumulate throughput of one core's instruction path relative to its AVX fp32 FMA
// path (what cpu.fp32_throughput counts), for experts of `bits` bits per weight: quantized
// experts (under 16 bits) run int8 dot products on activations quantized to 8 bits, 16-bit
// ones bf16 products, else fp32. Per 512-bit (AVX-512) or 256-bit (AVX2) instruction, from
// Intel's instruction tables (Intel 64 and IA-32 Architectures Optimization Reference Manual):
//   fp32 FMA: 16 (AVX-512) / 8 (AVX2) MACs           -> 1
//   int8 AVX-512 VNNI VPDPBUSD: 64 MACs               -> 4
//   int8 AVX2 VPMADDUBSW + VPMADDWD: 32 MACs, 2 uops  -> 2
//   bf16 AVX512_BF16 VDPBF16PS: 32 MACs               -> 2 (plain AVX-512, AVX2: fp32, 1)
//   AMX (TMUL, per core and cycle): 1,024 int8 / 512 bf16 MACs against AVX-512's 32 fp32 -> 32 / 16
//   NEON SDOT: 16 int8 MACs per 128-bit against 4 fp32  -> 4 (bf16: 1)
// `isa`: the path the engine's kernels use; the host's cpu.simd caps it (avx2 < avx512 <
// avx512-bf16 < amx; neon alone).
double isa_matrix_factor(const std::string& host_simd, const std::string& isa, double bits);

// How many of an engine's `threads` worker threads end up on each of `nodes` NUMA nodes when
// each thread binds itself to node thread_id x nodes / n of the first parallel job it works in,
// n being the threads that job uses, min(threads, its tasks): kTransformers' Backend with
// USE_NUMA (ktransformers_ext/cpu_backend/backend.cpp, process_tasks, v0.2.0 to v0.2.2rc1;
// numa_bind pins the thread's CPUs and memory to that node; v0.2.2rc2's "fix numa cpu
// distribution", 2025-02-26, makes every job use every thread). `jobs`: the task counts of the
// process's first jobs, in order; a thread none of them reaches binds in a later job that uses
// every thread.
// REQUIRES: threads >= 1, nodes >= 1, every job >= 1.
std::vector<int> first_job_node_threads(int threads, int nodes, const std::vector<int>& jobs);

// The cores the engine's expert threads keep busy: min(threads, cores) when they spread evenly
// over the nodes; with engine.numa_first_job_stride and the experts copied onto every node
// (hardware.host.expert_memory: replicate, the USE_NUMA build) kTransformers' placement above,
// the sum over nodes of min(its threads, its cores). Threads: cpu_threads, else one per core.
// At most the host's cores.
double host_busy_cores(const Scenario& s);

// The host's rate for a prompt batch's expert products, FLOP per second (2 per multiply-add):
// cpu.fp32_throughput x isa_matrix_factor x host_busy_cores / cores x cpu_matrix_efficiency.
// 0 when the engine sets no cpu_matrix_efficiency (no arithmetic bound).
// REQUIRES: the host's fp32_flops when cpu_matrix_efficiency > 0 (the decoder refuses otherwise).
double host_matrix_rate(const Scenario& s);

}  // namespace vramsim::sim
