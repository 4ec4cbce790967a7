// Continuous batching (engine.slot_scheduling: batched): one decode loop. Between steps it
// takes the waiting requests in arrival order, up to engine.parallel running (with a paged KV
// pool, while the prompt's blocks leave the watermark free: the first that does not fit stops
// the admissions; and within the pass's prompt-token budget), prefills the admitted prompts
// together in one pass, each getting its next token from it, then runs one decode step for
// every running request together (BatchStep). A request leaves after its last token, right
// after its prefill if it wants one token. With a paged pool each step's new positions take
// blocks; when the pool runs out the most recently admitted request is preempted (its blocks
// freed; it waits again at the head of the queue and, readmitted, prefills its prompt and its
// tokens so far again, which gives its next token).
#include <algorithm>
#include <deque>
#include <limits>
#include <memory>

#include "sim/scheduler.h"

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

namespace {

struct Running {
  std::unique_ptr<Job> job;
  std::unique_ptr<RequestRunner> runner;  // from its first admission
  RequestRecord rec;
  std::int64_t prefilled = 0;             // prompt tokens of its first prefill
  std::int64_t blocks = 0;                // KV blocks held
  bool first = false;                     // admitted for the first time: its prefill gives its first token
  std::int64_t chunked = 0;               // chunked prefill: tokens of its current prefill run so far
  bool prompt_done = false;               // chunked prefill: its prefill's last chunk has run
};

class BatchScheduler final : public Scheduler {
 public:
  explicit BatchScheduler(const EngineParts& parts) : p_(parts) {}

  void start() override { s4u::Actor::create("batch", p_.executor.gpu(), [this] { loop(); })->daemonize(); }

 private:
  const Scenario& s() const { return p_.scenario; }
  RunResult& out() { return p_.recorder.out(); }
  static double now() { return s4u::Engine::get_clock(); }

  // The blocks a running request holds after its next decode step: its KV positions plus the
  // step's (1 + draft tokens), never beyond prompt + gen_tokens - 1 (its last token is never fed).
  std::int64_t blocks_after_step(const RequestRunner& r) const {
    return kv_blocks_for(s(), std::min(r.kv_positions() + 1 + r.next_drafts(), r.prompt_tokens() + r.gen_tokens() - 1));
  }
  // The blocks one running request still needs for its next step, and all of them together.
  std::int64_t growth_of(const Running& r) const { return blocks_after_step(*r.runner) - r.blocks; }
  std::int64_t growth() const {
    std::int64_t need = 0;
    for (const auto& r : running_) need += growth_of(*r);
    return need;
  }
  // The slots free for arrivals until the next admissions: those no running request holds and
  // no arrival has claimed; none while requests wait (they come first).
  int free_slots(std::size_t busy) const {
    return waiting_.empty() && p_.queue.waiting() == 0
               ? std::max(0, s().engine.parallel - static_cast<int>(busy) - p_.queue.claimed_pending())
               : 0;
  }
  void take() {
    auto r = std::make_unique<Running>();
    r->job.reset(p_.queue.take());
    waiting_.push_back(std::move(r));
  }
  // A request with all its tokens: its record, its blocks back, its client answered.
  void finish(Running& r) {
    free_blocks_ += r.blocks;
    p_.recorder.complete(*r.job, r.rec, *r.runner, r.prefilled, now());
    p_.queue.reply_detached(r.job.release());
  }

  void loop();
  void iterate_chunked();
  void admit();
  void prefill_admitted();
  void prefilled(std::unique_ptr<Running> r);
  void preempt_for_blocks();
  void step();

  EngineParts p_;
  std::deque<std::unique_ptr<Running>> waiting_;    // taken from the queue (or preempted), not running
  std::vector<std::unique_ptr<Running>> running_;   // in admission order
  std::vector<std::unique_ptr<Running>> admitted_;  // this iteration's admissions, prefilled together
  std::vector<std::unique_ptr<Running>> prefilling_;  // chunked prefill: admitted, prompt not all run yet
  std::vector<RequestRunner*> batch_;
  BatchStep stepper_;
  std::int64_t free_blocks_ = 0;
  std::int64_t watermark_ = 0;
  std::int64_t prefill_budget_ = 0;
  bool chunked_ = false;                            // vLLM V1: a token budget per step, prompts chunked
};

void BatchScheduler::loop() {
  const auto& pool = s().engine.kv_pool;
  // Prompt tokens one prefill pass may take: vLLM V0's max_num_batched_tokens without chunked
  // prefill, max(max_model_len, 2048) (vllm/config.py SchedulerConfig); other engines batch
  // every admitted prompt (llama-server splits them into its micro-batches).
  prefill_budget_ = pool ? std::max<std::int64_t>(s().engine.context, 2048) : std::numeric_limits<std::int64_t>::max();
  chunked_ = s().engine.step_budget.has_value();
  free_blocks_ = out().plan.kv_blocks;
  watermark_ = pool ? kv_watermark_blocks(s(), out().plan.kv_blocks) : 0;
  while (true) {
    if (running_.empty() && waiting_.empty() && prefilling_.empty()) {  // idle: wait for a request
      p_.queue.set_idle_slots(free_slots(0));
      take();
    }
    while (p_.queue.any_queued()) take();
    if (chunked_) {
      iterate_chunked();
      continue;
    }
    admit();
    p_.queue.set_idle_slots(free_slots(running_.size() + admitted_.size()));
    if (!admitted_.empty()) prefill_admitted();
    if (running_.empty()) continue;
    if (pool) preempt_for_blocks();
    step();
  }
}

// In arrival order while a slot, the blocks (above the watermark, after the running requests'
// next step) and the pass's prompt-token budget allow; the first that does not fit stops them.
void BatchScheduler::admit() {
  const auto& pool = s().engine.kv_pool;
  admitted_.clear();
  std::int64_t batched_tokens = 0;
  // `running_` is fixed while admitting; nothing to admit, nothing to compute.
  const std::int64_t running_growth = pool && !waiting_.empty() ? growth() : 0;
  while (!waiting_.empty() && static_cast<int>(running_.size() + prefilling_.size() + admitted_.size()) < s().engine.parallel) {
    Running& next = *waiting_.front();
    // Its prefill's tokens (a fresh request's prompt before any prefix reuse is known).
    const std::int64_t new_tokens = next.runner ? next.runner->prefill_tokens() : next.job->shape.prompt_tokens;
    // Chunked: any budget left admits one more, whose first chunk is what is left.
    if (chunked_ ? batched_tokens >= prefill_budget_ : !admitted_.empty() && batched_tokens + new_tokens > prefill_budget_) break;
    if (pool) {
      const std::int64_t need = kv_blocks_for(s(), next.runner ? next.runner->context() : next.job->shape.prompt_tokens);
      if (free_blocks_ - running_growth - need < watermark_ && !(running_.empty() && prefilling_.empty() && admitted_.empty())) break;
      free_blocks_ -= need;
      next.blocks = need;
    }
    batched_tokens += chunked_ ? std::min(new_tokens, prefill_budget_ - batched_tokens) : new_tokens;
    std::unique_ptr<Running> r = std::move(waiting_.front());
    waiting_.pop_front();
    p_.queue.admitted(*r->job);
    if (!r->runner) {
      r->runner = std::make_unique<RequestRunner>(s(), p_.executor.stages(), out().popularity, r->job->id,
                                                  r->job->shape.prompt_tokens, r->job->shape.gen_tokens, s().engine.split);
      r->rec = p_.recorder.start(*r->job, *r->runner, p_.executor.prefix_cached(*r->job), now());
      r->prefilled = r->runner->prefill_tokens();
      out().prefilled_tokens += r->prefilled;
      r->first = true;
    }
    admitted_.push_back(std::move(r));
  }
  // A request that claimed a slot on arrival and is not admitted (no blocks, or the prefill
  // budget) waits from now, as one that queued does.
  for (auto& r : waiting_)
    if (!r->job->queued) p_.queue.waits(*r->job);
}

// A request whose prefill has run (whole, or its last chunk): its first token's time on its
// first admission; it leaves if that was its one token, else it decodes from the next step.
void BatchScheduler::prefilled(std::unique_ptr<Running> r) {
  if (r->first) {
    r->rec.first_token_s = now();
    r->rec.prefill_s = r->rec.first_token_s - r->rec.start_s;
    r->first = false;
  }
  if (r->runner->done())
    finish(*r);  // its one token came from the prefill
  else
    running_.push_back(std::move(r));
}

// The admitted prompts in one pass; each gets its next token from it.
void BatchScheduler::prefill_admitted() {
  std::vector<Prefilled> passed;
  for (const auto& r : admitted_) passed.push_back({r->job.get(), r->runner.get(), std::nullopt, true});
  p_.executor.run_prefill_pass(passed);
  // The prompts' blocks are held now, also by a request that leaves right after its prefill.
  if (s().engine.kv_pool) out().batch.kv_blocks_peak = std::max(out().batch.kv_blocks_peak, out().plan.kv_blocks - free_blocks_);
  for (auto& r : admitted_) prefilled(std::move(r));
  admitted_.clear();
  p_.queue.set_idle_slots(free_slots(running_.size()));  // a request done with its prefill freed its slot
}

// This step's positions need blocks; preempt the latest admitted until they fit.
void BatchScheduler::preempt_for_blocks() {
  std::int64_t need = growth();
  while (running_.size() > 1 && need > free_blocks_) {
    std::unique_ptr<Running> victim = std::move(running_.back());
    running_.pop_back();
    need -= growth_of(*victim);
    free_blocks_ += victim->blocks;
    victim->blocks = 0;
    victim->runner->preempt();
    ++out().batch.preempted;
    p_.queue.waits(*victim->job);
    waiting_.push_front(std::move(victim));
  }
  for (auto& r : running_) {
    const std::int64_t want = blocks_after_step(*r->runner);
    free_blocks_ -= want - r->blocks;
    r->blocks = want;
  }
  out().batch.kv_blocks_peak = std::max(out().batch.kv_blocks_peak, out().plan.kv_blocks - free_blocks_);
}

// One decode step for every running request; the finished ones leave and free their blocks.
void BatchScheduler::step() {
  StepExecutor& exec = p_.executor;
  RunResult& o = out();
  batch_.clear();
  for (const auto& r : running_) batch_.push_back(r->runner.get());
  const bool trace = o.decode_steps < p_.options.trace_steps;
  StepResult step = stepper_.run(batch_, trace);
  o.batch.union_experts = stepper_.union_experts();
  o.batch.request_experts = stepper_.request_experts();
  o.batch.moe_layer_steps = stepper_.moe_layer_steps();
  double t0 = now();
  double linked = 0;  // hand-offs or all-reduces beyond the cards' work
  if (exec.staged())
    linked = exec.run_split_step(step.stage_costs, step.positions, trace);
  else
    t0 = exec.run_whole_step(step.costs.total());
  o.decode += step.costs;
  o.decode.transfer += linked;
  p_.recorder.account_gpu(step.costs, exec.staged());
  if (!exec.staged() && trace) p_.recorder.trace_step(t0, step, exec.model().step_fixed(0, step.drafts));
  ++o.decode_steps;
  ++o.batch.steps;
  o.batch.requests += static_cast<std::int64_t>(batch_.size());
  o.batch.max = std::max(o.batch.max, static_cast<int>(batch_.size()));
  for (auto it = running_.begin(); it != running_.end();) {
    if (!(*it)->runner->done()) {
      ++it;
      continue;
    }
    finish(**it);
    it = running_.erase(it);
  }
  p_.queue.set_idle_slots(free_slots(running_.size() + prefilling_.size()));  // the finished requests' slots take arrivals
}

// vLLM V1 (Scheduler.schedule): one step of at most max_num_batched_tokens tokens. The running
// requests' decode tokens come first, then the prompts being prefilled (in admission order), then
// new admissions, each taking at most what is left (a prompt's rest goes on in the next steps).
// The chunks run as one prefill pass (each over the positions before it), then the decodes as
// one step: V1 runs them as one forward pass, which reads the weights once, where this pays them
// twice (a stated limit: the second read is one weight sweep against a chunk's GEMMs). A prompt
// whose last chunk ran gets its first token at the step's end and decodes from the next step.
void BatchScheduler::iterate_chunked() {
  std::int64_t left = s().engine.step_budget->tokens;
  for (const auto& r : running_) left -= 1 + r->runner->next_drafts();
  std::vector<Prefilled> chunks;
  auto take_chunk = [&](Running& r) {
    const std::int64_t rest = r.runner->prefill_tokens() - r.chunked;
    const std::int64_t n = std::min(rest, left);
    chunks.push_back({r.job.get(), r.runner.get(), RequestRunner::PrefillSequence{n, r.runner->cached_before_prefill() + r.chunked}, n == rest});
    r.chunked += n;
    r.prompt_done = n == rest;
    left -= n;
  };
  for (auto& r : prefilling_) {
    if (left <= 0) break;
    take_chunk(*r);
  }
  prefill_budget_ = std::max<std::int64_t>(0, left);
  admit();
  for (auto& r : admitted_) {
    r->chunked = 0;
    take_chunk(*r);
    prefilling_.push_back(std::move(r));
  }
  admitted_.clear();
  if (s().engine.kv_pool) out().batch.kv_blocks_peak = std::max(out().batch.kv_blocks_peak, out().plan.kv_blocks - free_blocks_);
  p_.queue.set_idle_slots(free_slots(running_.size() + prefilling_.size()));
  if (!chunks.empty()) p_.executor.run_prefill_pass(chunks);
  if (!running_.empty()) {
    if (s().engine.kv_pool) preempt_for_blocks();
    step();
  }
  for (auto it = prefilling_.begin(); it != prefilling_.end();) {
    Running& r = **it;
    if (!r.prompt_done) {
      ++it;
      continue;
    }
    r.prompt_done = false;
    r.chunked = 0;
    std::unique_ptr<Running> done = std::move(*it);
    it = prefilling_.erase(it);
    prefilled(std::move(done));
  }
  p_.queue.set_idle_slots(free_slots(running_.size() + prefilling_.size()));
}

}  // namespace

std::unique_ptr<Scheduler> make_batch_scheduler(const EngineParts& parts) { return std::make_unique<BatchScheduler>(parts); }

}  // namespace vramsim::sim
