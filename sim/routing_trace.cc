#include "sim/routing_trace.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "core/config_reader.h"
#include "sim/counter_rng.h"
#include "sim/routing_profile.h"
#include "sim/vram_plan.h"

namespace vramsim::sim {

LayerPopularity scenario_popularity(const Scenario& s) {
  if (!s.model.moe) throw std::invalid_argument(s.model.name + " is a dense model: it routes no experts");
  if (!s.model.moe->routing)
    throw std::invalid_argument(s.model.name + " has no expert routing: its model.moe.routing (coverage_points, or a ranked profile) "
                                "is not given (docs/scenarios.md)");
  const auto& moe = *s.model.moe;
  const auto& r = *moe.routing;
  if (!r.profile.empty()) {
    auto profile = load_routing_profile(r.profile, moe.layers, moe.experts, moe.experts_per_token);
    // Already a compiler-style diagnostic naming the file, line and key: printed as it is.
    if (!profile) throw config::ConfigError(profile.error());
    return std::move(profile).value();
  }
  // The median request routes a share a by its own preference (hit rate = coverage there):
  // h = (1 - a) H(c) + a c, so the global curve must pass through H(c) = (h - a c) / (1 - a).
  auto global = [&](std::pair<double, double> p) {
    const double a = r.request_share_median;
    return CoveragePoint{p.first, (p.second - a * p.first) / (1.0 - a)};
  };
  auto fitted = fit_popularity(moe.experts, moe.experts_per_token, global(r.coverage_points[0]), global(r.coverage_points[1]));
  if (!fitted) throw std::invalid_argument("model.moe.routing.coverage_points: " + fitted.error().message);
  return LayerPopularity(static_cast<std::size_t>(moe.layers), std::move(fitted).value());
}

void write_routing_trace(std::ostream& out, const Scenario& s, std::int64_t tokens) {
  const LayerPopularity popularity = scenario_popularity(s);
  const auto& moe = *s.model.moe;
  const VramPlan plan = plan_vram(s);
  const std::int64_t per_request = std::max<std::int64_t>(1, s.workload.gen.max);  // a distribution's largest length
  out << "vramsim-routing-trace 1\n"
      << "# written by `vramsim routing-trace` from " << s.source << ", seed " << s.seed << "\n"
      << "# one decode token per step; experts are popularity ranks within their layer (0 = hottest)\n"
      << "layers " << moe.layers << "\nexperts " << moe.experts << "\ntop_k " << moe.experts_per_token << "\n"
      << "expert_bytes " << static_cast<std::int64_t>(plan.expert_bytes) << "\nscenario_slots " << plan.slots << "\n"
      << "gen_tokens " << per_request << "\ntokens " << tokens << "\n";
  const auto order = prefill_order(popularity);
  const auto e = static_cast<std::uint32_t>(moe.experts);
  out << "prefill_order " << order.size();
  for (std::size_t i = 0; i < order.size(); ++i) out << (i % 16 == 0 ? '\n' : ' ') << order[i] / e << ' ' << order[i] % e;
  out << '\n';
  const RoutingParams params{moe.routing->request_share_median, moe.routing->request_share_sigma, moe.routing->locality};
  const CounterRng streams = CounterRng(s.seed).with(0x524F555445ULL);  // the simulation's routing stream (sim/request_runner.cc)
  for (std::int64_t done = 0, request = 0; done < tokens; ++request) {
    RequestRouter router(popularity, params, streams, static_cast<std::uint64_t>(request));
    for (std::int64_t t = 0; t < per_request && done < tokens; ++t, ++done) {
      out << "token " << done << " request " << request << '\n';
      for (int layer = 0; layer < moe.layers; ++layer) {
        const auto& picks = router.route(layer, static_cast<std::uint64_t>(t));
        for (std::size_t i = 0; i < picks.size(); ++i) out << (i ? " " : "") << picks[i];
        out << '\n';
      }
    }
  }
}

}  // namespace vramsim::sim
