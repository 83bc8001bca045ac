#include "driver/relaxed_sync.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "core/base/units.h"
#include "core/collectives/cost_model.h"
#include "core/exec/compute_cost.h"
#include "core/hardware/endpoint.h"
#include "core/strategy/model_state.h"
#include "core/strategy/parameter_server.h"

namespace dtsim::driver {

double local_sgd_step_s(double slowest_compute_s, double synchronous_step_s, int period) {
  const double rest_s = std::max(0.0, synchronous_step_s - slowest_compute_s);
  return slowest_compute_s + rest_s / period;
}

double ssp_step_s(double slowest_compute_s, double synchronous_step_s, int staleness) {
  if (staleness == 0) return synchronous_step_s;
  const double rest_s = std::max(0.0, synchronous_step_s - slowest_compute_s);
  return std::max(slowest_compute_s, rest_s);
}

double easgd_step_s(double slowest_compute_s, double synchronous_step_s, int period,
                    double exchange_scale, double elastic_update_s) {
  const double rest_s = std::max(0.0, synchronous_step_s - slowest_compute_s);
  return slowest_compute_s + (rest_s * exchange_scale + elastic_update_s) / period;
}

double slowest_compute_per_step_s(const Trace& trace) {
  std::map<Rank, double> compute_s;
  for (const Span& s : trace.spans)
    if (s.kind == SpanKind::kCompute) compute_s[s.rank] += (s.end - s.start).value();
  double slowest_s = 0;
  for (const auto& [rank, seconds] : compute_s) slowest_s = std::max(slowest_s, seconds);
  return slowest_s / std::max(1, trace.iterations);
}

namespace {

// Rewrites the step time and everything that follows from it: rates scale with the step; a
// saving comes out of exposed communication, then straggler wait, then other (then compute); a
// loss goes to other.
void rewrite_step(Results& r, double step_s) {
  const double sync_s = r.step_time_s;
  if (step_s <= 0 || sync_s <= 0) return;
  const double speedup = sync_s / step_s;
  r.step_time_s = step_s;
  r.samples_per_s *= speedup;
  r.tokens_per_s *= speedup;
  r.model_tflops_per_gpu *= speedup;
  r.hardware_tflops_per_gpu *= speedup;
  r.mfu *= speedup;
  r.hfu *= speedup;
  if (step_s >= sync_s) {
    r.breakdown_s.other += step_s - sync_s;
    return;
  }
  double saved_s = sync_s - step_s;
  for (double* term : {&r.breakdown_s.exposed_communication, &r.breakdown_s.straggler_wait,
                       &r.breakdown_s.other, &r.breakdown_s.compute}) {
    const double cut_s = std::min(*term, saved_s);
    *term -= cut_s;
    saved_s -= cut_s;
  }
}

// Time (s) and bytes of the spans of `kind` on each named stream of each rank in `ranks`: one pass
// over the trace, whatever the number of ranks (100,000 servers made a pass per server
// quadratic).
struct StreamUse {
  double seconds = 0, bytes = 0;
};
std::vector<std::array<StreamUse, 3>> stream_uses(
    const Job& job, const Trace& trace, const std::vector<Rank>& ranks,
    const std::array<std::pair<const char*, SpanKind>, 3>& streams) {
  std::vector<std::array<StreamUse, 3>> out(ranks.size());
  // (rank, stream id) -> (index in ranks, which of `streams`)
  std::map<std::pair<Rank, StreamId>, std::pair<size_t, size_t>> slot;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const Program* p = job.program_for(ranks[i]);
    if (!p) continue;
    for (size_t s = 0; s < p->streams.size(); ++s)
      for (size_t k = 0; k < streams.size(); ++k)
        if (p->streams[s].name == streams[k].first)
          slot[{ranks[i], static_cast<StreamId>(s)}] = {i, k};
  }
  for (const Span& span : trace.spans) {
    const auto it = slot.find({span.rank, span.stream});
    if (it == slot.end()) continue;
    const auto [i, k] = it->second;
    if (span.kind != streams[k].second) continue;
    out[i][k].seconds += (span.end - span.start).value();
    out[i][k].bytes += span.moved.value();
  }
  return out;
}

double first_transfer_bytes(const Program& p, const std::string& stream) {
  for (const Stream& st : p.streams)
    if (st.name == stream)
      for (const Op& op : st.ops) {
        if (const auto* x = std::get_if<RecvOp>(&op.body)) return x->bytes.value();
        if (const auto* x = std::get_if<SendOp>(&op.body)) return x->bytes.value();
      }
  return 0;
}

// A server's update kernels for one pushed shard: its optimizer kernels, without the sum of the
// workers' shards that synchronous updates need (s).
double server_update_s(const Program& server, const Cluster& cluster) {
  double seconds = 0;
  for (const Stream& st : server.streams) {
    if (st.name != kServerUpdateStream) continue;
    for (const Op& op : st.ops)
      if (const auto* c = std::get_if<ComputeOp>(&op.body))
        if (op.label.name != "ps.sum_gradient_shards")
          seconds += compute_time(*c, cluster.gpu).value() / cluster.speed_scale(server.rank);
  }
  return seconds;
}

// Fenwick tree counting values by rank.
struct Counter {
  std::vector<int64_t> tree;
  explicit Counter(size_t n) : tree(n + 1, 0) {}
  void add(size_t i) {
    for (++i; i < tree.size(); i += i & (~i + 1)) ++tree[i];
  }
  int64_t up_to(size_t i) const {  // values at ranks < i
    int64_t n = 0;
    for (; i > 0; i -= i & (~i + 1)) n += tree[i];
    return n;
  }
};

}  // namespace

AsyncOutcome simulate_async_parameter_server(const AsyncInputs& in) {
  const int W = static_cast<int>(in.workers.size()), S = std::max(1, in.servers);
  // Every update visits every server alike, so the S servers' queues evolve alike: one
  // first-come first-served queue per station (receive, update, send), in the order the workers
  // become ready.
  double in_free = 0, update_free = 0, out_free = 0;
  std::vector<double> ready(static_cast<size_t>(W)), read_at(static_cast<size_t>(W), 0.0);
  for (int w = 0; w < W; ++w)
    ready[static_cast<size_t>(w)] = in.workers[static_cast<size_t>(w)].compute_s;
  struct Applied {
    double at = 0, read = 0;
    bool first = false;
  };
  std::vector<Applied> applied;
  AsyncOutcome out;
  out.updates_by_worker.assign(static_cast<size_t>(W), 0);
  const int64_t total = static_cast<int64_t>(W) * in.updates_per_worker;
  for (int64_t n = 0; n < total; ++n) {
    // The next worker to push: the earliest ready (the lowest index on a tie).
    const auto w =
        static_cast<size_t>(std::min_element(ready.begin(), ready.end()) - ready.begin());
    // Push: each server receives its shard (tau_push of its NIC) while the worker's NIC sends all
    // S shards (S·tau_push).
    const double push_start = std::max(ready[w], in_free);
    in_free = push_start + in.push_shard_s;
    const double pushed = std::max(in_free, ready[w] + S * in.push_shard_s);
    const double applied_at = std::max(pushed, update_free) + in.update_s;
    update_free = applied_at;
    // Pull: one push-pull request (ps-lite's ZPushPull, BytePS's push_pull), answered with the
    // parameters as this update left them, sent when the server's NIC is free.
    const double pull_start = std::max(applied_at, out_free);
    out_free = pull_start + in.pull_shard_s;
    const double pulled = std::max(out_free, applied_at + S * in.pull_shard_s);
    applied.push_back({applied_at, read_at[w], out.updates_by_worker[w] == 0});
    read_at[w] = applied_at;
    ++out.updates_by_worker[w];
    ready[w] = pulled + in.workers[w].compute_s;
  }
  // Staleness: the updates applied before this one (in the servers' order) after its read.
  std::vector<double> times;
  for (const Applied& a : applied) times.push_back(a.at);
  std::sort(times.begin(), times.end());
  auto rank_of = [&](double x) {  // values <= x
    return static_cast<size_t>(std::upper_bound(times.begin(), times.end(), x) - times.begin());
  };
  Counter seen(times.size());
  int64_t counted = 0;
  double staleness_sum = 0;
  for (size_t i = 0; i < applied.size(); ++i) {
    const Applied& a = applied[i];
    if (!a.first) {
      const int64_t k = static_cast<int64_t>(i) - seen.up_to(rank_of(a.read));
      if (static_cast<int64_t>(out.staleness_histogram.size()) <= k)
        out.staleness_histogram.resize(static_cast<size_t>(k + 1), 0);
      ++out.staleness_histogram[static_cast<size_t>(k)];
      staleness_sum += static_cast<double>(k);
      ++counted;
    }
    seen.add(rank_of(a.at) - 1);
  }
  out.mean_staleness = counted > 0 ? staleness_sum / static_cast<double>(counted) : 0;
  // The rate after every worker's first update.
  const auto first_round = static_cast<size_t>(W);
  if (times.size() > first_round + 1)
    out.updates_per_s =
        static_cast<double>(times.size() - first_round - 1) / (times.back() - times[first_round]);
  return out;
}

ParameterServerResults parameter_server_results(const Scenario& sc, const Job& job,
                                                const Cluster& cluster, const Trace& trace,
                                                double step_s) {
  const ParameterServerPlacement pl = parameter_server_placement(sc);
  ParameterServerResults ps;
  ps.servers = static_cast<int>(pl.servers.size());
  ps.workers = pl.workers;
  ps.placement = pl.dedicated ? "dedicated" : "colocated";
  ps.updates = sc.training.parameter_server.async ? "async" : "sync";
  const double iterations = std::max(1, trace.iterations);
  const auto uses = stream_uses(job, trace, pl.servers,
                                {{{kServerPushStream, SpanKind::kRecv},
                                  {kServerPullStream, SpanKind::kSend},
                                  {kServerUpdateStream, SpanKind::kCompute}}});
  for (size_t j = 0; j < pl.servers.size(); ++j) {
    const Rank rank = pl.servers[j];
    ServerLoad l;
    l.server = static_cast<int>(j);
    l.rank = rank;
    l.node = cluster.node_of(rank);
    const double in_bytes = uses[j][0].bytes, out_bytes = uses[j][1].bytes;
    const double in_s = uses[j][0].seconds, out_s = uses[j][1].seconds;
    const double update_s = uses[j][2].seconds;
    l.bytes_in_per_step = in_bytes / iterations;
    l.bytes_out_per_step = out_bytes / iterations;
    if (step_s > 0) {
      l.nic_in_busy_fraction = std::min(1.0, in_s / iterations / step_s);
      l.nic_out_busy_fraction = std::min(1.0, out_s / iterations / step_s);
      l.update_busy_fraction = std::min(1.0, update_s / iterations / step_s);
    }
    ps.per_server.push_back(l);
  }
  return ps;
}

namespace {

void apply_parameter_server(const Scenario& sc, const Job& job, const Cluster& cluster,
                            const Trace& trace, Results& r) {
  const auto& cfg = sc.training.parameter_server;
  const ParameterServerPlacement pl = parameter_server_placement(sc);
  r.parameter_server = parameter_server_results(sc, job, cluster, trace, r.step_time_s);
  ParameterServerResults& ps = *r.parameter_server;
  const std::string what =
      "training.sync " + std::string(to_string(sc.training.sync)) + ": " +
      std::to_string(ps.workers) + " workers, " + std::to_string(ps.servers) + " " + ps.placement +
      " parameter server" + (ps.servers > 1 ? "s" : "") +
      (pl.dedicated ? " (each on a node of the cluster's kind appended to it)" : "");
  if (!cfg.async) {
    r.notes.push_back(what +
                      "; each worker pushes its gradient shards and pulls its parameter shards one "
                      "at a time, each server receives and sends one shard at a time, sums the "
                      "shards and runs the optimizer over its 1/S of the parameters (Li et al. "
                      "2014); simulated step " +
                      format_number("%.4g", r.step_time_s) + " s");
    return;
  }
  // Asynchronous updates: the discrete-event model over the simulated times.
  AsyncInputs in;
  in.servers = ps.servers;
  const double iterations = std::max(1, trace.iterations);
  for (int w = 0; w < pl.workers; ++w) {
    double seconds = 0;
    for (const Span& s : trace.spans)
      if (s.rank == w && s.kind == SpanKind::kCompute) seconds += (s.end - s.start).value();
    in.workers.push_back(AsyncWorker{seconds / iterations});
  }
  const Program* server = job.program_for(pl.servers.front());
  const Bytes push{first_transfer_bytes(*server, kServerPushStream)};
  const Bytes pull{first_transfer_bytes(*server, kServerPullStream)};
  const Endpoint worker = Endpoint::gpu(0), at = Endpoint::gpu(pl.servers.front());
  in.push_shard_s = point_to_point_time(push, worker, at, cluster).value();
  in.pull_shard_s = point_to_point_time(pull, at, worker, cluster).value();
  in.update_s = server_update_s(*server, cluster);
  const AsyncOutcome out = simulate_async_parameter_server(in);
  if (out.updates_per_s <= 0) return;
  const double sync_s = r.step_time_s;
  // A step is W updates: the global batch, W local batches.
  const double step_s = ps.workers / out.updates_per_s;
  rewrite_step(r, step_s);
  ps.updates_per_s = out.updates_per_s;
  ps.staleness_histogram = out.staleness_histogram;
  ps.mean_staleness = out.mean_staleness;
  // Server load at the asynchronous rate: W shards in and out per step.
  for (ServerLoad& l : ps.per_server) {
    l.nic_in_busy_fraction = std::min(1.0, ps.workers * in.push_shard_s / step_s);
    l.nic_out_busy_fraction = std::min(1.0, ps.workers * in.pull_shard_s / step_s);
    l.update_busy_fraction = std::min(1.0, ps.workers * in.update_s / step_s);
  }
  r.notes.push_back(
      what + ", asynchronous updates (Dean et al. 2012): a discrete-event model runs " +
      std::to_string(in.updates_per_worker) +
      " updates per worker from the simulated kernels per step of each worker, the closed-form "
      "time of one shard's push (" +
      format_number("%.4g", in.push_shard_s) + " s) and pull (" +
      format_number("%.4g", in.pull_shard_s) + " s) and the server's update of one shard (" +
      format_number("%.4g", in.update_s) +
      " s), each server serving pushes, updates and pulls first come, first served; a step is " +
      std::to_string(ps.workers) + " updates: " + format_number("%.4g", step_s) +
      " s against the synchronous " + format_number("%.4g", sync_s) + " s; mean staleness " +
      format_number("%.3g", out.mean_staleness) +
      " updates; per-step time to accuracy is not modelled (stale updates converge more slowly)");
}

void apply_easgd(const Scenario& sc, const Cluster& cluster, const Trace& trace, Results& r) {
  const TrainingConfig& t = sc.training;
  const double sync_s = r.step_time_s;
  const double slowest_s = slowest_compute_per_step_s(trace);
  // The mean of the fp32 parameters in place of the gradients' all-reduce.
  const double scale = 4.0 / gradient_bytes_per_parameter(t.grad_dtype);
  const double params = r.parameters;
  const ComputeOp elastic{KernelKind::kElementwise, Flops(4 * params), Bytes(20 * params),
                          DType::kFp32};
  const double elastic_s = compute_time(elastic, cluster.gpu).value();
  const double step_s = easgd_step_s(slowest_s, sync_s, t.easgd_period, scale, elastic_s);
  rewrite_step(r, step_s);
  // The center variable x~, fp32, on every GPU.
  const double center_bytes = 4 * params;
  r.per_category_bytes[static_cast<size_t>(MemoryCategory::kWeights)] += center_bytes;
  r.peak_bytes_per_gpu += center_bytes;
  r.fits = r.peak_bytes_per_gpu <= r.capacity_bytes;
  r.notes.push_back(
      "training.sync easgd (period " + std::to_string(t.easgd_period) +
      "): mean step C + (X·4/g + E) / tau = " + format_number("%.4g", step_s) +
      " s from the synchronous step " + format_number("%.4g", sync_s) +
      " s, C the slowest replica's kernels, X the rest, the exchange an all-reduce of the fp32 "
      "parameters (4/g = " +
      format_number("%.3g", scale) +
      " times the gradients' bytes) and E = " + format_number("%.4g", elastic_s) +
      " s the elastic update kernel (Zhang et al. 2015, synchronous EASGD); the center variable "
      "adds " +
      format_bytes(Bytes(center_bytes)) + " of weights per GPU");
}

}  // namespace

void apply_relaxed_sync(const Scenario& scenario, const Job& job, const Cluster& cluster,
                        const Trace& trace, Results& r) {
  const TrainingConfig& t = scenario.training;
  if (uses_parameter_servers(t)) return apply_parameter_server(scenario, job, cluster, trace, r);
  if (t.sync == SyncMode::kEasgd) return apply_easgd(scenario, cluster, trace, r);
  if (t.sync != SyncMode::kSsp && t.sync != SyncMode::kLocalSgd) return;
  const double sync_s = r.step_time_s;
  const double slowest_s = slowest_compute_per_step_s(trace);
  const double step_s = t.sync == SyncMode::kSsp
                            ? ssp_step_s(slowest_s, sync_s, t.staleness)
                            : local_sgd_step_s(slowest_s, sync_s, t.local_sgd_period);
  if (step_s <= 0 || step_s >= sync_s) return;
  rewrite_step(r, step_s);
  r.notes.push_back(
      t.sync == SyncMode::kSsp
          ? "training.sync ssp (staleness " + std::to_string(t.staleness) +
                "): steady-state step max(C, X) = " + format_number("%.4g", step_s) +
                " s from the synchronous step " + format_number("%.4g", sync_s) +
                " s, C the slowest replica's kernels, X the rest (each replica's all-reduce "
                "overlaps its next step; Ho et al. 2013); the first steps, where fast replicas "
                "pull ahead, are left out"
          : "training.sync local-sgd (period " + std::to_string(t.local_sgd_period) +
                "): mean step C + X / H = " + format_number("%.4g", step_s) +
                " s from the synchronous step " + format_number("%.4g", sync_s) +
                " s, C the slowest replica's kernels, X the rest; the parameter averaging is "
                "assumed to cost what the gradient all-reduce does (Stich 2019; Lin et al. 2020)");
}

}  // namespace dtsim::driver
