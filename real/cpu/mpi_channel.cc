#include <limits>
#include <thread>

#include "core/base/error.h"
#include "real/cpu/cpu_backend.h"
#include "real/cpu/mpi_support.h"

namespace dtsim::real::cpu {

std::mutex& mpi_mutex() {
  static std::mutex m;
  return m;
}

void check_mpi(int rc, const std::string& call, const std::string& context) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeError(context + ": " + call + " failed: " + std::string(text, len));
}

bool wait_request(MPI_Request& request, const std::atomic<bool>* stop,
                  std::chrono::steady_clock::time_point deadline) {
  // Spin briefly (small messages finish in microseconds), then sleep between polls, doubling the
  // sleep from 20 us to 1 ms: a receive posted long before its message then costs its core about
  // a thousand polls a second (each one a wake-up that would preempt the compute thread on the
  // same core), and a completion is seen at most 1 ms late.
  auto sleep = std::chrono::microseconds(20);
  for (int spin = 0;; ++spin) {
    int done = 0;
    {
      std::lock_guard lock(mpi_mutex());
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    if (done) return true;
    if (stop && stop->load(std::memory_order_relaxed)) return false;
    if (std::chrono::steady_clock::now() > deadline) return false;
    if (spin > 64) {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
    }
  }
}

MpiChannel::MpiChannel(const LaunchInfo& launch, Seconds timeout)
    : launch_(launch), timeout_(timeout) {
  std::lock_guard lock(mpi_mutex());
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
              "MPI_Init_thread", describe(launch));
    if (provided < MPI_THREAD_SERIALIZED)
      throw RuntimeError(describe(launch) +
                         ": the MPI library does not support MPI_THREAD_SERIALIZED, which the "
                         "CPU back end needs (its streams are threads)");
  }
  // Errors come back as codes, so that a failure names the op instead of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &world_);
  if (launch.mpi && (rank_ != launch.rank || world_ != launch.world))
    throw RuntimeError(describe(launch) + ": MPI reports rank " + std::to_string(rank_) + " of " +
                       std::to_string(world_) + ", which disagrees with the launcher's variables");
  MPI_Comm_dup(MPI_COMM_WORLD, &control_);
  MPI_Comm_dup(MPI_COMM_WORLD, &world_comm_);
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(world_comm_, MPI_ERRORS_RETURN);
  launch_.rank = rank_;
  launch_.world = world_;
}

MpiChannel::~MpiChannel() {
  std::lock_guard lock(mpi_mutex());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  MPI_Comm_free(&control_);
  MPI_Comm_free(&world_comm_);
  MPI_Finalize();
}

void MpiChannel::wait(MPI_Request& r, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_.value()));
  if (!wait_request(r, nullptr, deadline))
    throw RuntimeError(describe(launch_) + ": " + what + " did not complete within " +
                       format_duration(timeout_) +
                       ": another rank stopped or never reached it (raise --timeout if it is "
                       "only slow)");
}

std::vector<uint8_t> MpiChannel::broadcast(std::vector<uint8_t> bytes) {
  uint64_t size = bytes.size();
  MPI_Request r;
  {
    std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Ibcast(&size, 1, MPI_UINT64_T, 0, control_, &r), "MPI_Ibcast", describe(launch_));
  }
  wait(r, "the broadcast of the job's setup");
  bytes.resize(size);
  {
    std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Ibcast(bytes.data(), static_cast<int>(size), MPI_BYTE, 0, control_, &r),
              "MPI_Ibcast", describe(launch_));
  }
  wait(r, "the broadcast of the job's setup");
  return bytes;
}

std::vector<std::vector<uint8_t>> MpiChannel::gather(std::vector<uint8_t> mine) {
  const uint64_t size = mine.size();
  // One MPI message carries an int count of bytes: a trace beyond 2 GiB is refused, not cut.
  if (size > static_cast<uint64_t>(std::numeric_limits<int>::max()))
    throw RuntimeError(describe(launch_) + ": this rank's measured trace is " +
                       format_bytes(Bytes(static_cast<double>(size))) +
                       ", beyond the 2 GiB one MPI message carries; run fewer --iterations");
  std::vector<uint64_t> sizes(rank_ == 0 ? world_ : 0);
  MPI_Request r;
  {
    std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Igather(&size, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, 0, control_, &r),
              "MPI_Igather", describe(launch_));
  }
  wait(r, "gathering the measured traces");
  // Point-to-point, so that payloads beyond 2 GiB in all need no displacement arithmetic.
  std::vector<std::vector<uint8_t>> out;
  if (rank_ == 0) {
    out.resize(world_);
    out[0] = std::move(mine);
    for (int p = 1; p < world_; ++p) {
      out[p].resize(sizes[p]);
      {
        std::lock_guard lock(mpi_mutex());
        check_mpi(
            MPI_Irecv(out[p].data(), static_cast<int>(sizes[p]), MPI_BYTE, p, 7, control_, &r),
            "MPI_Irecv", describe(launch_));
      }
      wait(r, "receiving rank " + std::to_string(p) + "'s trace");
    }
  } else {
    {
      std::lock_guard lock(mpi_mutex());
      check_mpi(MPI_Isend(mine.data(), static_cast<int>(size), MPI_BYTE, 0, 7, control_, &r),
                "MPI_Isend", describe(launch_));
    }
    wait(r, "sending this rank's trace to rank 0");
  }
  return out;
}

void MpiChannel::barrier() {
  MPI_Request r;
  {
    std::lock_guard lock(mpi_mutex());
    check_mpi(MPI_Ibarrier(control_, &r), "MPI_Ibarrier", describe(launch_));
  }
  wait(r, "the barrier before the timed steps");
}

std::unique_ptr<Channel> make_mpi_channel(const LaunchInfo& launch, Seconds timeout) {
  return std::make_unique<MpiChannel>(launch, timeout);
}

}  // namespace dtsim::real::cpu
