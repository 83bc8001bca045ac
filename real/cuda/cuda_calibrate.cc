// GPU calibration: the microbenchmarks behind a HardwareProfile of kind gpu
// (core/hardware/profile.h): a full GEMM grid per dtype on cuBLASLt, HBM bandwidth from a
// streaming kernel, the launch overhead of an empty kernel, and, with more than one rank, NCCL's
// all-reduce / all-gather / reduce-scatter sweep (nccl-tests' sizes and busbw) and a
// point-to-point ping-pong between ranks 0 and 1.
//
// Every rank measures its own device; collectives and p2p are timed on every participant and
// the slowest rank's time is recorded (as a job would wait for it). Every rank returns the same
// profile: rank 0's device figures and the job's collective figures.
#include "real/cuda/cuda_calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <functional>
#include <vector>

#include "core/base/error.h"
#include "core/base/text.h"
#include "real/cuda/cuda_backend.h"
#include "real/cuda/cuda_device.h"
#include "real/cuda/cuda_gemm.h"
#include "real/cuda/kernels.h"

#ifndef DTSIM_VERSION_STRING
#define DTSIM_VERSION_STRING "unknown"
#endif

namespace dtsim::real::cuda {

std::string catalog_gpu_name(std::string_view name) {
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  // Most specific first: "H100 PCIe" before "H100", "GB200" before "B200".
  if (has("GB200")) return "GB200-NVL72";
  if (has("B200")) return "B200-SXM";
  if (has("H200")) return "H200-SXM";
  if (has("H100") && (has("PCIe") || has("PCIE"))) return "H100-PCIe";
  if (has("H100")) return "H100-SXM";  // "NVIDIA H100 80GB HBM3" is the SXM5 board
  if (has("A100")) {
    const bool pcie = has("PCIe") || has("PCIE");
    const bool big = has("80GB");
    if (pcie) return big ? "A100-PCIe-80GB" : "A100-PCIe-40GB";
    return big ? "A100-SXM-80GB" : "A100-SXM-40GB";
  }
  if (has("L40S")) return "L40S";
  if (has("V100")) return "V100-SXM2-32GB";
  return "";
}

double bus_factor(std::string_view op, int ranks) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  if (op == "all-reduce") return 2 * (n - 1) / n;
  return (n - 1) / n;
}

std::string nccl_version_string(int code) {
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

std::string cuda_version_string(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

namespace {

constexpr Seconds kTimeout{300};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<uint8_t> to_bytes(const std::vector<double>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(double));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}
std::vector<double> to_doubles(const std::vector<uint8_t>& b) {
  std::vector<double> v(b.size() / sizeof(double));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(double));
  return v;
}

class Calibration {
 public:
  Calibration(Channel& channel, const LaunchInfo& launch, const CalibrateOptions& options)
      : channel_(channel), launch_(launch), options_(options), site_(Site::of(launch)) {
    device_ = select_device(launch_, site_);
    DTSIM_CHECK(site_, "", cudaGetDeviceProperties(&props_, device_));
    DTSIM_CHECK(site_, "", cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    DTSIM_CHECK(site_, "", cudaEventCreate(&begin_));
    DTSIM_CHECK(site_, "", cudaEventCreate(&end_));
    DTSIM_CHECK(site_, "", cublasLtCreate(&lt_));
  }
  ~Calibration() {
    destroy_comm(world_);
    for (void* p : buffers_) cudaFree(p);
    if (lt_) cublasLtDestroy(lt_);
    cudaEventDestroy(begin_);
    cudaEventDestroy(end_);
    cudaStreamDestroy(stream_);
  }

  HardwareProfile run();

 private:
  void phase(const std::string& what) {
    if (options_.phase) options_.phase(what);
  }
  void* buffer(size_t bytes, const char* what) {
    void* p = nullptr;
    DTSIM_CHECK(site_, what, cudaMalloc(&p, bytes));
    DTSIM_CHECK(site_, what, cudaMemset(p, 0x20, bytes));
    buffers_.push_back(p);
    return p;
  }
  void free_buffers() {
    for (void* p : buffers_) cudaFree(p);
    buffers_.clear();
  }
  // Seconds for one call of `work`, the median of `samples` timings of `repeats` back-to-back
  // calls each, after `warmup` untimed calls.
  double time_s(const std::function<void()>& work, int repeats, int samples, int warmup,
                const std::string& what);
  void fill_identity(HardwareProfile& p);
  void gemm_grid(HardwareProfile& p);
  void memory_bandwidth(HardwareProfile& p);
  void launch_overhead(HardwareProfile& p);
  void collectives(HardwareProfile& p);
  void point_to_point(HardwareProfile& p);
  // The slowest rank's figure (gathered on rank 0, broadcast to all).
  std::vector<double> slowest(const std::vector<double>& mine);

  Channel& channel_;
  LaunchInfo launch_;
  CalibrateOptions options_;
  Site site_;
  int device_ = 0;
  cudaDeviceProp props_{};
  cudaStream_t stream_ = nullptr;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  ncclComm_t world_ = nullptr;
  std::vector<void*> buffers_;
};

double Calibration::time_s(const std::function<void()>& work, int repeats, int samples, int warmup,
                           const std::string& what) {
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> times;
  for (int s = 0; s < samples; ++s) {
    DTSIM_CHECK(site_, what, cudaEventRecord(begin_, stream_));
    for (int r = 0; r < repeats; ++r) work();
    DTSIM_CHECK(site_, what, cudaEventRecord(end_, stream_));
    DTSIM_CHECK(site_, what, cudaEventSynchronize(end_));
    float ms = 0;
    DTSIM_CHECK(site_, what, cudaEventElapsedTime(&ms, begin_, end_));
    times.push_back(ms * 1e-3 / repeats);
  }
  return median(times);
}

void Calibration::fill_identity(HardwareProfile& p) {
  p.kind = "gpu";
  p.created = utc_timestamp();
  p.command = options_.command;
  const std::string mapped = catalog_gpu_name(props_.name);
  p.gpu_model = !options_.gpu_model.empty() ? options_.gpu_model
                : !mapped.empty()           ? mapped
                                            : std::string(props_.name);
  p.machine["host"] = launch_.host;
  p.machine["device"] = props_.name;
  p.machine["compute_capability"] =
      std::to_string(props_.major) + "." + std::to_string(props_.minor);
  p.machine["sm_count"] = std::to_string(props_.multiProcessorCount);
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f GiB",
                static_cast<double>(props_.totalGlobalMem) / (1u << 30));
  p.machine["memory"] = mem;
  p.machine["ranks"] = std::to_string(launch_.world);
  int runtime = 0, driver = 0, nccl = 0;
  DTSIM_CHECK(site_, "", cudaRuntimeGetVersion(&runtime));
  DTSIM_CHECK(site_, "", cudaDriverGetVersion(&driver));
  DTSIM_CHECK(site_, "", ncclGetVersion(&nccl));
  p.software["cuda_runtime"] = cuda_version_string(runtime);
  p.software["cuda_driver"] = cuda_version_string(driver);
  // cublasLtGetVersion(): major * 10000 + minor * 100 + patch, as NCCL encodes its version.
  p.software["cublasLt"] = nccl_version_string(static_cast<int>(cublasLtGetVersion()));
  p.software["nccl"] = nccl_version_string(nccl);
  p.software["dtsim"] = DTSIM_VERSION_STRING;
}

void Calibration::gemm_grid(HardwareProfile& p) {
  const std::vector<int64_t> sizes = options_.quick
                                         ? std::vector<int64_t>{1024, 4096}
                                         : std::vector<int64_t>{512, 1024, 2048, 4096, 8192};
  std::vector<DType> dtypes = {DType::kBf16, DType::kFp16};
  if (supports_fp8(props_.major, props_.minor)) dtypes.push_back(DType::kFp8);
  dtypes.push_back(DType::kFp32);
  const int64_t top = sizes.back();
  // The largest operand: top x top fp32.
  const size_t bytes = static_cast<size_t>(top * top) * 4;
  void* a = buffer(bytes, "GEMM grid");
  void* b = buffer(bytes, "GEMM grid");
  void* d = buffer(bytes, "GEMM grid");
  void* ws = buffer(kGemmWorkspaceBytes, "GEMM grid");
  {
    // Bring the clocks up before the first timing: about 0.2 s of large bf16 GEMMs.
    const std::string what = "GEMM warm-up";
    GemmPlan big =
        plan_gemm(lt_, GemmDims{1, top, top, top, DType::kBf16}, kGemmWorkspaceBytes, site_, what);
    const int calls = static_cast<int>(std::clamp(1e14 / big.flops(), 1.0, 1000.0));
    for (int i = 0; i < calls; ++i)
      big.run(lt_, a, b, d, ws, kGemmWorkspaceBytes, stream_, site_, what);
    DTSIM_CHECK(site_, what, cudaStreamSynchronize(stream_));
  }
  for (DType t : dtypes) {
    phase(std::string("GEMM grid, ") + std::string(to_string(t)));
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes) {
          const std::string what = std::string(to_string(t)) + " GEMM " + std::to_string(m) + "x" +
                                   std::to_string(n) + "x" + std::to_string(k);
          GemmPlan plan = plan_gemm(lt_, GemmDims{1, m, n, k, t}, kGemmWorkspaceBytes, site_, what);
          auto work = [&] {
            plan.run(lt_, a, b, d, ws, kGemmWorkspaceBytes, stream_, site_, what);
          };
          // Enough back-to-back calls that one timing lasts about a millisecond at 500 TFLOP/s,
          // so that event resolution (0.5 us) and launch gaps do not count.
          const double flops = plan.flops();
          const int repeats = static_cast<int>(std::clamp(5e11 / flops, 1.0, 200.0));
          const double s = time_s(work, repeats, 5, repeats, what);
          p.gemm.push_back(GemmSample{t, static_cast<double>(m), static_cast<double>(n),
                                      static_cast<double>(k), FlopsPerSecond(flops / s)});
        }
  }
  free_buffers();
}

void Calibration::memory_bandwidth(HardwareProfile& p) {
  phase("HBM bandwidth");
  // 1 GiB read and 1 GiB written per pass: far beyond the 50-60 MB L2 of Hopper.
  const size_t bytes = size_t{1} << 30;
  auto* in = static_cast<float*>(buffer(bytes, "HBM bandwidth"));
  auto* out = static_cast<float*>(buffer(bytes, "HBM bandwidth"));
  const size_t floats = bytes / 4;
  auto work = [&] {
    DTSIM_CHECK(site_, "HBM bandwidth",
                launch_streaming(in, out, floats, 0, props_.multiProcessorCount, stream_));
  };
  const double s = time_s(work, 1, 10, 2, "HBM bandwidth");
  p.memory_bandwidth = BytesPerSecond(2.0 * static_cast<double>(bytes) / s);
  free_buffers();
}

void Calibration::launch_overhead(HardwareProfile& p) {
  phase("kernel launch overhead");
  auto work = [&] { DTSIM_CHECK(site_, "empty kernel", launch_empty(stream_)); };
  p.kernel_launch_overhead = Seconds(time_s(work, 1000, 5, 100, "empty kernel"));
}

std::vector<double> Calibration::slowest(const std::vector<double>& mine) {
  auto all = channel_.gather(to_bytes(mine));
  std::vector<double> worst = mine;
  for (const auto& b : all) {
    const auto v = to_doubles(b);
    for (size_t i = 0; i < std::min(v.size(), worst.size()); ++i)
      worst[i] = std::max(worst[i], v[i]);
  }
  return to_doubles(channel_.broadcast(to_bytes(worst)));
}

void Calibration::collectives(HardwareProfile& p) {
  const int n = channel_.world();
  const size_t top = options_.quick ? size_t{64} << 20 : size_t{1} << 30;
  const size_t step = options_.quick ? 8 : 2;
  void* send = buffer(top, "collective sweep");
  void* recv = buffer(top, "collective sweep");
  for (const std::string op : {"all-reduce", "all-gather", "reduce-scatter"}) {
    phase("NCCL " + op + " sweep");
    std::vector<size_t> sizes;
    std::vector<double> times;
    for (size_t size = 8; size <= top; size *= step) {
      // float elements for the reductions, bytes for all-gather; whole elements per rank.
      const size_t elem = op == "all-gather" ? 1 : 4;
      const size_t per_rank = size / elem / static_cast<size_t>(n);
      if (per_rank == 0) continue;
      const size_t actual = per_rank * elem * static_cast<size_t>(n);
      const std::string what = op + " of " + std::to_string(actual) + " B";
      auto work = [&] {
        if (op == "all-reduce")
          DTSIM_CHECK(site_, what,
                      ncclAllReduce(send, recv, actual / 4, ncclFloat32, ncclSum, world_, stream_));
        else if (op == "all-gather")
          DTSIM_CHECK(site_, what, ncclAllGather(send, recv, per_rank, ncclInt8, world_, stream_));
        else
          DTSIM_CHECK(
              site_, what,
              ncclReduceScatter(send, recv, per_rank, ncclFloat32, ncclSum, world_, stream_));
        wait_ready(world_, site_, what, op.c_str(), kTimeout);
      };
      const int repeats = actual >= (size_t{256} << 20) ? 5 : 20;
      times.push_back(time_s(work, repeats, 3, 2, what));
      sizes.push_back(actual);
    }
    const auto worst = slowest(times);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const Bytes size(static_cast<double>(sizes[i]));
      const Seconds t(worst[i]);
      p.collectives.push_back(CollectiveSample{op, n, size, t, (size / t) * bus_factor(op, n)});
    }
  }
  free_buffers();
}

void Calibration::point_to_point(HardwareProfile& p) {
  phase("point-to-point ping-pong, ranks 0 and 1");
  // Only ranks 0 and 1 take part; the intra-node figures need them on one host.
  auto hosts = channel_.gather(std::vector<uint8_t>(launch_.host.begin(), launch_.host.end()));
  std::vector<uint8_t> same{0};
  if (channel_.rank() == 0) same[0] = hosts.size() > 1 && hosts[0] == hosts[1] ? 1 : 0;
  const bool one_host = channel_.broadcast(same).at(0) == 1;
  const size_t top = options_.quick ? size_t{64} << 20 : size_t{1} << 30;
  const int me = channel_.rank();
  std::vector<double> times;
  std::vector<size_t> sizes;
  if (me <= 1) {
    void* buf = buffer(top, "ping-pong");
    const int peer = 1 - me;
    for (size_t size = 8; size <= top; size *= 4) {
      const std::string what = "ping-pong of " + std::to_string(size) + " B";
      auto hop = [&](bool sending) {
        DTSIM_CHECK(site_, what, ncclGroupStart());
        if (sending)
          DTSIM_CHECK(site_, what, ncclSend(buf, size, ncclInt8, peer, world_, stream_));
        else
          DTSIM_CHECK(site_, what, ncclRecv(buf, size, ncclInt8, peer, world_, stream_));
        DTSIM_CHECK(site_, what, ncclGroupEnd());
        wait_ready(world_, site_, what, sending ? "ncclSend" : "ncclRecv", kTimeout);
      };
      auto round_trip = [&] {
        hop(me == 0);
        hop(me == 1);
      };
      // One way is half a round trip.
      times.push_back(0.5 * time_s(round_trip, size >= (size_t{256} << 20) ? 5 : 20, 3, 2, what));
      sizes.push_back(size);
    }
    free_buffers();
  }
  // Rank 0's figures reach everyone.
  const auto mine = to_doubles(channel_.broadcast(to_bytes(times)));
  if (sizes.empty())
    for (size_t size = 8; size <= top; size *= 4) sizes.push_back(size);
  for (size_t i = 0; i < std::min(mine.size(), sizes.size()); ++i) {
    const Bytes size(static_cast<double>(sizes[i]));
    p.p2p.push_back(P2pSample{size, Seconds(mine[i]), size / Seconds(mine[i])});
  }
  if (one_host && !p.p2p.empty()) {
    p.intra_node_latency = p.p2p.front().time;
    p.intra_node_bandwidth = p.p2p.back().bandwidth;
  }
}

HardwareProfile Calibration::run() {
  HardwareProfile p;
  fill_identity(p);
  gemm_grid(p);
  memory_bandwidth(p);
  launch_overhead(p);
  if (channel_.world() > 1) {
    phase("NCCL communicator");
    world_ = init_world_comm(channel_, site_, kTimeout);
    collectives(p);
    point_to_point(p);
  }
  // Device figures: rank 0's, so that every rank returns one profile.
  std::vector<double> device = {p.memory_bandwidth.value(), p.kernel_launch_overhead.value()};
  for (const GemmSample& g : p.gemm) device.push_back(g.rate.value());
  device = to_doubles(channel_.broadcast(to_bytes(device)));
  if (device.size() == 2 + p.gemm.size()) {
    p.memory_bandwidth = BytesPerSecond(device[0]);
    p.kernel_launch_overhead = Seconds(device[1]);
    for (size_t i = 0; i < p.gemm.size(); ++i) p.gemm[i].rate = FlopsPerSecond(device[2 + i]);
  }
  return p;
}

}  // namespace

HardwareProfile calibrate(Channel& channel, const LaunchInfo& launch,
                          const CalibrateOptions& options) {
  Calibration c(channel, launch, options);
  return c.run();
}

}  // namespace dtsim::real::cuda
