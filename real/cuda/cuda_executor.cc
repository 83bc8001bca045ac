// The CUDA + NCCL real-mode executor (real/real_executor.h's contract, on one GPU per process).
//
// How a Program runs here:
// - streams -> non-blocking cudaStreams; Program events -> cudaEvents (timing off); an op's
//   waits -> cudaStreamWaitEvent; its record -> cudaEventRecord. One host thread enqueues every
//   stream's ops in the order of real/cuda/enqueue_order.h (round robin, an op after the
//   recorders of its events); a Program that cannot progress is a RuntimeError naming the
//   blocked ops, raised before anything runs.
// - GEMM and attention ops -> cuBLASLt (real/cuda/cuda_gemm.h) on their GemmShape, repeated
//   round(FLOPs / shape FLOPs) times (FlashAttention's forward counts two products of the scores'
//   shape, its backward four); an op without a shape -> one square GEMM of its FLOPs.
//   Elementwise and optimizer ops -> a streaming kernel moving the op's bytes and doing its FLOPs.
// - Memory ops -> cudaMallocAsync / cudaFreeAsync on the op's stream from the device's default
//   pool (kept reserved between steps), so that the Program's peak is real device memory.
// - Collectives -> NCCL on one communicator per (group, stream), split from the world
//   communicator before the first step; send/recv -> ncclSend/ncclRecv in a group on one
//   communicator per stream.
// - Timing: a cudaEvent pair around every op that takes time, in every step; after the timed
//   steps, cudaEventElapsedTime from one start event recorded right after a channel barrier.
// - Faults: every call checked (real/cuda/cuda_device.h); while waiting, cudaEventQuery and
//   ncclCommGetAsyncError are polled with RealOptions::timeout per op; on an error or a timeout
//   every communicator is aborted and a RuntimeError names rank, host and op.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "real/cuda/cuda_backend.h"
#include "real/cuda/cuda_device.h"
#include "real/cuda/cuda_gemm.h"
#include "real/cuda/enqueue_order.h"
#include "real/cuda/kernels.h"
#include "real/trace_exchange.h"

namespace dtsim::real::cuda {
namespace {

using Clock = std::chrono::steady_clock;

// Ops enqueued but not yet known to be finished, at most: enough to keep the GPU fed, few
// enough that the CUDA launch queue never fills (a full queue blocks the host inside a launch,
// where no timeout can be checked).
constexpr size_t kInFlightWindow = 256;

bool takes_time(const Op& op) {
  return !std::holds_alternative<MemoryOp>(op.body);
}

int64_t dim(double v) {
  return std::max<int64_t>(1, std::llround(v));
}

// Work prepared once per compute op.
struct ComputeWork {
  const GemmPlan* gemm = nullptr;
  int repeats = 0;    // GEMM runs
  size_t floats = 0;  // streaming kernel
  int fmas = 0;
};

struct Allocation {
  void* ptr = nullptr;
  double bytes = 0;
};

struct InFlight {
  cudaEvent_t done = nullptr;
  size_t stream = 0, op = 0;
  int iteration = 0;
  Clock::time_point enqueued;
};

class CudaExecutor final : public Executor {
 public:
  CudaExecutor(Channel& channel, const LaunchInfo& launch, const RealOptions& options)
      : channel_(channel), launch_(launch), options_(options), site_(Site::of(launch)) {
    device_ = select_device(launch_, site_);
    DTSIM_CHECK(site_, "", cudaGetDeviceProperties(&props_, device_));
    DTSIM_CHECK(site_, "", cublasLtCreate(&lt_));
  }
  ~CudaExecutor() override {
    release_run();
    destroy_comm(world_);
    if (lt_) cublasLtDestroy(lt_);
  }

  std::string name() const override { return "cuda-nccl"; }

  Trace run(const Job& job, const Cluster& cluster, const RunOptions& options) override;

 private:
  void check_job(const Job& job) const;
  void prepare(const Job& job);
  void create_comms(const Job& job);
  void run_step(int iteration, bool timed);
  void enqueue(size_t s, size_t i, int iteration, bool timed);
  void enqueue_collective(const CollectiveOp& c, size_t s, size_t flat, const std::string& name,
                          cudaStream_t st);
  void enqueue_memory(const MemoryOp& m, const std::string& name, cudaStream_t st);
  void wait_one(const InFlight& f);
  void retire_oldest();
  void drain();
  [[noreturn]] void abort_all(const std::string& message);
  void abort_comms();
  void maybe_inject_fault(size_t s, size_t i);
  void release_run();
  Trace collect(int iterations);

  Channel& channel_;
  LaunchInfo launch_;
  RealOptions options_;
  Site site_;
  int device_ = 0;
  cudaDeviceProp props_{};
  cublasLtHandle_t lt_ = nullptr;
  ncclComm_t world_ = nullptr;

  // Per run.
  const Program* program_ = nullptr;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
  std::map<std::pair<GroupId, size_t>, ncclComm_t> group_comms_;
  std::map<size_t, ncclComm_t> p2p_comms_;
  std::map<GroupId, const Group*> groups_;
  std::map<GemmDims, GemmPlan> plans_;
  std::vector<std::vector<ComputeWork>> work_;
  std::vector<size_t> first_op_;    // flat index of each stream's first op
  std::vector<double> moved_;       // by flat index: bytes the op's NCCL call carried
  std::vector<EnqueueStep> order_;  // host enqueue order of one step (enqueue_order.h)
  size_t op_count_ = 0;
  // timing_[slot][2 * flat + 0 | 1]: slot 0 for the warm-up steps, 1 + i for timed step i.
  std::vector<std::vector<cudaEvent_t>> timing_;
  cudaEvent_t start_ = nullptr;
  void* input_ = nullptr;    // GEMM A, streaming input
  void* weights_ = nullptr;  // GEMM B
  void* output_ = nullptr;   // GEMM D, streaming output
  std::vector<void*> workspaces_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  size_t scratch_bytes_ = 0;
  std::deque<InFlight> in_flight_;
  std::array<std::vector<Allocation>, kMemoryCategories> live_;
  std::array<Bytes, kMemoryCategories> live_bytes_{};
  RankMemory memory_;
  std::set<std::string> notes_;
  size_t enqueued_in_step_ = 0;
  bool fault_step_ = false;
  // A Program's memory ops describe one step's state; steps repeat on the same memory, so they
  // run in the first step of the run only (docs/real-mode.md, "Steps and timing").
  bool first_step_ = false;
  // After a failure: the device may hold work that never ends, so nothing waits on it any more.
  bool poisoned_ = false;
};

void CudaExecutor::check_job(const Job& job) const {
  if (job.world_size != channel_.world())
    throw RuntimeError(site_.who + ": the job has " + std::to_string(job.world_size) +
                       " ranks but " + std::to_string(channel_.world()) +
                       " processes were launched; launch one process per rank");
  for (Rank r = 0; r < job.world_size; ++r)
    if (job.program_for(r) == nullptr)
      throw RuntimeError(site_.who + ": the job has no Program for rank " + std::to_string(r) +
                         " (real mode runs every rank: build it unfolded)");
}

// Every rank of the world calls ncclCommSplit for every (group, stream) pair any Program uses,
// in one order, so that the splits match; a rank outside the group passes NCCL_SPLIT_NOCOLOR.
void CudaExecutor::create_comms(const Job& job) {
  std::set<std::pair<GroupId, size_t>> pairs;
  std::set<size_t> p2p_streams;
  for (const Program& p : job.programs)
    for (size_t s = 0; s < p.streams.size(); ++s)
      for (const Op& op : p.streams[s].ops) {
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) pairs.insert({c->group, s});
        if (std::holds_alternative<SendOp>(op.body) || std::holds_alternative<RecvOp>(op.body))
          p2p_streams.insert(s);
      }
  for (const auto& [g, s] : pairs) {
    const Group& group = job.group(g);
    groups_[g] = &group;
    const auto at = std::find(group.ranks.begin(), group.ranks.end(), launch_.rank);
    const bool member = at != group.ranks.end();
    // The key is the position in the group, so that communicator rank i is group.ranks[i].
    const int key = member ? static_cast<int>(at - group.ranks.begin()) : 0;
    group_comms_[{g, s}] = split_comm(world_, member, key, site_,
                                      "communicator of group " + group.name + " (id " +
                                          std::to_string(g) + ") on stream " + std::to_string(s),
                                      options_.timeout);
  }
  for (size_t s : p2p_streams)
    p2p_comms_[s] =
        split_comm(world_, true, launch_.rank, site_,
                   "point-to-point communicator of stream " + std::to_string(s), options_.timeout);
}

void CudaExecutor::prepare(const Job& job) {
  const Program& p = *program_;
  try {
    order_ = enqueue_order(p);  // the same every step
  } catch (const RuntimeError& e) {
    throw RuntimeError(site_.who + ": " + e.what());
  }
  const bool fp8 = supports_fp8(props_.major, props_.minor);
  size_t a_max = 0, b_max = 0, d_max = 0, comm_max = 0;
  streams_.resize(p.streams.size());
  for (auto& st : streams_)
    DTSIM_CHECK(site_, "", cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  events_.resize(static_cast<size_t>(p.num_events));
  for (auto& ev : events_)
    DTSIM_CHECK(site_, "", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
  work_.resize(p.streams.size());
  first_op_.resize(p.streams.size());
  moved_.assign(p.op_count(), 0.0);
  for (size_t s = 0; s < p.streams.size(); ++s) {
    first_op_[s] = op_count_;
    op_count_ += p.streams[s].ops.size();
    work_[s].resize(p.streams[s].ops.size());
    for (size_t i = 0; i < p.streams[s].ops.size(); ++i) {
      const Op& op = p.streams[s].ops[i];
      const std::string name = op_name(p, s, i);
      if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
        ComputeWork& w = work_[s][i];
        const double flops = c->flops.value();
        if (c->kind == KernelKind::kGemm || c->kind == KernelKind::kAttention) {
          if (flops <= 0) continue;
          GemmDims d;
          d.dtype = c->dtype;
          if (d.dtype == DType::kFp8 && !fp8) {
            d.dtype = DType::kBf16;
            notes_.insert("This GPU (compute capability " + std::to_string(props_.major) + "." +
                          std::to_string(props_.minor) +
                          ") has no FP8 tensor cores: fp8 GEMMs ran in bf16.");
          }
          double shape_flops = 0;
          if (c->shape.known()) {
            d.batch = dim(c->shape.batch);
            d.m = dim(c->shape.m);
            d.n = dim(c->shape.n);
            d.k = dim(c->shape.k);
            shape_flops = 2.0 * c->shape.batch * c->shape.m * c->shape.n * c->shape.k;
          } else {
            d.m = d.n = d.k = dim(std::cbrt(flops / 2));
            shape_flops = 2.0 * std::pow(static_cast<double>(d.m), 3);
            notes_.insert("GEMM ops without a shape ran as one square GEMM of their FLOPs.");
          }
          w.repeats = static_cast<int>(std::max<long long>(1, std::llround(flops / shape_flops)));
          auto found = plans_.find(d);
          if (found == plans_.end())
            found = plans_.emplace(d, plan_gemm(lt_, d, kGemmWorkspaceBytes, site_, name)).first;
          w.gemm = &found->second;
          if (w.gemm->rounded)
            notes_.insert(
                "FP8 GEMM dimensions were rounded up to multiples of 16, as cuBLASLt "
                "requires.");
          a_max = std::max(a_max, w.gemm->a_bytes);
          b_max = std::max(b_max, w.gemm->b_bytes);
          d_max = std::max(d_max, w.gemm->d_bytes);
          if (c->kind == KernelKind::kAttention)
            notes_.insert(
                "Attention ran as cuBLASLt batched GEMMs of its shape (as many as its "
                "FLOPs count), not as FlashAttention or a fused softmax.");
        } else {
          // Read half the op's bytes, write the other half (floats of 4 bytes).
          const double bytes = c->bytes.value();
          w.floats = static_cast<size_t>(std::max(0.0, bytes / 8));
          if (w.floats == 0 && flops > 0) w.floats = size_t{1} << 20;
          if (w.floats > 0)
            w.fmas = static_cast<int>(std::llround(flops / (2.0 * static_cast<double>(w.floats))));
          a_max = std::max(a_max, w.floats * 4);
          d_max = std::max(d_max, w.floats * 4);
        }
      } else if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
        comm_max = std::max(comm_max, static_cast<size_t>(std::max(c->bytes.value(), 8.0)));
      } else if (const auto* sd = std::get_if<SendOp>(&op.body)) {
        comm_max = std::max(comm_max, static_cast<size_t>(std::max(sd->bytes.value(), 8.0)));
      } else if (const auto* rv = std::get_if<RecvOp>(&op.body)) {
        comm_max = std::max(comm_max, static_cast<size_t>(std::max(rv->bytes.value(), 8.0)));
      }
    }
  }
  // Scratch comes from cudaMalloc, outside the pool the Program's memory ops use, so that the
  // pool's high-water mark is the Program's alone. Filled with 0x20 bytes: finite, non-zero
  // values in every dtype (fp32 1.4e-19, bf16 1.4e-19, fp16 0.0083, e4m3 0.125), since GEMM
  // power and clocks depend on the data.
  auto scratch = [&](void** ptr, size_t bytes, const char* what) {
    if (bytes == 0) return;
    DTSIM_CHECK(site_, what, cudaMalloc(ptr, bytes));
    DTSIM_CHECK(site_, what, cudaMemset(*ptr, 0x20, bytes));
    scratch_bytes_ += bytes;
  };
  scratch(&input_, a_max, "scratch for GEMM inputs");
  scratch(&weights_, b_max, "scratch for GEMM weights");
  scratch(&output_, d_max, "scratch for outputs");
  scratch(&send_, comm_max, "collective send buffer");
  scratch(&recv_, comm_max, "collective receive buffer");
  workspaces_.assign(streams_.size(), nullptr);
  if (!plans_.empty())
    for (auto& ws : workspaces_) scratch(&ws, kGemmWorkspaceBytes, "cuBLASLt workspace");

  create_comms(job);

  DTSIM_CHECK(site_, "", cudaEventCreate(&start_));
}

Trace CudaExecutor::run(const Job& job, const Cluster& cluster, const RunOptions& options) {
  (void)cluster;  // the hardware is what it is: the cluster's figures are the prediction's
  for (const Perturbation& pert : options.perturbations) {
    (void)pert;
    throw InputError(Diagnostic{{},
                                "perturbations",
                                "the GPU back end measures real hardware and cannot apply a "
                                "perturbation (slow_rank); run it without one"});
  }
  if (options.iterations < 1)
    throw InputError(Diagnostic{{}, "--iterations", "expected at least 1 timed iteration"});
  check_job(job);
  program_ = job.program_for(launch_.rank);
  release_run();
  memory_ = RankMemory{};
  notes_.clear();
  if (options_.compute_scale != 1.0)
    notes_.insert(
        "--compute-scale applies to the CPU back end only: the GPU ran every op at full "
        "size.");
  if (world_ == nullptr) world_ = init_world_comm(channel_, site_, options_.timeout);

  try {
    prepare(job);
    timing_.assign(1 + static_cast<size_t>(options.iterations), {});
    for (auto& slot : timing_) {
      slot.resize(2 * op_count_);
      for (auto& ev : slot) DTSIM_CHECK(site_, "", cudaEventCreate(&ev));
    }
    cudaMemPool_t pool = nullptr;
    DTSIM_CHECK(site_, "", cudaDeviceGetDefaultMemPool(&pool, device_));
    // Keep freed memory reserved: a step's allocations are then served from the pool without
    // remapping, as PyTorch's caching allocator does after its first step.
    uint64_t keep = UINT64_MAX;
    DTSIM_CHECK(site_, "", cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    DTSIM_CHECK(site_, "", cudaDeviceSynchronize());
    size_t free_before = 0, total = 0;
    DTSIM_CHECK(site_, "", cudaMemGetInfo(&free_before, &total));

    for (int w = 0; w < options_.warmup_iterations; ++w) run_step(w, false);
    drain();
    channel_.barrier();
    DTSIM_CHECK(site_, "", cudaEventRecord(start_, streams_.empty() ? nullptr : streams_[0]));
    // Other streams' first ops must not start before the start event: they wait on it.
    for (size_t s = 1; s < streams_.size(); ++s)
      DTSIM_CHECK(site_, "", cudaStreamWaitEvent(streams_[s], start_, 0));
    for (int it = 0; it < options.iterations; ++it) run_step(it, true);
    drain();

    size_t free_after = 0;
    DTSIM_CHECK(site_, "", cudaMemGetInfo(&free_after, &total));
    uint64_t used_high = 0;
    DTSIM_CHECK(site_, "", cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &used_high));
    std::ostringstream mem;
    mem.precision(4);
    mem << "Peak memory is the Program's memory ops as cudaMallocAsync allocated them ("
        << memory_.peak.value() / 1e9 << " GB); the pool's high-water mark was "
        << static_cast<double>(used_high) / 1e9 << " GB, device memory in use grew by "
        << static_cast<double>(free_before > free_after ? free_before - free_after : 0) / 1e9
        << " GB (cudaMemGetInfo); dtsim's own scratch buffers (" << scratch_bytes_ / 1e9
        << " GB) and the CUDA context and NCCL's buffers are not counted.";
    notes_.insert(mem.str());
    notes_.insert(
        "The Program's memory ops ran once, in the first step (cudaMallocAsync / "
        "cudaFreeAsync); later steps reuse that memory, as the simulators count it.");
    Trace local = collect(options.iterations);
    release_run();
    return gather_trace(channel_, std::move(local));
  } catch (...) {
    // A failed run may leave kernels that never finish (a collective whose peer died): abort
    // NCCL and release without waiting on the device.
    abort_comms();
    poisoned_ = true;
    release_run();
    throw;
  }
}

void CudaExecutor::maybe_inject_fault(size_t s, size_t i) {
  if (!fault_step_ || options_.fault.kind == FaultInjection::Kind::kNone ||
      options_.fault.rank != launch_.rank || enqueued_in_step_ < op_count_ / 2)
    return;
  const std::string where = op_name(*program_, s, i);
  if (options_.fault.kind == FaultInjection::Kind::kExit) {
    std::fprintf(stderr,
                 "dtsim: %s: injected fault: exiting mid-way through the first timed step, "
                 "before op %s\n",
                 site_.who.c_str(), where.c_str());
    std::fflush(stderr);
    _exit(1);
  }
  std::fprintf(stderr,
               "dtsim: %s: injected fault: hanging mid-way through the first timed step, "
               "before op %s\n",
               site_.who.c_str(), where.c_str());
  std::fflush(stderr);
  // Hang long enough for every other rank to time out, then leave: no process stays behind.
  std::this_thread::sleep_for(std::chrono::duration<double>(3 * options_.timeout.value() + 30));
  std::fprintf(stderr, "dtsim: %s: injected hang over, exiting\n", site_.who.c_str());
  _exit(1);
}

void CudaExecutor::run_step(int iteration, bool timed) {
  enqueued_in_step_ = 0;
  fault_step_ = timed && iteration == 0;
  first_step_ = iteration == 0 && (!timed || options_.warmup_iterations <= 0);
  for (const EnqueueStep& e : order_) {
    maybe_inject_fault(e.stream, e.op);
    enqueue(e.stream, e.op, iteration, timed);
    ++enqueued_in_step_;
  }
  // Steps follow each other on each stream without a device-wide pause, as the simulators chain
  // them (core/exec/activity_graph.h).
}

// A collective on its group's communicator; records the bytes the NCCL call carries.
void CudaExecutor::enqueue_collective(const CollectiveOp& c, size_t s, size_t flat,
                                      const std::string& name, cudaStream_t st) {
  const auto found = group_comms_.find({c.group, s});
  ncclComm_t comm = found == group_comms_.end() ? nullptr : found->second;
  if (comm == nullptr)
    throw RuntimeError(site_.who + ", op " + name + ": this rank is not a member of group " +
                       std::to_string(c.group) + " that the collective runs on");
  const Group& group = *groups_.at(c.group);
  const auto n = static_cast<double>(group.ranks.size());
  const double elem = bytes_per_element(c.dtype);
  const ncclDataType_t type = nccl_type(c.dtype);
  auto count = [&](double bytes) {
    return static_cast<size_t>(std::max(1.0, std::floor(bytes / elem)));
  };
  int root = 0;
  const auto at = std::find(group.ranks.begin(), group.ranks.end(), c.root);
  if (at != group.ranks.end()) root = static_cast<int>(at - group.ranks.begin());
  const double bytes = c.bytes.value();
  // What the NCCL call carries, in nccl-tests' terms (whole elements): the full buffer, or n
  // parts of the gathered array.
  const bool in_parts = c.kind == CollectiveKind::kAllGather ||
                        c.kind == CollectiveKind::kReduceScatter ||
                        c.kind == CollectiveKind::kAllToAll;
  moved_[flat] =
      c.kind == CollectiveKind::kBarrier
          ? 0
          : static_cast<double>(in_parts ? count(bytes / n) * group.ranks.size() : count(bytes)) *
                elem;
  const char* call = "";
  switch (c.kind) {
    case CollectiveKind::kAllReduce:
      call = "ncclAllReduce";
      DTSIM_CHECK(site_, name, ncclAllReduce(send_, recv_, count(bytes), type, ncclSum, comm, st));
      break;
    case CollectiveKind::kAllGather:  // bytes: the gathered array; each rank sends 1/n
      call = "ncclAllGather";
      DTSIM_CHECK(site_, name, ncclAllGather(send_, recv_, count(bytes / n), type, comm, st));
      break;
    case CollectiveKind::kReduceScatter:  // bytes: the full input; each rank keeps 1/n
      call = "ncclReduceScatter";
      DTSIM_CHECK(site_, name,
                  ncclReduceScatter(send_, recv_, count(bytes / n), type, ncclSum, comm, st));
      break;
    case CollectiveKind::kBroadcast:
      call = "ncclBroadcast";
      DTSIM_CHECK(site_, name, ncclBroadcast(send_, recv_, count(bytes), type, root, comm, st));
      break;
    case CollectiveKind::kReduce:
      call = "ncclReduce";
      DTSIM_CHECK(site_, name,
                  ncclReduce(send_, recv_, count(bytes), type, ncclSum, root, comm, st));
      break;
    case CollectiveKind::kAllToAll:
      // The strategy's all-to-all bytes are one rank's whole buffer, a block of bytes / n per
      // peer (core/collectives/collective_schedule.cc, pairwise exchange): NCCL's count is
      // one block, as in nccl-tests' alltoall.
      call = "ncclAlltoAll";
      DTSIM_CHECK(site_, name, ncclAlltoAll(send_, recv_, count(bytes / n), type, comm, st));
      break;
    case CollectiveKind::kBarrier:
      call = "ncclAllReduce (barrier)";
      DTSIM_CHECK(site_, name, ncclAllReduce(send_, recv_, 1, ncclFloat32, ncclSum, comm, st));
      break;
  }
  wait_ready(comm, site_, name, call, options_.timeout);
}

// A memory event (first step only): allocates or frees device memory so that the live bytes are
// what the Program says, and keeps the peak.
void CudaExecutor::enqueue_memory(const MemoryOp& m, const std::string& name, cudaStream_t st) {
  const double bytes = m.bytes.value();
  auto& list = live_[static_cast<size_t>(m.category)];
  if (bytes > 0) {
    Allocation a{nullptr, bytes};
    DTSIM_CHECK(site_, name, cudaMallocAsync(&a.ptr, static_cast<size_t>(std::ceil(bytes)), st));
    list.push_back(a);
  } else if (bytes < 0) {
    // A free names a size, not a buffer: release the latest allocation of that size in the
    // category, or else the latest ones until the size is covered (and re-allocate the
    // excess), which keeps the live bytes exactly what the Program says.
    double to_free = -bytes;
    auto exact = std::find_if(list.rbegin(), list.rend(),
                              [&](const Allocation& a) { return a.bytes == to_free; });
    if (exact != list.rend()) {
      DTSIM_CHECK(site_, name, cudaFreeAsync(exact->ptr, st));
      list.erase(std::next(exact).base());
    } else {
      while (to_free > 0 && !list.empty()) {
        Allocation a = list.back();
        list.pop_back();
        DTSIM_CHECK(site_, name, cudaFreeAsync(a.ptr, st));
        to_free -= a.bytes;
      }
      if (to_free < 0) {
        Allocation rest{nullptr, -to_free};
        DTSIM_CHECK(site_, name,
                    cudaMallocAsync(&rest.ptr, static_cast<size_t>(std::ceil(-to_free)), st));
        list.push_back(rest);
      }
    }
  }
  live_bytes_[static_cast<size_t>(m.category)] += Bytes(bytes);
  Bytes total{0};
  for (Bytes b : live_bytes_) total += b;
  if (total > memory_.peak) {
    memory_.peak = total;
    memory_.at_peak = live_bytes_;
  }
}

void CudaExecutor::enqueue(size_t s, size_t i, int iteration, bool timed) {
  const Program& p = *program_;
  const Op& op = p.streams[s].ops[i];
  cudaStream_t st = streams_[s];
  const std::string name = op_name(p, s, i);
  for (EventId e : op.waits)
    DTSIM_CHECK(site_, name, cudaStreamWaitEvent(st, events_[static_cast<size_t>(e)], 0));
  const size_t flat = first_op_[s] + i;
  auto& slot = timing_[timed ? 1 + static_cast<size_t>(iteration) : 0];
  if (takes_time(op)) {
    while (in_flight_.size() >= kInFlightWindow) retire_oldest();
    DTSIM_CHECK(site_, name, cudaEventRecord(slot[2 * flat], st));
  }

  if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
    const ComputeWork& w = work_[s][i];
    if (w.gemm)
      for (int r = 0; r < w.repeats; ++r)
        w.gemm->run(lt_, input_, weights_, output_, workspaces_[s], kGemmWorkspaceBytes, st, site_,
                    name);
    else if (w.floats > 0)
      DTSIM_CHECK(site_, name,
                  launch_streaming(static_cast<const float*>(input_), static_cast<float*>(output_),
                                   w.floats, w.fmas, props_.multiProcessorCount, st));
    (void)c;
  } else if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
    enqueue_collective(*c, s, flat, name, st);
  } else if (const auto* sd = std::get_if<SendOp>(&op.body)) {
    ncclComm_t comm = p2p_comms_.at(s);
    moved_[flat] = static_cast<double>(static_cast<size_t>(std::max(1.0, sd->bytes.value())));
    DTSIM_CHECK(site_, name, ncclGroupStart());
    DTSIM_CHECK(site_, name,
                ncclSend(send_, static_cast<size_t>(std::max(1.0, sd->bytes.value())), ncclInt8,
                         sd->peer, comm, st));
    DTSIM_CHECK(site_, name, ncclGroupEnd());
    wait_ready(comm, site_, name, "ncclSend", options_.timeout);
  } else if (const auto* rv = std::get_if<RecvOp>(&op.body)) {
    ncclComm_t comm = p2p_comms_.at(s);
    moved_[flat] = static_cast<double>(static_cast<size_t>(std::max(1.0, rv->bytes.value())));
    DTSIM_CHECK(site_, name, ncclGroupStart());
    DTSIM_CHECK(site_, name,
                ncclRecv(recv_, static_cast<size_t>(std::max(1.0, rv->bytes.value())), ncclInt8,
                         rv->peer, comm, st));
    DTSIM_CHECK(site_, name, ncclGroupEnd());
    wait_ready(comm, site_, name, "ncclRecv", options_.timeout);
  } else if (const auto* m = std::get_if<MemoryOp>(&op.body); m && first_step_) {
    enqueue_memory(*m, name, st);
  }

  if (takes_time(op)) {
    DTSIM_CHECK(site_, name, cudaEventRecord(slot[2 * flat + 1], st));
    in_flight_.push_back(InFlight{slot[2 * flat + 1], s, i, iteration, Clock::now()});
  }
  if (op.record)
    DTSIM_CHECK(site_, name, cudaEventRecord(events_[static_cast<size_t>(*op.record)], st));
}

void CudaExecutor::abort_all(const std::string& message) {
  abort_comms();
  throw RuntimeError(message);
}

void CudaExecutor::abort_comms() {
  for (auto& [key, comm] : group_comms_)
    if (comm) ncclCommAbort(comm);
  for (auto& [key, comm] : p2p_comms_)
    if (comm) ncclCommAbort(comm);
  group_comms_.clear();
  p2p_comms_.clear();
  if (world_) ncclCommAbort(world_);
  world_ = nullptr;
}

void CudaExecutor::wait_one(const InFlight& f) {
  const std::string name = op_name(*program_, f.stream, f.op);
  const auto deadline = f.enqueued + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(options_.timeout.value()));
  for (;;) {
    const cudaError_t e = cudaEventQuery(f.done);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady)
      abort_all(site_.who + ", op " + name + " (step " + std::to_string(f.iteration) +
                "): cudaEventQuery failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                "); NCCL communicators aborted");
    auto check_comm = [&](ncclComm_t comm, const std::string& which) {
      ncclResult_t state = ncclSuccess;
      if (comm && ncclCommGetAsyncError(comm, &state) == ncclSuccess && state != ncclSuccess &&
          state != ncclInProgress)
        abort_all(site_.who + ", op " + name + " (step " + std::to_string(f.iteration) +
                  "): NCCL reported an error on the " + which + ": " + ncclGetErrorString(state) +
                  " (" + ncclGetLastError(comm) + "); NCCL communicators aborted");
    };
    for (auto& [key, comm] : group_comms_)
      check_comm(comm, "communicator of group " + std::to_string(key.first));
    for (auto& [key, comm] : p2p_comms_) check_comm(comm, "point-to-point communicator");
    if (Clock::now() > deadline)
      abort_all(site_.who + ", op " + name + " (step " + std::to_string(f.iteration) +
                "): did not finish within " + std::to_string(options_.timeout.value()) +
                " s (cudaEventQuery still cudaErrorNotReady; a peer may have died or hung); NCCL "
                "communicators aborted");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void CudaExecutor::retire_oldest() {
  wait_one(in_flight_.front());
  in_flight_.pop_front();
  // The next op's timeout counts from now at the earliest, so that a long op does not use up
  // the timeout of the ops queued behind it.
  if (!in_flight_.empty())
    in_flight_.front().enqueued = std::max(in_flight_.front().enqueued, Clock::now());
}

void CudaExecutor::drain() {
  while (!in_flight_.empty()) retire_oldest();
  for (cudaStream_t st : streams_) DTSIM_CHECK(site_, "", cudaStreamSynchronize(st));
}

Trace CudaExecutor::collect(int iterations) {
  const Program& p = *program_;
  Trace t;
  t.engine = "cuda-nccl";
  t.iterations = iterations;
  t.iteration_end.assign(static_cast<size_t>(iterations), Seconds(0));
  for (int it = 0; it < iterations; ++it) {
    const auto& slot = timing_[1 + static_cast<size_t>(it)];
    for (size_t s = 0; s < p.streams.size(); ++s)
      for (size_t i = 0; i < p.streams[s].ops.size(); ++i) {
        const Op& op = p.streams[s].ops[i];
        if (!takes_time(op)) continue;
        const size_t flat = first_op_[s] + i;
        float begin_ms = 0, end_ms = 0;
        const std::string name = op_name(p, s, i);
        DTSIM_CHECK(site_, name, cudaEventElapsedTime(&begin_ms, start_, slot[2 * flat]));
        DTSIM_CHECK(site_, name, cudaEventElapsedTime(&end_ms, start_, slot[2 * flat + 1]));
        SpanKind kind = SpanKind::kCompute;
        if (std::holds_alternative<CollectiveOp>(op.body)) kind = SpanKind::kCollective;
        if (std::holds_alternative<SendOp>(op.body)) kind = SpanKind::kSend;
        if (std::holds_alternative<RecvOp>(op.body)) kind = SpanKind::kRecv;
        const Seconds start(begin_ms * 1e-3), end(std::max(begin_ms, end_ms) * 1e-3);
        Span span{launch_.rank, static_cast<StreamId>(s), it, i, kind, start, end};
        span.moved = Bytes(moved_[flat]);
        t.spans.push_back(span);
        auto& it_end = t.iteration_end[static_cast<size_t>(it)];
        it_end = std::max(it_end, end);
      }
  }
  for (size_t i = 1; i < t.iteration_end.size(); ++i)
    t.iteration_end[i] = std::max(t.iteration_end[i], t.iteration_end[i - 1]);
  memory_.rank = launch_.rank;
  t.memory.push_back(memory_);
  t.notes.push_back(std::string("Measured on ") + props_.name + " (GPU " + std::to_string(device_) +
                    " of " + launch_.host +
                    ") with CUDA events around every op; span times "
                    "are from a common start after a barrier of all ranks.");
  for (const std::string& n : notes_) t.notes.push_back(n);
  return t;
}

void CudaExecutor::release_run() {
  // Runs on the way out, also after a failure: nothing here may throw, so statuses are dropped.
  for (auto& [key, comm] : group_comms_) destroy_comm(comm);
  for (auto& [key, comm] : p2p_comms_) destroy_comm(comm);
  group_comms_.clear();
  p2p_comms_.clear();
  groups_.clear();
  in_flight_.clear();
  for (auto& list : live_) {
    if (!poisoned_)
      for (const Allocation& a : list) cudaFreeAsync(a.ptr, nullptr);
    list.clear();
  }
  live_bytes_ = {};
  if (!poisoned_)
    for (cudaStream_t st : streams_) cudaStreamSynchronize(st);
  for (auto& slot : timing_)
    for (cudaEvent_t ev : slot) cudaEventDestroy(ev);
  timing_.clear();
  for (cudaEvent_t ev : events_) cudaEventDestroy(ev);
  events_.clear();
  if (start_) cudaEventDestroy(start_);
  start_ = nullptr;
  // cudaFree waits for the device: skipped after a failure (the process is about to end).
  for (void* ptr : {input_, weights_, output_, send_, recv_})
    if (ptr && !poisoned_) cudaFree(ptr);
  input_ = weights_ = output_ = send_ = recv_ = nullptr;
  for (void* ws : workspaces_)
    if (ws && !poisoned_) cudaFree(ws);
  workspaces_.clear();
  for (cudaStream_t st : streams_) cudaStreamDestroy(st);
  streams_.clear();
  plans_.clear();
  work_.clear();
  first_op_.clear();
  moved_.clear();
  order_.clear();
  op_count_ = 0;
  scratch_bytes_ = 0;
}

}  // namespace

std::unique_ptr<Executor> make_executor(Channel& channel, const LaunchInfo& launch,
                                        const RealOptions& options) {
  return std::make_unique<CudaExecutor>(channel, launch, options);
}

}  // namespace dtsim::real::cuda
