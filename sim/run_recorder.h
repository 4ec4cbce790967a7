// The one place a run's results are written: request records and their samples, rejections,
// the cards' use, the GPU's resident time, the timeline trace and the queue's length. The
// schedulers and the step executor say what happened; RunRecorder turns it into RunResult.
// Not thread-safe: SimGrid actors run one at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine.h"
#include "sim/queue_meter.h"
#include "sim/request_runner.h"

namespace vramsim::sim {

struct Job;
class Fabric;
struct PlatformSpec;

class RunRecorder {
 public:
  // REQUIRES: out.cards holds every card's plan (card_use is sized from it).
  RunRecorder(const Scenario& scenario, const RunOptions& options, RunResult& out);

  RunResult& out() { return out_; }
  const RunResult& out() const { return out_; }

  // `n` more SimGrid activities (execs, comms, sleeps, mailbox hand-overs).
  void activities(std::int64_t n = 1) { out_.simgrid_activities += n; }

  // A closed-loop client (or -1: open loop) sends a request at `now_s` (simulated seconds).
  void sent(int client, double now_s);
  // A request turned away at arrival; `reason` is a rejected_by_reason key.
  void rejected(const RejectedRequest& request);
  // A request taken by the engine at `now_s`: its record. `prefix_cached`: its shared prefix is
  // in the engine's prompt cache, so "N reused + M read" (the prompt's last token is always
  // prefilled); the runner is told what it reuses.
  RequestRecord start(const Job& job, RequestRunner& runner, bool prefix_cached, double now_s);
  // A request's last token at `now_s`: fills `rec` from the runner's counters, adds its sample.
  void complete(const Job& job, RequestRecord& rec, const RequestRunner& runner, std::int64_t prefilled, double now_s);

  // Overlapped slots: a slot's kernel becomes resident / leaves at `now_s`; the GPU's resident
  // time is the union of the slots' spans, not their sum.
  void kernel_on(double now_s);
  void kernel_off(double now_s);
  // A step's or prefill's costs on one card (`staged`: several stages share the step, each
  // booked with use_card). `resident_measured`: its resident time was counted by kernel_on/off.
  void account_gpu(const StepCosts& costs, bool staged, bool resident_measured = false);
  // Card `card` ran `costs`. Throws std::logic_error for a card index past the cards.
  void use_card(int card, const StepCosts& costs, bool resident_measured = false);

  // A timeline event (seconds of simulated time).
  void trace(std::string name, std::string track, double start_s, double duration_s);
  // The step's layout from `t0` on the host, GPU, stall and PCIe tracks (each name + `suffix`);
  // `fixed`: the step's fixed costs (StepModel::step_fixed).
  void trace_step(double t0, const StepResult& step, const StepCosts& fixed, const std::string& suffix = "");

  QueueMeter& queue_meter() { return queue_meter_; }

  // The run ended at `makespan_s`: the queue's record, the clients' rates and each link's
  // traffic (the expert path's bytes plus what the fabric carried).
  void finish(double makespan_s, const PlatformSpec& spec, const Fabric& fabric);

 private:
  void progress() const;

  const Scenario& s_;
  const RunOptions& options_;
  RunResult& out_;
  QueueMeter queue_meter_;
  std::vector<double> link_bytes_;  // per card host link: expert-path bytes
  int resident_slots_ = 0;          // overlapped slots with a kernel resident now
  double resident_since_ = 0;       // when the first of them became resident
  struct ClientUse {
    std::int64_t tokens = 0;
    double first_send = -1;
    double last_end = 0;
  };
  std::vector<ClientUse> client_use_;  // closed loop: per client
};

}  // namespace vramsim::sim
