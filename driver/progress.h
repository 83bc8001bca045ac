// Progress on stderr for runs long enough that a user would wonder whether dtsim hangs.
//
// Contract:
// - A Progress names the phase the run is in (phase()); nothing is printed for a run that ends
//   within `quiet_for` (2 s by default), so quick runs and tests stay silent.
// - After that, one line per phase and a heartbeat every few seconds with the elapsed time, on
//   stderr only: stdout carries results (JSON) and stays clean. On a terminal the heartbeat
//   rewrites one line; elsewhere (logs, CI) it prints a line every 10 s.
// - The reporter thread writes with write(2), never through stdio, so a fork in another thread
//   (the SimGrid child) can never inherit a stdio lock it holds.
// - Thread-safe: phase() may be called from any thread; the destructor joins the reporter.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace dtsim::driver {

class Progress {
 public:
  explicit Progress(std::chrono::milliseconds quiet_for = std::chrono::milliseconds(2000));
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // "building the Program of 1024 simulated ranks", "simulating 1.2 M ops with SimGrid".
  void phase(std::string what);

 private:
  void report();

  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds quiet_for_;
  bool terminal_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_;
  bool phase_changed_ = false;
  bool done_ = false;
  std::thread reporter_;
};

// Progress over a known number of items: the runs of a sweep, the configurations a plan ranks.
//
// Contract:
// - On a terminal: one bar, rewritten at most every 100 ms and at the last item,
//   "LABEL [#####.....] done/total  rate UNIT/s  ETA t  (n failed)".
// - Elsewhere (logs, CI): a line "LABEL (total UNIT)" at the start; then a line for each item
//   advanced with a detail (a sweep's run and its outcome), or, for items without one, a line
//   every 5 s and at the last item with the counts, rate, ETA and elapsed time.
// - stderr only, through write(2), best effort: a closed stderr never fails the run.
// - Not thread-safe: one thread drives it.
class CountedProgress {
 public:
  CountedProgress(std::string label, std::size_t total, std::string unit);
  ~CountedProgress();
  CountedProgress(const CountedProgress&) = delete;
  CountedProgress& operator=(const CountedProgress&) = delete;

  // `done` items of `total` finished, `failed` of them without a result.
  void advance(std::size_t done, std::size_t failed = 0, const std::string& detail = "");
  // A whole line of text (ends in a newline), printed below the bar.
  void message(const std::string& text);

  // "42 s", "3 min 5 s", "1 h 2 min 0 s".
  static std::string duration_text(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  void draw();
  std::string eta_text(double rate) const;

  std::string label_, unit_;
  std::size_t total_, done_ = 0, failed_ = 0;
  bool terminal_;
  bool bar_drawn_ = false;
  Clock::time_point start_, last_draw_;
};

}  // namespace dtsim::driver
