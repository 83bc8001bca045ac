#include "real/cuda/cuda_device.h"

#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "real/cuda/cuda_backend.h"

namespace dtsim::real::cuda {

Site Site::of(const LaunchInfo& launch) {
  return Site{"rank " + std::to_string(launch.rank) + " on " + launch.host};
}

void fail(const Site& site, const std::string& op, const std::string& call,
          const std::string& error, const char* file, int line) {
  const std::string where =
      std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
  throw RuntimeError(site.who + (op.empty() ? "" : ", op " + op) + ": " + call +
                     " failed: " + error + " [" + where + "]");
}

int visible_devices(const std::string& host, std::string& why) {
  // With no driver, cudaGetDeviceCount returns cudaErrorInsufficientDriver (35) and leaves the
  // count untouched (docs/environment.md, "CUDA and NCCL"): start from 0.
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  const std::string detail = "cudaGetDeviceCount: error " + std::to_string(static_cast<int>(e)) +
                             ", " + cudaGetErrorString(e);
  if (e == cudaErrorInsufficientDriver) {
    why = "no NVIDIA driver is loaded on " + host + " (" + detail + ")";
    return 0;
  }
  if (e == cudaErrorNoDevice) {
    why = "no CUDA device is visible on " + host + " (" + detail + "; check CUDA_VISIBLE_DEVICES)";
    return 0;
  }
  if (e != cudaSuccess) {
    why = "CUDA cannot list the devices on " + host + " (" + detail + ")";
    return 0;
  }
  if (count == 0) why = "no CUDA device is visible on " + host;
  return count;
}

int select_device(const LaunchInfo& launch, const Site& site) {
  std::string why;
  const int count = visible_devices(launch.host, why);
  if (count == 0)
    throw RuntimeError(site.who + ": the GPU back end has no device: " + why +
                       ". Run on a node with an NVIDIA GPU, or use the CPU back end instead: "
                       "--cpu, with a scenario whose cluster.gpu is CPU-core (scenarios/real/"
                       "cpu-data-parallel.yaml; dtsim calibrate --cpu for its profile)");
  if (launch.local_rank >= count)
    throw RuntimeError(site.who + ": local rank " + std::to_string(launch.local_rank) +
                       " needs GPU " + std::to_string(launch.local_rank) + ", but only " +
                       std::to_string(count) +
                       " are visible (launch one process per GPU, or check CUDA_VISIBLE_DEVICES)");
  DTSIM_CHECK(site, "", cudaSetDevice(launch.local_rank));
  return launch.local_rank;
}

namespace {
std::string host_name() {
  char buf[HOST_NAME_MAX + 1] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "this host";
  return buf;
}
}  // namespace

int device_count(std::string& why) {
  return visible_devices(host_name(), why);
}

}  // namespace dtsim::real::cuda

namespace dtsim::real::cuda {

void wait_ready(ncclComm_t comm, const Site& site, const std::string& op, const char* call,
                Seconds timeout) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout.value());
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
    if (r != ncclSuccess) {
      ncclCommAbort(comm);
      fail(site, op, "ncclCommGetAsyncError after " + std::string(call), ncclGetErrorString(r),
           __FILE__, __LINE__);
    }
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      const std::string error =
          std::string(ncclGetErrorString(state)) + " (" + ncclGetLastError(comm) + ")";
      ncclCommAbort(comm);
      fail(site, op, call, error, __FILE__, __LINE__);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ncclCommAbort(comm);
      fail(site, op, call,
           "not complete after " + std::to_string(timeout.value()) +
               " s (a peer may have died or hung); the communicator was aborted",
           __FILE__, __LINE__);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

namespace {
ncclConfig_t non_blocking() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}
}  // namespace

ncclComm_t init_world_comm(Channel& channel, const Site& site, Seconds timeout) {
  ncclUniqueId id{};
  if (channel.rank() == 0) DTSIM_CHECK(site, "", ncclGetUniqueId(&id));
  std::vector<uint8_t> bytes(sizeof id);
  std::memcpy(bytes.data(), &id, sizeof id);
  bytes = channel.broadcast(std::move(bytes));
  if (bytes.size() != sizeof id)
    throw RuntimeError(site.who + ": the NCCL unique id from rank 0 has " +
                       std::to_string(bytes.size()) + " bytes, expected " +
                       std::to_string(sizeof id));
  std::memcpy(&id, bytes.data(), sizeof id);
  ncclComm_t comm = nullptr;
  ncclConfig_t config = non_blocking();
  DTSIM_CHECK(site, "world communicator",
              ncclCommInitRankConfig(&comm, channel.world(), id, channel.rank(), &config));
  wait_ready(comm, site, "world communicator", "ncclCommInitRankConfig", timeout);
  return comm;
}

ncclComm_t split_comm(ncclComm_t world, bool member, int key, const Site& site,
                      const std::string& what, Seconds timeout) {
  ncclComm_t comm = nullptr;
  ncclConfig_t config = non_blocking();
  DTSIM_CHECK(site, what,
              ncclCommSplit(world, member ? 0 : NCCL_SPLIT_NOCOLOR, key, &comm, &config));
  wait_ready(world, site, what, "ncclCommSplit", timeout);
  if (member) {
    if (comm == nullptr)
      fail(site, what, "ncclCommSplit", "returned no communicator for a member", __FILE__,
           __LINE__);
    wait_ready(comm, site, what, "ncclCommSplit", timeout);
  }
  return member ? comm : nullptr;
}

void destroy_comm(ncclComm_t comm) {
  if (comm == nullptr) return;
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclSuccess &&
      ncclCommFinalize(comm) != ncclSystemError) {
    // Finalize flushes outstanding work; bounded so that shutdown never hangs.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ncclCommGetAsyncError(comm, &state) == ncclSuccess && state == ncclInProgress &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    if (state != ncclSuccess) {
      ncclCommAbort(comm);
      return;
    }
    ncclCommDestroy(comm);
    return;
  }
  ncclCommAbort(comm);
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kTf32:
      return ncclFloat32;
    case DType::kFp16:
      return ncclFloat16;
    case DType::kBf16:
      return ncclBfloat16;
    case DType::kFp8:
      return ncclFloat8e4m3;
  }
  return ncclFloat32;
}

}  // namespace dtsim::real::cuda
