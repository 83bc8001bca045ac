// The GPU back end where no GPU is needed: device discovery on a machine without a driver (the
// CI machines, docs/environment.md "CUDA and NCCL") and the back end's tables.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "real/backends.h"
#if DTSIM_TEST_CUDA_INTERNALS
#include <cublasLt.h>

#include "real/cuda/cublaslt_on_demand.h"
#include "real/cuda/cuda_calibrate.h"
#include "real/cuda/enqueue_order.h"
#endif

namespace dtsim::real {
namespace {

TEST(CudaDiscovery, NoGpuIsACountOfZeroWithAReason) {
  if (!built_with_cuda()) {
    std::string why;
    EXPECT_EQ(cuda_device_count(why), 0);
    EXPECT_NE(why.find("without CUDA"), std::string::npos) << why;
    return;
  }
  std::string why;
  const int count = cuda_device_count(why);
  if (count > 0) {
    EXPECT_TRUE(why.empty()) << why;
    return;
  }
  EXPECT_NE(why.find("cudaGetDeviceCount"), std::string::npos) << why;
  // No driver loaded (no /proc/driver/nvidia): CUDA's error 35, never a crash.
  if (!std::filesystem::exists("/proc/driver/nvidia/version")) {
    EXPECT_NE(why.find("no NVIDIA driver is loaded on "), std::string::npos) << why;
    EXPECT_NE(why.find("error 35"), std::string::npos) << why;
  }
}

TEST(CudaDiscovery, MakingAnExecutorWithoutAGpuIsAClearError) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build has no CUDA back end";
  std::string why;
  if (cuda_device_count(why) > 0) GTEST_SKIP() << "a GPU is present: the gpu-labelled tests run";
  LocalChannel channel;
  LaunchInfo launch;
  launch.host = "testhost";
  try {
    make_executor(Backend::kCuda, channel, launch, RealOptions{});
    FAIL() << "an executor was made without a GPU";
  } catch (const InputError& e) {
    FAIL() << "no GPU is a runtime failure (exit 1), not bad input: " << e.what();
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 0 on testhost"), std::string::npos) << message;
    EXPECT_NE(message.find("no device"), std::string::npos) << message;
  }
}

#if DTSIM_TEST_CUDA_INTERNALS
TEST(CudaTables, DeviceNamesMapToCatalogGpus) {
  // cudaDeviceProp::name as the driver reports it.
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA H200"), "H200-SXM");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA H100 80GB HBM3"), "H100-SXM");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA H100 PCIe"), "H100-PCIe");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA A100-SXM4-80GB"), "A100-SXM-80GB");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA A100-SXM4-40GB"), "A100-SXM-40GB");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA A100 80GB PCIe"), "A100-PCIe-80GB");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA A100-PCIE-40GB"), "A100-PCIe-40GB");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA B200"), "B200-SXM");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA L40S"), "L40S");
  EXPECT_EQ(cuda::catalog_gpu_name("Tesla V100-SXM2-32GB"), "V100-SXM2-32GB");
  EXPECT_EQ(cuda::catalog_gpu_name("NVIDIA GeForce RTX 4090"), "");
}

TEST(CudaTables, BusBandwidthFactorsAreNcclTests) {
  // nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n.
  EXPECT_DOUBLE_EQ(cuda::bus_factor("all-reduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(cuda::bus_factor("all-gather", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(cuda::bus_factor("reduce-scatter", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(cuda::bus_factor("all-reduce", 1), 0.0);
}

TEST(CudaTables, VersionStrings) {
  EXPECT_EQ(cuda::nccl_version_string(22809), "2.28.9");
  EXPECT_EQ(cuda::cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda::cuda_version_string(12040), "12.4");
}

// One host thread enqueues a step's ops (real/cuda/enqueue_order.h): a wait on an event not yet
// recorded is a no-op in CUDA, so the order must put every recorder first.
Op& add(Program& p, StreamId s, const std::string& name) {
  return p.append(s, ComputeOp{}, Label{name, -1, -1, Phase::kForward});
}

std::vector<std::string> names(const Program& p, const std::vector<cuda::EnqueueStep>& order) {
  std::vector<std::string> out;
  for (const auto& e : order) out.push_back(p.streams[e.stream].ops[e.op].label.name);
  return out;
}

TEST(CudaEnqueueOrder, RoundRobinOverIndependentStreams) {
  Program p;
  const StreamId a = p.add_stream("a"), b = p.add_stream("b");
  add(p, a, "a0");
  add(p, a, "a1");
  add(p, b, "b0");
  add(p, b, "b1");
  EXPECT_EQ(names(p, cuda::enqueue_order(p)), (std::vector<std::string>{"a0", "b0", "a1", "b1"}));
}

TEST(CudaEnqueueOrder, AWaitComesAfterItsRecorder) {
  Program p;
  const StreamId compute = p.add_stream("compute"), comm = p.add_stream("comm");
  const EventId grads = p.new_event();
  add(p, compute, "fwd");
  add(p, compute, "bwd").record = grads;
  add(p, compute, "next");
  add(p, comm, "all_reduce").waits.push_back(grads);
  add(p, comm, "after");
  EXPECT_EQ(names(p, cuda::enqueue_order(p)),
            (std::vector<std::string>{"fwd", "bwd", "all_reduce", "next", "after"}));
}

TEST(CudaEnqueueOrder, ACycleOfWaitsNamesEveryBlockedOp) {
  Program p;
  const StreamId a = p.add_stream("a"), b = p.add_stream("b");
  const EventId ea = p.new_event(), eb = p.new_event();
  Op& x = add(p, a, "x");
  x.waits.push_back(eb);
  x.record = ea;
  Op& y = add(p, b, "y");
  y.waits.push_back(ea);
  y.record = eb;
  try {
    cuda::enqueue_order(p);
    FAIL() << "a cycle was ordered";
  } catch (const RuntimeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cannot progress"), std::string::npos) << m;
    EXPECT_NE(m.find("x [stream a, op 0] waits for event(s) 1"), std::string::npos) << m;
    EXPECT_NE(m.find("y [stream b, op 0] waits for event(s) 0"), std::string::npos) << m;
  }
}

TEST(CudaEnqueueOrder, AnEventNobodyRecordsIsAnError) {
  Program p;
  const StreamId a = p.add_stream("a");
  add(p, a, "first");
  add(p, a, "waits_forever").waits.push_back(p.new_event());
  EXPECT_THROW(cuda::enqueue_order(p), RuntimeError);
  Program q;
  const StreamId s = q.add_stream("s");
  add(q, s, "records_nothing_valid").record = 5;  // the Program has no events
  EXPECT_THROW(cuda::enqueue_order(q), RuntimeError);
}

// cuBLASLt is loaded by the back end's first call into it, not when the program starts (loading
// it costs every dtsim command about 0.4 s: bench/results/startup.md); the library then loaded
// is the one the headers describe. ctest runs each test in its own process, so nothing has
// called into cuBLASLt before this test's first line.
TEST(CublasLtOnDemand, LoadedAtTheFirstCallAndItIsTheHeadersVersion) {
  EXPECT_FALSE(cuda::cublaslt_loaded());
  const size_t version = cublasLtGetVersion();  // no device needed
  EXPECT_TRUE(cuda::cublaslt_loaded());
  EXPECT_EQ(version / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR)) << version;
  EXPECT_EQ(version / 100 % 100, static_cast<size_t>(CUBLAS_VER_MINOR)) << version;
}
#endif

}  // namespace
}  // namespace dtsim::real
