// How an engine's slots take requests and run their steps: one interface, one implementation
// per file, chosen by engine.slot_scheduling in make_scheduler (scheduler.cc).
//   serial, overlapped -> SlotScheduler (slot_scheduler.cc): engine.parallel slots, each serving
//                         one request at a time (taking turns, or overlapping on the card)
//   batched            -> BatchScheduler (batch_scheduler.cc): continuous batching, one loop
//                         stepping every running request together, over a paged KV pool
#pragma once

#include <memory>

#include "sim/engine.h"
#include "sim/request_queue.h"
#include "sim/run_recorder.h"
#include "sim/step_executor.h"

namespace vramsim::sim {

// What a scheduler works with; all outlive it.
struct EngineParts {
  const Scenario& scenario;
  const RunOptions& options;
  RunRecorder& recorder;
  RequestQueue& queue;
  StepExecutor& executor;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // Creates the scheduler's actors on the first card's host (daemons: they end with the run).
  // REQUIRES: the executor's platform is built.
  virtual void start() = 0;
};

std::unique_ptr<Scheduler> make_slot_scheduler(const EngineParts& parts);
std::unique_ptr<Scheduler> make_batch_scheduler(const EngineParts& parts);
// The scheduler engine.slot_scheduling names.
std::unique_ptr<Scheduler> make_scheduler(const EngineParts& parts);

}  // namespace vramsim::sim
