// Expert routing: inclusion probabilities, the fit to coverage points, sampling.
#include <catch2/catch.hpp>

#include <numeric>
#include <set>

#include "sim/routing.h"

using namespace vramsim::sim;

TEST_CASE("inclusion probabilities sum to top-k and never exceed 1", "[routing]") {
  for (double s : {0.0, 0.5, 1.0, 2.0}) {
    Popularity p = Popularity::power_law_cutoff(512, 10, s, 300.0);
    const auto& pi = p.inclusion();
    CHECK(std::accumulate(pi.begin(), pi.end(), 0.0) == Approx(10.0).epsilon(1e-12));
    for (std::size_t i = 0; i < pi.size(); ++i) {
      CHECK(pi[i] <= 1.0);
      if (i) CHECK(pi[i] <= pi[i - 1]);
    }
  }
  // Very skewed weights cap the head at 1 (water-filling) and keep the sum.
  Popularity steep = Popularity::power_law_cutoff(512, 10, 3.0, 1e6);
  CHECK(steep.inclusion()[0] == 1.0);
  CHECK(std::accumulate(steep.inclusion().begin(), steep.inclusion().end(), 0.0) == Approx(10.0));
  CHECK(steep.hit_rate_of_top(512) == Approx(1.0));
  CHECK(steep.hit_rate_of_top(0) == 0.0);
}

TEST_CASE("the family is fitted exactly to the case study's two coverage points", "[routing]") {
  auto fit = fit_popularity(512, 10, {0.235, 0.865}, {0.795, 0.997});
  REQUIRE(fit.ok());
  CHECK(fit->hit_rate_of_top(0.235 * 512) == Approx(0.865).margin(1e-6));
  CHECK(fit->hit_rate_of_top(0.795 * 512) == Approx(0.997).margin(1e-6));
  // A plain power law (no cutoff) through the first point has a heavier tail: it misses the
  // second point by far, which is why the family has a cutoff.
  auto zipf_like = Popularity::power_law_cutoff(512, 10, fit->exponent, 1e9);
  CHECK(zipf_like.hit_rate_of_top(0.795 * 512) < 0.99);
}

TEST_CASE("impossible coverage points are refused", "[routing]") {
  CHECK_FALSE(fit_popularity(512, 10, {0.5, 0.4}, {0.8, 0.9}).ok());  // worse than random
  CHECK_FALSE(fit_popularity(512, 10, {0.8, 0.9}, {0.5, 0.95}).ok());  // out of order
}

TEST_CASE("sampling: k distinct experts per token with the inclusion probabilities", "[routing]") {
  Popularity p = Popularity::power_law_cutoff(64, 4, 1.0, 40.0);
  RequestRouter router(LayerPopularity(1, p), RoutingParams{0, 0, 0}, CounterRng(7), 1);
  std::vector<int> counts(64, 0), picks;
  const int tokens = 40000;
  for (int t = 0; t < tokens; ++t) {
    router.experts(0, static_cast<std::uint64_t>(t), picks);
    REQUIRE(picks.size() == 4);
    CHECK(std::set<int>(picks.begin(), picks.end()).size() == 4);
    for (int e : picks) ++counts[static_cast<std::size_t>(e)];
  }
  for (int e = 0; e < 64; ++e) {
    const double pi = p.inclusion()[static_cast<std::size_t>(e)];
    const double sd = std::sqrt(pi * (1 - pi) / tokens);
    CHECK(counts[static_cast<std::size_t>(e)] / static_cast<double>(tokens) == Approx(pi).margin(5 * sd + 1e-9));
  }
}

TEST_CASE("sampling is a pure function of (seed, request, token, layer)", "[routing]") {
  Popularity p = Popularity::power_law_cutoff(512, 10, 1.0, 200.0);
  RoutingParams params{0.05, 1.0, 0.3};
  const LayerPopularity four(4, p);
  RequestRouter a(four, params, CounterRng(1), 9), b(four, params, CounterRng(1), 9), c(four, params, CounterRng(2), 9);
  std::vector<int> x, y, z;
  bool differs = false;
  for (std::uint64_t t = 0; t < 50; ++t)
    for (int layer = 0; layer < 4; ++layer) {
      a.experts(layer, t, x);
      b.experts(layer, t, y);
      c.experts(layer, t, z);
      CHECK(x == y);
      differs = differs || x != z;
    }
  CHECK(differs);
  CHECK(a.alpha() == b.alpha());
}

TEST_CASE("token-to-token locality repeats the previous token's experts at its rate", "[routing]") {
  Popularity p = Popularity::power_law_cutoff(512, 10, 1.0, 200.0);
  RequestRouter r(LayerPopularity(1, p), RoutingParams{0, 0, 0.3}, CounterRng(3), 5);
  std::vector<int> prev, cur;
  int repeats = 0;
  const int tokens = 20000;
  r.experts(0, 0, prev);
  for (int t = 1; t < tokens; ++t) {
    r.experts(0, static_cast<std::uint64_t>(t), cur);
    repeats += cur == prev ? 1 : 0;
    prev = cur;
  }
  // Repeats by chance (a fresh draw equal to the last) are rare with 512 experts.
  CHECK(repeats / static_cast<double>(tokens) == Approx(0.3).margin(0.015));
}

TEST_CASE("per-request variation lowers a request's hit rate in proportion to its share", "[routing]") {
  Popularity p = Popularity::power_law_cutoff(512, 10, 1.0, 200.0);
  const int resident = 120;  // hottest 120 ranks resident
  // Averaged over requests: each has its own preference (a random permutation of the ranks).
  auto hit_rate = [&](double median) {
    std::vector<int> picks;
    long hits = 0, total = 0;
    for (std::uint64_t request = 0; request < 400; ++request) {
      RequestRouter r(LayerPopularity(1, p), RoutingParams{median, 0.0, 0.0}, CounterRng(4), request);
      for (std::uint64_t t = 0; t < 100; ++t) {
        r.experts(0, t, picks);
        for (int e : picks) hits += e < resident ? 1 : 0;
        total += static_cast<long>(picks.size());
      }
    }
    return static_cast<double>(hits) / static_cast<double>(total);
  };
  const double global = p.hit_rate_of_top(resident);
  // alpha = 0.3 exactly (sigma 0): h = 0.7 H + 0.3 x (expected hit of a random permutation = coverage).
  CHECK(hit_rate(0.0) == Approx(global).margin(0.005));
  CHECK(hit_rate(0.3) == Approx(0.7 * global + 0.3 * resident / 512.0).margin(0.01));
}

// Each (token, layer) draws on its own: a model deeper than 256 MoE layers must not give layer
// 256 + x the draws of a neighbouring token at layer x (the counter keeps the layer in 8 bits).
TEST_CASE("draws past layer 256 are not a neighbouring token's draws at a lower layer", "[routing]") {
  Popularity p = Popularity::power_law_cutoff(512, 10, 1.0, 200.0);
  const int layers = 300;
  RequestRouter r(LayerPopularity(layers, p), RoutingParams{0, 0, 0}, CounterRng(5), 1);
  std::vector<int> high, low;
  int same = 0;
  const int pairs = 44;
  for (int x = 0; x < pairs; ++x) {
    r.experts(256 + x, 2, high);
    r.experts(x, 3, low);  // token 2 ^ 1
    same += high == low ? 1 : 0;
  }
  CHECK(same <= 2);  // independent draws of 10 of 512 agree by chance almost never
}
