#include "driver/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

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

std::string format_rate(double per_second) {
  char buf[32];
  std::snprintf(buf, sizeof buf, per_second >= 10 ? "%.0f" : "%.2f", per_second);
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

CountedProgress::CountedProgress(std::string label, std::size_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      terminal_(::isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_draw_(start_) {
  if (terminal_)
    draw();
  else
    write_stderr(label_ + " (" + std::to_string(total_) + " " + unit_ + ")\n");
}

CountedProgress::~CountedProgress() {
  if (terminal_ && bar_drawn_) write_stderr("\n");
}

std::string CountedProgress::duration_text(double seconds) {
  const long long t = std::llround(std::max(0.0, seconds));
  std::ostringstream o;
  if (t >= 3600) o << t / 3600 << " h ";
  if (t >= 60) o << (t / 60) % 60 << " min ";
  o << t % 60 << " s";
  return o.str();
}

std::string CountedProgress::eta_text(double rate) const {
  if (done_ >= total_) return "0 s";
  return rate > 0 ? duration_text(static_cast<double>(total_ - done_) / rate) : "?";
}

void CountedProgress::advance(std::size_t done, std::size_t failed, const std::string& detail) {
  done_ = done;
  failed_ = failed;
  const auto now = Clock::now();
  if (terminal_) {
    if (now - last_draw_ >= std::chrono::milliseconds(100) || done_ >= total_) draw();
    return;
  }
  if (detail.empty() && now - last_draw_ < std::chrono::seconds(5) && done_ < total_) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  std::ostringstream s;
  s << label_ << ": " << done_ << "/" << total_ << " (" << format_rate(rate) << " " << unit_
    << "/s, ETA " << eta_text(rate);
  if (detail.empty()) s << ", " << duration_text(elapsed) << " so far";
  s << ")";
  if (failed_) s << ", " << failed_ << " failed";
  if (!detail.empty()) s << ": " << detail;
  write_stderr(s.str() + "\n");
}

void CountedProgress::message(const std::string& text) {
  if (terminal_ && bar_drawn_) write_stderr("\r\033[K");
  write_stderr(text);
  if (terminal_ && bar_drawn_) draw();
}

void CountedProgress::draw() {
  const auto now = Clock::now();
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_) / elapsed : 0;
  constexpr std::size_t width = 30;
  const std::size_t filled = total_ ? std::min(width, width * done_ / total_) : width;
  std::ostringstream s;
  s << "\r" << label_ << " [" << std::string(filled, '#') << std::string(width - filled, '.')
    << "] " << done_ << "/" << total_ << "  " << format_rate(rate) << " " << unit_ << "/s  ETA "
    << eta_text(rate);
  if (failed_) s << "  (" << failed_ << " failed)";
  s << "\033[K";
  write_stderr(s.str());
  bar_drawn_ = true;
}

}  // namespace dtsim::driver
