#include "driver/progress.h"

#include <unistd.h>

#include <cstdio>

namespace dtsim::driver {
namespace {

void write_stderr(const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t w = ::write(STDERR_FILENO, p, left);
    if (w <= 0) return;  // progress is best effort: a closed stderr must not fail the run
    p += w;
    left -= static_cast<size_t>(w);
  }
}

std::string elapsed_text(std::chrono::steady_clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f s",
                std::chrono::duration_cast<std::chrono::duration<double>>(d).count());
  return buf;
}

}  // namespace

Progress::Progress(std::chrono::milliseconds quiet_for)
    : start_(std::chrono::steady_clock::now()),
      quiet_for_(quiet_for),
      terminal_(::isatty(STDERR_FILENO) == 1) {
  reporter_ = std::thread([this] { report(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  reporter_.join();
}

void Progress::phase(std::string what) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    phase_ = std::move(what);
    phase_changed_ = true;
  }
  wake_.notify_all();
}

void Progress::report() {
  using std::chrono::steady_clock;
  const auto heartbeat = terminal_ ? std::chrono::seconds(1) : std::chrono::seconds(10);
  std::unique_lock<std::mutex> lock(mutex_);
  // Silent while the run is young.
  if (wake_.wait_until(lock, start_ + quiet_for_, [this] { return done_; })) return;
  bool printed_any = false;
  auto next_beat = steady_clock::now();
  for (;;) {
    const auto now = steady_clock::now();
    if (phase_changed_ || now >= next_beat) {
      const std::string line = "dtsim: " + phase_ + " (" + elapsed_text(now - start_) + ")";
      if (terminal_)
        write_stderr("\r\033[K" + line);
      else if (phase_changed_ || !printed_any || now >= next_beat)
        write_stderr(line + "\n");
      printed_any = true;
      phase_changed_ = false;
      next_beat = now + heartbeat;
    }
    if (wake_.wait_until(lock, next_beat, [this] { return done_ || phase_changed_; }) && done_)
      break;
  }
  if (terminal_ && printed_any) write_stderr("\r\033[K");  // leave the terminal clean
}

}  // namespace dtsim::driver
