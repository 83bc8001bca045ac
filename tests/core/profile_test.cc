// Hardware profiles (core/hardware/profile.h): the CPU example loads, write_profile round-trips,
// every malformed or missing field is an InputError at the profile's file, line and key, and a
// scenario's cluster.profile replaces the GPU's and the fabric's figures (or is refused for
// another GPU). Also the CPU-core catalog device the example measures.
#include "core/hardware/profile.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/collectives/collective_schedule.h"
#include "core/collectives/nccl_model.h"
#include "core/exec/compute_cost.h"
#include "core/hardware/cluster.h"
#include "core/hardware/gemm_table.h"
#include "core/ir/program.h"
#include "core/report/metrics.h"
#include "core/report/report.h"
#include "core/scenario/scenario.h"
#include "tests/support/scratch_dir.h"

namespace dtsim {
namespace {

namespace fs = std::filesystem;

const std::string kExample = DTSIM_SOURCE_DIR "/tests/real/data/cpu-profile-example.yaml";

// A scratch folder of the test (tests/support/scratch_dir.h), removed at its end.
class ScratchDir {
 public:
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = dir_.path() / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  const fs::path& path() const { return dir_.path(); }

 private:
  dtsim::testing::ScratchDir dir_{"profile"};
};

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A valid profile of an H100-SXM with a 2 x 2 x 1 bf16 grid, line by line so that cases can
// break one line and name it.
const char* kValid = R"(dtsim_profile: 1
kind: gpu
gpu_model: H100-SXM
created: 2026-12-01T22:40:00Z
command: dtsim calibrate --gpu -o h100.yaml
machine: {host: node-1, gpu: NVIDIA H100 80GB HBM3}
software: {dtsim: "0.4", cuda: "13.0"}
device:
  memory_bandwidth: 3.0TBps
  kernel_launch_overhead: 4.2us
  gemm:
    - {dtype: bf16, m: 1024, n: 1024, k: 4096, rate: 600TFLOPS}
    - {dtype: bf16, m: 1024, n: 4096, k: 4096, rate: 700TFLOPS}
    - {dtype: bf16, m: 4096, n: 1024, k: 4096, rate: 710TFLOPS}
    - {dtype: bf16, m: 4096, n: 4096, k: 4096, rate: 780TFLOPS}
intra_node:
  bandwidth: 360GBps
  latency: 2.5us
)";

// kValid with line `line` (1-based) replaced by `replacement` ("" deletes it).
std::string with_line(int line, const std::string& replacement) {
  std::istringstream in(kValid);
  std::string out, l;
  for (int i = 1; std::getline(in, l); ++i)
    if (i != line)
      out += l + "\n";
    else if (!replacement.empty())
      out += replacement + "\n";
  return out;
}

std::vector<Diagnostic> problems_of(const std::string& path) {
  try {
    load_profile(path);
  } catch (const InputError& e) {
    return e.diagnostics();
  }
  return {};
}

TEST(Profile, LoadsTheCpuExample) {
  const HardwareProfile p = load_profile(kExample);
  EXPECT_EQ(p.format, 1);
  EXPECT_EQ(p.kind, "cpu");
  EXPECT_EQ(p.gpu_model, "CPU-core");
  EXPECT_EQ(p.created, "2026-12-01T22:40:00Z");
  EXPECT_EQ(p.machine.at("host"), "example-host");
  EXPECT_EQ(p.software.at("eigen"), "3.4");
  EXPECT_DOUBLE_EQ(p.memory_bandwidth.value(), 9.5e9);
  EXPECT_DOUBLE_EQ(p.kernel_launch_overhead.value(), 0.8e-6);
  ASSERT_TRUE(p.attention_factor);
  EXPECT_DOUBLE_EQ(*p.attention_factor, 0.6);
  ASSERT_EQ(p.gemm.size(), 27u);  // 3 x 3 x 3 fp32 shapes
  for (const GemmSample& s : p.gemm) EXPECT_EQ(s.dtype, DType::kFp32);
  EXPECT_DOUBLE_EQ(p.gemm.front().rate.value(), 38.0e9);
  ASSERT_TRUE(p.intra_node_bandwidth && p.intra_node_latency);
  EXPECT_DOUBLE_EQ(p.intra_node_bandwidth->value(), 4.8e9);
  EXPECT_DOUBLE_EQ(p.intra_node_latency->value(), 0.9e-6);
  ASSERT_EQ(p.collectives.size(), 2u);
  EXPECT_EQ(p.collectives[1].op, "all-reduce");
  EXPECT_DOUBLE_EQ(p.collectives[1].size.value(), 16.0 * 1024 * 1024);
  ASSERT_EQ(p.p2p.size(), 2u);
  EXPECT_DOUBLE_EQ(p.p2p[0].time.value(), 0.9e-6);
  EXPECT_EQ(p.file, kExample);
}

TEST(Profile, WriteThenLoadIsEqual) {
  ScratchDir dir;
  // The example, and a profile in memory with figures no short decimal writes exactly.
  HardwareProfile example = load_profile(kExample);
  HardwareProfile odd;
  odd.kind = "gpu";
  odd.gpu_model = "H200-SXM";
  odd.created = "2026-12-01T23:05:17.25Z";
  odd.command = "dtsim calibrate --gpu -o 'h200 run.yaml' # with: a colon";
  odd.machine = {{"host", "gpu-17"}, {"note", "quotes \" and : colons"}, {"empty", ""}};
  odd.software = {};
  odd.memory_bandwidth = BytesPerSecond(4.1e12 / 3);
  odd.kernel_launch_overhead = Seconds(4.2e-6 * 1.000000001);
  odd.attention_factor = 0.1 + 0.2;
  for (double m : {512.0, 8192.0})
    for (double k : {1024.0, 16384.0}) {
      odd.gemm.push_back({DType::kBf16, m, 4096, k, FlopsPerSecond(612e12 / 7 * (m + k) / 9000)});
      odd.gemm.push_back({DType::kFp8, m, 4096, k, FlopsPerSecond(1.3e15 + m * k / 3)});
    }
  odd.intra_node_latency = Seconds(2.1e-6 / 3);
  odd.collectives = {{"all-gather", 8, Bytes(3 * 1048576.0 + 12), Seconds(31.2e-6 / 7),
                      BytesPerSecond(60.1e9 / 7)}};
  odd.p2p = {{Bytes(1), Seconds(1e-9 / 3), BytesPerSecond(0)},
             {Bytes(1 << 30), Seconds(0.01 / 3), BytesPerSecond(98e9 / 3)}};
  for (HardwareProfile* p : {&example, &odd}) {
    std::ostringstream text;
    write_profile(*p, text);
    const std::string path = dir.write("round-trip.yaml", text.str());
    HardwareProfile back = load_profile(path);
    p->file = path;
    EXPECT_EQ(back, *p) << text.str();
    // The quantities carry units, as a scenario writes them.
    EXPECT_NE(text.str().find("FLOPS"), std::string::npos);
  }
}

TEST(Profile, WrittenQuantitiesUseReadableUnits) {
  HardwareProfile p = load_profile(kExample);
  std::ostringstream text;
  write_profile(p, text);
  for (const char* expected : {"memory_bandwidth: 9.5GBps", "kernel_launch_overhead: 0.8us",
                               "rate: 38GFLOPS", "size: 1MiB", "latency: 0.9us"})
    EXPECT_NE(text.str().find(expected), std::string::npos) << expected << "\n" << text.str();
}

struct BrokenCase {
  const char* name;
  int line;                 // the line of kValid to replace
  const char* replacement;  // "" deletes it
  int expect_line;          // the line the diagnostic names
  const char* expect_key;
  const char* expect_text;
};

TEST(Profile, EachMalformedOrMissingFieldNamesFileLineAndKey) {
  const BrokenCase cases[] = {
      {"missing bandwidth", 9, "", 8, "device.memory_bandwidth", "missing"},
      {"bandwidth without per-second", 9, "  memory_bandwidth: 3.0TB", 9, "device.memory_bandwidth",
       "per-second"},
      {"overhead without unit", 10, "  kernel_launch_overhead: 4.2", 10,
       "device.kernel_launch_overhead", "no unit"},
      {"overhead of seconds", 10, "  kernel_launch_overhead: 4.2s", 10,
       "device.kernel_launch_overhead", "above any plausible measurement"},
      {"rate without unit", 13, "    - {dtype: bf16, m: 1024, n: 4096, k: 4096, rate: 700}", 13,
       "device.gemm[1].rate", "no unit"},
      {"rate of FLOPS for TFLOPS", 13,
       "    - {dtype: bf16, m: 1024, n: 4096, k: 4096, rate: 700FLOPS}", 13, "device.gemm[1].rate",
       "below any plausible measurement"},
      {"fractional m", 14, "    - {dtype: bf16, m: 4096.5, n: 1024, k: 4096, rate: 710TFLOPS}", 14,
       "device.gemm[2].m", "whole number"},
      {"unknown dtype", 12, "    - {dtype: bf17, m: 1024, n: 1024, k: 4096, rate: 600TFLOPS}", 12,
       "device.gemm[0].dtype", "fp32, tf32, fp16, bf16, fp8"},
      {"missing rate", 15, "    - {dtype: bf16, m: 4096, n: 4096, k: 4096}", 15,
       "device.gemm[3].rate", "missing"},
      {"unknown key in an item", 15,
       "    - {dtype: bf16, m: 4096, n: 4096, k: 4096, rate: 780TFLOPS, rat: 1}", 15,
       "device.gemm[3].rat", "unknown key"},
      {"incomplete grid", 15, "", 11, "device.gemm", "m=4096 n=4096 k=4096 is missing"},
      {"format 2", 1, "dtsim_profile: 2", 1, "dtsim_profile", "reads format 1"},
      {"missing format", 1, "", 1, "dtsim_profile", "missing"},
      {"kind tpu", 2, "kind: tpu", 2, "kind", "gpu or cpu"},
      {"missing gpu_model", 3, "", 1, "gpu_model", "missing"},
      {"created not ISO-8601", 4, "created: yesterday", 4, "created", "ISO-8601"},
      {"machine without host", 6, "machine: {gpu: H100}", 6, "machine.host", "missing"},
      {"software not a map", 7, "software: 0.4", 7, "software", "expected a map"},
      {"misspelt top-level key", 8, "devcie:", 8, "devcie", "did you mean 'device'?"},
      {"intra_node latency negative", 18, "  latency: -2.5us", 18, "intra_node.latency",
       "negative"},
      {"intra_node bits for bytes", 17, "  bandwidth: 360Gb", 17, "intra_node.bandwidth",
       "per-second"},
      {"duplicate key", 2, "kind: gpu\nkind: cpu", 3, "kind", "duplicate key"},
  };
  ScratchDir dir;
  for (const BrokenCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.write("broken.yaml", with_line(c.line, c.replacement));
    const auto d = problems_of(path);
    bool found = false;
    for (const Diagnostic& x : d)
      found = found ||
              (x.location.file == path && x.location.line == c.expect_line &&
               x.key_path == c.expect_key && x.message.find(c.expect_text) != std::string::npos);
    std::string all;
    for (const Diagnostic& x : d) all += x.render() + "\n";
    EXPECT_TRUE(found) << "expected " << path << ":" << c.expect_line << ": " << c.expect_key
                       << ": ..." << c.expect_text << "...\nfound:\n"
                       << all;
  }
}

TEST(Profile, ReportsEveryProblemInOnePass) {
  ScratchDir dir;
  std::string text = with_line(2, "kind: tpu");
  text = text.replace(text.find("3.0TBps"), 7, "3.0TB");
  const auto d = problems_of(dir.write("two.yaml", text));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].key_path, "kind");
  EXPECT_EQ(d[1].key_path, "device.memory_bandwidth");
}

TEST(Profile, WholeFileProblems) {
  ScratchDir dir;
  auto first = [](const std::string& path) {
    const auto d = problems_of(path);
    return d.empty() ? std::string() : d.front().render();
  };
  EXPECT_NE(first(dir.write("empty.yaml", "")).find("the profile is empty"), std::string::npos);
  EXPECT_NE(first(dir.write("list.yaml", "- 1\n- 2\n")).find("at the top level"),
            std::string::npos);
  EXPECT_NE(first(dir.write("syntax.yaml", "device: {a: [1, 2}\n")).find("YAML syntax error"),
            std::string::npos);
  EXPECT_NE(first(dir.write("binary.yaml", std::string("a\0b", 3))).find("binary file"),
            std::string::npos);
  EXPECT_NE(first(dir.write("latin1.yaml", "machine: {host: caf\xE9}\n")).find(":1:"),
            std::string::npos);
  EXPECT_NE(first(dir.path().string()).find("is a directory"), std::string::npos);
  EXPECT_NE(first((dir.path() / "absent.yaml").string()).find("cannot open"), std::string::npos);
  // Larger than the scenario loader's 16 MiB bound.
  EXPECT_NE(
      first(dir.write("huge.yaml", "# " + std::string(16u << 20, 'x') + "\n")).find("larger than"),
      std::string::npos);
}

// profile.cc keeps its own list of collective names (core/ir sits above core/hardware): every
// name dtsim's IR has must load.
TEST(Profile, AcceptsEveryCollectiveTheIrNames) {
  ScratchDir dir;
  for (const auto& k : kCollectiveKindNames) {
    const std::string text = std::string(kValid) + "collectives:\n  - {op: " + std::string(k.name) +
                             ", ranks: 8, size: 1MiB, time: 31.2us, busbw: 60.1GBps}\n";
    EXPECT_NO_THROW(load_profile(dir.write("op.yaml", text))) << k.name;
  }
  const std::string bad = std::string(kValid) +
                          "collectives:\n  - {op: all-shuffle, ranks: 8, size: 1MiB, time: 31.2us, "
                          "busbw: 60.1GBps}\n";
  const auto d = problems_of(dir.write("bad-op.yaml", bad));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key_path, "collectives[0].op");
  EXPECT_EQ(d[0].location.line, 20);
}

// --- cluster.profile in a scenario ---------------------------------------------------------

std::string cpu_scenario(const std::string& profile_line) {
  return "cluster:\n  gpu: CPU-core\n  nodes: 1\n  gpus_per_node: 2\n" + profile_line +
         "model: {preset: gpt3-125m}\n"
         "training: {precision: fp32, global_batch_size: 2, micro_batch_size: 1}\n";
}

TEST(ProfileScenario, ReplacesTheGpusAndTheFabricsFigures) {
  const Scenario sc = load_scenario_text(cpu_scenario("  profile: " + kExample + "\n"), "s.yaml");
  const HardwareProfile p = load_profile(kExample);
  const GpuSpec& g = sc.cluster.gpu;
  EXPECT_EQ(sc.cluster.profile, kExample);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth.value(), 9.5e9);
  EXPECT_EQ(g.memory_efficiency, 1);
  EXPECT_DOUBLE_EQ(g.kernel_launch_overhead.value(), 0.8e-6);
  ASSERT_EQ(g.gemm_table.count(DType::kFp32), 1u);
  EXPECT_EQ(g.gemm_table.size(), 1u);
  EXPECT_EQ(g.attention_factor, 0.6);
  // The vendor (here the catalog's nominal) fp32 peak stays, so MFU stays a fraction of it.
  EXPECT_DOUBLE_EQ(g.peak_for(DType::kFp32).value(), 2 * 8 * 2 * 3.0e9);
  EXPECT_EQ(g.source.rfind("measured: " + kExample +
                               " (created 2026-12-01T22:40:00Z on "
                               "example-host)",
                           0),
            0u)
      << g.source;
  EXPECT_NE(g.source.find("nominal"), std::string::npos) << "the catalog's source is kept after";
  // The intra-node fabric: measured bandwidth (achieved, so at efficiency 1) and latency.
  const IntraNodeFabricSpec& f = sc.cluster.intra_node;
  EXPECT_EQ(f.name, "shared-memory");
  EXPECT_DOUBLE_EQ(f.per_gpu_bandwidth.value(), 4.8e9);
  EXPECT_DOUBLE_EQ(f.usable_bandwidth().value(), 4.8e9);
  EXPECT_DOUBLE_EQ(f.latency.value(), 0.9e-6);
  EXPECT_EQ(f.source.rfind("measured: " + kExample, 0), 0u) << f.source;
}

TEST(ProfileScenario, ComputeTimesUseTheMeasuredFigures) {
  const Scenario sc = load_scenario_text(cpu_scenario("  profile: " + kExample + "\n"), "s.yaml");
  const GpuSpec& g = sc.cluster.gpu;
  // A GEMM between grid points: m = 128 is halfway between 64 and 256 in log2, n and k on the
  // grid, so the rate is the mean of the two measured rates, 38.0 and 45.6 GFLOP/s (example file,
  // m = 64 / 256 at n = k = 64).
  ComputeOp gemm;
  gemm.kind = KernelKind::kGemm;
  gemm.dtype = DType::kFp32;
  gemm.shape = GemmShape{3, 128, 64, 64};
  gemm.flops = Flops(2.0 * 3 * 128 * 64 * 64);
  gemm.bytes = Bytes(4.0 * 3 * (128 * 64 + 64 * 64 + 128 * 64));
  const double rate = (38.0e9 + 45.6e9) / 2;
  EXPECT_DOUBLE_EQ(compute_time(gemm, g).value(), gemm.flops.value() / rate + 0.8e-6);
  // The same through the table the profile's samples make.
  std::vector<GemmPoint> points;
  for (const GemmSample& s : load_profile(kExample).gemm) points.push_back({s.m, s.n, s.k, s.rate});
  EXPECT_EQ(
      compute_time(gemm, g).value(),
      (gemm.flops / GemmTable::from_samples(points).rate(128, 64, 64) + Seconds(0.8e-6)).value());
  // A memory-bound op: bytes over the measured bandwidth, plus the measured overhead.
  ComputeOp add;
  add.kind = KernelKind::kElementwise;
  add.dtype = DType::kFp32;
  add.flops = Flops(1e6);
  add.bytes = Bytes(12e6);
  EXPECT_DOUBLE_EQ(compute_time(add, g).value(), 12e6 / 9.5e9 + 0.8e-6);
}

TEST(ProfileScenario, AProfileOfAnotherGpuIsAnErrorAtClusterProfile) {
  try {
    load_scenario_text("cluster:\n  gpu: H100-SXM\n  nodes: 1\n  profile: " + kExample +
                           "\nmodel: {preset: gpt3-125m}\n",
                       "s.yaml");
    FAIL() << "a CPU-core profile applied to an H100";
  } catch (const InputError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    const Diagnostic& d = e.diagnostics().front();
    EXPECT_EQ(d.key_path, "cluster.profile");
    EXPECT_EQ(d.location.file, "s.yaml");
    EXPECT_EQ(d.location.line, 4);
    EXPECT_NE(d.message.find("CPU-core"), std::string::npos) << d.message;
    EXPECT_NE(d.message.find("H100-SXM"), std::string::npos) << d.message;
  }
  // The model names compare case-insensitively.
  ScratchDir dir;
  std::string text = read(kExample);
  text.replace(text.find("gpu_model: CPU-core"), 19, "gpu_model: cpu-CORE");
  EXPECT_NO_THROW(load_scenario_text(
      cpu_scenario("  profile: " + dir.write("lower.yaml", text) + "\n"), "s.yaml"));
}

TEST(ProfileScenario, ErrorsInsideTheProfileNameTheProfile) {
  ScratchDir dir;
  const std::string profile = dir.write("broken.yaml", with_line(10, ""));
  try {
    load_scenario_text(cpu_scenario("  profile: " + profile + "\n"), "s.yaml");
    FAIL() << "a profile without its launch overhead loaded";
  } catch (const InputError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    const Diagnostic& d = e.diagnostics().front();
    EXPECT_EQ(d.location.file, profile);
    EXPECT_EQ(d.location.line, 8);  // the device map that lacks the key
    EXPECT_EQ(d.key_path, "device.kernel_launch_overhead");
  }
}

TEST(ProfileScenario, RelativePathsStartAtTheScenarioOrTheCurrentDirectory) {
  ScratchDir dir;
  fs::create_directories(dir.path() / "scenarios" / "profiles");
  dir.write("scenarios/profiles/cpu.yaml", read(kExample));
  const std::string scenario =
      dir.write("scenarios/cpu.yaml", cpu_scenario("  profile: profiles/cpu.yaml\n"));
  const fs::path old_cwd = fs::current_path();
  fs::current_path(dir.path());
  // From the scenario file's directory, whichever the current one is.
  const Scenario sc = load_scenario("scenarios/cpu.yaml");
  EXPECT_EQ(sc.cluster.profile, "scenarios/profiles/cpu.yaml");
  EXPECT_DOUBLE_EQ(sc.cluster.gpu.memory_bandwidth.value(), 9.5e9);
  // A --set path from the current directory.
  const Scenario over = load_scenario(scenario, {{"cluster.profile=scenarios/profiles/cpu.yaml"}});
  EXPECT_EQ(over.cluster.profile, "scenarios/profiles/cpu.yaml");
  try {
    load_scenario(scenario, {{"cluster.profile=profiles/cpu.yaml"}});
    ADD_FAILURE() << "a --set path was taken from the scenario's directory";
  } catch (const InputError& e) {
    const Diagnostic& d = e.diagnostics().front();
    EXPECT_EQ(d.location.file, "--set");
    EXPECT_EQ(d.key_path, "cluster.profile");
    EXPECT_NE(d.message.find("current directory"), std::string::npos) << d.message;
  }
  fs::current_path(old_cwd);
}

TEST(ProfileScenario, WithoutAProfileNothingChanges) {
  const Scenario sc = load_scenario_text(cpu_scenario(""), "s.yaml");
  EXPECT_TRUE(sc.cluster.profile.empty());
  EXPECT_TRUE(sc.cluster.gpu.gemm_table.empty());
  EXPECT_EQ(sc.cluster.gpu.source, find_gpu("CPU-core")->source);
}

TEST(ProfileScenario, ResultsConfigShowsTheProfile) {
  Results r;
  r.gpu = "CPU-core";
  EXPECT_FALSE(results_to_json(r)["config"].contains("profile"));
  r.profile = kExample;
  EXPECT_EQ(results_to_json(r)["config"]["profile"], kExample);
}

TEST(ProfileApply, RefusesAnotherGpuNamingBoth) {
  ClusterConfig c;
  c.gpu = *find_gpu("H200-SXM");
  HardwareProfile p = load_profile(kExample);
  try {
    apply_profile(p, c);
    FAIL();
  } catch (const InputError& e) {
    const std::string& m = e.diagnostics().front().message;
    EXPECT_NE(m.find("CPU-core"), std::string::npos) << m;
    EXPECT_NE(m.find("H200-SXM"), std::string::npos) << m;
  }
}

// --- the CPU-core device -------------------------------------------------------------------

TEST(CpuCore, IsAnFp32OnlyDeviceWithNominalFigures) {
  const GpuSpec* g = find_gpu("CPU-core");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->vendor, "CPU");
  EXPECT_EQ(g->peak.size(), 1u);
  // 2 FMA units x 8 fp32 lanes x 2 FLOP x 3.0 GHz.
  EXPECT_DOUBLE_EQ(g->peak.at(DType::kFp32).value(), 2 * 8 * 2 * 3.0e9);
  EXPECT_EQ(g->sm_count, 0);
  EXPECT_EQ(g->default_intra_node, "shared-memory");
  EXPECT_NE(g->source.find("nominal"), std::string::npos);
  EXPECT_NE(g->source.find("dtsim calibrate --cpu"), std::string::npos);
  const IntraNodeFabricSpec* f = find_fabric("shared-memory");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->kind, FabricKind::kSwitch);
  EXPECT_NE(f->source.find("nominal"), std::string::npos);
}

TEST(CpuCore, TrainsInFp32OnlyAndRunsTwoRanksPerNode) {
  const Scenario sc = load_scenario_text(cpu_scenario(""), "s.yaml");
  EXPECT_EQ(sc.cluster.intra_node.name, "shared-memory");
  EXPECT_EQ(sc.cluster.total_gpus(), 2);
  try {
    load_scenario_text(
        "cluster: {gpu: CPU-core, nodes: 1, gpus_per_node: 2}\n"
        "model: {preset: gpt3-125m}\ntraining: {precision: bf16}\n",
        "s.yaml");
    FAIL() << "bf16 on CPU-core loaded";
  } catch (const InputError& e) {
    EXPECT_EQ(e.diagnostics().front().key_path, "training.precision");
  }
}

// MPI, not NCCL, runs a CPU-core cluster's collectives: NCCL's model and NVLS stay out, whatever
// the fabric is called.
TEST(CpuCore, NcclsModelDoesNotApply) {
  const Scenario cpu = load_scenario_text(
      "cluster: {gpu: CPU-core, nodes: 2, gpus_per_node: 8, intra_node: nvswitch-nvlink4}\n"
      "model: {preset: gpt3-125m}\ntraining: {precision: fp32}\n",
      "s.yaml");
  const Cluster c(cpu.cluster);
  EXPECT_FALSE(nccl_runs_collectives(c));
  EXPECT_THROW(nccl_system(c, 16), InputError);
  EXPECT_FALSE(nvls_supported(c));
  const Scenario h100 = load_scenario_text(
      "cluster: {gpu: H100-SXM, nodes: 2}\nmodel: {preset: gpt3-125m}\n", "s.yaml");
  const Cluster nvidia(h100.cluster);
  EXPECT_TRUE(nccl_runs_collectives(nvidia));
  EXPECT_NO_THROW(nccl_system(nvidia, 16));
  EXPECT_TRUE(nvls_supported(nvidia));
}

}  // namespace
}  // namespace dtsim
