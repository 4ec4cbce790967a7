// The engine's front door: closed-loop clients and open-loop arrivals send requests; the
// engine admits them (or turns them away: context window, paged-KV pool, max_queue) into one
// queue, from which the scheduler's slots take them. Counts the requests that wait for a slot
// (the queue's length) apart from those an idle slot takes on arrival.
// All methods run inside SimGrid actors (one at a time; not thread-safe).
#pragma once

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <vector>

#include "sim/request_source.h"
#include "sim/scenario.h"

namespace vramsim::sim {

class RunRecorder;

// One request in flight: sent by `client` (-1: open loop) at `arrival` (simulated seconds);
// the engine puts it back on `reply` when its last token is out.
struct Job {
  std::uint64_t id = 0;
  int client = 0;
  double arrival = 0;
  simgrid::s4u::Mailbox* reply = nullptr;
  RequestShape shape;
  bool queued = true;  // counted as waiting; false when an idle slot took it on arrival
};

// A paged KV pool's blocks for `tokens` positions (REQUIRES: scenario.engine.kv_pool).
std::int64_t kv_blocks_for(const Scenario& scenario, std::int64_t tokens);
// The free blocks the scheduler keeps: the pool's watermark share of `pool_blocks`, rounded
// down (vLLM V0). REQUIRES: scenario.engine.kv_pool.
std::int64_t kv_watermark_blocks(const Scenario& scenario, std::int64_t pool_blocks);

class RequestQueue {
 public:
  // `idle_slots`: the slots ready for the first requests (engine.parallel).
  RequestQueue(const Scenario& scenario, RunRecorder& recorder, int idle_slots);

  // Actor bodies: a closed-loop client sends its next request when the previous one ends;
  // open-loop arrivals submit each request from an actor of its own at its arrival time.
  void client(int c);
  void arrivals();

  // Scheduler side. take(): the next request (blocks until one is queued).
  Job* take();
  // Whether a request is queued now (no wait).
  bool any_queued() const { return mailbox_->listen(); }
  // A slot finished a request: the oldest waiting request is no longer waiting from now, or
  // the slot is idle until one arrives.
  void slot_finished();
  // `job`, queued, was admitted (no longer waiting); or (not admitted, or preempted) waits again.
  void admitted(const Job& job);
  void waits(Job& job);
  // Hands a finished request back to its sender: the slot waits for the hand-over (a serial
  // or overlapped slot), or not (the batch loop, which has other requests to step).
  void reply(Job* job);
  void reply_detached(Job* job);
  // Batched engines: the slots free for arrivals from now.
  void set_idle_slots(int n) { idle_slots_ = n; }
  int waiting() const { return waiting_; }
  int claimed_pending() const { return claimed_pending_; }

 private:
  void submit(int r, int c, simgrid::s4u::Mailbox* reply);
  simgrid::s4u::Mailbox* take_reply_box();
  double now() const;

  const Scenario& s_;
  RunRecorder& recorder_;
  simgrid::s4u::Mailbox* mailbox_ = nullptr;
  int waiting_ = 0;          // requests sent that wait for a slot (not those an idle slot took at once)
  int idle_slots_ = 0;       // slots waiting for a request, not yet claimed by an arriving one
  int claimed_pending_ = 0;  // requests that claimed an idle slot on arrival, not yet taken from the queue
  std::vector<simgrid::s4u::Mailbox*> free_replies_;  // open loop: reply mailboxes not in use
  int reply_boxes_ = 0;
};

}  // namespace vramsim::sim
