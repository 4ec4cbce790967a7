#include "sim/fabric.h"

#include <algorithm>

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

int Fabric::card_of(const s4u::Host* h) const {
  for (std::size_t c = 0; c < p_.gpus.size(); ++c)
    if (p_.gpus[c] == h) return static_cast<int>(c);
  return -1;
}

void Fabric::count(const Move& m, double bytes) {
  const int a = card_of(m.from), b = card_of(m.to);
  if (a >= 0 && b >= 0 && gpu_link_) {
    gpu_pair_bytes_[{a, b}] += bytes;
    return;
  }
  if (a >= 0) card_up_[static_cast<std::size_t>(a)] += bytes;
  if (b >= 0) card_down_[static_cast<std::size_t>(b)] += bytes;
  if (switch_ && b < 0) switch_up_ += bytes;  // host traffic crosses the uplink; peer traffic does not
  if (switch_ && a < 0) switch_down_ += bytes;
}

double Fabric::gpu_link_busiest() const {
  double most = 0;
  if (p_.gpu_switch_ports) {  // one port per card: the busiest port direction
    std::vector<double> out(p_.gpus.size(), 0.0), in(p_.gpus.size(), 0.0);
    for (const auto& [pair, bytes] : gpu_pair_bytes_) {
      out[static_cast<std::size_t>(pair.first)] += bytes;
      in[static_cast<std::size_t>(pair.second)] += bytes;
    }
    for (std::size_t c = 0; c < out.size(); ++c) most = std::max({most, out[c], in[c]});
    return most;
  }
  for (const auto& [pair, bytes] : gpu_pair_bytes_) most = std::max(most, bytes);
  return most;
}

void Fabric::move_all(const std::vector<Move>& moves, double bytes, bool simulate) {
  if (moves.empty()) return;
  if (!simulate) {
    for (const Move& m : moves) count(m, bytes);
    return;
  }
  std::vector<s4u::CommPtr> comms;
  comms.reserve(moves.size());
  for (const Move& m : moves) {
    comms.push_back(s4u::Comm::sendto_async(m.from, m.to, static_cast<std::uint64_t>(bytes)));
    count(m, bytes);
  }
  for (auto& c : comms) c->wait();
  comms_ += static_cast<std::int64_t>(moves.size());
}

void Fabric::host_to_card(int card, double bytes) { move_all({{p_.host, p_.gpus.at(static_cast<std::size_t>(card))}}, bytes); }

void Fabric::card_to_host(int card, double bytes) { move_all({{p_.gpus.at(static_cast<std::size_t>(card)), p_.host}}, bytes); }

// Hop `hop` (0, or 1 when staged) of a copy from card `from` to card `to`.
std::vector<Fabric::Move> Fabric::card_hops(int from, int to, int hop) const {
  s4u::Host* a = p_.gpus.at(static_cast<std::size_t>(from));
  s4u::Host* b = p_.gpus.at(static_cast<std::size_t>(to));
  if (p_.direct_peer) return hop == 0 ? std::vector<Move>{{a, b}} : std::vector<Move>{};
  return {hop == 0 ? Move{a, p_.host} : Move{p_.host, b}};
}

double Fabric::staged_wait(const std::vector<std::pair<int, int>>& pairs) const {
  if (p_.direct_peer || staged_latency_.empty()) return 0.0;
  double wait = 0;
  for (const auto& [a, b] : pairs) {
    const double fixed = std::max(staged_latency_.at(static_cast<std::size_t>(a)), staged_latency_.at(static_cast<std::size_t>(b)));
    // The two hops run at once (card_copies): their links' latencies overlap too.
    const double links = std::max(link_latency_.at(static_cast<std::size_t>(a)), link_latency_.at(static_cast<std::size_t>(b)));
    wait = std::max(wait, fixed - links);
  }
  return wait;
}

void Fabric::card_to_card(int from, int to, double bytes) { card_copies({{from, to}}, bytes); }

void Fabric::count_card_to_card(int from, int to, double bytes) {
  for (int hop = 0; hop < 2; ++hop) move_all(card_hops(from, to, hop), bytes, false);
}

void Fabric::card_copies(const std::vector<std::pair<int, int>>& pairs, double bytes, bool simulate) {
  if (simulate && !pairs.empty())
    if (const double wait = staged_wait(pairs); wait > 0) s4u::this_actor::sleep_for(wait);
  // A staged copy's two hops run at once: the driver pipelines cudaMemcpyPeer through a host
  // staging buffer in chunks, so the bytes leave one card while earlier chunks reach the other
  // (2x RTX 4090 without P2P: 22.5 GB/s one way, p2pBandwidthLatencyTest, dbkinghorn/Notes,
  // 2023-02, against ~13 GB/s for two Gen4 x16 copies in turn). Modelled at its limit, chunks
  // of no size: the slower hop sets the rate (26 GB/s at Gen4 x16, 16% above that measurement).
  std::vector<Move> moves;
  for (int hop = 0; hop < 2; ++hop)
    for (const auto& [from, to] : pairs)
      for (const Move& m : card_hops(from, to, hop)) moves.push_back(m);
  move_all(moves, bytes, simulate);
}

void Fabric::all_reduce(double bytes) { ring_all_reduce(bytes, 1.0, true); }

void Fabric::count_all_reduces(double bytes, double times) { ring_all_reduce(bytes, times, false); }

void Fabric::ring_all_reduce(double bytes, double times, bool simulate) {
  const int n = static_cast<int>(p_.gpus.size());
  if (n < 2 || times <= 0) return;
  const double chunk = bytes / n;
  // Reduce-scatter then all-gather: 2 (N - 1) steps of every card sending one chunk onwards.
  for (int step = 0; step < 2 * (n - 1); ++step)
    for (int hop = 0; hop < 2; ++hop) {
      std::vector<Move> moves;
      for (int c = 0; c < n; ++c)
        for (const Move& m : card_hops(c, (c + 1) % n, hop)) moves.push_back(m);
      move_all(moves, simulate ? chunk : chunk * times, simulate);
    }
}

}  // namespace vramsim::sim
