// A `vramsim run` scenario: hardware, model, engine, workload, seed (docs/scenarios.md).
//
//   hardware:
//     gpu:  { preset: rtx-5090, count: 1, vram_used_by_others: 18106MiB }   # or free_vram: 8509MiB
//           # or a list, one entry per card: [ rtx-4090, { preset: rtx-3090, vram_used_by_others: 1GiB } ]
//     link: { preset: pcie-gen3-x16, measured_h2d: 13.9GB/s }   # every card's; or a list, one per card
//     switch: { preset: pcie-gen4-x16 }    # optional: the cards share this upstream link to the host
//     gpu_link: { preset: nvlink-bridge-3090 }   # optional: card-to-card link
//     host: { preset: xeon-gold-5218-x2 }
//   model: moe-125b-q2
//   engine: { preset: expert-cache, context: 32768, kv_type: q8_0, parallel: 1, ... }
//   workload: { clients: 1, requests: 500, prompt_tokens: 26, gen_tokens: 192 }
//   seed: 1
//
// Units: bytes, bytes per second, seconds, watts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/catalogue.h"
#include "hw/gpu.h"
#include "hw/host.h"
#include "hw/link.h"
#include "sim/cache_policy.h"
#include "workloads/formats.h"
#include "workloads/model.h"
#include "workloads/serving_workload.h"

namespace vramsim::sim {

struct GpuSetup {
  hw::GpuSpec spec;
  int count = 1;
  double vram_used_by_others = 0;     // other tenants' allocations on the card
  std::optional<double> free_vram;    // free VRAM at engine start, when measured (overrides the derivation)
};

struct LinkSetup {
  hw::LinkSpec spec;
  double h2d_bandwidth = 0;           // measured host->device copy bandwidth, else the link's typical
  bool measured = false;              // h2d_bandwidth is the scenario's measured_h2d
  std::string source = "typical";     // where h2d_bandwidth comes from: "measured_h2d", "typical", a calibration file
  std::string trained_from;           // the slot's preset when the card trained it down (else empty)
  int numa_node = 0;                  // the host socket (NUMA node) whose root port the link hangs off
  // Host -> card rate when the card reads the experts' host memory: h2d_bandwidth, or less when
  // part of that memory is on another NUMA node (its bytes also cross the inter-socket link):
  // 1 / ((1 - f) / h2d + f / min(h2d, inter-socket)), f = the remote share. Bytes per second.
  double experts_bandwidth = 0;
};

// One card of the machine and the link that joins it to the host (or to the PCIe switch).
struct CardSetup {
  GpuSetup gpu;
  LinkSetup link;
};

// How a model is spread over several cards (engine.split).
enum class Split {
  Single,    // one card
  Pipeline,  // contiguous layer ranges per card; activations handed to the next card
  Tensor,    // every layer's weights and KV heads split over the cards; all-reduce per layer
  Expert,    // MoE: attention and the rest on the first card, routed experts dealt over all cards
};
std::string_view to_string(Split s);

// The engine's physics. Each has a unit, a meaning and a source in configs/engines/*.yaml.
struct EnginePhysics {
  double gpu_bandwidth_efficiency = 0;  // achieved share of peak VRAM bandwidth streaming weights
  double gpu_compute_efficiency = 0;    // achieved share of dense fp16 rate in prefill GEMMs
  double runtime_vram = 0;              // CUDA context + engine work buffers, bytes
  double slot_alignment = 0;            // each cache slot is rounded up to this, bytes
  double step_overhead = 0;             // host-side work per decode step (GPU idle), seconds
  double layer_launch = 0;              // kernel launches per layer on the captured-graph path, seconds
  // The same cost in SM clock cycles (engine.layer_launch_cycles; 0: not given): its kernels are
  // latency-bound, so it runs at the card's boost clock (hardware.gpu compute.boost_clock), and
  // layer_launch = cycles / clock unless the engine gives layer_launch itself (sim/scenario.cc).
  double layer_launch_cycles = 0;
  bool layer_launch_given = true;       // the engine description holds layer_launch (else it comes from the cycles)
  // Kernels one dense layer's decode graph dispatches on Metal (llama.cpp's Metal backend); with a
  // unified part's compute.dispatch_latency it gives that part's layer_launch. 0: not given.
  int metal_dispatches_per_layer = 0;
  double moe_layer_sync = 0;            // per MoE layer: routing read back by the host, eager expert launches, seconds
  // GPU idle per routed-expert product (MUL_MAT_ID) of a step or micro-batch of two positions or
  // more, on a GPU: llama.cpp builds before PR 15525 (2025-08-25) copy the expert ids to the host,
  // synchronise, sort them there, copy them back and synchronise again before the product's
  // kernels are launched (ggml-cuda.cu ggml_cuda_mul_mat_id, mmq.cu ggml_cuda_mul_mat_q at ggml
  // 06034b3c^). Three products per MoE layer (gate, up, down). Seconds; 0: sorted on the GPU.
  double expert_sort_sync = 0;
  double miss_sync = 0;                 // GPU<->host synchronisation for a layer with misses, seconds
  double miss_sync_idle = 0;            // ... of which no kernel is resident (host wake-up, relaunch)
  double cpu_expert_share = 0;          // host expert GEMV throughput as a share of host memory bandwidth
  // Bytes of expert weights the host's expert kernels process per FLOP of the host's peak fp32
  // rate (cpu.fp32_throughput): their compute ceiling, for kernels bound by dequantisation
  // rather than by memory. 0: memory-bound only (the rate is cpu_expert_share x bandwidth).
  double cpu_expert_bytes_per_flop = 0;
  // A prompt batch's host-computed experts are matrix products: the engine's kernels reach
  // cpu_matrix_efficiency of the host's peak matrix rate on the instruction path cpu_matrix_isa
  // (at most the host's cpu.simd), on cpu_threads cores (0: every core). 0: no arithmetic
  // bound (the experts' bytes alone). sim/host_experts.h (host_matrix_rate).
  double cpu_matrix_efficiency = 0;
  std::string cpu_matrix_isa;           // avx2 | avx512 | amx | neon ("": the host's cpu.simd)
  int cpu_threads = 0;
  // Rows of an expert's matrix per task in the engine's first parallel jobs, when its threads
  // bind to NUMA nodes by the first job they work in (kTransformers' USE_NUMA build: the MoE
  // warm-up, MOEConfig's stride, 64); 0: the threads spread evenly over the nodes.
  // sim/host_experts.h (first_job_node_threads, host_busy_cores).
  int numa_first_job_stride = 0;
  // Whether a prompt batch's host-computed experts run while the GPU computes its part of the
  // layer (true), or after it (false: the GPU's part, the activations' copies and the host's
  // part add up, as kTransformers' prefill path runs them).
  bool host_prefill_overlap = true;
  double pcie_split_reference = 0;      // the engine's split: pcie_frac = link / (link + this), bytes/s
  int host_expert_workers = 0;          // host worker groups computing missed experts in parallel
  double zero_copy_efficiency = 0;      // GPU reads of mapped host memory vs copy bandwidth
  double cpu_bandwidth_efficiency = 0;  // host CPU streaming a CPU layer's weights: share of host memory bandwidth
  int prefill_ubatch = 0;               // prompt tokens per micro-batch; 0: the whole prompt at once
  double gemm_half_rows = 0;            // prefill GEMM rows at which it reaches half its rate (0: no such loss)
  int matvec_max_rows = 0;              // micro-batches of at most this many tokens run matrix-vector kernels: no such loss
  int matvec_max_rows_experts = 0;      // ... for the routed experts' products (default: matvec_max_rows)
  double matvec_compute_efficiency = 0; // ... whose arithmetic runs at this share of the dense fp16 rate (0: gpu_compute_efficiency)
  // llama.cpp builds before PR 8075 (2024-06): a GEMM of quantized weights over more than
  // mmq_max_rows tokens dequantizes them to fp16 and runs cuBLAS (0: its MMQ kernels at every
  // size), whose fp16 GEMM reaches dequant_gemm_efficiency of the dense fp16 rate.
  int mmq_max_rows = 0;
  double dequant_gemm_efficiency = 0;
  // A build whose MMQ kernels compute a fixed tile of this many tokens whole, for any micro-batch
  // above the matrix-vector kernels' (early-2024 LLAMA_CUDA_FORCE_MMQ: 128 for Q5_0/Q5_1,
  // ggml-cuda/mmq.cu L62-71 at 2b3389677a83): a GEMM of r rows costs ceil(r / tile) tiles,
  // in place of the gemm_half_rows curve. 0: tiles sized to the micro-batch.
  int mmq_tile_tokens = 0;
  // Prefill attention without a fused (flash) kernel: bytes of VRAM traffic per attention
  // score (one query, one key, one head) between its kernels; 0: fused, the scores stay on chip.
  double attention_score_bytes = 0;
  // Which keys a prompt micro-batch's attention kernels compute. Unfused attention (above) always
  // computes the micro-batch's whole KV view, every query against every key up to the micro-batch's
  // last position (ggml's KQ product, softmax and KQV over n_kv: llm_build_kqv). A fused kernel
  // skips the keys after each query's position; with attention_skips_window it also skips the
  // keys before a sliding window (FlashAttention's window_size: vLLM, SGLang), without it it
  // computes them masked (llama.cpp's CUDA FA: KV_max trims only the keys past a query tile,
  // fattn-common.cuh flash_attn_mask_to_KV_max, PR 14924, 2025-07-30).
  bool attention_skips_window = true;
  // A fused kernel skips masked keys only in micro-batches of at least this many tokens; below it
  // every query computes every key of its view (llama.cpp's CUDA FlashAttention scans the mask
  // for KV_max only when `Q->ne[1] >= 1024 || Q->ne[3] > 1`, fattn-common.cuh since PR 14924).
  // 0: always (FlashAttention in vLLM and SGLang skips per block; Metal's kernels skip blocks of
  // -INF mask).
  std::int64_t attention_skip_min_rows = 0;
  // A prompt micro-batch's element-wise kernels and its products' input and output conversions
  // move its activations through VRAM on top of the GEMMs (llama.cpp's ggml graph,
  // sim/activation_traffic.h); false: the engine's fused kernels keep them out of the step's time.
  bool prefill_activation_traffic = false;
  // Bytes of one hidden-state value where it crosses a link or card boundary (pipeline
  // hand-offs, all-reduces, copies to and from host experts): 2 for fp16/bf16 activations,
  // 4 for ggml's fp32 ones.
  double activation_value_bytes = 2;
  // Blocks per sequence of the engine's decode attention kernel (its grid), when that is fewer
  // than a card's SMs can hold: the kernel then runs on that many SMs only. 0: it fills the card.
  int decode_attention_blocks = 0;
  // Share of gemm_peak the engine's dequantizing GEMM kernels reach (dequantizing_gemms in
  // step_model.h); 0: gpu_compute_efficiency, as for its other GEMMs.
  double quantized_gemm_efficiency = 0;
  double default_pcie_frac = 0;         // the engine's split when no probe ran
  // Power.
  // Share of each card's TDP - idle drawn above idle while a kernel is resident, working or not
  // (clocks up, SMs polling); the rest, (1 - share) x (TDP - idle), is what the work can add.
  double wait_power_share = 0;
  std::optional<double> energy_per_byte;  // J per byte streamed from VRAM through the SMs; unset: each card's own
  // Multi-card (engine.split). Host-visible cost of the synchronisation around one hand-off
  // of activations to the next card, and around one all-reduce, seconds (launch + event wait;
  // the bytes' own time is simulated on the links).
  double handoff_sync = 0;
  double collective_sync = 0;
  // No fixed cost per step or layer (hybrid-cpu-experts: none measured): a step is its bytes alone.
  bool no_fixed_costs() const { return step_overhead == 0 && layer_launch == 0 && moe_layer_sync == 0; }
};

// How an engine runs its parallel slots' steps.
// The engine family an engine file names (`family:`); its behaviour lives in sim/engines/.
enum class EngineFamilyId { LlamaCpp, Vllm, ExpertCache, HybridCpuExperts };

enum class SlotScheduling {
  Serial,      // one decode loop: a slot's step runs alone, the next waits (round robin)
  Overlapped,  // slots' steps run at once, contending for the GPU, the host's workers and the link
  Batched,     // continuous batching: one decode loop; each step runs one token of every running request
};

// A paged KV pool (vLLM's PagedAttention), engine.kv_pool: allocated at start from what
// gpu_memory_utilization x the card's total leaves after the weights and the runtime, and
// handed to the requests in blocks of `block_size` tokens as their contexts grow.
struct KvPool {
  double gpu_memory_utilization = 0.9;
  int block_size = 16;
  double watermark = 0;  // share of the blocks a new request must leave free to be admitted
};

// vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py, Scheduler.schedule): each step has one
// budget of max_num_batched_tokens tokens, spent first on the running requests' decode tokens,
// then on the prompts being prefilled, chunk by chunk (chunked prefill: a prompt larger than
// what is left takes what is left and goes on in the next steps). Without it (V0): a prefill
// pass of whole prompts between decode steps.
struct StepBudget {
  std::int64_t tokens = 0;     // max_num_batched_tokens (0 until fitted to the cards: `auto`)
  bool tokens_auto = false;    // `auto`: vLLM's default for the card (engines/vllm.cc)
};

struct EngineSetup {
  std::string preset;
  // Cards (catalogue names) on which measurements gathered after the preset's calibration show
  // its decode biased: a note printed with the figures, never a correction applied to them.
  std::map<std::string, std::string> decode_bias;
  SlotScheduling scheduling = SlotScheduling::Serial;
  std::int64_t context = 0;
  workloads::KvType kv;
  int parallel = 1;
  bool parallel_auto = false;  // `parallel: auto` (vLLM's max_num_seqs default for the card; 0 until fitted)
  std::optional<StepBudget> step_budget;  // vLLM V1's token budget per step (engine.max_num_batched_tokens)
  // llama.cpp-style placement (engines without an expert cache). The last `gpu_layers` layers
  // run on the GPU(s) (-ngl), the first ones on the host CPU from RAM; the routed experts of
  // the first `cpu_moe_layers` layers stay in RAM and are computed by the CPU (--n-cpu-moe N;
  // --cpu-moe = every layer).
  int gpu_layers = 0;
  // The LM head (llama.cpp's output layer) on the CPU, read from RAM every token. How -ngl N
  // places it depends on the build (ngl_output_first below); an unset gpu_layers (or -ngl 99)
  // puts it on the GPU. Engines without an expert cache only.
  bool head_on_cpu = false;
  // llama.cpp's -ngl counts the output layer first (builds since ggml-org/llama.cpp PR 18148,
  // 2025-12-17, "offload output layer to GPU first"): -ngl N (1 <= N <= layers) puts the LM
  // head and the last N - 1 layers on the GPU(s). false: the builds before it, where -ngl N
  // puts the last N layers there and the head only with N above the layer count.
  bool ngl_output_first = true;
  int cpu_moe_layers = 0;
  EngineFamilyId family = EngineFamilyId::ExpertCache;  // engine.family (sim/engines/engine_family.h)
  bool expert_cache = true;      // false: experts live with their layer (VRAM or RAM), no cache
  // vram_rule: engine: judge a placement with every layer on the GPUs as offload placements
  // are, by weights + KV + runtime against the card's total, not by the memory-budget model.
  bool engine_vram_rule = false;
  bool vram_rule_given = false;  // the scenario or a --set chose the rule (run --model keeps it)
  Split split = Split::Single;
  // llama.cpp's tensor split is its row split (--split-mode row): each weight matrix of the
  // repeating layers split by rows over the cards, every split matrix product copying its input
  // from the main card (card 0) to the others and their slices of the result back, attention and
  // the KV cache on the main card (sim/row_split.h). false: a tensor-parallel engine's split
  // (vLLM): heads and KV sharded, two all-reduces per layer. Set by the engine family.
  bool row_split = false;
  std::vector<int> layer_split;  // layers per card (pipeline); empty: proportional to free memory
  std::optional<int> max_queue;  // admission control: requests waiting beyond this are rejected
  std::optional<KvPool> kv_pool;  // paged KV (engine.kv_pool): no per-slot KV reservation
  workloads::WeightFormat expert_format;
  workloads::WeightFormat other_format;
  CachePolicy policy = CachePolicy::Profile;
  std::optional<std::int64_t> cache_slots;  // explicit size; nullopt = auto
  std::optional<double> cache_size_bytes;   // explicit size as a VRAM amount (slots = floor(bytes / slot))
  // Where the misses go: false (the expert-cache engine) = the host's share of worker groups,
  // the rest read over PCIe in place; true (hybrid-cpu-experts) = every miss computed by the CPU.
  bool misses_on_cpu = false;
  // The host's expert throughput: false = the host's whole memory bandwidth; true = per-socket
  // worker groups reading the experts' NUMA placement (sim/host_experts.h).
  bool numa_worker_groups = false;
  double cache_reserve = 0;                 // VRAM kept free beside the cache, bytes
  double dynamic_share = 0;                 // profile-lru: share of slots managed by LRU
  bool speculative = false;
  int draft_tokens = 0;
  double acceptance = 0;                    // accepted / drafted
  double draft_head_bytes = 0;
  EnginePhysics physics;
};

using workloads::WorkloadSetup;  // workloads/serving_workload.h

// Where the routed experts' host memory lives (hardware.host.expert_memory).
struct ExpertMemory {
  bool interleaved = false;  // pages spread over every NUMA node
  bool replicated = false;   // a full copy on every NUMA node, each reader using its own (kTransformers' NUMA mode)
  bool given = false;        // set by the scenario (unset: node 0, which the OS may spill past)
  bool spilled = false;      // unset and too large for one node: spread over the nodes (then interleaved)
  int node = 0;              // else: all on this node
};

struct Scenario {
  std::string source;  // the scenario file
  GpuSetup gpu;        // the first card (the only one for a one-card scenario)
  LinkSetup link;      // the first card's host link
  std::vector<CardSetup> cards;         // every card, the first one included (hardware.gpu.count or a list)
  std::optional<LinkSetup> pcie_switch; // cards behind one PCIe switch share its upstream link to the host
  std::optional<LinkSetup> gpu_link;    // a card-to-card link (NVLink, bridge) between every pair
  hw::HostSpec host;
  ExpertMemory expert_memory;
  workloads::ModelSpec model;
  EngineSetup engine;
  WorkloadSetup workload;
  std::uint64_t seed = 1;
  std::vector<std::string> warnings;  // suspicious but valid input, printed on stderr
};

// llama.cpp's -ngl for a placement of `gpu_layers` of `layers` with the LM head on the CPU or
// not: every layer and the head on the GPUs is the customary 99 (layers + 1 for a model of 99
// layers or more: llama.cpp offloads min(-ngl, layers + 1) layers, the output counting as one).
// Builds that count the output first (output_first): N layers and the head are -ngl N + 1; no
// layer on the GPU is -ngl 0. Earlier builds: N layers with the head on the CPU are -ngl N.
// A placement the build's -ngl cannot express (ngl_expressible) has no flag: -1.
constexpr bool ngl_expressible(int gpu_layers, int layers, bool head_on_cpu, bool output_first) {
  if (gpu_layers >= layers && !head_on_cpu) return true;
  if (output_first) return head_on_cpu ? gpu_layers == 0 : true;
  return head_on_cpu;
}
constexpr int ngl_flag(int gpu_layers, int layers, bool head_on_cpu, bool output_first) {
  if (!ngl_expressible(gpu_layers, layers, head_on_cpu, output_first)) return -1;
  if (gpu_layers >= layers && !head_on_cpu) return layers + 1 > 99 ? layers + 1 : 99;
  return output_first && !head_on_cpu ? gpu_layers + 1 : gpu_layers;
}

// Decodes a scenario tree (after --set overrides). Throws ConfigError for bad or impossible
// input: top-k > experts, a tensor split whose head counts do not divide by the cards, a cache larger than free VRAM,
// zero bandwidth, an unknown policy, experts that do not fit in host RAM.
Scenario decode_scenario(const config::Node& root, const config::Catalogue& catalogue,
                         const workloads::FormatTables& formats);

}  // namespace vramsim::sim
