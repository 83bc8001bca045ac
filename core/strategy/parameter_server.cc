#include "core/strategy/parameter_server.h"

#include <algorithm>
#include <map>
#include <string>

#include "core/base/error.h"
#include "core/strategy/model_state.h"

namespace dtsim {
namespace {

bool is_gradient_collective(const Op& op) {
  return std::holds_alternative<CollectiveOp>(op.body) && op.label.phase == Phase::kGradientSync;
}

// Stream index by name, or -1.
int find_stream(const Program& p, const std::string& name) {
  for (size_t s = 0; s < p.streams.size(); ++s)
    if (p.streams[s].name == name) return static_cast<int>(s);
  return -1;
}

// Removes the ops `drop` selects from a stream. A dropped op that records an event leaves a
// zero-byte memory op in its place (no time), with its waits and its record, so that nothing
// that waits for it changes.
template <class Drop>
void drop_ops(std::vector<Op>& ops, Drop drop) {
  std::vector<Op> kept;
  kept.reserve(ops.size());
  for (Op& op : ops) {
    if (!drop(op)) {
      kept.push_back(std::move(op));
      continue;
    }
    if (!op.record) continue;
    op.body = MemoryOp{MemoryCategory::kBuffers, Bytes(0)};
    op.label.name += ".moved_to_parameter_server";
    kept.push_back(std::move(op));
  }
  ops = std::move(kept);
}

// What a worker's synchronous Program reduced and updated, taken out of it.
struct WorkerShare {
  double gradient_bytes = 0;         // pushed per step (what the all-reduces carried)
  std::vector<EventId> ready;        // what the first gradient collective waited for
  std::vector<EventId> reduced;      // events the gradient stream's ops recorded
  std::vector<Op> optimizer;         // the optimizer's ops (compute, and its collectives)
  std::vector<Op> optimizer_memory;  // its optimizer-state allocations
};

WorkerShare take_reduction_and_update(Program& p) {
  WorkerShare share;
  const int grad = find_stream(p, "grad_comm");
  if (grad < 0) throw RuntimeError("parameter server: a worker's Program has no grad_comm stream");
  auto& grad_ops = p.streams[static_cast<size_t>(grad)].ops;
  for (const Op& op : grad_ops) {
    if (is_gradient_collective(op)) {
      share.gradient_bytes += std::get<CollectiveOp>(op.body).bytes.value();
      if (share.ready.empty()) share.ready = op.waits;
    }
    if (op.record) share.reduced.push_back(*op.record);
  }
  grad_ops.clear();
  for (size_t s = 0; s < p.streams.size(); ++s) {
    if (static_cast<int>(s) == grad) continue;
    auto& ops = p.streams[s].ops;
    for (const Op& op : ops) {
      if (op.label.phase == Phase::kOptimizer && !std::holds_alternative<MemoryOp>(op.body))
        share.optimizer.push_back(op);
      if (const auto* m = std::get_if<MemoryOp>(&op.body);
          m && m->category == MemoryCategory::kOptimizer)
        share.optimizer_memory.push_back(op);
    }
    drop_ops(ops, [](const Op& op) {
      if (const auto* m = std::get_if<MemoryOp>(&op.body))
        return m->category == MemoryCategory::kOptimizer;
      return op.label.phase == Phase::kOptimizer;
    });
  }
  return share;
}

// The servers whose shards worker w exchanges, in the order of its rounds (k = 0..S-1: server
// (w + k) mod S).
int server_in_round(int w, int k, int servers) {
  return (w + k) % servers;
}

}  // namespace

bool uses_parameter_servers(const TrainingConfig& t) {
  return t.sync == SyncMode::kParameterServer || t.sync == SyncMode::kAsync;
}

ParameterServerPlacement parameter_server_placement(const Scenario& sc) {
  ParameterServerPlacement pl;
  pl.workers = sc.parallelism.data.value;
  pl.dedicated = sc.training.parameter_server.dedicated;
  const int servers = sc.training.parameter_server.servers;
  pl.extra_nodes = pl.dedicated ? servers : 0;
  for (int j = 0; j < servers; ++j)
    pl.servers.push_back(pl.dedicated
                             ? (sc.cluster.nodes + j) * sc.cluster.gpus_per_node
                             : static_cast<Rank>(static_cast<int64_t>(j) * pl.workers / servers));
  return pl;
}

ClusterConfig parameter_server_cluster(const Scenario& sc) {
  ClusterConfig c = sc.cluster;
  if (uses_parameter_servers(sc.training)) c.nodes += parameter_server_placement(sc).extra_nodes;
  return c;
}

// What every worker and server of one exchange shares.
struct Exchange {
  const ParameterServerPlacement& pl;
  int W, S;                // workers, servers
  Bytes push, pull;        // per shard
  double gradient_bytes;   // per worker, all shards
  double parameter_bytes;  // per worker, all shards
  DType grad_dtype;
  std::map<Rank, int> colocated;  // worker rank -> server index
  double shard_fraction() const { return 1.0 / S; }
  double shard_gradient_bytes() const { return gradient_bytes / S; }
};

// Worker w: push each shard, then pull each; the events its all-reduce recorded now end with
// the exchange.
void push_and_pull(Program& p, WorkerShare& share, int w, const Exchange& x) {
  const StreamId grad = static_cast<StreamId>(find_stream(p, "grad_comm"));
  const auto own = x.colocated.find(p.rank);
  // The exchange starts when backward has produced the gradients: what the all-reduce waited
  // for, or the end of the compute stream.
  if (share.ready.empty()) {
    const int compute = find_stream(p, "compute");
    auto& ops = p.streams[static_cast<size_t>(compute)].ops;
    if (!ops.empty()) {
      if (!ops.back().record) ops.back().record = p.new_event();
      share.ready.push_back(*ops.back().record);
    }
  }
  bool first = true;
  for (int k = 0; k < x.S; ++k) {
    const int j = server_in_round(w, k, x.S);
    if (own != x.colocated.end() && own->second == j) continue;  // the local shard stays
    Op& op = p.append(
        grad, SendOp{x.pl.servers[static_cast<size_t>(j)], x.push, kParameterPushTag},
        Label{"ps.push_gradient_shard." + std::to_string(j), -1, -1, Phase::kGradientSync});
    if (first) op.waits = share.ready;
    first = false;
  }
  for (int k = 0; k < x.S; ++k) {
    const int j = server_in_round(w, k, x.S);
    if (own != x.colocated.end() && own->second == j) continue;
    p.append(grad, RecvOp{x.pl.servers[static_cast<size_t>(j)], x.pull, kParameterPullTag},
             Label{"ps.pull_parameter_shard." + std::to_string(j), -1, -1, Phase::kGradientSync});
  }
  // The events the gradient stream recorded now end with the exchange (a worker that is the
  // only one and holds every shard exchanges nothing: they end with its backward).
  for (EventId e : share.reduced) {
    Op& mark = p.append(grad, MemoryOp{MemoryCategory::kBuffers, Bytes(0)},
                        Label{"ps.exchange_done", -1, -1, Phase::kGradientSync});
    if (first) mark.waits = share.ready;
    first = false;
    mark.record = e;
  }
}

// Server j: receive the pushes in (round, worker) order, sum them, update, send the pulls.
void serve_shard(Job& job, const std::vector<WorkerShare>& shares, int j, const Exchange& x) {
  const Rank rank = x.pl.servers[static_cast<size_t>(j)];
  Program* p = nullptr;
  if (x.pl.dedicated) {
    job.programs.push_back(Program{});
    p = &job.programs.back();
    p->rank = rank;
  } else {
    p = &job.programs[static_cast<size_t>(rank)];
  }
  const StreamId in = p->add_stream(kServerPushStream);
  const StreamId update = p->add_stream(kServerUpdateStream);
  const StreamId out = p->add_stream(kServerPullStream);
  std::vector<int> order;  // workers in (round, worker) order
  for (int k = 0; k < x.S; ++k)
    for (int w = 0; w < x.W; ++w)
      if (server_in_round(w, k, x.S) == j && (x.pl.dedicated || w != rank)) order.push_back(w);
  // State this server holds: its share of the weights, the summed gradients and the
  // optimizer's states (moved from the workers).
  p->append(update, MemoryOp{MemoryCategory::kWeights, Bytes(x.parameter_bytes / x.S)},
            Label{"ps.parameter_shard", -1, -1, Phase::kOther});
  p->append(update, MemoryOp{MemoryCategory::kGradients, Bytes(x.shard_gradient_bytes())},
            Label{"ps.gradient_sum_shard", -1, -1, Phase::kOther});
  for (const Op& m : shares.front().optimizer_memory)
    p->append(update,
              MemoryOp{MemoryCategory::kOptimizer,
                       Bytes(std::get<MemoryOp>(m.body).bytes.value() * x.shard_fraction())},
              Label{"ps.optimizer_state_shard", -1, -1, Phase::kOther});
  for (int w : order)
    p->append(
        in, RecvOp{w, x.push, kParameterPushTag},
        Label{"ps.receive_gradient_shard.from." + std::to_string(w), -1, -1, Phase::kGradientSync});
  std::vector<EventId> pushed;
  if (!p->streams[static_cast<size_t>(in)].ops.empty()) {
    Op& last = p->streams[static_cast<size_t>(in)].ops.back();
    last.record = p->new_event();
    pushed.push_back(*last.record);
  }
  // A colocated server's own worker contributes its shard once its backward is done.
  if (!x.pl.dedicated) {
    const auto& ready = shares[static_cast<size_t>(rank)].ready;
    pushed.insert(pushed.end(), ready.begin(), ready.end());
  }
  // Summing W shards: read each, write the sum (one add per element per push).
  Op& sum = p->append(update,
                      ComputeOp{KernelKind::kElementwise,
                                Flops((x.W - 1) * x.shard_gradient_bytes() /
                                      gradient_bytes_per_parameter(x.grad_dtype)),
                                Bytes((x.W + 1) * x.shard_gradient_bytes()), x.grad_dtype},
                      Label{"ps.sum_gradient_shards", -1, -1, Phase::kOptimizer});
  sum.waits = pushed;
  // The optimizer the workers ran, over this server's share of the parameters. Its
  // collectives (a gradient norm or loss-scale flag over the replicas) have one member here.
  for (const Op& op : shares.front().optimizer) {
    const auto* c = std::get_if<ComputeOp>(&op.body);
    if (!c) continue;
    ComputeOp scaled = *c;
    scaled.flops = Flops(c->flops.value() * x.shard_fraction());
    scaled.bytes = Bytes(c->bytes.value() * x.shard_fraction());
    p->append(update, scaled, Label{"ps." + op.label.name, -1, -1, Phase::kOptimizer});
  }
  Op& updated = p->streams[static_cast<size_t>(update)].ops.back();
  updated.record = p->new_event();
  const EventId done = *updated.record;
  bool first = true;
  for (int w : order) {
    Op& send = p->append(
        out, SendOp{w, x.pull, kParameterPullTag},
        Label{"ps.send_parameter_shard.to." + std::to_string(w), -1, -1, Phase::kGradientSync});
    if (first) send.waits.push_back(done);
    first = false;
  }
}

Job parameter_server_job(Job job, const Scenario& sc) {
  const ParameterServerPlacement pl = parameter_server_placement(sc);
  const int W = pl.workers, S = static_cast<int>(pl.servers.size());
  if (static_cast<int>(job.programs.size()) != W)
    throw RuntimeError("parameter server: expected one Program per worker (" + std::to_string(W) +
                       "), got " + std::to_string(job.programs.size()));
  std::sort(job.programs.begin(), job.programs.end(),
            [](const Program& a, const Program& b) { return a.rank < b.rank; });
  std::vector<WorkerShare> shares;
  for (Program& p : job.programs) shares.push_back(take_reduction_and_update(p));
  const double gradient_bytes = shares.front().gradient_bytes;
  // Pulled parameters: one per pushed gradient, in the training precision's weight width.
  const double params = gradient_bytes / gradient_bytes_per_parameter(sc.training.grad_dtype);
  const double parameter_bytes = params * weight_bytes_per_parameter(sc.training.precision);
  Exchange x{pl,
             W,
             S,
             Bytes(gradient_bytes / S),
             Bytes(parameter_bytes / S),
             gradient_bytes,
             parameter_bytes,
             sc.training.grad_dtype,
             {}};
  if (!pl.dedicated)
    for (int j = 0; j < S; ++j) x.colocated[pl.servers[static_cast<size_t>(j)]] = j;

  // Workers: push each shard, then pull each; the next step's kernels wait for the last pull.
  for (int w = 0; w < W; ++w)
    push_and_pull(job.programs[static_cast<size_t>(w)], shares[static_cast<size_t>(w)], w, x);

  // Servers: receive the pushes in (round, worker) order, sum them, update, send the pulls.
  for (int j = 0; j < S; ++j) serve_shard(job, shares, j, x);

  // The next step's kernels wait for the last pulled shard.
  for (int w = 0; w < W; ++w) {
    Program& p = job.programs[static_cast<size_t>(w)];
    const int grad = find_stream(p, "grad_comm");
    const int compute = find_stream(p, "compute");
    auto& grad_ops = p.streams[static_cast<size_t>(grad)].ops;
    if (grad_ops.empty()) continue;
    Op& last = grad_ops.back();
    if (!last.record) last.record = p.new_event();
    Op& wait =
        p.append(static_cast<StreamId>(compute), MemoryOp{MemoryCategory::kBuffers, Bytes(0)},
                 Label{"ps.parameters_pulled", -1, -1, Phase::kGradientSync});
    wait.waits.push_back(*last.record);
  }
  job.world_size = (sc.cluster.nodes + pl.extra_nodes) * sc.cluster.gpus_per_node;
  std::sort(job.programs.begin(), job.programs.end(),
            [](const Program& a, const Program& b) { return a.rank < b.rank; });
  return job;
}

}  // namespace dtsim
