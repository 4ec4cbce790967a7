#include "sim/step_model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "sim/activation_traffic.h"
#include "sim/host_experts.h"
#include "sim/kernel_rates.h"
#include "workloads/memory_budget.h"

namespace vramsim::sim {

std::int64_t attended_tokens(const workloads::ModelSpec& model, std::int64_t context) {
  const auto& window = model.attention.sliding_window;
  if (!window || model.attention.layout == workloads::AttentionLayout::Mla || context <= window->window_tokens)
    return context;
  const double global = model.layers - window->layers;
  return std::llround((global * static_cast<double>(context) + window->layers * static_cast<double>(window->window_tokens)) /
                      model.layers);
}

StepCosts& StepCosts::operator+=(const StepCosts& o) {
  compute += o.compute;
  transfer += o.transfer;
  stall += o.stall;
  cpu_experts += o.cpu_experts;
  launch_sync += o.launch_sync;
  cpu_layers += o.cpu_layers;
  host_idle += o.host_idle;
  vram_bytes += o.vram_bytes;
  pcie_bytes += o.pcie_bytes;
  flops += o.flops;
  link_busy += o.link_busy;
  host_busy += o.host_busy;
  return *this;
}

StepCosts as_cpu_layers(StepCosts c) {
  c.cpu_layers = c.total();
  c.host_idle = c.cpu_layers;
  c.host_busy = c.cpu_layers;
  c.compute = c.transfer = c.stall = c.cpu_experts = c.launch_sync = 0;
  return c;
}

StepCosts& StepCosts::operator-=(const StepCosts& o) {
  compute -= o.compute;
  transfer -= o.transfer;
  stall -= o.stall;
  cpu_experts -= o.cpu_experts;
  launch_sync -= o.launch_sync;
  cpu_layers -= o.cpu_layers;
  host_idle -= o.host_idle;
  vram_bytes -= o.vram_bytes;
  pcie_bytes -= o.pcie_bytes;
  flops -= o.flops;
  link_busy -= o.link_busy;
  host_busy -= o.host_busy;
  return *this;
}

StepModel::StepModel(const Scenario& s, const VramPlan& plan, int card)
    : s_(s), card_(s.cards.at(static_cast<std::size_t>(card))), layers_(plan.layers()), shard_(plan.shard),
      attention_share_(plan.attention_share) {
  bw_ = card_.gpu.spec.memory_bandwidth * s.engine.physics.gpu_bandwidth_efficiency;
  init(plan);
}

StepModel::StepModel(const Scenario& s, const VramPlan& host_plan, const CardSetup& host_as_card)
    : s_(s), card_(host_as_card), host_(true), layers_(host_plan.layers()), shard_(1) {
  bw_ = s.host.memory_bandwidth * s.engine.physics.cpu_bandwidth_efficiency;
  init(host_plan);
}

void StepModel::init(const VramPlan& plan) {
  const auto& s = s_;
  const auto& m = s.model;
  const auto& ph = s.engine.physics;
  // Non-expert weights per layer: all of them but the embedding table (one row is read per
  // token) and the LM head (counted per step), spread over the layers (vram_plan.h).
  head_bytes_ = plan.head_bytes;
  layer_bytes_ = plan.layer_bytes;
  expert_bytes_ = plan.expert_bytes;
  slot_bytes_ = plan.slot_bytes;
  link_bw_ = card_.link.experts_bandwidth;  // the card's rate reading the experts' host memory (NUMA)
  gemm_peak_ = gemm_peak(card_.gpu.spec, s);
  link_latency_ = card_.link.spec.latency_s;
  // A calibrated card's measured zero-copy efficiency replaces the engine's estimate.
  const auto& cal = card_.gpu.spec.calibration;
  zero_copy_ = cal && cal->zero_copy_efficiency ? *cal->zero_copy_efficiency : ph.zero_copy_efficiency;
  pcie_frac_ = s.engine.misses_on_cpu ? 0.0 : link_bw_ / (link_bw_ + ph.pcie_split_reference);
  cpu_bw_ = host_expert_rate(s);
  host_matrix_flops_ = host_matrix_rate(s);
  host_slots_ = static_cast<int>(std::lround(ph.host_expert_workers * (1.0 - pcie_frac_)));
  // Without an expert cache, or with every miss on the CPU (hybrid-cpu-experts), there is no
  // PCIe read path: the host computes every missing expert.
  if (!s.engine.expert_cache || s.engine.misses_on_cpu) host_slots_ = std::numeric_limits<int>::max();
  kv_bytes_per_token_layer_ =
      plan.attention_share * workloads::kv_cache_bytes(m, 1, s.engine.kv.bytes_per_element, s.engine.kv.bytes_per_element, 1) / m.layers;
  activation_bytes_ = m.hidden_size * ph.activation_value_bytes;  // one token's hidden state (engine.activation_value_bytes)
  if (ph.prefill_activation_traffic && !host_) {
    const LayerWidths w = layer_widths(m);
    const bool unfused = ph.attention_score_bytes > 0;
    const double c = s.engine.kv.bytes_per_element;
    const bool metal = card_.gpu.spec.unified();
    prompt_activation_mmq_ = activation_bytes_per_token_layer(w, metal ? GemmPath::InKernel : GemmPath::Mmq, unfused, c);
    prompt_activation_cublas_ = activation_bytes_per_token_layer(w, metal ? GemmPath::InKernel : GemmPath::Cublas, unfused, c);
    prompt_activation_sgemm_ = activation_bytes_per_token_layer(w, GemmPath::Sgemm, unfused, c);
  }
}

double StepModel::resident_reads(double resident, double missing, std::int64_t tokens, int moe_layers) const {
  const auto& m = s_.model;
  if (host_ || !m.moe || tokens < 2 || tokens > s_.engine.physics.matvec_max_rows_experts || resident + missing <= 0)
    return resident;
  // Matrix-vector kernels over expert ids compute each (position, expert) pair on its own:
  // top-k x positions pairs per layer, the resident experts' share of them, each read.
  return static_cast<double>(tokens) * m.moe->experts_per_token * moe_layers * resident / (resident + missing);
}

double StepModel::expert_reads(const LayerExperts& e, int tokens) const { return resident_reads(e.hits, e.misses, tokens, 1); }

bool StepModel::offloads_to_gpu(std::int64_t tokens) const { return !s_.engine.expert_cache && tokens >= kGpuOffloadRows; }

bool StepModel::copies_ram_experts(int tokens) const { return !host_ && offloads_to_gpu(tokens); }

StepCosts StepModel::layer(const LayerExperts& e, int tokens, std::int64_t kv_tokens) const {
  const auto& ph = s_.engine.physics;
  StepCosts c;
  // KV: T new positions over the cached ones (windowed layers bounded by their window).
  const double kv = kv_bytes_per_token_layer_ * static_cast<double>(kv_tokens);
  if (host_ && offloads_to_gpu(tokens)) {
    // A CPU layer in a batched step of 32 positions or more (llama.cpp's offload rule, as for a
    // prompt's micro-batch): its weights, the experts it uses and its KV (attention's inputs)
    // are copied over the first card's link, and that card computes it. pcie_bytes tells the
    // engine to run this stage's work there.
    const auto& gpu = s_.cards.front();
    const double bytes = layer_bytes_ + (e.hits + e.misses) * expert_bytes_ + kv;
    const double flops = 2.0 * s_.model.params_active * tokens / static_cast<double>(s_.model.layers);
    c.transfer = bytes / gpu.link.h2d_bandwidth;
    // Reading what landed, or its GEMMs at the card's rate (many positions), whichever is longer.
    c.compute = std::max(bytes / (gpu.gpu.spec.memory_bandwidth * ph.gpu_bandwidth_efficiency),
                         ubatch_gemm_seconds(tokens, 1.0 / s_.model.layers, gemm_rate(gpu.gpu.spec, s_)));
    c.flops = flops;
    c.launch_sync = ph.layer_launch;
    c.vram_bytes = bytes;
    c.pcie_bytes = bytes;
    c.link_busy = c.transfer;
    return c;
  }
  const double attention = layer_bytes_ / bw_ + decode_attention_seconds(kv_tokens, tokens);
  const double resident_reads = expert_reads(e, tokens);
  const double hits = resident_reads * expert_bytes_ / bw_;
  c.compute = attention + hits;
  c.vram_bytes = layer_bytes_ + kv + resident_reads * expert_bytes_;
  c.launch_sync = host_ ? 0.0 : ph.layer_launch;  // kernel launches: a GPU layer's (the CPU's ops are its compute)
  if (!host_ && e.hits > 0) {  // experts computed on a GPU: the expert path's fixed cost, no kernel resident
    const double sync = expert_path_sync(tokens);
    c.launch_sync += sync;
    c.host_idle += sync;
  }
  if (e.misses == 0) return c;

  const bool cache_copies = copies_every_miss(s_.engine.policy);
  if (cache_copies || copies_ram_experts(tokens)) {
    // lru, lfu: copy every miss into a slot (one copy engine, serial, a latency each), then
    // stream it like a hit; the copies overlap the hits' reads. llama.cpp's batched step of 32
    // positions or more: the RAM experts it uses are copied over the link, then the GPU computes
    // them after its own (the scheduler's copies precede the split that needs them).
    const double copy = cache_copies ? e.misses * (link_latency_ + slot_bytes_ / link_bw_) : e.misses * expert_bytes_ / link_bw_;
    c.transfer = cache_copies ? std::max(0.0, copy - hits) : copy;
    c.compute += e.misses * expert_bytes_ / bw_;
    c.vram_bytes += e.misses * expert_bytes_;
    c.pcie_bytes = e.misses * (cache_copies ? slot_bytes_ : expert_bytes_);
    c.link_busy = copy;
    return c;
  }
  // Host compute + zero-copy reads, in parallel; the GPU's own hits overlap them.
  const int pcie = e.pcie_reads;
  const int cpu = e.misses - pcie;
  const double activations = 2.0 * tokens * activation_bytes_ / link_bw_;
  // Each worker group computes one expert at its share of the host's expert throughput.
  const int workers = std::max(1, ph.host_expert_workers);
  const double waves = std::ceil(static_cast<double>(cpu) / workers);
  const double t_cpu = cpu > 0 ? waves * expert_bytes_ * workers / cpu_bw_ + activations : 0.0;
  if (cpu > 0) c.host_busy = waves * expert_bytes_ * workers / cpu_bw_;
  const double t_pcie = pcie > 0 ? link_latency_ + pcie * expert_bytes_ / (link_bw_ * zero_copy_) : 0.0;
  const double miss_path = ph.miss_sync + std::max(t_cpu, t_pcie);
  const double extra = std::max(0.0, miss_path - hits);  // beyond what the GPU does anyway
  c.stall = std::min(extra, ph.miss_sync);
  c.host_idle += std::min(c.stall, ph.miss_sync_idle);
  const double beyond = extra - c.stall;
  (t_pcie > t_cpu ? c.transfer : c.cpu_experts) = beyond;
  c.pcie_bytes = pcie * expert_bytes_ + (cpu > 0 ? 2.0 * tokens * activation_bytes_ : 0.0);
  c.link_busy = t_pcie + (cpu > 0 ? activations : 0.0);
  if (policy_traits(s_.engine.policy).miss == MissPath::InPlacePrefetch) {
    // The misses are then copied into the LRU part in the background, one copy engine, for
    // later tokens: link time and bytes, but no wait here.
    c.pcie_bytes += e.misses * slot_bytes_;
    c.link_busy += e.misses * (link_latency_ + slot_bytes_ / link_bw_);
  }
  return c;
}

namespace {
// Routed-expert products (MUL_MAT_ID) per MoE layer: gate, up and down (llama.cpp's
// build_moe_ffn: ffn_gate_exps, ffn_up_exps, ffn_down_exps, one ggml_mul_mat_id each).
constexpr int kExpertProducts = 3;
}  // namespace

double StepModel::expert_path_sync(std::int64_t tokens) const {
  const auto& ph = s_.engine.physics;
  return ph.moe_layer_sync + (tokens >= 2 ? kExpertProducts * ph.expert_sort_sync : 0.0);
}

StepModel::LayerDemand StepModel::layer_demand(const LayerExperts& e, int tokens, std::int64_t kv_tokens) const {
  const auto& ph = s_.engine.physics;
  LayerDemand d;
  d.gpu_before = layer_bytes_ / bw_ + decode_attention_seconds(kv_tokens, tokens) + (host_ ? 0.0 : ph.layer_launch) + (!host_ && e.hits > 0 ? expert_path_sync(tokens) : 0.0);
  d.gpu_hits = expert_reads(e, tokens) * expert_bytes_ / bw_;
  if (e.misses == 0) return d;
  // The platform's link runs at the nominal host->device rate; layer() reads the experts at
  // link_bw_ (NUMA-adjusted), so the bytes are scaled to take layer()'s time on it.
  const double to_nominal = card_.link.h2d_bandwidth / link_bw_;
  if (copies_every_miss(s_.engine.policy)) {
    d.gpu_after = e.misses * expert_bytes_ / bw_;
    d.link_bytes = e.misses * slot_bytes_ * to_nominal;
    d.link_wait = (e.misses - 1) * link_latency_;  // one copy engine: a latency per copy
    return d;
  }
  if (copies_ram_experts(tokens)) {  // as layer(): copied in, then computed by the GPU
    d.gpu_after = e.misses * expert_bytes_ / bw_;
    d.link_bytes = e.misses * expert_bytes_ * to_nominal;
    return d;
  }
  d.sync = ph.miss_sync;
  d.host_experts = e.misses - e.pcie_reads;
  if (d.host_experts > 0) d.host_transfer = 2.0 * tokens * activation_bytes_ / link_bw_;
  d.link_bytes = e.pcie_reads * expert_bytes_ / zero_copy_ * to_nominal;
  if (policy_traits(s_.engine.policy).miss == MissPath::InPlacePrefetch) d.prefetch_bytes = e.misses * slot_bytes_ * to_nominal;
  return d;
}

StepCosts StepModel::step_fixed(int tokens, int drafts) const {
  const auto& ph = s_.engine.physics;
  StepCosts c;
  if (!host_) c.flops = 2.0 * s_.model.params_active * tokens * shard_ * layers_ / static_cast<double>(s_.model.layers);
  if (head_bytes_ <= 0) return c;  // a pipeline card before the last: no head, no sampling
  double bytes = head_bytes_;
  double launches = 0;
  if (s_.engine.speculative) {
    bytes += drafts * (s_.engine.draft_head_bytes + head_bytes_);
    launches += drafts * ph.layer_launch;
  }
  c.compute = bytes / bw_;
  c.vram_bytes = bytes;
  c.launch_sync = launches + ph.step_overhead;
  c.host_idle = ph.step_overhead;
  return c;
}

double StepModel::decode_attention_seconds(std::int64_t kv_tokens, int sequences) const {
  const double read = kv_bytes_per_token_layer_ * static_cast<double>(kv_tokens) / bw_;
  const auto& a = s_.model.attention;
  if (host_ || a.layout != workloads::AttentionLayout::Mla || kv_tokens <= 0) return read;
  const auto& ph = s_.engine.physics;
  const auto& gpu = card_.gpu.spec;
  const double flops = 4.0 * a.query_heads * a.latent_dim * static_cast<double>(kv_tokens) * attention_share_;
  double sms = 1.0;  // share of the card's SMs the grid covers
  if (ph.decode_attention_blocks > 0 && gpu.sm_count > 0)
    sms = std::min(1.0, static_cast<double>(ph.decode_attention_blocks) * std::max(1, sequences) / gpu.sm_count);
  return std::max(read, flops / (gpu.dense_fp16_flops * ph.gpu_compute_efficiency * sms));
}

double StepModel::layer_launches() const { return host_ ? 0.0 : layers_ * s_.engine.physics.layer_launch; }

namespace {
// (query, key) pairs of `tokens` causal queries after `cached` positions, each query seeing at
// most `window` keys (itself included).
double attended_pairs(std::int64_t tokens, std::int64_t cached, std::int64_t window) {
  const double p = static_cast<double>(tokens), r = static_cast<double>(cached), w = static_cast<double>(window);
  // Query i (1..P) sees min(r + i, w) keys: r + i up to i* = w - r, then w.
  const double ramp = std::clamp(w - r, 0.0, p);
  return ramp * r + ramp * (ramp + 1) / 2 + (p - ramp) * w;
}
}  // namespace

double StepModel::attention_pairs(std::int64_t tokens, std::int64_t cached, std::optional<std::int64_t> window,
                                  std::int64_t ubatch_tokens) const {
  const auto& ph = s_.engine.physics;
  const double p = static_cast<double>(tokens);
  // The keys a layer's KV view holds before these queries: every cached one, or for a windowed
  // layer the window's (llama.cpp's cache for sliding-window layers keeps the window and the
  // micro-batch, llama-kv-cache-iswa; builds before May 2025 kept them all: not modelled).
  const double before = static_cast<double>(window ? std::min(cached, *window) : cached);
  const double view = p * (before + p);  // every key of the view, masked or not
  if (ph.attention_score_bytes > 0) return view;  // unfused
  if (ubatch_tokens < ph.attention_skip_min_rows) return view;  // fused, but no masked key skipped
  if (!window) return attended_pairs(tokens, cached, cached + tokens);
  if (ph.attention_skips_window) return attended_pairs(tokens, cached, *window);
  return p * before + p * (p + 1) / 2;  // fused, the window's mask computed: each query's earlier keys of the view
}

double StepModel::prefill_attention_flops(std::int64_t tokens, std::int64_t cached, std::int64_t ubatch_tokens) const {
  const auto& m = s_.model;
  if (tokens <= 0) return 0.0;
  const double per_pair = 4.0 * m.attention.query_heads * m.attention.head_dim;
  const auto& window = m.attention.sliding_window;
  const bool windowed = window && m.attention.layout != workloads::AttentionLayout::Mla;
  const double windowed_layers = windowed ? window->layers : 0.0;
  const double pairs = (m.layers - windowed_layers) * attention_pairs(tokens, cached, std::nullopt, ubatch_tokens) +
                       (windowed ? windowed_layers * attention_pairs(tokens, cached, window->window_tokens, ubatch_tokens) : 0.0);
  return per_pair * pairs / m.layers * (attention_share_ * layers_);
}

double StepModel::ubatches(std::int64_t tokens) const {
  const int ub = s_.engine.physics.prefill_ubatch;
  return ub > 0 ? std::ceil(static_cast<double>(tokens) / ub) : 1.0;
}

StepModel::UbatchSplit StepModel::ubatch_split(std::int64_t tokens) const {
  const int ub = s_.engine.physics.prefill_ubatch;
  if (ub <= 0 || tokens <= ub) return {1, tokens, 0};
  return {tokens / ub, ub, tokens % ub};
}

void StepModel::for_each_ubatch(const std::vector<PromptSequence>& sequences,
                                const std::function<void(const UbatchWork&)>& f) const {
  std::int64_t total = 0;
  for (const auto& q : sequences) total += q.tokens;
  const std::int64_t size = ubatch_split(total).size;
  std::int64_t started = 0;  // tokens of the micro-batches before this one
  UbatchWork u;
  for (const auto& q : sequences)
    for (std::int64_t done = 0; done < q.tokens;) {
      const std::int64_t take = std::min(q.tokens - done, size - u.tokens);
      u.attention_flops += prefill_attention_flops(take, q.cached + done, std::min(size, total - started));
      done += take;
      u.kv_positions += static_cast<double>(attended_tokens(s_.model, q.cached + done));
      u.tokens += take;
      if (u.tokens == size) {
        u.full = true;
        f(u);
        started += size;
        u = {};
      }
    }
  if (u.tokens > 0) f(u);
}

StepCosts StepModel::prefill(const PrefillPass& pass) const {
  const auto& m = s_.model;
  const auto& ph = s_.engine.physics;
  // This card's share of the prompt's FLOPs: its layers, its shard of each.
  const double share = shard_ * layers_ / static_cast<double>(m.layers);
  if (host_) return host_prefill(pass, share);
  StepCosts c;
  const double rate = gemm_rate(card_.gpu.spec, s_);
  // Attention runs in fp16 whatever the weights' format (FP8 weights speed up only the GEMMs).
  const double attention_rate = card_.gpu.spec.dense_fp16_flops * ph.gpu_compute_efficiency;
  const double launches = layer_launches() + pass.gpu_expert_layers * ph.moe_layer_sync;
  const double layers = layers_;
  const bool copies_in = copies_every_miss(s_.engine.policy);
  for_each_ubatch(pass.sequences, [&](const UbatchWork& u) {
    // The GPU: its GEMMs and attention, or what it reads (the non-expert weights, the resident
    // experts it touches, its sequences' KV cache) plus the per-layer fixed cost, as a decode
    // step pays it, whichever takes longer: kernels long enough to be compute-bound keep the
    // launch queue ahead of the GPU, so their launches are hidden.
    const double missing = u.full ? pass.missing_full_ubatch : pass.missing_last_ubatch;
    const double resident = resident_reads(u.full ? pass.resident_full_ubatch : pass.resident_last_ubatch, missing,
                                           u.tokens, pass.moe_layers);
    const double read =
        layer_bytes_ * layers_ + resident * expert_bytes_ + u.kv_positions * kv_bytes_per_token_layer_ * layers_;
    // Unfused attention (engine.attention_score_bytes > 0): the scores of every (query, key,
    // head) go through VRAM between the KQ product, the softmax and the KQV product, kernels of
    // their own: bytes beyond the GEMMs' time. attention_flops counts 4 x head_dim per score.
    const double scores = u.attention_flops / (4.0 * m.attention.head_dim);
    // The element-wise kernels and conversions (engine.prefill_activation_traffic): cuBLAS's
    // for 16-bit weights and for quantized ones past mmq_max_rows, MMQ's otherwise; a row slice's
    // SGEMM converts nothing.
    const bool cublas = !dequantizing_gemms(s_) || (ph.mmq_max_rows > 0 && u.tokens > ph.mmq_max_rows);
    const double per_token = row_slice_sgemm(static_cast<double>(u.tokens)) ? prompt_activation_sgemm_
                             : cublas                                     ? prompt_activation_cublas_
                                                                          : prompt_activation_mmq_;
    const double activations = static_cast<double>(u.tokens) * layers_ * per_token;
    const double work = ubatch_gemm_seconds(static_cast<double>(u.tokens), share, rate) + u.attention_flops / attention_rate +
                        (scores * ph.attention_score_bytes + activations) / bw_;
    const double bandwidth_bound = read / bw_ + launches;
    // The host's sorts of the expert ids (engine.expert_sort_sync) drain the GPU's queue: no
    // kernel runs through them, however long the kernels around them.
    const double sorts = pass.gpu_expert_layers * (expert_path_sync(u.tokens) - ph.moe_layer_sync);
    const double gpu = std::max(work, bandwidth_bound) + sorts;
    if (work >= bandwidth_bound) {
      c.compute += work;
    } else {
      c.compute += read / bw_;
      c.launch_sync += launches;
    }
    c.launch_sync += sorts;
    c.host_idle += sorts;
    c.vram_bytes += read;
    c.flops += 2.0 * m.params_active * static_cast<double>(u.tokens) * share + u.attention_flops;
    // Its experts in RAM. Copy-in policies load them once for the pass (below).
    if (missing <= 0 || copies_in) return;
    if (offloads_to_gpu(u.tokens)) {
      // llama.cpp: an operation of 32 tokens or more runs on the GPU, the RAM-resident experts
      // it touches copied over the link.
      c.transfer += missing * expert_bytes_ / link_bw_;
      c.pcie_bytes += missing * expert_bytes_;
      return;
    }
    // The host computes them while the GPU runs its part (all worker groups at the host's
    // expert throughput); per layer the GPU waits for the bubble and the host's part; the
    // layers are alike, so sum the max. Its part is the longer of reading the experts once and
    // their products for the micro-batch's tokens routed to them (2 FLOP per weight and token)
    // at the host's matrix rate: a long prompt is bound by the host's arithmetic.
    // Without overlap (engine.host_prefill_overlap: false) the host's part follows the GPU's and
    // the activations' copies to the host and back: all of it adds to the layer.
    const double products = static_cast<double>(u.tokens) * pass.missing_routed_per_token * 2.0 * m.moe->expert_params;
    const double arithmetic = host_matrix_flops_ > 0 ? products / host_matrix_flops_ : 0.0;
    const double host = std::max(missing * expert_bytes_ / cpu_bw_, arithmetic);
    c.host_busy += host;
    const double copies = 2.0 * static_cast<double>(u.tokens) * activation_bytes_ / link_bw_;
    const double extra = ph.host_prefill_overlap ? std::max(0.0, ph.miss_sync + host / layers - gpu / layers)
                                                 : ph.miss_sync + host / layers + copies;
    const double bubble = std::min(extra, ph.miss_sync);
    c.stall += bubble * layers;
    c.host_idle += std::min(extra, ph.miss_sync_idle) * layers;
    c.cpu_experts += (extra - bubble) * layers;
    c.pcie_bytes += 2.0 * static_cast<double>(u.tokens) * activation_bytes_ * layers;
  });
  c.compute += head_bytes_ / bw_;  // the pass's last logits
  c.vram_bytes += head_bytes_;
  const double overhead = head_bytes_ > 0 ? ph.step_overhead : 0.0;  // sampling, on the card with the head
  c.launch_sync += overhead;
  c.host_idle += overhead;
  if (copies_in && pass.missing_experts > 0) {
    const double stream = pass.missing_experts * (link_latency_ + slot_bytes_ / link_bw_);
    c.transfer = std::max(0.0, stream - c.compute);
    c.pcie_bytes = pass.missing_experts * slot_bytes_;
  }
  return c;
}

StepCosts StepModel::host_prefill(const PrefillPass& pass, double share) const {
  const auto& m = s_.model;
  const auto& ph = s_.engine.physics;
  StepCosts c;
  // Micro-batch by micro-batch, as llama.cpp decides per operation: one of 32 tokens or more
  // runs on the first card, these layers' weights and the experts it touches streamed over its
  // link; a smaller one is computed by the CPU from RAM, which reads them for it.
  const auto& gpu = s_.cards.front();
  const double gpu_rate = gemm_rate(gpu.gpu.spec, s_);
  const double gpu_attention_rate = gpu.gpu.spec.dense_fp16_flops * ph.gpu_compute_efficiency;
  for_each_ubatch(pass.sequences, [&](const UbatchWork& u) {
    const double experts = u.full ? pass.resident_full_ubatch + pass.missing_full_ubatch
                                  : pass.resident_last_ubatch + pass.missing_last_ubatch;
    const double weights = layer_bytes_ * layers_ + experts * expert_bytes_;
    const double flops = 2.0 * m.params_active * static_cast<double>(u.tokens) * share;
    if (offloads_to_gpu(u.tokens)) {
      c.transfer += weights / gpu.link.h2d_bandwidth;
      c.pcie_bytes += weights;
      c.compute += ubatch_gemm_seconds(static_cast<double>(u.tokens), share, gpu_rate) + u.attention_flops / gpu_attention_rate;
      c.flops += flops + u.attention_flops;  // on the first card
    } else {
      c.compute += std::max((flops + u.attention_flops) / gemm_peak_, weights / bw_);
    }
  });
  // The LM head (on the CPU with CPU layers) computes the prompt's last logits alone: one row,
  // below the 32 that send an operation to the card, so the CPU reads it once.
  c.compute += head_bytes_ / bw_;
  return c;
}

}  // namespace vramsim::sim
