#include "real/cpu/watchdog.h"

#include <cstdio>
#include <cstring>

#include "core/base/text.h"

namespace dtsim::real::cpu {
namespace {

constexpr int kAlarmTag = 1, kStatusTag = 2;
constexpr size_t kStatusBytes = 2048;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string op_text(const Program& p, StreamId s, size_t i) {
  const Stream& stream = p.streams.at(static_cast<size_t>(s));
  const Op& op = stream.ops.at(i);
  std::string kind = "compute";
  if (const auto* c = std::get_if<CollectiveOp>(&op.body))
    kind = std::string(to_string(c->kind));
  else if (std::holds_alternative<SendOp>(op.body))
    kind = "send";
  else if (std::holds_alternative<RecvOp>(op.body))
    kind = "recv";
  else if (std::holds_alternative<MemoryOp>(op.body))
    kind = "memory";
  return kind + " '" + op.label.name + "' on stream " + stream.name;
}

bool waits_on_peer(const Program& p, StreamId s, size_t i) {
  const Op& op = p.streams.at(static_cast<size_t>(s)).ops.at(i);
  return !std::holds_alternative<ComputeOp>(op.body) && !std::holds_alternative<MemoryOp>(op.body);
}

}  // namespace

Watchdog::Watchdog(MpiChannel& channel, const Program& program, Seconds timeout)
    : channel_(channel), program_(program), timeout_(timeout) {
  {
    std::lock_guard lock(mpi_mutex());
    MPI_Comm_dup(channel.world_comm(), &comm_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  for (size_t s = 0; s < program.streams.size(); ++s)
    streams_.push_back(std::make_unique<Status>());
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  quit_ = true;
  thread_.join();
  std::lock_guard lock(mpi_mutex());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
}

void Watchdog::begin(StreamId stream, size_t op_index, int iteration) {
  Status& s = *streams_[static_cast<size_t>(stream)];
  s.op.store(op_index, std::memory_order_relaxed);
  s.iteration.store(iteration, std::memory_order_relaxed);
  s.started_ns.store(now_ns(), std::memory_order_release);
}

void Watchdog::end(StreamId stream) {
  streams_[static_cast<size_t>(stream)]->started_ns.store(-1, std::memory_order_release);
}

std::string Watchdog::status_text() const {
  // "1|stuck|rank 1 (host): compute 'x' on stream compute, iteration 0, for 5.1 s; ..."
  const LaunchInfo& l = channel_.launch();
  const int64_t now = now_ns();
  std::string text;
  bool in_compute = false;
  for (size_t s = 0; s < streams_.size(); ++s) {
    const int64_t t = streams_[s]->started_ns.load(std::memory_order_acquire);
    if (t < 0) continue;
    const size_t op = streams_[s]->op.load();
    if (!waits_on_peer(program_, static_cast<StreamId>(s), op)) in_compute = true;
    text += (text.empty() ? "" : "; ") + op_text(program_, static_cast<StreamId>(s), op) +
            " (iteration " + std::to_string(streams_[s]->iteration.load()) + ") for " +
            format_number("%.1f s", (now - t) * 1e-9);
  }
  if (text.empty()) text = "between ops";
  return std::string(in_compute ? "compute" : "waiting") + "|rank " + std::to_string(l.rank) +
         " (" + l.host + "): " + text;
}

void Watchdog::stop_job(const std::string& reason) {
  const int rank = channel_.rank(), world = channel_.world();
  std::string mine = status_text();
  mine.resize(std::min(mine.size(), kStatusBytes - 1));
  std::vector<MPI_Request> sent;
  {
    std::lock_guard lock(mpi_mutex());
    static int alarm = 1;
    for (int p = 0; p < world; ++p) {
      if (p == rank) continue;
      MPI_Request r;
      if (MPI_Isend(&alarm, 1, MPI_INT, p, kAlarmTag, comm_, &r) == MPI_SUCCESS) sent.push_back(r);
    }
    if (rank != 0) {
      MPI_Request r;
      if (MPI_Isend(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, 0, kStatusTag, comm_,
                    &r) == MPI_SUCCESS)
        sent.push_back(r);
    }
  }
  const auto deadline = [](double s) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(s));
  };
  if (rank == 0) {
    std::vector<std::string> status(world);
    status[0] = mine;
    std::vector<std::vector<char>> buffers(world, std::vector<char>(kStatusBytes));
    std::vector<MPI_Request> recv(world, MPI_REQUEST_NULL);
    {
      std::lock_guard lock(mpi_mutex());
      for (int p = 1; p < world; ++p)
        MPI_Irecv(buffers[p].data(), kStatusBytes, MPI_CHAR, p, kStatusTag, comm_, &recv[p]);
    }
    const auto until = deadline(3.0);
    for (int p = 1; p < world; ++p) {
      if (wait_request(recv[p], nullptr, until)) {
        status[p] = std::string(buffers[p].data(), strnlen(buffers[p].data(), kStatusBytes));
      }
    }
    std::string causes, waiting;
    std::fprintf(stderr, "error: dtsim real: the job is stopping: %s\n", reason.c_str());
    for (int p = 0; p < world; ++p) {
      const std::string& s = status[p];
      const size_t bar = s.find('|');
      if (s.empty() || bar == std::string::npos) {
        std::fprintf(stderr, "error:   rank %d: did not answer within 3 s (it exited or stopped)\n",
                     p);
        causes += (causes.empty() ? "" : ", ") + std::to_string(p);
        continue;
      }
      std::fprintf(stderr, "error:   %s\n", s.substr(bar + 1).c_str());
      (s.compare(0, bar, "compute") == 0 ? causes : waiting) +=
          (s.compare(0, bar, "compute") == 0 ? (causes.empty() ? "" : ", ")
                                             : (waiting.empty() ? "" : ", ")) +
          std::to_string(p);
    }
    if (!causes.empty())
      std::fprintf(stderr, "error: rank%s %s stopped making progress; %s\n",
                   causes.find(',') == std::string::npos ? "" : "s", causes.c_str(),
                   waiting.empty() ? "no rank is waiting on a peer"
                                   : ("ranks waiting for a peer: " + waiting).c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  // Rank 0 prints the diagnosis and ends the job; if it cannot, say what this rank knows.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  std::fprintf(stderr, "error: dtsim real: the job is stopping (%s); rank 0 did not end it: %s\n",
               reason.c_str(), mine.substr(mine.find('|') + 1).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

void Watchdog::loop() {
  int alarm = 0;
  MPI_Request alarm_request = MPI_REQUEST_NULL;
  {
    std::lock_guard lock(mpi_mutex());
    MPI_Irecv(&alarm, 1, MPI_INT, MPI_ANY_SOURCE, kAlarmTag, comm_, &alarm_request);
  }
  const int64_t limit = static_cast<int64_t>(timeout_.value() * 1e9);
  while (!quit_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int fired = 0;
    MPI_Status st;
    {
      std::lock_guard lock(mpi_mutex());
      MPI_Test(&alarm_request, &fired, &st);
    }
    if (fired)
      stop_job("rank " + std::to_string(st.MPI_SOURCE) + " reported an op running past the " +
               format_duration(timeout_) + " timeout (--timeout)");
    const int64_t now = now_ns();
    for (size_t s = 0; s < streams_.size(); ++s) {
      const int64_t t = streams_[s]->started_ns.load(std::memory_order_acquire);
      if (t >= 0 && now - t > limit)
        stop_job("rank " + std::to_string(channel_.rank()) + "'s " +
                 op_text(program_, static_cast<StreamId>(s), streams_[s]->op.load()) +
                 " ran past the " + format_duration(timeout_) + " timeout (--timeout)");
    }
  }
  std::lock_guard lock(mpi_mutex());
  MPI_Cancel(&alarm_request);
  MPI_Request_free(&alarm_request);
}

}  // namespace dtsim::real::cpu
