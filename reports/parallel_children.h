// Running independent jobs, each typically a child process (one simulation per process:
// SimGrid allows one engine per process), on a fixed number of threads.
#pragma once

#include <cstddef>
#include <functional>

namespace vramsim::reports {

// Calls each(i) for every i in [0, count) on up to `jobs` threads (at least 1), one index per
// task, and returns when all are done. The threads mostly wait for a child, so `jobs` may
// exceed the cores this process may run on: TBB would otherwise cap its workers at the CPU
// mask (under `taskset -c 0`, -j 2 would run one child at a time). `each` must be thread-safe;
// an exception it throws is rethrown here (indices not yet started may then not run).
void for_each_in_parallel(int jobs, std::size_t count, const std::function<void(std::size_t)>& each);

}  // namespace vramsim::reports
