// Running another program as a child process and capturing what it prints. Used to run one
// simulation per process (SimGrid allows one engine per process: `vramsim validate`,
// `vramsim sweep`) and to call helper programs (gnuplot for the report's charts).
#pragma once

#include <string>
#include <vector>

namespace vramsim::proc {

struct ProcessResult {
  int exit_code = -1;      // the child's exit status; 128 + N when killed by signal N
  std::string out;         // everything it wrote on stdout
  std::string err;         // everything it wrote on stderr
  double wall_s = 0;       // from spawn to exit, seconds
};

// Runs argv[0] (searched on PATH when it has no '/') with the arguments argv[1..], no shell in
// between, stdin from /dev/null. Blocks until the child exits. The child dies with this process
// (PR_SET_PDEATHSIG: SIGKILL when the thread that started it ends, which happens only once the
// child has exited or the whole process dies, by kill -9 or the OOM killer included). Throws
// std::runtime_error when the program cannot be started (so "not installed" is an error the
// caller sees, not an exit status). Thread-safe: many threads may run children at once.
ProcessResult run(const std::vector<std::string>& argv);

// Installs handlers so that SIGTERM, SIGINT or SIGHUP sent to this process reach the children
// that run() has running, then end it as the signal would (a `kill` or a batch scheduler's
// time limit stops a sweep's simulations with it, rather than leaving them running orphaned).
void forward_termination_signals();

// The path of the running executable (/proc/self/exe), to start another copy of it.
std::string self_executable();

// Whether `program` is found on PATH (or is an executable path).
bool on_path(const std::string& program);

}  // namespace vramsim::proc
