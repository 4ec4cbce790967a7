#include "core/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
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

// A child between fork and register_child is not in the table yet: while one is, the
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


// The program's path: argv0 itself when it has a '/', else the first executable on PATH.
std::string find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= dirs.size()) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = end > start ? dirs.substr(start, end - start) : std::string(".");
    candidate.append(1, '/').append(program);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return program;
}

// Whether `program` runs: an executable path, or a name found on PATH.
bool on_path(const std::string& program) {
  const std::string path = find_program(program);
  return (path != program || program.find('/') != std::string::npos) && ::access(path.c_str(), X_OK) == 0;
}

// In the child between fork() and exec: async-signal-safe calls only. The child is killed
// (SIGKILL) when the thread that started it ends, which run() does only after the child's exit
// or with the whole process (kill -9 of a sweep, the OOM killer): no child outlives its parent.
[[noreturn]] void child_failed(int report_fd, int err) {
  (void)!::write(report_fd, &err, sizeof err);
  ::_exit(127);
}

[[noreturn]] void exec_child(const char* program, char* const* args, int out_fd, int err_fd, int report_fd,
                             pid_t parent, const sigset_t& mask) {
  auto fail = [report_fd](int err) { child_failed(report_fd, err); };
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  if (::getppid() != parent) ::_exit(128 + SIGKILL);  // the parent died before the line above
  for (const int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0) fail(errno);
  if (::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(out_fd, STDOUT_FILENO) < 0 || ::dup2(err_fd, STDERR_FILENO) < 0)
    fail(errno);
  ::sigprocmask(SIG_SETMASK, &mask, nullptr);
  ::execve(program, args, environ);
  child_failed(report_fd, errno);
}

ProcessResult run(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("proc::run: empty argv");
  if (!on_path(argv[0])) throw std::runtime_error("cannot run \"" + argv[0] + "\": not found");
  const std::string program = find_program(argv[0]);
  Pipe out, err, report;  // report: the child's errno when exec fails (closed by a successful exec)
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  // Signals are held from fork() until the child is registered (the termination handler must
  // not run in the child, nor miss it in the parent); the child restores the mask before exec.
  sigset_t all, before;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  g_spawning.fetch_add(1);
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(program.c_str(), args.data(), out.fd[1], err.fd[1], report.fd[1], parent, before);
  const int fork_errno = errno;
  if (pid > 0) register_child(pid);
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (g_spawning.fetch_sub(1) == 1)
    if (const int sig = g_terminating.load()) die_of(sig);  // a termination arrived meanwhile
  if (pid < 0) throw std::runtime_error("cannot run \"" + argv[0] + "\": " + std::strerror(fork_errno));
  report.close_end(1);
  int exec_errno = 0;
  ssize_t got = 0;
  do got = ::read(report.fd[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    int status = 0;
    unregister_child(pid);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("cannot run \"" + argv[0] + "\": " + std::strerror(exec_errno));
  }
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
