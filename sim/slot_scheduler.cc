// Serial and overlapped slots (engine.slot_scheduling: serial, overlapped): engine.parallel
// slots, each serving one request at a time from its prefill to its last token. Serial slots
// take turns on the engine's one loop (llama.cpp's); overlapped slots run their steps at once,
// contending layer by layer (StepExecutor::run_step_contended).
#include <memory>

#include "sim/scheduler.h"

namespace vramsim::sim {
namespace s4u = simgrid::s4u;

namespace {

class SlotScheduler final : public Scheduler {
 public:
  explicit SlotScheduler(const EngineParts& parts) : p_(parts) {}

  void start() override {
    for (int slot = 0; slot < p_.scenario.engine.parallel; ++slot)
      s4u::Actor::create("slot" + std::to_string(slot), p_.executor.gpu(), [this] { loop(); })->daemonize();
  }

 private:
  void loop() {
    while (true) {
      std::unique_ptr<Job> job(p_.queue.take());
      serve(*job);
      // The next: the oldest waiting request (no longer waiting from now), or idle until one
      // arrives; decided before the reply's hand-over, which is no wait for anyone.
      p_.queue.slot_finished();
      p_.queue.reply(job.release());
    }
  }

  void serve(const Job& job) {
    const Scenario& s = p_.scenario;
    StepExecutor& exec = p_.executor;
    RunRecorder& recorder = p_.recorder;
    RunResult& out = recorder.out();
    RequestRunner runner(s, exec.stages(), out.popularity, job.id, job.shape.prompt_tokens, job.shape.gen_tokens, s.engine.split);
    RequestRecord rec = recorder.start(job, runner, exec.prefix_cached(job), s4u::Engine::get_clock());
    const std::int64_t prefilled = runner.prefill_tokens();
    out.prefilled_tokens += prefilled;
    exec.run_prefill(job, runner);
    rec.first_token_s = s4u::Engine::get_clock();
    rec.prefill_s = rec.first_token_s - rec.start_s;

    const bool contended = exec.overlapped();
    const int trace_steps = p_.options.trace_steps;
    double credit = 0;  // exchange time this slot has simulated already
    while (!runner.done()) {
      const int tokens = 1 + runner.next_drafts();  // the step's verified positions
      if (exec.expert_split()) runner.set_exchange(exec.exchange_times(tokens, credit));
      const bool keep = contended || out.decode_steps < trace_steps;
      const std::int64_t kv_tokens = attended_tokens(s.model, rec.prompt_tokens + runner.generated());  // KV positions a layer reads
      StepResult step = runner.step(keep);
      double t0 = s4u::Engine::get_clock();
      double linked = 0;  // hand-offs or all-reduces beyond the cards' work
      if (exec.expert_split())
        exec.run_expert_step(step.costs, step.stage_costs, step.exchanges, step.exchange_s, tokens,
                             out.decode_steps < trace_steps, credit);
      else if (exec.staged())
        linked = exec.run_split_step(step.stage_costs, tokens, out.decode_steps < trace_steps);
      else if (contended) {
        exec.run_step_contended(step, kv_tokens);
        out.contended_step_s += s4u::Engine::get_clock() - t0;
        ++out.contended_steps;
      } else
        t0 = exec.run_whole_step(step.costs.total());
      out.decode += step.costs;
      out.decode.transfer += linked;
      recorder.account_gpu(step.costs, exec.staged(), contended);
      // Overlapped slots' steps run at once: each slot's uncontended layout on tracks of its own.
      if (!exec.staged() && out.decode_steps < trace_steps)
        recorder.trace_step(t0, step, exec.model().step_fixed(0, step.drafts),
                            contended ? " (" + s4u::this_actor::get_name() + ")" : std::string());
      ++out.decode_steps;
    }
    recorder.complete(job, rec, runner, prefilled, s4u::Engine::get_clock());
  }

  EngineParts p_;
};

}  // namespace

std::unique_ptr<Scheduler> make_slot_scheduler(const EngineParts& parts) { return std::make_unique<SlotScheduler>(parts); }

}  // namespace vramsim::sim
