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

}  // namespace dtsim::driver
