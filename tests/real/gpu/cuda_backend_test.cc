// The GPU back end where no GPU is needed: device discovery on a machine without a driver (the
// CI machines, environment.md "CUDA and NCCL") and the back end's tables.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "real/backends.h"
#if DTSIM_TEST_CUDA_INTERNALS
#include "real/cuda/cuda_calibrate.h"
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
#endif

}  // namespace
}  // namespace dtsim::real
