#include "core/report/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/hardware/cluster.h"
#include "core/hardware/network_topology.h"
#include "core/strategy/layout.h"
#include "core/strategy/parameter_server.h"
#include "core/strategy/strategy.h"

namespace dtsim {
namespace {

using Interval = std::pair<double, double>;

// Merges intervals into a sorted, disjoint list.
std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double t = 0;
  for (const auto& iv : v) t += iv.second - iv.first;
  return t;
}

// Length of a minus the parts covered by b (both merged).
double length_outside(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double t = 0;
  size_t j = 0;
  for (const auto& iv : a) {
    double cur = iv.first;
    while (j < b.size() && b[j].second <= cur) ++j;
    size_t k = j;
    while (k < b.size() && b[k].first < iv.second) {
      if (b[k].first > cur) t += b[k].first - cur;
      cur = std::max(cur, b[k].second);
      ++k;
    }
    if (cur < iv.second) t += iv.second - cur;
  }
  return t;
}

std::vector<Interval> unite(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> all = a;
  all.insert(all.end(), b.begin(), b.end());
  return merge(std::move(all));
}

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): the bytes each rank moves on its links
// per byte of operation size, for n ranks.
double bus_factor(CollectiveKind kind, double n) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return (n - 1) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
      return 1;
    case CollectiveKind::kBarrier:
      return 0;
  }
  return 0;
}

// `pipeline`: the pipeline depth, for the sends, which go between neighbouring stages of one
// pipeline rather than over a named group.
std::vector<CommGroupVolume> communication_volume(const Job& job, int pipeline) {
  struct Sum {
    double size = 0, bus = 0;
    int64_t most_ops = 0;  // on the simulated rank that issues the most
  };
  // (group name, kind) -> operations of the current program.
  std::map<std::pair<std::string, std::string>, int64_t> ops;
  // group name -> kind -> sums over the simulated ranks.
  std::map<std::string, std::map<std::string, Sum>> sums;
  for (const auto& p : job.programs) {
    ops.clear();
    for (const auto& s : p.streams)
      for (const auto& op : s.ops) {
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
          const Group& g = job.group(c->group);
          if (g.ranks.size() <= 1) continue;  // a group of one moves nothing
          Sum& sum = sums[g.name][std::string(to_string(c->kind))];
          ++ops[{g.name, std::string(to_string(c->kind))}];
          sum.size += c->bytes.value();
          sum.bus += c->bytes.value() * bus_factor(c->kind, static_cast<double>(g.ranks.size()));
        } else if (const auto* snd = std::get_if<SendOp>(&op.body)) {
          // Pushes to and pulls from parameter servers, or pipeline traffic.
          const std::string group =
              snd->tag == kParameterPushTag || snd->tag == kParameterPullTag ? "ps" : "pp";
          Sum& sum = sums[group]["send"];
          ++ops[{group, "send"}];
          sum.size += snd->bytes.value();
          sum.bus += snd->bytes.value();
        }
      }
    for (const auto& [key, n] : ops) {
      Sum& sum = sums[key.first][key.second];
      sum.most_ops = std::max(sum.most_ops, n);
    }
  }
  const double programs = std::max<size_t>(1, job.programs.size());
  std::vector<CommGroupVolume> out;
  for (const auto& [name, kinds] : sums) {
    CommGroupVolume v;
    v.name = name;
    std::set<std::vector<Rank>> distinct;
    for (const auto& g : job.groups)
      if (g.name == name) {
        distinct.insert(g.ranks);
        v.ranks = std::max(v.ranks, static_cast<int>(g.ranks.size()));
      }
    v.groups = static_cast<int64_t>(distinct.size());
    if (distinct.empty() && name == "pp") {  // sends only: one pipeline is the group
      v.ranks = pipeline;
      v.groups = job.world_size / std::max(1, pipeline);
    }
    if (distinct.empty() && name == "ps") {  // the workers and servers exchange as one group
      v.ranks = static_cast<int>(job.programs.size());
      v.groups = 1;
    }
    for (const auto& [kind, sum] : kinds) {
      CommVolume k;
      k.kind = kind;
      k.count = sum.most_ops;
      k.size_bytes = sum.size / programs;
      k.bus_bytes = sum.bus / programs;
      v.size_bytes += k.size_bytes;
      v.bus_bytes += k.bus_bytes;
      v.per_kind.push_back(k);
    }
    out.push_back(std::move(v));
  }
  return out;
}

// "TP 8 (SP) x PP 4 (1f1b) x DP 16, ZeRO-1": the parallel split as the summary names it.
std::string describe_parallelism(const ParallelismConfig& par) {
  std::string p;
  auto add = [&p](const std::string& part) { p += (p.empty() ? "" : " x ") + part; };
  if (par.tensor.value > 1)
    add("TP " + std::to_string(par.tensor.value) + (par.sequence_parallel ? " (SP)" : ""));
  if (par.context.value > 1) add("CP " + std::to_string(par.context.value));
  if (par.pipeline.value > 1)
    add("PP " + std::to_string(par.pipeline.value) + " (" + std::string(to_string(par.schedule)) +
        (par.schedule == Schedule::kInterleaved ? ", v " + std::to_string(par.virtual_stages)
                                                : std::string()) +
        ")");
  add("DP " + std::to_string(par.data.value));
  if (par.expert.value > 1) p += ", EP " + std::to_string(par.expert.value);
  if (par.zero_stage > 0) p += ", ZeRO-" + std::to_string(par.zero_stage);
  return p;
}

// The note and figures for other jobs' traffic on the network (background.link_fraction).
void note_background(const ClusterConfig& cluster, Results& r) {
  const double f = cluster.network.background_fraction;
  if (f <= 0) return;
  // Both engines read the same usable NIC rate, so this note holds for either.
  ClusterConfig alone = cluster;
  alone.network.background_fraction = 0;
  const double ours = Cluster(cluster).usable_nic_bandwidth().value();
  const double line_usable = Cluster(std::move(alone)).usable_nic_bandwidth().value();
  r.background = BackgroundShare{f, 1.0 - f, ours, line_usable - ours};
  r.notes.push_back(
      "other jobs' traffic holds " + format_number("%g", 100 * f) +
      "% of every network link (background.link_fraction " + format_number("%g", f) +
      "): this job ran at " + format_number("%g", 100 * (1 - f)) +
      "% of each NIC, uplink and torus cable, " + format_bandwidth(BytesPerSecond(ours)) +
      " of one NIC's usable " + format_bandwidth(BytesPerSecond(line_usable)) +
      ", as a steady share (the other jobs' bursts are not simulated); links inside a node are "
      "not shared");
}

// Selective recompute (Korthikanti et al. 2022) recomputes the attention core's scores, softmax
// and dropout instead of storing them; FlashAttention stores none of them in the first place, and
// models without an attention core have none: there it changes nothing, which the user is told.
void note_recompute_without_effect(const TrainingConfig& t, const ModelGraph& model, Results& r) {
  if (t.recompute != Recompute::kSelective) return;
  for (const Layer& l : model.layers)
    if (!l.selective_recompute.empty()) return;
  r.notes.push_back(
      std::string("training.recompute selective recomputes nothing here: it recomputes the "
                  "attention core's scores, softmax and dropout rather than storing them, and ") +
      (t.flash_attention ? "FlashAttention (training.flash_attention) does not store them"
                         : "this model has no attention core") +
      "; the step time and the activations are those of recompute none. Use recompute full to "
      "trade compute for memory");
}

// Model and hardware FLOPs per step, TFLOP/s per GPU, MFU and HFU.
void count_flops(const Scenario& sc, const ModelGraph& model, const Job& job, Results& r) {
  // FLOPs. Model FLOPs per step cover the whole global batch.
  r.parameters = model.parameters();
  r.model_flops_per_step = model.model_flops_per_micro_batch().value() *
                           static_cast<double>(r.micro_batches) * r.data_parallel;
  // Hardware FLOPs: what the simulated programs execute, scaled to all GPUs (each simulated
  // rank stands for world_size / programs ranks). Ranks beyond the scenario's cluster (dedicated
  // parameter servers on appended nodes) are not among its GPUs.
  double program_flops = 0;
  double load_factor = 1;
  size_t programs = 0;
  for (const auto& p : job.programs) {
    if (p.rank >= sc.cluster.total_gpus()) continue;
    ++programs;
    for (const auto& s : p.streams)
      for (const auto& op : s.ops)
        if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
          if (c->kind == KernelKind::kGemm || c->kind == KernelKind::kAttention)
            program_flops += c->flops.value();
          load_factor = std::max(load_factor, c->load_factor);
        }
  }
  if (load_factor > 1)
    r.notes.push_back(
        "MoE expert kernels take " + format_number("%.4f", load_factor) +
        " times their mean rank's time: each MoE layer waits at its combine all-to-all for the "
        "expert-parallel rank that drew the most routed tokens (training.moe_load_imbalance" +
        (sc.training.moe_load_imbalance
             ? ")"
             : ": auto, the expected maximum when every token picks its experts uniformly at "
               "random; a trained router's spread is not known to dtsim)") +
        "; FLOPs and the all-to-all volumes stay the mean rank's");
  const double flops_per_gpu = programs == 0 ? 0 : program_flops / static_cast<double>(programs);
  r.hardware_flops_per_step = flops_per_gpu * r.gpus;
  const double peak = sc.cluster.gpu.peak_for(sc.training.precision).value();
  if (r.step_time_s > 0) {
    r.model_tflops_per_gpu = r.model_flops_per_step / r.gpus / r.step_time_s / 1e12;
    r.hardware_tflops_per_gpu = flops_per_gpu / r.step_time_s / 1e12;
    if (peak > 0) {
      r.mfu = r.model_tflops_per_gpu * 1e12 / peak;
      r.hfu = r.hardware_tflops_per_gpu * 1e12 / peak;
    }
  }
}

// Compute, exposed communication, pipeline bubble, straggler wait and the busy time by op kind,
// per step, on the critical rank.
void fill_breakdown(const Scenario& sc, const Job& job, const Trace& trace, Results& r) {
  const double iterations = std::max(1, trace.iterations);
  const double total_time = trace.makespan().value();
  // Breakdown on the rank that finishes last; with stragglers, on the rank that waits longest for
  // slower ones (the slowest rank itself waits for nobody, and its lost time is its own compute).
  std::map<Rank, double> rank_end;
  for (const auto& s : trace.spans) rank_end[s.rank] = std::max(rank_end[s.rank], s.end.value());
  Rank critical = 0;
  double latest = -1;
  for (const auto& [rank, end] : rank_end)
    if (end > latest) {
      latest = end;
      critical = rank;
    }
  std::map<Rank, double> rank_wait;
  for (const auto& w : trace.straggler_waits) rank_wait[w.rank] += (w.end - w.start).value();
  double most_wait = 0;
  for (const auto& [rank, wait] : rank_wait)
    if (wait > most_wait) {
      most_wait = wait;
      critical = rank;
    }
  std::vector<Interval> waits;
  for (const auto& w : trace.straggler_waits)
    if (w.rank == critical) waits.push_back(Interval{w.start.value(), w.end.value()});
  std::vector<Interval> compute, collective, p2p;
  for (const auto& s : trace.spans) {
    if (s.rank != critical) continue;
    Interval iv{s.start.value(), s.end.value()};
    switch (s.kind) {
      case SpanKind::kCompute:
        compute.push_back(iv);
        break;
      case SpanKind::kCollective:
        collective.push_back(iv);
        break;
      case SpanKind::kSend:
      case SpanKind::kRecv:
        p2p.push_back(iv);
        break;
    }
  }
  // Busy time by op kind on the same rank.
  if (const auto prog = std::find_if(job.programs.begin(), job.programs.end(),
                                     [&](const Program& p) { return p.rank == critical; });
      prog != job.programs.end())
    for (const auto& s : trace.spans) {
      if (s.rank != critical) continue;
      const auto& stream = prog->streams.at(static_cast<size_t>(s.stream));
      const Op& op = stream.ops.at(s.op_index);
      std::string kind;
      if (const auto* c = std::get_if<ComputeOp>(&op.body))
        kind = std::string(to_string(c->kind));
      else if (const auto* c = std::get_if<CollectiveOp>(&op.body))
        kind = std::string(to_string(c->kind));
      else
        kind = s.kind == SpanKind::kSend ? "send" : "recv";
      r.time_by_kind_s[kind] += (s.end - s.start).value() / iterations;
    }
  compute = merge(std::move(compute));
  collective = merge(std::move(collective));
  p2p = merge(std::move(p2p));
  // Pipeline bubble: on a pipelined job, the critical rank's time outside compute and
  // collectives, which it spends waiting for (or moving) a neighbour stage's activations and
  // gradients; Narayanan et al. 2021's t_pb. Without a pipeline idle time stays in `other`, and
  // point-to-point transfers (a parameter server's pushes and pulls) are communication.
  const bool pipelined = !p2p.empty() && sc.parallelism.pipeline.value > 1;
  if (!pipelined) collective = unite(collective, p2p);
  const double compute_t = length(compute);
  const double exposed_comm = length_outside(collective, compute);
  const double busy = length(unite(compute, collective));
  const double bubble = pipelined ? std::max(0.0, total_time - busy) : 0.0;
  r.breakdown_s.compute = compute_t / iterations;
  r.breakdown_s.exposed_communication = exposed_comm / iterations;
  r.breakdown_s.pipeline_bubble = bubble / iterations;
  // Waiting while the rank's own kernels or collectives run is not lost time.
  const double wait = length_outside(merge(std::move(waits)), unite(compute, collective));
  r.breakdown_s.straggler_wait = wait / iterations;
  // On a pipelined job the bubble (idle time) already holds the waits; move them out of it.
  if (pipelined)
    r.breakdown_s.pipeline_bubble =
        std::max(0.0, r.breakdown_s.pipeline_bubble - wait / iterations);
  r.breakdown_s.other =
      std::max(0.0, r.step_time_s - r.breakdown_s.compute - r.breakdown_s.exposed_communication -
                        r.breakdown_s.pipeline_bubble - r.breakdown_s.straggler_wait);
}

// The peak memory per GPU and per pipeline stage, against the GPU's capacity.
void fill_memory(const Scenario& sc, const Trace& trace, Results& r) {
  // Memory: the worst simulated rank.
  for (const auto& m : trace.memory) {
    if (m.peak.value() >= r.peak_bytes_per_gpu) {
      r.peak_bytes_per_gpu = m.peak.value();
      for (size_t c = 0; c < m.at_peak.size(); ++c) r.per_category_bytes[c] = m.at_peak[c].value();
    }
  }
  // Per pipeline stage: the worst simulated rank of each (StageMemory), a rank's stage from the
  // placement (core/strategy/layout.h).
  const RankLayout layout = rank_layout(sc.parallelism);
  std::map<int, StageMemory> stages;
  for (const auto& m : trace.memory) {
    const int stage = layout.coordinates(m.rank)[static_cast<size_t>(ParallelDim::kPipeline)];
    const auto [entry, added] = stages.try_emplace(stage);
    if (!added && m.peak.value() < entry->second.peak_bytes) continue;
    entry->second.stage = stage;
    entry->second.rank = m.rank;
    const int p = static_cast<int>(sc.parallelism.pipeline.value);
    const int mb = static_cast<int>(sc.micro_batches());
    entry->second.weight_versions = weight_versions(sc.parallelism.schedule, p, stage, mb);
    entry->second.peak_bytes = m.peak.value();
    for (size_t c = 0; c < m.at_peak.size(); ++c)
      entry->second.per_category_bytes[c] = m.at_peak[c].value();
  }
  for (const auto& [stage, memory] : stages) r.memory_per_stage.push_back(memory);
  r.capacity_bytes = sc.cluster.gpu.memory.value();
  r.fits = r.peak_bytes_per_gpu <= r.capacity_bytes;
}

}  // namespace

bool is_block(const Layer& layer) {
  return layer.kind == "transformer" || layer.kind == "residual" || layer.kind == "inception" ||
         layer.kind == "conv" || layer.kind == "fc";
}

LayerCounts count_layers(const ModelGraph& model) {
  LayerCounts c;
  for (const auto& l : model.layers) {
    if (is_block(l)) {
      ++c.blocks;
      auto it = std::find_if(c.per_kind.begin(), c.per_kind.end(),
                             [&](const auto& k) { return k.first == l.kind; });
      if (it == c.per_kind.end())
        c.per_kind.emplace_back(l.kind, 1);
      else
        ++it->second;
      c.block_kind = c.per_kind.size() == 1 ? l.kind : "mixed";
    } else {
      c.other.push_back(OtherLayer{l.name, l.kind, l.parameters});
    }
  }
  return c;
}

int block_index(const ModelGraph& model, int index) {
  if (index < 0 || static_cast<size_t>(index) >= model.layers.size()) return -1;
  if (!is_block(model.layers[static_cast<size_t>(index)])) return -1;
  int b = 0;
  for (int i = 0; i < index; ++i) b += is_block(model.layers[static_cast<size_t>(i)]) ? 1 : 0;
  return b;
}

Results compute_results(const Scenario& sc, const ModelGraph& model, const Job& job,
                        const Trace& trace) {
  Results r;
  r.engine = trace.engine;
  r.scenario = sc.name;
  r.gpus = sc.cluster.total_gpus();
  r.data_parallel = sc.parallelism.data.value;
  r.parallelism = describe_parallelism(sc.parallelism);
  r.micro_batches = sc.micro_batches();
  r.global_batch_size = sc.training.global_batch_size.value;
  r.iterations = trace.iterations;
  r.gpu = with_overrides(sc.cluster.gpu.name, sc.cluster.gpu_overridden);
  r.profile = sc.cluster.profile;
  r.precision = std::string(to_string(sc.training.precision));
  r.grad_dtype = std::string(to_string(sc.training.grad_dtype));
  r.notes = trace.notes;
  r.notes.insert(r.notes.end(), sc.notes.begin(), sc.notes.end());
  const auto& intra = sc.cluster.intra_node;
  r.intra_node = {with_overrides(intra.name, sc.cluster.intra_node_overridden),
                  intra.per_gpu_bandwidth.value(),
                  intra.latency.value(),
                  0,
                  "",
                  "",
                  1};
  const auto& net = sc.cluster.network;
  r.network = {with_overrides(net.preset, net.overridden),
               net.nic_bandwidth.value(),
               net.latency.value(),
               net.nics_per_node,
               std::string(to_string(net.kind)),
               std::string(to_string(net.topology)),
               net.oversubscription};
  note_background(sc.cluster, r);
  note_recompute_without_effect(sc.training, model, r);
  r.tp = sc.parallelism.tensor.value;
  r.pp = sc.parallelism.pipeline.value;
  r.cp = sc.parallelism.context.value;
  r.ep = sc.parallelism.expert.value;
  r.sequence_parallel = sc.parallelism.sequence_parallel;
  r.zero_stage = sc.parallelism.zero_stage;
  r.schedule = std::string(to_string(sc.parallelism.schedule));
  r.virtual_stages = sc.parallelism.virtual_stages;
  r.micro_batch_size = sc.training.micro_batch_size.value;
  r.seq_length = model.tokens_per_sample();
  r.recompute = std::string(to_string(sc.training.recompute));
  r.optimizer = std::string(to_string(sc.training.optimizer));
  r.framework = std::string(to_string(sc.training.framework));
  r.fidelity = std::string(to_string(sc.simulate.fidelity));
  r.model_name = model.name;
  r.layers = count_layers(model);
  r.communication = communication_volume(job, r.pp);
  for (const auto& g : r.communication) {
    r.communication_size_bytes += g.size_bytes;
    r.communication_bus_bytes += g.bus_bytes;
  }

  const double iterations = std::max(1, trace.iterations);
  const double total_time = trace.makespan().value();
  r.step_time_s = total_time / iterations;
  if (r.step_time_s > 0) {
    r.samples_per_s = static_cast<double>(r.global_batch_size) / r.step_time_s;
    r.tokens_per_s = r.samples_per_s * static_cast<double>(model.tokens_per_sample());
  }

  count_flops(sc, model, job, r);
  fill_breakdown(sc, job, trace, r);
  fill_memory(sc, trace, r);
  r.energy = step_energy(job, Seconds(r.step_time_s), power_inputs(sc.cluster));
  return r;
}

}  // namespace dtsim
