#include "reports/parallel_children.h"

#include <algorithm>

#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

namespace vramsim::reports {

void for_each_in_parallel(int jobs, std::size_t count, const std::function<void(std::size_t)>& each) {
  const int n = std::max(1, jobs);
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(n));
  tbb::task_arena arena(n);
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, count, 1),
        [&](const tbb::blocked_range<std::size_t>& range) {
          for (std::size_t i = range.begin(); i != range.end(); ++i) each(i);
        },
        tbb::simple_partitioner());
  });
}

}  // namespace vramsim::reports
