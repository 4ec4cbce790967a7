// Moving activations between the cards and the host on the SimGrid platform (platform.h): the
// transfers and collectives of a multi-card split, each a set of SimGrid communications so
// that they share the links exactly. Calls block the calling actor until the bytes land.
//
// Closed forms on an idle platform (tests/fabric_test.cc):
//   host -> card c:   latency_c (+ switch latency) + bytes / min(link_c, switch uplink)
//   card a -> card b: direct (NVLink, or PCIe peer-to-peer over both cards' links):
//                     route latency + bytes / slowest link on the route;
//                     staged through host memory, its two copies pipelined (the driver's
//                     chunks, at their limit; a copy smaller than a chunk, whose hops really
//                     follow each other, is not told apart):
//                     max(latency_a + bytes / link_a, latency_b + bytes / link_b), plus, with the
//                     links' staged_peer_latency S set (the driver's fallback for cudaMemcpyPeer),
//                     max(S - max(latency_a, latency_b), 0)
//   ring all-reduce of B bytes per card over N cards: 2 (N - 1) steps; in each, every card
//                     sends B / N bytes to the next card at once (the links are distinct, so
//                     each step takes one such transfer's time on an even machine). NCCL stages
//                     through host memory itself: no driver fallback cost, and its two hops are
//                     kept in turn (its own protocol's pipelining is not modelled).
// Units: bytes, seconds.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "sim/platform.h"

namespace vramsim::sim {

class Fabric {
 public:
  // `has_switch` / `has_gpu_link`: how the platform routes (for the byte counts).
  Fabric(const Platform& platform, bool has_switch, bool has_gpu_link)
      : p_(platform), switch_(has_switch), gpu_link_(has_gpu_link), card_down_(platform.gpus.size(), 0.0),
        card_up_(platform.gpus.size(), 0.0) {}

  // Card `c`'s link stages a copy to or from another card (no direct route) at a fixed cost
  // of `seconds[c]` (LinkSpec::staged_peer_latency_s; 0: its DMA copies' latencies alone). A
  // staged copy between cards a and b waits the part of the larger of theirs that the larger of
  // its two copies' link latencies (the hops run at once) does not already make up.
  // `link_latency[c]`: that link's own latency per copy, seconds (what the platform charges).
  void set_staged_peer_latency(std::vector<double> seconds, std::vector<double> link_latency) {
    staged_latency_ = std::move(seconds);
    link_latency_ = std::move(link_latency);
  }

  void host_to_card(int card, double bytes);
  void card_to_host(int card, double bytes);
  void card_to_card(int from, int to, double bytes);
  // Counts a copy's bytes on its links without simulating it (a copy whose duration the
  // caller already knows, on an otherwise idle fabric).
  void count_card_to_card(int from, int to, double bytes);
  // `bytes` from each (from, to) pair's first card to its second, all at once (a staged copy's
  // two hops at once, pipelined); `simulate` false only counts them.
  void card_copies(const std::vector<std::pair<int, int>>& pairs, double bytes, bool simulate = true);
  // Every card ends with the sum of all cards' `bytes`-sized buffers (ring algorithm).
  void all_reduce(double bytes);
  // Counts the bytes of `times` such all-reduces on their links without simulating them (ones
  // whose duration the caller already knows, on an otherwise idle fabric).
  void count_all_reduces(double bytes, double times);

  // SimGrid communications started so far (the cost meter).
  std::int64_t communications() const { return comms_; }
  // Bytes carried so far, per link and direction (links are split-duplex: each direction has
  // the link's bandwidth). Down: towards the card (host to card); up: from it.
  double card_link_down(int card) const { return card_down_.at(static_cast<std::size_t>(card)); }
  double card_link_up(int card) const { return card_up_.at(static_cast<std::size_t>(card)); }
  double switch_down() const { return switch_down_; }
  double switch_up() const { return switch_up_; }
  // The card-to-card link: the busiest (from, to) direction of any pair, or with NVSwitch
  // ports the busiest port direction.
  double gpu_link_busiest() const;

 private:
  // Sends every (from, to, bytes) at once and waits for all of them; staged pairs take two hops.
  struct Move {
    simgrid::s4u::Host* from;
    simgrid::s4u::Host* to;
  };
  void move_all(const std::vector<Move>& moves, double bytes, bool simulate = true);
  std::vector<Move> card_hops(int from, int to, int hop) const;

  void count(const Move& m, double bytes);
  void ring_all_reduce(double bytes, double times, bool simulate);
  int card_of(const simgrid::s4u::Host* h) const;

  // The driver's fixed cost beyond the links' latencies of the staged copies between `pairs`.
  double staged_wait(const std::vector<std::pair<int, int>>& pairs) const;

  const Platform& p_;
  std::vector<double> staged_latency_, link_latency_;  // per card's link, seconds (set_staged_peer_latency)
  bool switch_ = false;
  bool gpu_link_ = false;
  std::int64_t comms_ = 0;
  std::vector<double> card_down_, card_up_;
  double switch_down_ = 0, switch_up_ = 0;
  std::map<std::pair<int, int>, double> gpu_pair_bytes_;  // (from, to) card pairs over the card-to-card link
};

}  // namespace vramsim::sim
