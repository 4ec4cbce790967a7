#include "sim/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace vramsim::sim {
namespace {

// Scales ranked (non-increasing) weights so that min(1, a w_r) sums to k, exactly: with the c
// hottest capped at 1, a = (k - c) / (sum of the other weights); c is the smallest count for
// which the first uncapped entry stays below 1 (water-filling).
std::vector<double> to_inclusion(const std::vector<double>& weights, int top_k) {
  const std::size_t n = weights.size();
  if (top_k <= 0 || static_cast<std::size_t>(top_k) > n) throw std::invalid_argument("top-k out of range");
  std::vector<double> tail(n + 1, 0.0);  // tail[i] = sum of weights[i..n)
  for (std::size_t i = n; i-- > 0;) tail[i] = tail[i + 1] + weights[i];
  std::vector<double> pi(n, 1.0);
  for (std::size_t capped = 0; capped < static_cast<std::size_t>(top_k); ++capped) {
    if (!(tail[capped] > 0)) break;
    const double a = (top_k - static_cast<double>(capped)) / tail[capped];
    if (a * weights[capped] <= 1.0) {
      for (std::size_t i = capped; i < n; ++i) pi[i] = a * weights[i];
      return pi;
    }
  }
  std::fill(pi.begin() + top_k, pi.end(), 0.0);
  return pi;  // the k hottest at 1, the rest 0 (only when the weights allow nothing else)
}

}  // namespace

Popularity Popularity::power_law_cutoff(int experts, int top_k, double exponent, double cutoff) {
  if (experts <= 0 || exponent < 0 || !(cutoff > 0)) throw std::invalid_argument("bad popularity parameters");
  std::vector<double> w(static_cast<std::size_t>(experts));
  for (int r = 0; r < experts; ++r) w[r] = std::exp(-exponent * std::log(r + 1.0) - (r + 1.0) / cutoff);
  Popularity p = from_weights(w, top_k);
  p.exponent = exponent;
  p.cutoff = cutoff;
  return p;
}

Popularity Popularity::from_weights(const std::vector<double>& weights, int top_k) {
  for (std::size_t i = 1; i < weights.size(); ++i)
    if (weights[i] > weights[i - 1]) throw std::invalid_argument("profile weights must be ranked hottest first");
  Popularity p;
  p.pi_ = to_inclusion(weights, top_k);
  p.top_k_ = top_k;
  return p;
}

Popularity Popularity::strided(int first, int stride) const {
  if (first < 0 || stride < 1) throw std::invalid_argument("bad expert stride");
  Popularity p;
  for (std::size_t r = static_cast<std::size_t>(first); r < pi_.size(); r += static_cast<std::size_t>(stride)) p.pi_.push_back(pi_[r]);
  p.top_k_ = top_k_;
  return p;
}

std::shared_ptr<const std::vector<double>> Popularity::touched_by(double tokens) const {
  std::lock_guard<std::mutex> lock(touched_memo_->mutex);
  auto& entries = touched_memo_->entries;
  for (const auto& [t, values] : entries)
    if (t == tokens) return values;
  auto values = std::make_shared<std::vector<double>>(pi_.size());
  for (std::size_t r = 0; r < pi_.size(); ++r) (*values)[r] = 1.0 - std::pow(1.0 - std::min(pi_[r], 1.0), tokens);
  if (entries.size() < TouchedMemo::kEntries) {
    entries.emplace_back(tokens, values);
  } else {
    entries[touched_memo_->next] = {tokens, values};
    touched_memo_->next = (touched_memo_->next + 1) % TouchedMemo::kEntries;
  }
  return values;
}

double Popularity::hit_rate_of_top(double n) const {
  n = std::clamp(n, 0.0, static_cast<double>(pi_.size()));
  auto whole = static_cast<std::size_t>(n);
  double s = std::accumulate(pi_.begin(), pi_.begin() + static_cast<std::ptrdiff_t>(whole), 0.0);
  if (whole < pi_.size()) s += (n - static_cast<double>(whole)) * pi_[whole];
  return s / top_k_;
}

Result<Popularity> fit_popularity(int experts, int top_k, CoveragePoint low, CoveragePoint high) {
  auto valid = [](CoveragePoint p) { return p.coverage > 0 && p.coverage < 1 && p.hit_rate > p.coverage && p.hit_rate < 1; };
  if (!valid(low) || !valid(high) || high.coverage <= low.coverage || high.hit_rate <= low.hit_rate)
    return Error{"coverage points must satisfy 0 < coverage < hit rate < 1 and increase together"};
  const double n_low = low.coverage * experts;
  const double n_high = high.coverage * experts;
  // For a given exponent, find the cutoff that matches the low point; the exponent is then
  // chosen to match the high point. Lower exponent + shorter cutoff = lighter tail.
  auto cutoff_for = [&](double s) -> double {
    double lo = 1e-3, hi = 1e7;  // hit rate at the low point decreases as the cutoff grows
    auto hit = [&](double c) { return Popularity::power_law_cutoff(experts, top_k, s, c).hit_rate_of_top(n_low); };
    if (hit(hi) > low.hit_rate || hit(lo) < low.hit_rate) return -1;
    for (int i = 0; i < 64; ++i) {
      double mid = std::sqrt(lo * hi);
      (hit(mid) > low.hit_rate ? lo : hi) = mid;
    }
    return std::sqrt(lo * hi);
  };
  auto high_hit = [&](double s) {
    double c = cutoff_for(s);
    return c < 0 ? -1.0 : Popularity::power_law_cutoff(experts, top_k, s, c).hit_rate_of_top(n_high);
  };
  // Scan exponents for a bracket of the high point's hit rate, then bisect.
  double prev_s = -1, prev_h = -1;
  for (double s = 0.0; s <= 3.0001; s += 0.05) {
    double h = high_hit(s);
    if (h < 0) continue;
    if (prev_h >= 0 && (prev_h - high.hit_rate) * (h - high.hit_rate) <= 0) {
      double a = prev_s, b = s, ha = prev_h;
      for (int i = 0; i < 60; ++i) {
        double m = 0.5 * (a + b);
        double hm = high_hit(m);
        if ((ha - high.hit_rate) * (hm - high.hit_rate) <= 0) {
          b = m;
        } else {
          a = m;
          ha = hm;
        }
      }
      double s_fit = 0.5 * (a + b);
      return Popularity::power_law_cutoff(experts, top_k, s_fit, cutoff_for(s_fit));
    }
    prev_s = s;
    prev_h = h;
  }
  return Error{"no (exponent, cutoff) of the power law with exponential cutoff reaches both points"};
}

RequestRouter::RequestRouter(const LayerPopularity& popularity, const RoutingParams& params, CounterRng rng,
                             std::uint64_t request_id)
    : experts_(popularity.front().experts()),
      top_k_(popularity.front().top_k()),
      locality_(params.locality),
      rng_(rng.with(request_id)) {
  const int layers = static_cast<int>(popularity.size());
  // alpha ~ lognormal(median, sigma), capped at 1, drawn by Box-Muller from two counters.
  if (params.alpha_median > 0) {
    double u1 = std::max(rng_.uniform(0), 1e-300), u2 = rng_.uniform(1);
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
    alpha_ = std::min(1.0, params.alpha_median * std::exp(params.alpha_sigma * z));
  }
  if (experts_ > 65535) throw std::invalid_argument("more than 65535 experts per layer");
  cum_stride_ = static_cast<std::size_t>(experts_) + 1;
  index_stride_ = static_cast<std::size_t>(top_k_ * kBucketsPerUnit) + 1;
  cumulative_.assign(static_cast<std::size_t>(layers) * cum_stride_, 0.0);
  index_.assign(static_cast<std::size_t>(layers) * index_stride_, 0);
  last_u_.assign(static_cast<std::size_t>(layers), -1.0);
  last_picks_.assign(static_cast<std::size_t>(layers) * static_cast<std::size_t>(top_k_), 0);
  const auto n = static_cast<std::uint64_t>(experts_);
  for (int layer = 0; layer < layers; ++layer) {
    const auto& pi = popularity[static_cast<std::size_t>(layer)].inclusion();
    // The request's own preference: the global shape over a random affine permutation of the
    // ranks, r -> (a r + b) mod E with gcd(a, E) = 1: O(1) per rank, no shuffle to store.
    CounterRng layer_rng = rng_.with(1000003ULL + static_cast<std::uint64_t>(layer));
    std::uint64_t a = 1;  // the identity's multiplier if no draw is coprime (a permutation either way)
    for (std::uint64_t i = 0; i < 64; ++i) {
      const std::uint64_t draw = 1 + layer_rng.bits(i) % (n > 1 ? n - 1 : 1);
      if (std::gcd(draw, n) == 1) {
        a = draw;
        break;
      }
    }
    const std::uint64_t shift = layer_rng.bits(64) % n;
    double* cum = cumulative_.data() + static_cast<std::size_t>(layer) * cum_stride_;
    std::uint64_t mapped = shift;  // (a r + shift) mod E, updated incrementally
    for (int r = 0; r < experts_; ++r) {
      cum[r + 1] = cum[r] + (1.0 - alpha_) * pi[static_cast<std::size_t>(r)] + alpha_ * pi[mapped];
      mapped += a;  // both below n: one subtraction wraps it
      if (mapped >= n) mapped -= n;
    }
    cum[static_cast<std::size_t>(experts_)] = top_k_;  // exact, so that the last point u + k - 1 < k always lands
    // Inverse-CDF index: bucket b covers cumulative mass [b, b+1) / kBucketsPerUnit.
    std::uint16_t* idx = index_.data() + static_cast<std::size_t>(layer) * index_stride_;
    std::size_t e = 0;
    for (std::size_t b = 0; b < index_stride_; ++b) {
      const double mass = static_cast<double>(b) / kBucketsPerUnit;
      while (e + 1 < static_cast<std::size_t>(experts_) && cum[e + 1] <= mass) ++e;
      idx[b] = static_cast<std::uint16_t>(e);
    }
  }
}

std::span<const int> RequestRouter::route(int layer, std::uint64_t token) {
  const auto l = static_cast<std::size_t>(layer);
  const auto k = static_cast<std::size_t>(top_k_);
  int* out = last_picks_.data() + l * k;
  double& last = last_u_[l];
  // One 64-bit hash of (token, layer) decides locality (its low 32 bits); a second gives u.
  // The layer takes the counter's low 8 bits; a model with more layers gives each further
  // layer its own stream (or token t at layer 256 + x would draw what token t ^ 1 draws at x).
  const auto ulayer = static_cast<std::uint64_t>(layer);
  const std::uint64_t h = layer < 256 ? rng_.bits((token << 8) ^ ulayer) : rng_.with(ulayer).bits(token);
  if (last >= 0 && static_cast<double>(h & 0xFFFFFFFFULL) * (1.0 / 4294967296.0) < locality_)
    return {out, k};  // the same experts as the previous token
  const double u = static_cast<double>(splitmix64(h) >> 11) * (1.0 / 9007199254740992.0);
  last = u;
  const double* cum = cumulative_.data() + l * cum_stride_;
  const std::uint16_t* idx = index_.data() + l * index_stride_;
  for (std::size_t j = 0; j < k; ++j) {
    const double point = u + static_cast<double>(j);
    // The index bounds the search to the experts whose intervals meet the point's bucket; find
    // the interval [cum[e], cum[e+1]) holding the point by binary search within them.
    // cum[idx[b]] <= b / units <= point < (b + 1) / units < cum[idx[b + 1] + 1], so the answer,
    // the last e with cum[e] <= point, lies in [idx[b], idx[b + 1]]. Branch-free bisection.
    const auto bucket = static_cast<std::size_t>(point * kBucketsPerUnit);
    const double* base = cum + idx[bucket];
    std::size_t n = static_cast<std::size_t>(idx[bucket + 1]) - idx[bucket] + 1;
    while (n > 1) {
      const std::size_t half = n / 2;
      base = base[half] <= point ? base + half : base;
      n -= half;
    }
    out[j] = static_cast<int>(base - cum);
  }
  return {out, k};
}

}  // namespace vramsim::sim
