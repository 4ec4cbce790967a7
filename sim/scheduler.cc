#include "sim/scheduler.h"

namespace vramsim::sim {

std::unique_ptr<Scheduler> make_scheduler(const EngineParts& parts) {
  switch (parts.scenario.engine.scheduling) {
    case SlotScheduling::Batched:
      return make_batch_scheduler(parts);
    case SlotScheduling::Serial:
    case SlotScheduling::Overlapped:
      return make_slot_scheduler(parts);
  }
  return make_slot_scheduler(parts);
}

}  // namespace vramsim::sim
