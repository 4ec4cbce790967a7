#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

extern char** environ;

namespace vramsim::proc {
namespace {

// The children alive now, for the termination handler (lock-free: read in a signal handler).
// A slot holds a pid or 0; more children at once than slots go unforwarded, not unrun.
std::array<std::atomic<pid_t>, 4096> g_children{};

void register_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// A child between posix_spawn and register_child is not in the table yet: while one is, the
// handler leaves the ending to the spawning thread, which passes the signal on once its child
// is registered (`g_terminating`).
std::atomic<int> g_spawning{0};
std::atomic<int> g_terminating{0};

void die_of(int sig) {
  for (auto& slot : g_children)
    if (const pid_t pid = slot.load(std::memory_order_relaxed); pid > 0) ::kill(pid, sig);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// Async-signal-safe: atomics, kill(), signal() and raise() only.
extern "C" void forward_and_die(int sig) {
  g_terminating.store(sig);
  if (g_spawning.load() == 0) die_of(sig);
}

// Pipes are created close-on-exec so that a child started by another thread at the same time
// does not inherit (and hold open) this child's pipe ends.
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    close_end(0);
    close_end(1);
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the running executable (/proc/self/exe)");
  return p.string();
}

bool on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = end > start ? dirs.substr(start, end - start) : std::string(".");
    candidate.append(1, '/').append(program);
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

ProcessResult run(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("proc::run: empty argv");
  if (!on_path(argv[0])) throw std::runtime_error("cannot run \"" + argv[0] + "\": not found");
  Pipe out, err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  g_spawning.fetch_add(1);
  const int rc = ::posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) register_child(pid);
  if (g_spawning.fetch_sub(1) == 1)
    if (const int sig = g_terminating.load()) die_of(sig);  // a termination arrived meanwhile
  if (rc != 0) throw std::runtime_error("cannot run \"" + argv[0] + "\": " + std::strerror(rc));
  out.close_end(1);
  err.close_end(1);

  // Drain stdout and stderr together, so that the child never blocks on a full pipe.
  ProcessResult result;
  while (out.fd[0] >= 0 || err.fd[0] >= 0) {
    pollfd fds[2];
    int n = 0;
    if (out.fd[0] >= 0) fds[n++] = {out.fd[0], POLLIN, 0};
    if (err.fd[0] >= 0) fds[n++] = {err.fd[0], POLLIN, 0};
    if (::poll(fds, static_cast<nfds_t>(n), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      char buf[65536];
      const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      std::string& sink = fds[i].fd == out.fd[0] ? result.out : result.err;
      if (r > 0) {
        sink.append(buf, static_cast<std::size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        if (fds[i].fd == out.fd[0]) out.close_end(0); else err.close_end(0);
      }
    }
  }
  // Wait for the exit without reaping (the pid stays this child's), unregister, then reap: the
  // termination handler never signals a pid the system may have given to another process.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  unregister_child(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return result;
}

void forward_termination_signals() {
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, forward_and_die);
}

}  // namespace vramsim::proc
