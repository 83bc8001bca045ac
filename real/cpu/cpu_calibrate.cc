// `dtsim calibrate --cpu`: microbenchmarks of exactly the code the CPU back end runs
// (real/cpu/kernels.h and the MPI calls of cpu_executor.cc), written as a hardware profile
// (core/hardware/profile.h) for the CPU-core device.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <thread>

#include "core/base/error.h"
#include "core/base/text.h"
#include "real/cpu/cpu_backend.h"
#include "real/cpu/kernels.h"
#include "real/cpu/mpi_support.h"

namespace dtsim::real::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "unknown";
}

// The best of `repeats` timings of `f`, each repeated until it takes at least `min_s`: the
// least-disturbed run, as microbenchmarks report (nccl-tests and STREAM take the best too).
template <class F>
double best_time(F&& f, int repeats, double min_s) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    long n = 0;
    const auto t0 = Clock::now();
    double t = 0;
    do {
      f();
      ++n;
      t = seconds_since(t0);
    } while (t < min_s);
    best = std::min(best, t / n);
  }
  return best;
}

void barrier(MpiChannel& ch) {
  ch.barrier();
}

// One non-blocking MPI call completed the way the executor completes it.
void complete(MPI_Request& r, const std::string& what, const MpiChannel& ch) {
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  if (!wait_request(r, nullptr, deadline))
    throw RuntimeError(describe(ch.launch()) + ": " + what + " did not complete within 120 s");
}

// What the profile says of the machine and the software that measured it.
void describe_machine(HardwareProfile& p, const MpiChannel& ch, const LaunchInfo& launch,
                      const CalibrateOptions& options) {
  p.kind = "cpu";
  p.gpu_model = options.gpu_model.empty() ? "CPU-core" : options.gpu_model;
  p.created = utc_timestamp();
  p.command = options.command;
  p.machine["host"] = launch.host;
  p.machine["cpu"] = cpu_model();
  p.machine["cores"] = std::to_string(std::thread::hardware_concurrency());
  p.machine["ranks"] = std::to_string(ch.world());
  p.machine["note"] =
      "every rank ran the benchmarks at once, one rank per core, as dtsim real runs them";
  p.software["dtsim"] = "0.1.0";
  p.software["eigen"] = std::to_string(EIGEN_WORLD_VERSION) + "." +
                        std::to_string(EIGEN_MAJOR_VERSION) + "." +
                        std::to_string(EIGEN_MINOR_VERSION);
  {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(version, &len);
    std::string v(version, static_cast<size_t>(len));
    p.software["mpi"] = v.substr(0, v.find_first_of(",\n"));
  }
  p.software["compiler"] = __VERSION__;
}

// GEMMs over a full grid of shapes, fp32 (the CPU back end computes every dtype in fp32).
void measure_gemms(HardwareProfile& p, CpuKernels& kernels, const std::vector<int>& sizes,
                   double min_s) {
  // In a step a GEMM follows other kernels, which have moved its operands out of the core's
  // caches; back-to-back repetitions would find them there. So each timed GEMM follows a
  // streaming pass over 4 MiB (beyond a core's L2), and only the GEMM is timed: a window is at
  // least `min_s` of GEMM time (at most 64 GEMMs). A shape's figure is its least disturbed window
  // of `gemm_passes` passes over the whole grid: on a shared VM a disturbance lasts tens to
  // hundreds of milliseconds, which would spoil every window of one shape if they ran back to
  // back (bench/results/real-mode-cpu.md: one shape at 20 GFLOP/s among its neighbours' 36).
  CpuKernels flush;
  const double flush_bytes = 6.0 * 1024 * 1024;  // the loop touches 2/3 of its bytes: 4 MiB
  const int gemm_passes = 5;
  struct Shape {
    int m, n, k;
    double best_s;
  };
  std::vector<Shape> grid;
  for (int m : sizes)
    for (int n : sizes)
      for (int k : sizes) grid.push_back(Shape{m, n, k, 1e300});
  for (int pass = 0; pass < gemm_passes; ++pass)
    for (Shape& s : grid) {
      double gemm_time = 0;
      int count = 0;
      do {
        flush.stream_seconds(flush_bytes);
        gemm_time += kernels.gemm_seconds(s.m, s.n, s.k, 1);
        ++count;
      } while (gemm_time < min_s && count < 64);
      s.best_s = std::min(s.best_s, gemm_time / count);
    }
  for (const Shape& s : grid)
    p.gemm.push_back(GemmSample{DType::kFp32, double(s.m), double(s.n), double(s.k),
                                FlopsPerSecond(2.0 * s.m * s.n * s.k / s.best_s)});
}

// Point to point between ranks 0 and 1 (half a ping-pong round trip) and an all-reduce sweep
// over every rank; the intra-node figures the simulators use.
void measure_network(HardwareProfile& p, MpiChannel& channel, int repeats,
                     const std::function<void(const std::string&)>& phase) {
  MpiChannel* const ch = &channel;
  const int world = ch->world();
  MPI_Comm comm = ch->world_comm();
  const int me = ch->rank();
  std::vector<uint8_t> send(64u << 20, 1), recv(64u << 20, 0);
  // Point to point between ranks 0 and 1: half a ping-pong round trip.
  phase("point-to-point latency and bandwidth (MPI, ranks 0 and 1)");
  barrier(*ch);
  for (double size = 8; size <= 64.0 * 1024 * 1024; size *= 8) {
    const int count = static_cast<int>(size);
    const auto pingpong = [&] {
      if (me > 1) return;
      MPI_Request r;
      const int peer = 1 - me;
      for (int leg = 0; leg < 2; ++leg) {
        const bool sending = (leg == 0) == (me == 0);
        {
          std::lock_guard lock(mpi_mutex());
          if (sending)
            MPI_Isend(send.data(), count, MPI_BYTE, peer, 3, comm, &r);
          else
            MPI_Irecv(recv.data(), count, MPI_BYTE, peer, 3, comm, &r);
        }
        complete(r, "the ping-pong", *ch);
      }
    };
    // A fixed number of round trips (both ranks must agree on it), best of the repeats.
    const int trips = size <= 65536 ? 200 : 5;
    double best = 1e300;
    for (int rep = 0; rep < repeats; ++rep) {
      barrier(*ch);
      const auto t0 = Clock::now();
      for (int i = 0; i < trips; ++i) pingpong();
      best = std::min(best, seconds_since(t0) / trips / 2);
    }
    p.p2p.push_back(P2pSample{Bytes(size), Seconds(best), BytesPerSecond(size / best)});
  }
  p.intra_node_latency = p.p2p.front().time;

  // All-reduce over every rank, fp32, nccl-tests' busbw.
  phase("all-reduce sweep (MPI)");
  for (double size = 1024; size <= 64.0 * 1024 * 1024; size *= 8) {
    const int count = static_cast<int>(size / 4);
    const int trips = size <= 1 << 20 ? 50 : 5;
    double best = 1e300;
    for (int rep = 0; rep < repeats; ++rep) {
      barrier(*ch);
      const auto t0 = Clock::now();
      for (int i = 0; i < trips; ++i) {
        MPI_Request r;
        {
          std::lock_guard lock(mpi_mutex());
          MPI_Iallreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, comm, &r);
        }
        complete(r, "the all-reduce", *ch);
      }
      best = std::min(best, seconds_since(t0) / trips);
    }
    const double busbw = size / best * 2.0 * (world - 1) / world;
    p.collectives.push_back(
        CollectiveSample{"all-reduce", world, Bytes(size), Seconds(best), BytesPerSecond(busbw)});
  }
  // The intra-node bandwidth the simulators' collectives use: the bus bandwidth of the largest
  // all-reduce (nccl-tests' busbw is the link rate a ring all-reduce needs to take the measured
  // time), not the point-to-point rate, which MPI's reduction and its copies never reach.
  p.intra_node_bandwidth = p.collectives.back().busbw;
}

}  // namespace

HardwareProfile calibrate(Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options) {
  auto* ch = dynamic_cast<MpiChannel*>(&channel);
  if (!ch) throw RuntimeError("the CPU calibration needs the MPI channel");
  const auto phase = [&](const std::string& what) {
    if (options.phase && ch->rank() == 0) options.phase(what);
  };
  HardwareProfile p;
  describe_machine(p, *ch, launch, options);

  // The CPU back end runs attention ops as GEMMs of their shape (real/cpu/kernels.h), so their
  // rate is the GEMM table's.
  p.attention_factor = 1.0;

  CpuKernels kernels;
  const int repeats = 3;
  const double min_s = options.quick ? 0.02 : 0.05;

  phase("GEMM throughput (Eigen fp32)");
  const std::vector<int> sizes = options.quick ? std::vector<int>{64, 256, 1024}
                                               : std::vector<int>{64, 128, 256, 512, 1024, 2048};
  barrier(*ch);
  measure_gemms(p, kernels, sizes, min_s);
  // Streaming bandwidth: the executor's elementwise loop over 64 MiB, beyond the caches.
  phase("memory bandwidth (streaming loop)");
  barrier(*ch);
  {
    const double bytes = 64.0 * 1024 * 1024;
    const double t = best_time([&] { kernels.stream_seconds(bytes); }, repeats, min_s * 3);
    p.memory_bandwidth = BytesPerSecond(bytes / t);
  }

  // Launch overhead: an op that does no work, as the executor runs it (two clock reads and a
  // kernel call that returns at once).
  phase("per-op overhead");
  {
    const ComputeOp empty{KernelKind::kElementwise, Flops(0), Bytes(0), DType::kFp32, {}};
    const double t = best_time(
        [&] {
          const auto a = Clock::now();
          kernels.run(empty, 1.0);
          const auto b = Clock::now();
          asm volatile("" : : "r"(&a), "r"(&b) : "memory");
        },
        repeats, min_s);
    p.kernel_launch_overhead = Seconds(t);
  }

  if (ch->world() > 1) measure_network(p, *ch, repeats, phase);
  barrier(*ch);
  return p;
}

}  // namespace dtsim::real::cpu
