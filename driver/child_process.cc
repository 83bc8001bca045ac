#include "driver/child_process.h"

#include <algorithm>
#include <csignal>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "core/base/error.h"

namespace dtsim::driver {
namespace {

using Clock = std::chrono::steady_clock;

// Process groups of running children, for the signal handler: a fixed table of atomics, since a
// handler may neither lock nor allocate. 0 marks a free slot.
constexpr int kMaxTracked = 4096;
std::atomic<pid_t> g_tracked[kMaxTracked];

void track(pid_t pgid) {
  for (auto& slot : g_tracked) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pgid)) return;
  }
}

void untrack(pid_t pgid) {
  for (auto& slot : g_tracked) {
    pid_t expected = pgid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void set_cloexec_nonblock(int fd) {
  fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC);
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

struct ChildPool::Child {
  std::size_t id = 0;
  pid_t pid = -1;
  int out_fd = -1, err_fd = -1, exec_fd = -1;  // exec_fd: carries errno when exec fails
  Clock::time_point started;
  double timeout_s = 0;
  bool timed_out = false, cancelled = false;
  ChildOutcome outcome;
  std::string exec_errno;

  bool pipes_open() const { return out_fd >= 0 || err_fd >= 0 || exec_fd >= 0; }
};

ChildPool::ChildPool(int max_parallel) : max_parallel_(max_parallel < 1 ? 1 : max_parallel) {}

ChildPool::~ChildPool() {
  cancel_all();
}

void ChildPool::start(std::size_t id, const ChildSpec& spec) {
  if (spec.argv.empty()) throw std::logic_error("ChildPool::start: empty argv");
  auto* child = new Child;
  child->id = id;
  child->timeout_s = spec.timeout_s;
  int out[2], err[2], exec_pipe[2];
  if (pipe(out) != 0 || pipe(err) != 0 || pipe(exec_pipe) != 0) {
    child->outcome.status = ChildOutcome::Status::kNotStarted;
    child->outcome.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    children_.push_back(child);
    return;
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  child->started = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    // The child: its own process group, killed if the parent dies, stdout/stderr to the pipes.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]);
    close(err[0]);
    close(exec_pipe[0]);
    fcntl(exec_pipe[1], F_SETFD, FD_CLOEXEC);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    execv(argv[0], argv.data());
    const int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  close(exec_pipe[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    close(exec_pipe[0]);
    child->outcome.status = ChildOutcome::Status::kNotStarted;
    child->outcome.error = std::string("cannot start a process: ") + std::strerror(errno);
    children_.push_back(child);
    return;
  }
  setpgid(pid, pid);  // also here, so the group exists before either side goes on
  track(pid);
  child->pid = pid;
  child->out_fd = out[0];
  child->err_fd = err[0];
  child->exec_fd = exec_pipe[0];
  set_cloexec_nonblock(child->out_fd);
  set_cloexec_nonblock(child->err_fd);
  set_cloexec_nonblock(child->exec_fd);
  children_.push_back(child);
}

namespace {

// Reads what is available; closes the descriptor at end of file.
void drain(int& fd, std::string& into) {
  if (fd < 0) return;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      const size_t room = into.size() < kMaxCapturedBytes ? kMaxCapturedBytes - into.size() : 0;
      into.append(buffer, std::min(room, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    close(fd);
    fd = -1;
    return;
  }
}

void kill_group(pid_t pgid) {
  if (pgid > 0) kill(-pgid, SIGKILL);
}

}  // namespace

std::vector<std::pair<std::size_t, ChildOutcome>> ChildPool::wait(double max_wait_s) {
  std::vector<std::pair<std::size_t, ChildOutcome>> ended;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(max_wait_s));
  for (;;) {
    // Children that could not start end at once.
    for (size_t i = 0; i < children_.size();) {
      Child* c = children_[i];
      if (c->pid < 0) {
        ended.emplace_back(c->id, std::move(c->outcome));
        delete c;
        children_.erase(children_.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
    // Timeouts.
    for (Child* c : children_)
      if (!c->timed_out && c->timeout_s > 0 && seconds_since(c->started) > c->timeout_s) {
        c->timed_out = true;
        kill_group(c->pid);
      }
    // Read output; a child whose pipes are all closed has ended (or closed them itself: then
    // waitpid below blocks only until it exits, which it is about to).
    std::vector<pollfd> fds;
    for (Child* c : children_)
      for (int fd : {c->out_fd, c->err_fd, c->exec_fd})
        if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    double wait_ms = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    // Wake at least every 100 ms for timeouts.
    int timeout_ms = static_cast<int>(std::max(0.0, std::min(wait_ms, 100.0)));
    if (!ended.empty()) timeout_ms = 0;
    if (!fds.empty()) poll(fds.data(), fds.size(), timeout_ms);
    for (Child* c : children_) {
      drain(c->out_fd, c->outcome.out);
      drain(c->err_fd, c->outcome.err);
      if (c->exec_fd >= 0) drain(c->exec_fd, c->exec_errno);
    }
    // Reap the children that have exited.
    for (size_t i = 0; i < children_.size();) {
      Child* c = children_[i];
      int status = 0;
      const pid_t r = waitpid(c->pid, &status, c->pipes_open() ? WNOHANG : 0);
      if (r != c->pid) {
        ++i;
        continue;
      }
      // Whatever the child wrote before it ended.
      if (c->out_fd >= 0) fcntl(c->out_fd, F_SETFL, fcntl(c->out_fd, F_GETFL) & ~O_NONBLOCK);
      if (c->err_fd >= 0) fcntl(c->err_fd, F_SETFL, fcntl(c->err_fd, F_GETFL) & ~O_NONBLOCK);
      // The group may still hold a grandchild holding the pipes: end it before reading to EOF.
      kill_group(c->pid);
      while (c->out_fd >= 0) drain(c->out_fd, c->outcome.out);
      while (c->err_fd >= 0) drain(c->err_fd, c->outcome.err);
      if (c->exec_fd >= 0) {
        fcntl(c->exec_fd, F_SETFL, fcntl(c->exec_fd, F_GETFL) & ~O_NONBLOCK);
        while (c->exec_fd >= 0) drain(c->exec_fd, c->exec_errno);
      }
      untrack(c->pid);
      ChildOutcome& o = c->outcome;
      o.wall_s = seconds_since(c->started);
      if (c->exec_errno.size() >= sizeof(int)) {
        int e = 0;
        std::memcpy(&e, c->exec_errno.data(), sizeof e);
        o.status = ChildOutcome::Status::kNotStarted;
        o.error = "cannot run the program: " + std::string(std::strerror(e));
      } else if (c->cancelled) {
        o.status = ChildOutcome::Status::kCancelled;
      } else if (c->timed_out) {
        o.status = ChildOutcome::Status::kTimedOut;
      } else if (WIFEXITED(status)) {
        o.status = ChildOutcome::Status::kExited;
        o.exit_code = WEXITSTATUS(status);
      } else {
        o.status = ChildOutcome::Status::kSignalled;
        o.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      }
      if (o.out.size() >= kMaxCapturedBytes) o.out += "\n[output cut at 64 MiB]\n";
      if (o.err.size() >= kMaxCapturedBytes) o.err += "\n[output cut at 64 MiB]\n";
      ended.emplace_back(c->id, std::move(o));
      delete c;
      children_.erase(children_.begin() + static_cast<long>(i));
    }
    if (!ended.empty() || children_.empty() || Clock::now() >= deadline) return ended;
  }
}

void ChildPool::cancel_all() {
  for (Child* c : children_) {
    c->cancelled = true;
    kill_group(c->pid);
  }
  while (!children_.empty()) wait(1.0);
}

std::string self_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    throw RuntimeError(std::string("cannot find the dtsim program: ") + std::strerror(errno));
  return std::string(path, static_cast<size_t>(n));
}

void kill_all_children_from_signal_handler() {
  for (auto& slot : g_tracked) {
    const pid_t pgid = slot.load();
    if (pgid > 0) kill(-pgid, SIGKILL);
  }
}

namespace {
constexpr int kInterruptSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// The farewell, double-buffered so that the handler never reads a half-written one: the
// writer fills the buffer not in use, then publishes it.
constexpr size_t kFarewellBytes = 1024;
char g_farewell[2][kFarewellBytes];
size_t g_farewell_size[2];
volatile std::sig_atomic_t g_farewell_index = -1;

void on_interrupt(int signal_number) {
  kill_all_children_from_signal_handler();
  if (const int i = g_farewell_index; i >= 0) {
    [[maybe_unused]] const ssize_t w = ::write(2, g_farewell[i], g_farewell_size[i]);
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}
}  // namespace

struct KillChildrenOnInterrupt::Saved {
  struct sigaction previous[3];
};

KillChildrenOnInterrupt::KillChildrenOnInterrupt() : saved_(new Saved{}) {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kInterruptSignals[i], &action, &saved_->previous[i]);
}

void KillChildrenOnInterrupt::set_farewell(const std::string& text) {
  const int next = g_farewell_index == 0 ? 1 : 0;
  const size_t n = std::min(text.size(), kFarewellBytes - 1);
  std::memcpy(g_farewell[next], text.data(), n);
  g_farewell_size[next] = n;
  g_farewell_index = next;
}

KillChildrenOnInterrupt::~KillChildrenOnInterrupt() {
  g_farewell_index = -1;
  for (int i = 0; i < 3; ++i) sigaction(kInterruptSignals[i], &saved_->previous[i], nullptr);
  delete saved_;
}

}  // namespace dtsim::driver
