// The CPU back end's executor: each Program stream is a thread; ops wait for their events,
// compute ops run real Eigen GEMMs and streaming loops (real/cpu/kernels.h), collectives and
// send/recv are real MPI calls on real buffers, memory ops real allocations.
#include <algorithm>
#include <barrier>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

#include "core/base/error.h"
#include "core/base/text.h"
#include "real/cpu/cpu_backend.h"
#include "real/cpu/kernels.h"
#include "real/cpu/mpi_support.h"
#include "real/cpu/watchdog.h"
#include "real/trace_exchange.h"

namespace dtsim::real::cpu {
namespace {

using Clock = std::chrono::steady_clock;

MPI_Datatype mpi_type(DType t) {
  switch (static_cast<int>(bytes_per_element(t))) {
    case 4:
      return MPI_FLOAT;
    case 2:
      return MPI_INT16_T;  // bf16/fp16 summed as 16-bit integers: the same bytes, a real sum
    default:
      return MPI_INT8_T;
  }
}

// Events recorded per iteration: an op of iteration i waits until its event's count reaches
// i + 1 (the lowering's rule: a wait refers to the record of the same iteration).
class EventTable {
 public:
  explicit EventTable(int n) : count_(static_cast<size_t>(n), 0) {}
  void record(EventId e, int iteration) {
    {
      std::lock_guard lock(m_);
      count_[static_cast<size_t>(e)] = std::max(count_[static_cast<size_t>(e)], iteration + 1);
    }
    cv_.notify_all();
  }
  // Returns false if `stop` became true first.
  bool wait(EventId e, int iteration, const std::atomic<bool>& stop) {
    std::unique_lock lock(m_);
    while (count_[static_cast<size_t>(e)] < iteration + 1) {
      if (stop.load()) return false;
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
    return true;
  }
  void reset() {
    std::lock_guard lock(m_);
    std::fill(count_.begin(), count_.end(), 0);
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<int> count_;
};

// Live allocations by category: memory ops allocate (malloc: pages are not touched, so the peak
// is the allocator's high-water mark) and free in the order the Program says.
class MemoryTracker {
 public:
  ~MemoryTracker() {
    for (auto& blocks : blocks_)
      for (auto& b : blocks) std::free(b.first);
  }
  void apply(const MemoryOp& m, const std::string& where) {
    std::lock_guard lock(mu_);
    auto& blocks = blocks_[static_cast<size_t>(m.category)];
    double bytes = m.bytes.value();
    if (bytes > 0) {
      void* p = std::malloc(static_cast<size_t>(bytes));
      if (!p) throw RuntimeError(where + ": allocating " + format_bytes(Bytes(bytes)) + " failed");
      blocks.emplace_back(p, bytes);
      live_[static_cast<size_t>(m.category)] += bytes;
    } else {
      bytes = -bytes;
      while (bytes > 0 && !blocks.empty()) {
        auto& [p, size] = blocks.back();
        const double take = std::min(size, bytes);
        size -= take;
        bytes -= take;
        live_[static_cast<size_t>(m.category)] -= take;
        if (size <= 0) {
          std::free(p);
          blocks.pop_back();
        }
      }
    }
    double total = 0;
    for (double v : live_) total += v;
    if (total > peak_) {
      peak_ = total;
      for (int c = 0; c < kMemoryCategories; ++c) at_peak_[c] = Bytes(live_[c]);
    }
  }
  RankMemory result(Rank r) const {
    RankMemory m;
    m.rank = r;
    m.peak = Bytes(peak_);
    m.at_peak = at_peak_;
    return m;
  }

 private:
  std::mutex mu_;
  std::array<std::vector<std::pair<void*, double>>, kMemoryCategories> blocks_;
  std::array<double, kMemoryCategories> live_{};
  double peak_ = 0;
  std::array<Bytes, kMemoryCategories> at_peak_{};
};

class CpuExecutor final : public Executor {
 public:
  CpuExecutor(MpiChannel& channel, const RealOptions& options)
      : channel_(channel), options_(options) {}
  std::string name() const override { return "cpu-mpi"; }
  Trace run(const Job& job, const Cluster& cluster, const RunOptions& run) override;

 private:
  struct Comm {
    MPI_Comm comm = MPI_COMM_NULL;
    int size = 1, index = 0;
  };
  struct StreamBuffers {
    std::vector<uint8_t> send, recv;
  };
  void setup(const Job& job);
  void run_phase(int iterations, bool timed, Clock::time_point t0, std::vector<Span>& spans);
  // Returns the bytes a collective or message moved (whole elements), 0 for other ops.
  Bytes run_op(const Program& p, StreamId s, size_t i, int iteration, StreamBuffers& buf);
  std::string where(const Program& p, StreamId s, size_t i) const;
  void wait(MPI_Request& r, const std::string& call, const Program& p, StreamId s, size_t i);

  MpiChannel& channel_;
  RealOptions options_;
  const Program* program_ = nullptr;
  std::map<std::pair<GroupId, StreamId>, Comm> comms_;
  std::map<GroupId, const Group*> group_of_;
  MPI_Comm p2p_ = MPI_COMM_NULL;
  std::vector<StreamBuffers> buffers_;
  CpuKernels kernels_;
  std::unique_ptr<EventTable> events_;
  MemoryTracker memory_;
  std::unique_ptr<Watchdog> watchdog_;
  std::atomic<bool> stop_{false};
  std::mutex error_mu_;
  std::string error_;
  bool fault_armed_ = false;
  bool first_phase_ = true;
};

std::string CpuExecutor::where(const Program& p, StreamId s, size_t i) const {
  const Op& op = p.streams[static_cast<size_t>(s)].ops[i];
  return describe(channel_.launch()) + ", op '" + op.label.name + "' on stream " +
         p.streams[static_cast<size_t>(s)].name;
}

void CpuExecutor::wait(MPI_Request& r, const std::string& call, const Program& p, StreamId s,
                       size_t i) {
  // The watchdog bounds the wait; here it ends only when the request completes or the job stops.
  if (!wait_request(r, &stop_, Clock::time_point::max()))
    throw RuntimeError(where(p, s, i) + ": " + call + " abandoned: the job is stopping");
}

void CpuExecutor::setup(const Job& job) {
  // One communicator per (group, stream) any Program uses, split in the same order on every rank
  // (every rank holds every Program), so that no two streams interleave calls on one.
  std::set<std::pair<GroupId, StreamId>> used;
  double max_bytes = 0;
  for (const Program& p : job.programs)
    for (size_t s = 0; s < p.streams.size(); ++s)
      for (const Op& op : p.streams[s].ops) {
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
          used.insert({c->group, static_cast<StreamId>(s)});
          max_bytes = std::max(max_bytes, c->bytes.value());
        } else if (const auto* x = std::get_if<SendOp>(&op.body)) {
          max_bytes = std::max(max_bytes, x->bytes.value());
        } else if (const auto* x = std::get_if<RecvOp>(&op.body)) {
          max_bytes = std::max(max_bytes, x->bytes.value());
        }
      }
  if (max_bytes > 2e9)
    throw InputError(Diagnostic{{},
                                "dtsim real --cpu",
                                "a collective or message of " + format_bytes(Bytes(max_bytes)) +
                                    " is beyond what the CPU back end moves in one MPI call "
                                    "(2 GB); use a smaller scenario"});
  const Rank me = channel_.rank();
  std::lock_guard lock(mpi_mutex());
  for (const auto& [g, s] : used) {
    const Group& group = job.group(g);
    const auto it = std::find(group.ranks.begin(), group.ranks.end(), me);
    const bool member =
        it != group.ranks.end() && s < static_cast<StreamId>(program_->streams.size());
    MPI_Comm c = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(channel_.world_comm(), member ? 0 : MPI_UNDEFINED,
                             member ? static_cast<int>(it - group.ranks.begin()) : 0, &c),
              "MPI_Comm_split", describe(channel_.launch()) + ", group " + group.name);
    if (member) {
      Comm& comm = comms_[{g, s}];
      comm.comm = c;
      MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
      MPI_Comm_size(c, &comm.size);
      MPI_Comm_rank(c, &comm.index);
    }
  }
  MPI_Comm_dup(channel_.world_comm(), &p2p_);
  MPI_Comm_set_errhandler(p2p_, MPI_ERRORS_RETURN);
  buffers_.resize(program_->streams.size());
  for (auto& b : buffers_) {
    b.send.assign(static_cast<size_t>(max_bytes) + 64, 1);
    b.recv.assign(static_cast<size_t>(max_bytes) + 64, 0);
  }
  for (const Stream& s : program_->streams)
    for (const Op& op : s.ops)
      if (const auto* c = std::get_if<ComputeOp>(&op.body))
        kernels_.prepare(*c, options_.compute_scale);
  events_ = std::make_unique<EventTable>(program_->num_events);
}

Bytes CpuExecutor::run_op(const Program& p, StreamId s, size_t i, int iteration,
                          StreamBuffers& buf) {
  const Op& op = p.streams[static_cast<size_t>(s)].ops[i];
  if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
    const auto start = Clock::now();
    const double stands_for = kernels_.run(*c, options_.compute_scale);
    if (options_.compute_scale != 1) {
      // A scaled-down GEMM waits out the rest of its full-size time (at the rate it just ran),
      // so that the timeline, and what other ranks wait for, stand for the full-size step; the
      // core is free meanwhile. Sleep to within 100 us of the end, then spin to it.
      const auto until = start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(stands_for));
      const auto coarse = until - std::chrono::microseconds(100);
      if (Clock::now() < coarse) std::this_thread::sleep_until(coarse);
      while (Clock::now() < until) {
      }
    }
    return Bytes(0);
  }
  if (const auto* m = std::get_if<MemoryOp>(&op.body)) {
    // A Program's memory ops describe one step's state; the step repeats on the same memory, so
    // they run once, in the first step of the run.
    if (iteration == 0 && first_phase_) memory_.apply(*m, where(p, s, i));
    return Bytes(0);
  }
  MPI_Request r = MPI_REQUEST_NULL;
  auto issue = [&](int rc, const char* call) {
    check_mpi(rc, call, where(p, s, i) + " (iteration " + std::to_string(iteration) + ")");
  };
  std::string call;
  double moved = 0;
  if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
    const Comm& comm = comms_.at({c->group, s});
    const MPI_Datatype type = mpi_type(c->dtype);
    const double elem = bytes_per_element(c->dtype);
    const int n = comm.size;
    const int total = static_cast<int>(c->bytes.value() / elem);
    const int part = total / n;
    const Group& group = *group_of_.at(c->group);
    const auto root_it = std::find(group.ranks.begin(), group.ranks.end(), c->root);
    const int root =
        root_it == group.ranks.end() ? 0 : static_cast<int>(root_it - group.ranks.begin());
    // nccl-tests' size in whole elements: the full buffer, or n parts of the gathered array.
    const bool in_parts = c->kind == CollectiveKind::kAllGather ||
                          c->kind == CollectiveKind::kReduceScatter ||
                          c->kind == CollectiveKind::kAllToAll;
    moved = c->kind == CollectiveKind::kBarrier ? 0
            : in_parts                          ? double(part) * n * elem
                                                : double(total) * elem;
    std::lock_guard lock(mpi_mutex());
    switch (c->kind) {
      case CollectiveKind::kAllReduce:
        call = "MPI_Iallreduce";
        issue(MPI_Iallreduce(buf.send.data(), buf.recv.data(), total, type, MPI_SUM, comm.comm, &r),
              call.c_str());
        break;
      case CollectiveKind::kAllGather:
        call = "MPI_Iallgather";
        issue(
            MPI_Iallgather(buf.send.data(), part, type, buf.recv.data(), part, type, comm.comm, &r),
            call.c_str());
        break;
      case CollectiveKind::kReduceScatter:
        call = "MPI_Ireduce_scatter_block";
        issue(MPI_Ireduce_scatter_block(buf.send.data(), buf.recv.data(), part, type, MPI_SUM,
                                        comm.comm, &r),
              call.c_str());
        break;
      case CollectiveKind::kBroadcast:
        call = "MPI_Ibcast";
        issue(MPI_Ibcast(buf.send.data(), total, type, root, comm.comm, &r), call.c_str());
        break;
      case CollectiveKind::kReduce:
        call = "MPI_Ireduce";
        issue(MPI_Ireduce(buf.send.data(), buf.recv.data(), total, type, MPI_SUM, root, comm.comm,
                          &r),
              call.c_str());
        break;
      case CollectiveKind::kAllToAll:
        call = "MPI_Ialltoall";
        issue(
            MPI_Ialltoall(buf.send.data(), part, type, buf.recv.data(), part, type, comm.comm, &r),
            call.c_str());
        break;
      case CollectiveKind::kBarrier:
        call = "MPI_Ibarrier";
        issue(MPI_Ibarrier(comm.comm, &r), call.c_str());
        break;
    }
  } else if (const auto* x = std::get_if<SendOp>(&op.body)) {
    call = "MPI_Isend to rank " + std::to_string(x->peer);
    moved = static_cast<double>(static_cast<int>(x->bytes.value()));
    std::lock_guard lock(mpi_mutex());
    issue(MPI_Isend(buf.send.data(), static_cast<int>(x->bytes.value()), MPI_BYTE, x->peer, x->tag,
                    p2p_, &r),
          "MPI_Isend");
  } else if (const auto* x = std::get_if<RecvOp>(&op.body)) {
    call = "MPI_Irecv from rank " + std::to_string(x->peer);
    moved = static_cast<double>(static_cast<int>(x->bytes.value()));
    std::lock_guard lock(mpi_mutex());
    issue(MPI_Irecv(buf.recv.data(), static_cast<int>(x->bytes.value()), MPI_BYTE, x->peer, x->tag,
                    p2p_, &r),
          "MPI_Irecv");
  }
  wait(r, call, p, s, i);
  return Bytes(moved);
}

void CpuExecutor::run_phase(int iterations, bool timed, Clock::time_point t0,
                            std::vector<Span>& spans) {
  const Program& p = *program_;
  events_->reset();
  std::vector<std::vector<Span>> per_stream(p.streams.size());
  std::vector<std::thread> threads;
  const Rank me = channel_.rank();
  for (size_t si = 0; si < p.streams.size(); ++si) {
    threads.emplace_back([&, si] {
      const StreamId s = static_cast<StreamId>(si);
      const auto& ops = p.streams[si].ops;
      try {
        for (int it = 0; it < iterations; ++it)
          for (size_t i = 0; i < ops.size(); ++i) {
            const Op& op = ops[i];
            for (EventId e : op.waits)
              if (!events_->wait(e, it, stop_)) return;
            if (stop_.load()) return;
            if (timed && it == 0 && si == 0 && fault_armed_ && i == ops.size() / 2) {
              if (options_.fault.kind == FaultInjection::Kind::kExit) {
                std::fprintf(stderr, "dtsim real: %s: exiting mid-step, as --inject-fault asks\n",
                             describe(channel_.launch()).c_str());
                std::fflush(stderr);
                std::_Exit(1);
              }
              watchdog_->begin(s, i, it);
              while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
            }
            watchdog_->begin(s, i, it);
            const auto start = Clock::now();
            const Bytes moved = run_op(p, s, i, it, buffers_[si]);
            const auto end = Clock::now();
            watchdog_->end(s);
            if (op.record) events_->record(*op.record, it);
            if (timed && !std::holds_alternative<MemoryOp>(op.body)) {
              SpanKind kind = SpanKind::kCompute;
              if (std::holds_alternative<CollectiveOp>(op.body)) kind = SpanKind::kCollective;
              if (std::holds_alternative<SendOp>(op.body)) kind = SpanKind::kSend;
              if (std::holds_alternative<RecvOp>(op.body)) kind = SpanKind::kRecv;
              per_stream[si].push_back(Span{
                  me, s, it, i, kind, Seconds(std::chrono::duration<double>(start - t0).count()),
                  Seconds(std::chrono::duration<double>(end - t0).count()), moved});
            }
          }
      } catch (const std::exception& e) {
        std::lock_guard lock(error_mu_);
        if (error_.empty()) error_ = e.what();
        stop_ = true;
      }
    });
  }
  for (auto& t : threads) t.join();
  first_phase_ = false;
  if (!error_.empty()) throw RuntimeError(error_);
  for (auto& v : per_stream) spans.insert(spans.end(), v.begin(), v.end());
}

Trace CpuExecutor::run(const Job& job, const Cluster& cluster, const RunOptions& run) {
  (void)cluster;
  const Rank me = channel_.rank();
  if (job.world_size != channel_.world())
    throw RuntimeError(describe(channel_.launch()) + ": the scenario has " +
                       std::to_string(job.world_size) + " ranks but the job was launched with " +
                       std::to_string(channel_.world()));
  program_ = job.program_for(me);
  if (!program_)
    throw RuntimeError(describe(channel_.launch()) + ": the Job holds no Program for this rank");
  for (const Group& g : job.groups) group_of_[g.id] = &g;
  setup(job);
  fault_armed_ = options_.fault.kind != FaultInjection::Kind::kNone && options_.fault.rank == me;
  watchdog_ = std::make_unique<Watchdog>(channel_, *program_, options_.timeout);

  std::vector<Span> spans;
  if (options_.warmup_iterations > 0)
    run_phase(options_.warmup_iterations, false, Clock::now(), spans);
  channel_.barrier();
  const auto t0 = Clock::now();
  run_phase(run.iterations, true, t0, spans);
  watchdog_.reset();

  Trace local;
  local.engine = name();
  local.iterations = run.iterations;
  local.iteration_end.assign(static_cast<size_t>(run.iterations), Seconds(0));
  for (const Span& s : spans) {
    auto& e = local.iteration_end[static_cast<size_t>(s.iteration)];
    e = Seconds(std::max(e.value(), s.end.value()));
  }
  // Iteration ends are cumulative: a later iteration never ends before an earlier one.
  for (size_t i = 1; i < local.iteration_end.size(); ++i)
    local.iteration_end[i] =
        Seconds(std::max(local.iteration_end[i].value(), local.iteration_end[i - 1].value()));
  local.spans = std::move(spans);
  local.memory.push_back(memory_.result(me));
  bool other_dtype = false;
  for (const Stream& s : program_->streams)
    for (const Op& op : s.ops)
      if (const auto* c = std::get_if<ComputeOp>(&op.body)) other_dtype |= c->dtype != DType::kFp32;
  if (other_dtype)
    local.notes.push_back(
        "measured on CPU: compute ops ran as fp32 Eigen kernels whatever their dtype, and "
        "16-bit collectives summed 16-bit integers (the same bytes)");
  if (options_.compute_scale != 1)
    local.notes.push_back("measured on CPU with compute_scale " +
                          format_number("%g", options_.compute_scale) +
                          ": GEMMs ran at that fraction of their size and then waited out the "
                          "rest of their full-size time at the rate they ran");
  local.notes.push_back(
      "measured on CPU: memory ops allocate without touching pages, so peak memory is the "
      "allocator's high-water mark of the Program's allocations");
  return gather_trace(channel_, std::move(local));
}

}  // namespace

std::unique_ptr<Executor> make_executor(Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options) {
  (void)launch;
  auto* mpi = dynamic_cast<MpiChannel*>(&channel);
  if (!mpi) throw RuntimeError("the CPU back end needs the MPI channel");
  return std::make_unique<CpuExecutor>(*mpi, options);
}

}  // namespace dtsim::real::cpu
