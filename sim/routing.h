// Expert routing: which experts each token uses at each MoE layer.
//
// Popularity is expressed as inclusion probabilities pi_r: the probability that the expert of
// popularity rank r is among a token's top-k at a layer (sum over r = k, each <= 1). A token's
// k experts are drawn by systematic sampling over the cumulative pi: one uniform u and the k
// points u, u+1, ..., u+k-1. That gives every expert exactly its inclusion probability, never
// picks one twice, and costs O(k log E) per token and layer.
//
// The rest of the model, each with a physical meaning:
// - global shape: pi_r proportional to (r+1)^-s * exp(-(r+1)/cutoff), capped at 1, fitted to
//   measured (cache coverage -> hit rate) points (a plain Zipf cannot fit the case study's
//   two points: its tail is too heavy);
// - per-request variation: a request routes a share `alpha` of its look-ups by its own
//   preference (the same shape over a request-specific affine permutation of the experts) and the
//   rest by the global profile; alpha is lognormal across requests (median, sigma);
// - token-to-token locality: with probability `locality` a token reuses the previous token's
//   draw at that layer (the same experts), otherwise it draws afresh.
// All draws are counter-based: keyed by (seed, request, token, layer).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sim/counter_rng.h"

namespace vramsim::sim {

struct CoveragePoint {
  double coverage = 0;  // share of experts resident (0..1)
  double hit_rate = 0;  // share of routed look-ups they catch (0..1)
};

// Inclusion probabilities by rank for one layer.
class Popularity {
 public:
  Popularity() = default;
  // The parametric family; throws std::invalid_argument on impossible parameters.
  static Popularity power_law_cutoff(int experts, int top_k, double exponent, double cutoff);
  // From ranked weights (hottest first), e.g. counts from an engine's profile.
  static Popularity from_weights(const std::vector<double>& weights, int top_k);

  // The experts of ranks first, first + stride, ... with their inclusion probabilities kept
  // exactly (an expert split: the experts one card holds, hottest first).
  Popularity strided(int first, int stride) const;

  int experts() const { return static_cast<int>(pi_.size()); }
  int top_k() const { return top_k_; }
  const std::vector<double>& inclusion() const { return pi_; }
  // Share of routed look-ups caught by the `n` hottest experts: sum_{r<n} pi_r / k.
  double hit_rate_of_top(double n) const;
  // 1 - (1 - min(pi_r, 1))^tokens for every rank r: the chance that `tokens` tokens routed
  // independently reach expert r at least once (the experts a prompt touches at this layer).
  // Memoised for the last few token counts, so that a workload of equal prompts computes it
  // once rather than once per request; safe to call from several threads.
  std::shared_ptr<const std::vector<double>> touched_by(double tokens) const;

  double exponent = 0;  // family parameters, when built from the family
  double cutoff = 0;

 private:
  std::vector<double> pi_;
  int top_k_ = 0;
  // touched_by()'s memo (shared by copies, which have the same pi_).
  struct TouchedMemo {
    static constexpr std::size_t kEntries = 4;
    std::mutex mutex;
    std::vector<std::pair<double, std::shared_ptr<const std::vector<double>>>> entries;  // (tokens, values)
    std::size_t next = 0;  // the entry replaced next once all are used
  };
  std::shared_ptr<TouchedMemo> touched_memo_ = std::make_shared<TouchedMemo>();
};

// One popularity per MoE layer (layers may differ when they come from a measured profile).
using LayerPopularity = std::vector<Popularity>;

// Fits the family's (exponent, cutoff) to two coverage points (the second at higher
// coverage). The fit is exact when a solution exists; otherwise an Error says which point is
// out of the family's reach.
Result<Popularity> fit_popularity(int experts, int top_k, CoveragePoint low, CoveragePoint high);

struct RoutingParams {
  double alpha_median = 0;  // per-request share routed by the request's own preference
  double alpha_sigma = 0;   // lognormal spread of that share across requests
  double locality = 0;      // probability that a token reuses the previous token's draw
};

// One request's routing at every MoE layer. Build once per request; then experts() for
// successive tokens. Not thread-safe; cheap to build (O(layers x experts)).
class RequestRouter {
 public:
  RequestRouter(const LayerPopularity& popularity, const RoutingParams& params, CounterRng rng,
                std::uint64_t request_id);

  double alpha() const { return alpha_; }
  // Writes the k experts (popularity ranks in the global order) of `token` at `layer` to out.
  // Tokens must be asked in increasing order per layer (locality refers to the previous token).
  void experts(int layer, std::uint64_t token, std::vector<int>& out) {
    const auto picks = route(layer, token);
    out.assign(picks.begin(), picks.end());
  }
  // The same without a copy: the result stays valid until the layer's next call.
  std::span<const int> route(int layer, std::uint64_t token);

 private:
  int experts_ = 0;
  int top_k_ = 0;
  double locality_ = 0;
  double alpha_ = 0;
  CounterRng rng_;
  static constexpr int kBucketsPerUnit = 64;  // resolution of the inverse-CDF index
  // Per layer, each in one flat array (layer-major) so that a look-up is one offset away:
  std::size_t cum_stride_ = 0;          // experts + 1
  std::size_t index_stride_ = 0;        // top_k x kBucketsPerUnit + 1
  std::vector<double> cumulative_;      // cumulative inclusion mass, cum[0] = 0 ... cum[experts] = k
  std::vector<std::uint16_t> index_;    // per bucket: the first expert whose interval reaches it
  std::vector<double> last_u_;          // the previous token's offset (-1: none yet)
  std::vector<int> last_picks_;         // the previous token's experts, top_k per layer
};

}  // namespace vramsim::sim
