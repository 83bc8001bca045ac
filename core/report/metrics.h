// Metrics: from a Trace to the result keys of design.md section 5.
//
// Contract:
// - step_time_s is the mean time of one optimizer step over the global batch.
// - The breakdown is taken on the slowest simulated rank and sums to the step time:
//   compute = time any compute kernel runs; exposed_communication = time a collective runs
//   while no compute does; pipeline_bubble = time send/recv waits while nothing else runs, plus
//   idle time on pipelined jobs; straggler_wait (later: injected slowdowns); other = the rest
//   (idle gaps, launch latency between dependent ops).
// - FLOPs: model FLOPs are the architecture's forward+backward GEMM and attention FLOPs over
//   the global batch (Narayanan et al. 2021); hardware FLOPs add recomputation. MFU and HFU
//   divide by step time x GPUs x dense peak at the training precision.
#pragma once

#include <array>
#include <string>

#include "core/ir/model_graph.h"
#include "core/ir/program.h"
#include "core/ir/trace.h"
#include "core/scenario/scenario.h"

namespace dtsim {

struct Breakdown {
  double compute = 0;
  double exposed_communication = 0;
  double pipeline_bubble = 0;
  double straggler_wait = 0;
  double other = 0;
};

struct Results {
  std::string engine;
  std::string scenario;
  double step_time_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  double hfu = 0;
  Breakdown breakdown_s;
  double peak_bytes_per_gpu = 0;
  double capacity_bytes = 0;
  bool fits = true;
  std::array<double, kMemoryCategories> per_category_bytes{};
  double parameters = 0;
  double model_flops_per_step = 0;
  double hardware_flops_per_step = 0;
  // Context for readers of the report.
  int gpus = 1;
  int data_parallel = 1;
  std::string parallelism;  // "TP 8 (SP) x PP 8 (interleaved, v 2) x DP 16, ZeRO-1", for people
  int64_t micro_batches = 1;
  int64_t global_batch_size = 1;
  int iterations = 1;
  std::string gpu;
  std::string precision;
};

Results compute_results(const Scenario& scenario, const ModelGraph& model, const Job& job,
                        const Trace& trace);

}  // namespace dtsim
