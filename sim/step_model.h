// The decode step model: how long one engine step takes, from what the step reads and where
// its experts are. Pure arithmetic, no events; the engine (engine.h) feeds it per-layer counts
// and advances SimGrid's clock by its result.
//
// One decode step verifies T = 1 + draft tokens (MTP) or T = 1 token. Per MoE layer:
//   attention:  the layer's non-expert weights and the KV cache are streamed once for T tokens
//   router:     only now are the layer's experts known
//   hits:       resident experts are streamed from VRAM once for T tokens
//   misses (profile policies): the host computes up to N of them from RAM, one per worker
//               group, all in one wave (N = host workers x (1 - pcie_frac), the share of its
//               miss capacity the engine gives the host on this link); the rest "overflow": the
//               GPU reads them over PCIe in place (zero-copy). The GPU waits for both (a bubble
//               of `miss_sync` plus the slower path), overlapping its own hits
//   misses (lru, lfu): copied into the cache over the link (latency + bytes / bandwidth each,
//               one copy engine), then streamed like hits
// plus per-layer launch cost; per step the LM head, the draft passes (MTP head + LM head) and
// the host's own step work (sampling, acceptance; GPU idle).
// All times in seconds, sizes in bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "sim/kernel_rates.h"
#include "sim/scenario.h"
#include "sim/vram_plan.h"

namespace vramsim::sim {

// Where a step's time went (sums to the step time), and what it moved.
struct StepCosts {
  double compute = 0;      // GPU streaming weights and KV (useful work)
  double transfer = 0;     // waiting on PCIe reads or copies beyond the GPU's own work
  double stall = 0;        // synchronisation bubbles with the host
  double cpu_experts = 0;  // waiting on the host's expert compute beyond the bubble
  double launch_sync = 0;  // kernel launches and the host's per-step work
  double cpu_layers = 0;   // the host CPU running the layers kept in RAM (llama.cpp -ngl below the layer count)
  double host_idle = 0;    // time with no kernel resident (host step work, part of the bubbles, the CPU's layers)
  double vram_bytes = 0;   // bytes streamed from VRAM
  double pcie_bytes = 0;   // bytes over the host link (zero-copy reads, copies, activations)
  double flops = 0;        // FLOPs the GPU's tensor cores run: GEMMs (2 x active parameters per position) and prefill attention
  // Seconds the host link is busy, every use included (reads, copies, activations, and the
  // background prefetch copies of profile-lru that no layer waits for): a step cannot end
  // before its link work does (RequestRunner applies it as a floor). Not part of total().
  double link_busy = 0;
  // Seconds the host CPU computes (its layers, the experts it runs), overlapping the GPU or not:
  // its load for the host's power (sim/power.h). Not part of total().
  double host_busy = 0;
  double total() const { return compute + transfer + stall + cpu_experts + launch_sync + cpu_layers; }
  StepCosts& operator+=(const StepCosts& o);
  StepCosts& operator-=(const StepCosts& o);
};

// A stage the host CPU runs (its RAM-resident layers): the whole of its time is the CPU's, with
// no kernel resident on any card; the step model's split of it (streaming, launches) becomes
// `cpu_layers`.
StepCosts as_cpu_layers(StepCosts c);

// Whether a host stage's costs are work on the first card instead: the stage streamed its
// weights over that card's link (llama.cpp's offload rule, StepModel::offloads_to_gpu), which
// the step model marks with the bytes it moved.
inline bool host_work_on_card(const StepCosts& host_costs) { return host_costs.pcie_bytes > 0; }

// One layer's expert situation in a step (distinct experts).
struct LayerExperts {
  int hits = 0;
  int misses = 0;
  int pcie_reads = 0;  // of the misses, read by the GPU over PCIe (set by split_misses)
};

// The KV positions one sequence of `context` tokens has a layer read in a decode step,
// averaged over the model's layers: `context`, except that sliding-window layers read at most
// their window (Gemma 3: 5 of 6 layers keep 1,024 tokens). Whole tokens, rounded.
std::int64_t attended_tokens(const workloads::ModelSpec& model, std::int64_t context);

// One sequence of a prefill pass: `tokens` new positions after `cached` ones already in its
// KV cache (a reused prefix, or what it had before a preemption).
struct PromptSequence {
  std::int64_t tokens = 0;
  std::int64_t cached = 0;
};

// What one prefill pass runs on a card (StepModel::prefill). Expert counts are expected
// distinct (layer, expert) pairs summed over this card's MoE layers.
struct PrefillPass {
  std::vector<PromptSequence> sequences;  // prefilled together, cut in this order into micro-batches
  double missing_experts = 0;             // touched by the whole pass, not resident
  double missing_full_ubatch = 0;         // not resident, touched by one full micro-batch
  double missing_last_ubatch = 0;         // not resident, touched by the last, shorter one (if any)
  double resident_full_ubatch = 0;        // resident, touched by one full micro-batch
  double resident_last_ubatch = 0;        // resident, touched by the last, shorter one (if any)
  // Per token, summed over this card's MoE layers: the routed picks that land on experts not
  // resident here (sum of their inclusion probabilities), which the host computes or copies in.
  double missing_routed_per_token = 0;
  int gpu_expert_layers = 0;              // MoE layers whose touched experts include resident ones
  int moe_layers = 0;                     // this card's MoE layers
};


class StepModel {
 public:
  // llama.cpp runs an operation of this many rows (tokens) or more on the GPU even when its
  // weights are in RAM, copying them over the link first (ggml-cuda's offload_op, min_batch_size
  // 32; ggml-backend's scheduler copies only the experts a MUL_MAT_ID uses). Below it the CPU
  // computes the operation where its weights are.
  static constexpr int kGpuOffloadRows = 32;
  // The model of card `card` (its GPU, its host link, its part of the model in `plan`).
  StepModel(const Scenario& scenario, const VramPlan& plan, int card = 0);
  // The host CPU running the first layers (plan_host): its RAM streamed at the engine's
  // cpu_bandwidth_efficiency; a prompt of 32 tokens or more is instead computed on the first
  // card, these layers' weights streamed to it over its link (llama.cpp's offloaded prefill).
  StepModel(const Scenario& scenario, const VramPlan& host_plan, const CardSetup& host_as_card);

  // The engine's split of misses between host compute and GPU reads over PCIe, chosen from
  // the link's measured speed: pcie_frac = link / (link + the engine's reference rate).
  double pcie_frac() const { return pcie_frac_; }
  // Missed experts per layer the host takes (N); the rest of a layer's misses overflow to PCIe.
  int host_expert_slots() const { return host_slots_; }
  int split_misses(int misses) const { return misses > host_slots_ ? misses - host_slots_ : 0; }

  // Time of one MoE layer for T tokens reading `kv_tokens` positions of KV: the sum of
  // attended_tokens() over the sequences in the step.
  StepCosts layer(const LayerExperts& e, int tokens, std::int64_t kv_tokens) const;
  // What a layer asks of each resource, for running it as separate activities when several
  // slots contend (seconds at full speed, host work in bytes of expert weights per worker).
  // Run as: gpu_before; then gpu_hits on the GPU while, after `sync`, the link carries
  // link_bytes (after link_wait) and the host computes host_experts (after host_transfer);
  // then gpu_after. Without contention this is layer()'s time exactly.
  struct LayerDemand {
    double gpu_before = 0;     // attention, router and launches: before the experts are known
    double gpu_hits = 0;       // resident experts
    double gpu_after = 0;      // copied-in experts (lru, lfu): computed once their copies land
    double sync = 0;           // the bubble's fixed part (0 without misses)
    int host_experts = 0;      // experts the host computes, one worker group each
    double host_transfer = 0;  // seconds: activations to the host and back
    // Bytes for the card's link at its nominal host->device rate that take the step model's
    // transfer time there: zero-copy efficiency and the experts' NUMA rate are folded in.
    double link_bytes = 0;
    double link_wait = 0;      // seconds: per-copy latencies beyond the one the link charges
    // profile-lru: the misses' copies into the LRU part, in the background (no layer waits for
    // them, but they share the link and the step ends only once they are in). Nominal-rate bytes.
    double prefetch_bytes = 0;
  };
  LayerDemand layer_demand(const LayerExperts& e, int tokens, std::int64_t kv_tokens) const;
  // Whether llama.cpp runs an operation over `tokens` positions on the GPU whatever holds its
  // weights (kGpuOffloadRows or more; engines without an expert cache).
  bool offloads_to_gpu(std::int64_t tokens) const;
  // Whether a GPU layer's RAM experts (llama.cpp's --n-cpu-moe) are copied in and computed by
  // the GPU rather than by the host: a GPU layer's step that offloads_to_gpu.
  bool copies_ram_experts(int tokens) const;
  // Host throughput of one worker group, bytes of expert weights per second.
  double host_worker_rate() const { return cpu_bw_ / std::max(1, s_.engine.physics.host_expert_workers); }

  // The per-step part: LM head, `drafts` draft passes (each the draft head and the LM head), host
  // step work (on the card that holds the head); also the step's GEMM FLOPs on this card (2 x
  // active parameters x `tokens` positions, its share; none for CPU layers), counted here once
  // per step and card (StepCosts::flops).
  StepCosts step_fixed(int tokens, int drafts) const;
  // The least time a decode step of `tokens` positions can take on this card's layers: its
  // FLOPs (2 x active parameters per position, this card's share) at the dense fp16 rate x
  // gpu_compute_efficiency, or at matvec_rate() for a few positions (the host's own rate for
  // CPU layers). Continuous batching's and speculative verification's floor.
  double compute_floor(int tokens) const;
  // One token's hidden state (fp16), the bytes a pipeline hands to the next card per token and
  // a tensor split all-reduces twice per layer.
  double activation_bytes() const { return activation_bytes_; }

  // Prefill of one pass's prompt tokens over this card's layers, micro-batch by micro-batch
  // (engine.prefill_ubatch; 0: the whole pass at once). The pass's sequences are cut in order
  // into micro-batches, as llama.cpp cuts its batch into ubatches. Each micro-batch reads the
  // layers' weights and the experts it touches that are resident, and its sequences' KV cache
  // up to its last position (once per layer, as Flash Attention does) and pays the per-layer
  // fixed cost (layer_launch, as a decode step does), or it runs its GEMMs and attention at the
  // card's calibrated rates, whichever takes longer: kernels long enough to be compute-bound
  // hide their launches (layer_launch per layer, moe_layer_sync per MoE layer whose experts
  // run on the card, as in a decode step). The LM head computes the pass's last logits once. Per layer the
  // host computes the touched experts that are not resident (profile policies; all worker
  // groups at the host's expert throughput) or they are copied in over the link (lru/lfu); the
  // layer waits for both. Without an expert cache (llama.cpp), a micro-batch of 32 tokens or
  // more copies the RAM-resident experts it touches to the card.
  StepCosts prefill(const PrefillPass& pass) const;
  // Seconds of the GEMMs of a `tokens`-token prompt, `share` of the model's, at `rate` FLOP/s
  // (peak x gpu_compute_efficiency). With engine.gemm_half_rows = h > 0, a GEMM of r rows (the
  // tokens it multiplies) reaches r / (r + h) of the rate, micro-batch by micro-batch: r is the
  // micro-batch's tokens for the dense weights and its tokens x top-k / experts (those routed
  // to one expert) for the routed experts', so an MoE prefill fills its tiles less. A
  // micro-batch of at most engine.matvec_max_rows tokens runs matrix-vector kernels, as a
  // decode step does: no tiles, no such loss.
  double prefill_gemm_seconds(std::int64_t tokens, double share, double rate) const;
  // ... of one micro-batch of `tokens` tokens. Its dense weights' products run matrix-vector
  // kernels (no fill loss, at matvec_rate() when the engine gives one) when it has at most
  // engine.matvec_max_rows tokens, its routed experts' when at most matvec_max_rows_experts.
  double ubatch_gemm_seconds(double tokens, double share, double rate) const;
  // ... the dense weights' part when a build dequantizes them (engine.mmq_max_rows < tokens):
  // a conversion kernel reads the quantized weights and writes them as fp16 (2 bytes a
  // parameter), then cuBLAS multiplies in fp16 (CUBLAS_COMPUTE_16F): the longer of reading
  // those fp16 weights and its FLOPs at the card's fp16-accumulate rate x
  // engine.dequant_gemm_efficiency. F16 weights skip the conversion.
  double dequant_gemm_seconds(double tokens, double params, double share) const;
  // ... the dense weights' part on a card of llama.cpp's row split when cuBLAS multiplies it
  // (16-bit weights past the matrix-vector kernels, quantized ones past mmq_max_rows): ggml takes
  // the fp16 path only for a whole matrix (ggml_cuda_op_mul_mat_cublas: `row_diff ==
  // src0->ne[1]`), so a row slice converts its weights to fp32 (reads them, writes 4 bytes a
  // parameter) and runs cublasSgemm, once per 128-token chunk (kRowSplitChunk): per chunk the
  // conversion's bytes, then the longer of reading the fp32 copy and its FLOPs at the card's
  // CUDA-core rate (compute.dense_fp32) x dequant_gemm_efficiency (else gpu_compute_efficiency).
  double row_slice_sgemm_seconds(double tokens, double params, double share) const;
  // Whether a micro-batch of `tokens` multiplies this card's row slices with cuBLAS SGEMM (the
  // conditions above: llama.cpp's row split, cuBLAS's path).
  bool row_slice_sgemm(double tokens) const;
  // The arithmetic rate (FLOP/s) of this card's matrix-vector kernels: dense fp16 x
  // engine.matvec_compute_efficiency; 0 when that is unset (they run at the GEMM rate).
  double matvec_rate() const;
  // One layer's attention in a decode step over `kv_tokens` cached positions, summed over its
  // `sequences`: reading their KV cache at the card's bandwidth or, for an MLA model, the
  // absorbed attention's FLOPs at the card's attention rate, whichever is longer. Absorbed MLA
  // multiplies the latent cache itself: 4 x query_heads x latent_dim FLOP per (query, cached
  // position) pair (the scores over the latent and RoPE part, the weighted sum over the latent;
  // counting the RoPE part twice, +6% for DeepSeek's 512 + 64), ~240 FLOP per cached byte, so it
  // is compute-bound. Its rate: dense fp16 x gpu_compute_efficiency, on the SMs the kernel's
  // grid covers (engine.decode_attention_blocks per sequence, against the card's sm_count).
  double decode_attention_seconds(std::int64_t kv_tokens, int sequences) const;
  // This card's per-layer fixed cost over its layers (layer_launch each; 0 for CPU layers).
  double layer_launches() const;
  // (query, key) pairs one layer's attention kernels compute for `tokens` prompt positions after
  // `cached` ones already in the KV cache, in a micro-batch of `ubatch_tokens`, for a full layer
  // (no window) or a sliding-window layer of `window` keys: the pairs the causal (and window)
  // mask keeps when the kernels skip the rest, more when they compute masked pairs
  // (engine.attention_score_bytes, attention_skip_min_rows, attention_skips_window).
  double attention_pairs(std::int64_t tokens, std::int64_t cached, std::optional<std::int64_t> window,
                         std::int64_t ubatch_tokens) const;
  // FLOPs of one sequence's prefill attention on this card: scores and weighted values, 4 x
  // query_heads x head_dim per (query, key) pair its layers compute (attention_pairs), for
  // `tokens` new positions after `cached` ones (a reused prefix, tokens computed before) in a
  // micro-batch of `ubatch_tokens`. This card's layers and heads.
  double prefill_attention_flops(std::int64_t tokens, std::int64_t cached, std::int64_t ubatch_tokens) const;

  // Micro-batches of a prompt of `tokens` (engine.prefill_ubatch; 0: one batch): `full` ones of
  // `size` tokens (the prompt itself when it fits one) and a last one of `rest` (0: none).
  struct UbatchSplit {
    std::int64_t full = 1;
    std::int64_t size = 0;
    std::int64_t rest = 0;
  };
  UbatchSplit ubatch_split(std::int64_t tokens) const;
  double ubatches(std::int64_t tokens) const;  // how many micro-batches a prompt takes

  double expert_bytes() const { return expert_bytes_; }
  int layers() const { return layers_; }

 private:
  void init(const VramPlan& plan);
  // One micro-batch of a prefill pass: its tokens, its attention FLOPs on this card, the KV
  // positions a layer reads (each of its sequences' up to its last position, sliding windows
  // bounded as in attended_tokens, summed over the sequences), and whether it is full size.
  struct UbatchWork {
    std::int64_t tokens = 0;
    double attention_flops = 0;
    double kv_positions = 0;
    bool full = false;
  };
  // The resident experts read by `tokens` positions over `moe_layers` layers that touch
  // `resident` distinct resident and `missing` distinct other experts: each distinct one once,
  // except within engine.matvec_max_rows_experts positions, where llama.cpp's matrix-vector
  // kernels over expert ids read one per (position, expert) pair.
  double resident_reads(double resident, double missing, std::int64_t tokens, int moe_layers) const;
  // ... for one layer of a decode step.
  double expert_reads(const LayerExperts& e, int tokens) const;
  // The expert path's fixed GPU-idle cost in one MoE layer whose experts run on this card, for a
  // step or micro-batch of `tokens` positions: engine.moe_layer_sync, plus, from two positions
  // on, kExpertProducts x engine.expert_sort_sync (the host's sort of the expert ids). Seconds.
  double expert_path_sync(std::int64_t tokens) const;
  // prefill() of a host (CPU layers) stage.
  StepCosts host_prefill(const PrefillPass& pass, double share) const;
  // Calls `f` for each micro-batch of a pass over `sequences`, in order.
  void for_each_ubatch(const std::vector<PromptSequence>& sequences, const std::function<void(const UbatchWork&)>& f) const;

  const Scenario& s_;
  const CardSetup& card_;
  bool host_ = false;          // the host CPU's layers
  int layers_ = 0;             // layers this card runs
  double shard_ = 1;           // share of each layer's weights (tensor split)
  double attention_share_ = 1; // ... of its attention and KV cache (VramPlan::attention_share)
  double link_latency_ = 0;
  double zero_copy_ = 0;       // GPU reads of mapped host memory / copy rate
  double bw_ = 0;              // effective VRAM bandwidth, bytes/s
  double layer_bytes_ = 0;     // non-expert weights per layer
  double head_bytes_ = 0;      // LM head
  double expert_bytes_ = 0;
  double slot_bytes_ = 0;
  double link_bw_ = 0;
  double gemm_peak_ = 0;      // this card's peak rate for the weights' matrix products, FLOP/s
  double cpu_bw_ = 0;          // host expert throughput, all workers, bytes/s
  double host_matrix_flops_ = 0;  // host's rate for a prompt batch's expert products, FLOP/s (0: no bound)
  int host_slots_ = 0;
  double pcie_frac_ = 0;
  double kv_bytes_per_token_layer_ = 0;
  double activation_bytes_ = 0;  // one token's hidden state, each way
  // engine.prefill_activation_traffic: one prompt token's bytes per layer through VRAM outside
  // the GEMMs (sim/activation_traffic.h), by its products' path; 0 without.
  double prompt_activation_mmq_ = 0, prompt_activation_cublas_ = 0, prompt_activation_sgemm_ = 0;
};

}  // namespace vramsim::sim
