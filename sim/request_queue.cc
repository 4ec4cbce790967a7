#include "sim/request_queue.h"

#include <memory>

#include "sim/run_recorder.h"

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

std::int64_t kv_blocks_for(const Scenario& s, std::int64_t tokens) {
  const std::int64_t b = s.engine.kv_pool->block_size;
  return (tokens + b - 1) / b;
}

std::int64_t kv_watermark_blocks(const Scenario& s, std::int64_t pool_blocks) {
  return static_cast<std::int64_t>(s.engine.kv_pool->watermark * static_cast<double>(pool_blocks));
}

RequestQueue::RequestQueue(const Scenario& s, RunRecorder& recorder, int idle_slots)
    : s_(s), recorder_(recorder), mailbox_(s4u::Mailbox::by_name("queue")), idle_slots_(idle_slots) {}

double RequestQueue::now() const { return s4u::Engine::get_clock(); }

// Sends request `r` and waits for its completion, unless the engine turns it away at arrival:
// a prompt longer than its context window; with a paged KV pool (vLLM, whose max_model_len
// bounds prompt + max_tokens), a prompt and requested output longer than it; or (admission
// control) `max_queue` requests already waiting. Other engines generate until the window is
// full: the KV holds the prompt and all outputs but the last, so at most context - prompt + 1.
void RequestQueue::submit(int r, int c, s4u::Mailbox* reply) {
  const double t = now();
  RequestShape shape = request_shape(s_.workload, s_.seed, static_cast<std::uint64_t>(r));
  recorder_.sent(c, t);
  const char* reason = nullptr;
  const std::int64_t room = s_.engine.context - shape.prompt_tokens + 1;  // outputs the window holds
  const std::int64_t pool_blocks = recorder_.out().plan.kv_blocks;
  if (shape.prompt_tokens > s_.engine.context)
    reason = "prompt_exceeds_context";
  else if (s_.engine.kv_pool && shape.prompt_tokens + shape.gen_tokens > s_.engine.context)
    reason = "prompt_plus_output_exceeds_context";
  else if (s_.engine.kv_pool && kv_blocks_for(s_, shape.prompt_tokens) > pool_blocks - kv_watermark_blocks(s_, pool_blocks))
    // vLLM V0's block manager can never allocate it ("exceeds the capacity of block_manager"):
    // it is ignored rather than admitted into a pool it would leave below the watermark.
    reason = "prompt_exceeds_kv_pool";
  else if (s_.engine.max_queue && waiting_ >= *s_.engine.max_queue)
    reason = "queue_full";
  if (reason) {
    recorder_.rejected(RejectedRequest{static_cast<std::uint64_t>(r), c, shape.prompt_tokens, t, reason});
    return;
  }
  if (shape.gen_tokens > room) {
    shape.gen_tokens = room;
    ++recorder_.out().truncated;
  }
  // An idle slot takes it at once (the mailbox's hand-over is no wait); else it queues.
  const bool queued = idle_slots_ == 0;
  if (queued) {
    recorder_.queue_meter().set(t, ++waiting_);
  } else {
    --idle_slots_;
    ++claimed_pending_;
  }
  mailbox_->put(new Job{static_cast<std::uint64_t>(r), c, t, reply, shape, queued}, 0);
  recorder_.activities();
  delete reply->get<Job>();  // the completed job comes back
  recorder_.activities();
}

void RequestQueue::client(int c) {
  s4u::Mailbox* reply = s4u::Mailbox::by_name("client" + std::to_string(c));
  for (int r = c; r < s_.workload.requests; r += s_.workload.clients) submit(r, c, reply);
}

// Open loop: requests arrive as a Poisson or bursty process (counter-based draws,
// sim/request_source.h) or at a trace's times; each is submitted by its own actor so that
// arrivals never wait for completions. Reply mailboxes are reused (SimGrid keeps every
// mailbox until the end), so memory stays flat however many requests arrive.
void RequestQueue::arrivals() {
  ArrivalClock clock(s_.workload, s_.seed);
  const bool trace = s_.workload.arrival == workloads::Arrival::Trace;
  for (int r = 0; r < s_.workload.requests; ++r) {
    if (trace)
      s4u::this_actor::sleep_until(s_.workload.trace[static_cast<std::size_t>(r)].arrival_s);
    else
      s4u::this_actor::sleep_for(clock.next_gap());
    recorder_.activities();
    s4u::Actor::create("request" + std::to_string(r), s4u::this_actor::get_host(), [this, r] {
      s4u::Mailbox* reply = take_reply_box();
      submit(r, -1, reply);
      free_replies_.push_back(reply);
    });
  }
}

s4u::Mailbox* RequestQueue::take_reply_box() {
  if (free_replies_.empty()) return s4u::Mailbox::by_name("reply" + std::to_string(reply_boxes_++));
  s4u::Mailbox* box = free_replies_.back();
  free_replies_.pop_back();
  return box;
}

Job* RequestQueue::take() {
  Job* job = mailbox_->get<Job>();  // claimed already: on arrival, or as a slot finished
  if (!job->queued) --claimed_pending_;
  recorder_.activities();
  return job;
}

void RequestQueue::slot_finished() {
  if (waiting_ > 0)
    recorder_.queue_meter().set(now(), --waiting_);
  else
    ++idle_slots_;
}

void RequestQueue::admitted(const Job& job) {
  if (job.queued) recorder_.queue_meter().set(now(), --waiting_);
}

void RequestQueue::waits(Job& job) {
  job.queued = true;
  recorder_.queue_meter().set(now(), ++waiting_);
}

void RequestQueue::reply(Job* job) {
  job->reply->put(job, 0);
  recorder_.activities();
}

void RequestQueue::reply_detached(Job* job) {
  job->reply->put_init(job, 0)->detach();
  recorder_.activities();
}

}  // namespace vramsim::sim
