// Conformance of the per-rank Programs (docs/design.md section 2): for a data-parallel, a 3D (TP
// with SP, interleaved PP, DP, ZeRO-1), a mixture-of-experts, a PipeDream-async, a PowerSGD with
// PipeDream-2BW and a top-k scenario at 16-32 GPUs, every rank's
// unfolded Program agrees with its peers on what the executors match by order (the collectives
// of each group, the sends and receives of each pair), the folded Job's Programs and
// build_program()'s are the unfolded Job's, and folded and unfolded runs give the same step
// time on the analytic and the SimGrid engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "core/exec/analytic_executor.h"
#include "core/report/metrics.h"
#include "core/strategy/strategy.h"
#include "driver/predict.h"
#include "driver/rank_program.h"
#include "sim/simgrid_executor.h"

namespace dtsim {
namespace {

// Four nodes of eight H100 with a NIC per GPU on a non-blocking fat-tree: folding tensor- and
// context-parallel ranks is exact there (parallel_step.cc, folding_is_exact).
std::string cluster_yaml(int nodes) {
  return "cluster: {gpu: H100-SXM, nodes: " + std::to_string(nodes) +
         ", gpus_per_node: 8, network: {preset: ib-ndr, topology: fat-tree, nics_per_node: 8}}\n";
}

struct Case {
  std::string name;
  std::string yaml;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<Case> cases() {
  return {
      {"DataParallel",
       cluster_yaml(2) +
           "model: {family: gpt, num_layers: 2, hidden_size: 512, num_attention_heads: 8, "
           "seq_length: 512, vocab_size: 8192}\n"
           "parallelism: {data: auto}\n"
           "training: {global_batch_size: 32, micro_batch_size: 1, precision: bf16}\n"},
      {"TensorSequenceInterleavedPipelineDataZero1",
       cluster_yaml(4) +
           "model: {family: gpt, num_layers: 4, hidden_size: 512, num_attention_heads: 8, "
           "seq_length: 512, vocab_size: 8192}\n"
           "parallelism: {tensor: 2, sequence_parallel: true, pipeline: 2, schedule: interleaved,"
           " virtual_stages: 2, data: auto, zero_stage: 1}\n"
           "training: {global_batch_size: 32, micro_batch_size: 1, precision: bf16}\n"},
      {"MixtureOfExperts",
       cluster_yaml(4) +
           "model: {family: moe, num_layers: 2, hidden_size: 512, num_attention_heads: 8, "
           "seq_length: 512, vocab_size: 8192, num_experts: 8, top_k: 2}\n"
           "parallelism: {tensor: 2, sequence_parallel: true, pipeline: 2, data: auto, "
           "expert: 4}\n"
           "training: {global_batch_size: 16, micro_batch_size: 1, precision: bf16}\n"},
      {"PipeDreamAsyncPipelineData",
       cluster_yaml(2) +
           "model: {family: gpt, num_layers: 4, hidden_size: 512, num_attention_heads: 8, "
           "seq_length: 512, vocab_size: 8192}\n"
           "parallelism: {tensor: 2, pipeline: 4, data: auto, schedule: pipedream-async}\n"
           "training: {global_batch_size: 16, micro_batch_size: 2, precision: bf16}\n"},
      {"PowerSgdPipeline2BW",
       cluster_yaml(2) +
           "model: {family: gpt, num_layers: 4, hidden_size: 512, num_attention_heads: 8, "
           "seq_length: 512, vocab_size: 8192}\n"
           "parallelism: {pipeline: 2, data: auto, schedule: pipedream-2bw}\n"
           "training: {global_batch_size: 32, micro_batch_size: 1, precision: bf16, "
           "compression: powersgd, gradient_bucket: 4MiB}\n"},
      {"TopKDataParallel",
       cluster_yaml(2) +
           "model: {family: gpt, num_layers: 2, hidden_size: 512, num_attention_heads: 8, "
           "seq_length: 512, vocab_size: 8192}\n"
           "parallelism: {data: auto}\n"
           "training: {global_batch_size: 32, micro_batch_size: 1, precision: bf16, "
           "compression: topk, overlap_grad_reduce: false}\n"},
  };
}

// One op as the executors see it: its body (every field), label, waits and recorded event.
std::string describe(const Op& op) {
  std::ostringstream out;
  out.precision(17);
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, ComputeOp>)
          out << "compute " << static_cast<int>(body.kind) << " " << body.flops.value() << " "
              << body.bytes.value() << " " << static_cast<int>(body.dtype) << " "
              << body.shape.batch << "x" << body.shape.m << "x" << body.shape.n << "x"
              << body.shape.k;
        else if constexpr (std::is_same_v<T, CollectiveOp>)
          out << "collective " << to_string(body.kind) << " group " << body.group << " "
              << body.bytes.value() << " " << static_cast<int>(body.dtype) << " "
              << to_string(body.algorithm) << " root " << body.root << " "
              << to_string(body.protocol);
        else if constexpr (std::is_same_v<T, SendOp>)
          out << "send to " << body.peer << " " << body.bytes.value() << " tag " << body.tag;
        else if constexpr (std::is_same_v<T, RecvOp>)
          out << "recv from " << body.peer << " " << body.bytes.value() << " tag " << body.tag;
        else if constexpr (std::is_same_v<T, MemoryOp>)
          out << "memory " << to_string(body.category) << " " << body.bytes.value();
        else
          out << "segment of " << body.ops->size() << " ops, mb " << body.micro_batch;
      },
      op.body);
  out << " | " << op.label.name << " L" << op.label.layer << " mb" << op.label.micro_batch << " "
      << to_string(op.label.phase) << " | waits";
  for (EventId e : op.waits) out << " " << e;
  if (op.record) out << " | records " << *op.record;
  return out.str();
}

// Two Programs are the same op by op; reports the first difference.
void expect_same_program(const Program& a, const Program& b, const std::string& what) {
  ASSERT_EQ(a.rank, b.rank) << what;
  ASSERT_EQ(a.num_events, b.num_events) << what << " rank " << a.rank;
  ASSERT_EQ(a.streams.size(), b.streams.size()) << what << " rank " << a.rank;
  for (size_t s = 0; s < a.streams.size(); ++s) {
    ASSERT_EQ(a.streams[s].name, b.streams[s].name) << what << " rank " << a.rank;
    ASSERT_EQ(a.streams[s].ops.size(), b.streams[s].ops.size())
        << what << " rank " << a.rank << " stream " << a.streams[s].name;
    for (size_t i = 0; i < a.streams[s].ops.size(); ++i)
      ASSERT_EQ(describe(a.streams[s].ops[i]), describe(b.streams[s].ops[i]))
          << what << " rank " << a.rank << " stream " << a.streams[s].name << " op " << i;
  }
}

// What the executors match collectives by (core/exec/activity_graph.cc): the n-th collective a
// member issues on a group, streams in order and ops in order within a stream.
using CollectiveSequence = std::vector<std::tuple<CollectiveKind, double, DType>>;

void expect_conformant(const Job& job) {
  ASSERT_EQ(static_cast<int>(job.programs.size()), job.world_size);
  for (size_t r = 0; r < job.programs.size(); ++r)
    ASSERT_EQ(job.programs[r].rank, static_cast<Rank>(r));
  for (size_t g = 0; g < job.groups.size(); ++g) ASSERT_EQ(job.groups[g].id, GroupId(g));

  // Collectives: every member of a group issues the same sequence on it.
  std::map<std::pair<Rank, GroupId>, CollectiveSequence> issued;
  // Point to point: the bytes of the n-th send of (src, dst, tag), and of the n-th receive.
  std::map<std::tuple<Rank, Rank, int>, std::vector<double>> sent, received;
  for (const auto& p : job.programs)
    for (const auto& stream : p.streams)
      for (const auto& op : stream.ops) {
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
          const auto& members = job.group(c->group).ranks;
          ASSERT_TRUE(std::find(members.begin(), members.end(), p.rank) != members.end())
              << "rank " << p.rank << " issues " << op.label.name << " on group "
              << job.group(c->group).name << " it is not a member of";
          issued[std::make_pair(p.rank, c->group)].emplace_back(c->kind, c->bytes.value(),
                                                                c->dtype);
        } else if (const auto* s = std::get_if<SendOp>(&op.body)) {
          sent[{p.rank, s->peer, s->tag}].push_back(s->bytes.value());
        } else if (const auto* v = std::get_if<RecvOp>(&op.body)) {
          received[{v->peer, p.rank, v->tag}].push_back(v->bytes.value());
        }
      }
  int groups_used = 0;
  for (const auto& g : job.groups) {
    const CollectiveSequence& first = issued[std::make_pair(g.ranks.front(), g.id)];
    if (!first.empty()) ++groups_used;
    for (Rank r : g.ranks)
      EXPECT_EQ(issued[std::make_pair(r, g.id)], first)
          << "group " << g.name << " " << g.id << ": rank " << r << " and rank " << g.ranks.front()
          << " issue different collectives";
  }
  EXPECT_GT(groups_used, 0);
  EXPECT_EQ(sent, received) << "every send has the receive of the same bytes, tag and order";
}

double step_time_s(const driver::Plan& plan, const Job& job, Executor& executor) {
  const Trace trace = executor.run(job, plan.cluster, RunOptions{});
  return compute_results(plan.scenario, plan.model, job, trace).step_time_s;
}

class Conformance : public ::testing::TestWithParam<Case> {};

TEST_P(Conformance, EveryRanksProgramMatchesItsPeersAndTheFoldedJob) {
  const driver::Plan plan =
      driver::plan_scenario(load_scenario_text(GetParam().yaml, GetParam().name + ".yaml"));
  const Job unfolded = driver::unfolded_job(plan);
  const Job& folded = plan.job;
  ASSERT_EQ(unfolded.world_size, plan.cluster.world_size());
  ASSERT_LT(folded.programs.size(), unfolded.programs.size());
  expect_conformant(unfolded);

  // The same groups, with the same ids, folded or not.
  ASSERT_EQ(folded.groups.size(), unfolded.groups.size());
  for (size_t g = 0; g < folded.groups.size(); ++g) {
    EXPECT_EQ(folded.groups[g].id, unfolded.groups[g].id);
    EXPECT_EQ(folded.groups[g].name, unfolded.groups[g].name);
    EXPECT_EQ(folded.groups[g].ranks, unfolded.groups[g].ranks);
  }
  // Each folded Program is the unfolded one of its rank, and so is build_program's.
  for (const auto& p : folded.programs)
    expect_same_program(p, *unfolded.program_for(p.rank), "folded");
  for (const auto& p : unfolded.programs)
    expect_same_program(driver::build_program(plan, p.rank), p, "build_program");
}

TEST_P(Conformance, FoldedAndUnfoldedRunsTakeTheSameTime) {
  const driver::Plan plan =
      driver::plan_scenario(load_scenario_text(GetParam().yaml, GetParam().name + ".yaml"));
  const Job unfolded = driver::unfolded_job(plan);
  AnalyticExecutor analytic;
  sim::SimGridExecutor simgrid(sim::SimGridOptions{FidelitySetting::kCollective, DType::kBf16});
  for (Executor* executor : {static_cast<Executor*>(&analytic), static_cast<Executor*>(&simgrid)}) {
    const double folded_s = step_time_s(plan, plan.job, *executor);
    const double unfolded_s = step_time_s(plan, unfolded, *executor);
    std::printf("%-45s %-8s folded %.6f s (%zu programs), unfolded %.6f s (%zu)\n",
                GetParam().name.c_str(), executor == &analytic ? "analytic" : "simgrid", folded_s,
                plan.job.programs.size(), unfolded_s, unfolded.programs.size());
    EXPECT_GT(folded_s, 0);
    EXPECT_NEAR(folded_s, unfolded_s, 1e-3 * unfolded_s);
  }
}

INSTANTIATE_TEST_SUITE_P(Scenarios, Conformance, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace dtsim
