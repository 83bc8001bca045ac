#include "sim/simgrid_executor.h"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <unordered_map>

#include "core/base/error.h"
#include "core/collectives/cost_model.h"
#include "sim/maestro_activities.h"
#include "sim/platform.h"

namespace dtsim::sim {

namespace sg4 = simgrid::s4u;

namespace {

// Releases activities into SimGrid only when their predecessors have finished. SimGrid 3.32's
// cost per event grows with the number of started-but-blocked activities (a fully pre-built DAG
// of 40k activities runs 4x slower than one of 20k), so the graph is walked here instead: joins
// resolve without SimGrid, and each finished activity's completion callback launches its ready
// successors. Measured: 200k dependent comms in 0.7 s this way, against minutes pre-built.
//
// Several runners may run one after another in one engine (the alone collectives' schedules are
// timed first, then the graph): one completion callback serves the runner that is running.
class LazyRunner {
 public:
  // `alone_seconds`: the duration of each of g.alone's schedules (kAlone nodes).
  LazyRunner(const ActivityGraph& g, const Cluster& cluster, const Platform& p,
             MaestroActivities& maestro, std::vector<double> alone_seconds = {})
      : g_(g),
        cluster_(cluster),
        p_(p),
        maestro_(maestro),
        alone_seconds_(std::move(alone_seconds)),
        waiting_(g.nodes.size()),
        finish_(g.nodes.size(), -1.0) {
    for (size_t i = 0; i < g.nodes.size(); ++i) waiting_[i] = g.nodes[i].predecessors;
  }

  // Starts the graph at the engine's current time, which becomes its time zero.
  void start() {
    static bool registered = false;
    if (!registered)
      sg4::Activity::on_completion_cb([](sg4::Activity const& a) {
        if (running_) running_->on_completion(a);
      });
    registered = true;
    running_ = this;
    origin_ = sg4::Engine::get_clock();
    std::vector<int32_t> roots;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (waiting_[i] == 0) roots.push_back(static_cast<int32_t>(i));
    for (int32_t v : roots) ready(v, origin_);
  }

  // Finish times from the start (s). Runs that started later than time zero (after the alone
  // collectives were timed) are shifted back: the only change is the clock's rounding there.
  std::vector<double> finish_times() const {
    size_t unfinished = 0;
    for (double f : finish_) unfinished += f < 0 ? 1 : 0;
    if (unfinished > 0)
      throw RuntimeError(std::to_string(unfinished) + " of " + std::to_string(finish_.size()) +
                         " activities never ran: the program's ops wait on each other in a cycle");
    std::vector<double> shifted = finish_;
    if (origin_ != 0)
      for (double& f : shifted) f -= origin_;
    return shifted;
  }

  // SimGrid activities this runner started.
  size_t activities() const { return launched_; }

 private:
  // Marks v ready at time `now`: joins finish at once, the rest are launched.
  void ready(int32_t first, double now) {
    // The stack's storage is reused from one call to the next (one allocation per completion
    // otherwise); a nested call, if any, gets a new one.
    std::vector<int32_t> stack;
    stack.swap(spare_stack_);
    stack.clear();
    stack.push_back(first);
    while (!stack.empty()) {
      const int32_t v = stack.back();
      stack.pop_back();
      if (g_.nodes[static_cast<size_t>(v)].kind != GraphNode::Kind::kJoin) {
        launch(v);
        continue;
      }
      finish_[static_cast<size_t>(v)] = now;
      for (int32_t s : g_.nodes[static_cast<size_t>(v)].successors)
        if (--waiting_[static_cast<size_t>(s)] == 0) stack.push_back(s);
    }
    spare_stack_.swap(stack);
  }

  // A node with a fixed duration that runs on one stream: a kernel, or a collective alone on its
  // links (kAlone; only where a GPU runs one stream's kernels, so a run holding it is never
  // slowed by another kernel on its GPU).
  bool in_runs(const GraphNode& n) const {
    return n.kind == GraphNode::Kind::kCompute ||
           (n.kind == GraphNode::Kind::kAlone && g_.one_compute_stream);
  }
  // Its duration (s).
  double seconds(const GraphNode& n) const {
    return n.kind == GraphNode::Kind::kAlone ? alone_seconds_[n.alone_schedule()] : n.amount;
  }

  // The kernels and alone collectives that follow v on its stream through joins that nothing
  // else waits for or on (no event in between), with those joins: the run v ... last, in order,
  // and the GPU of its kernels (-1: none). Such a run is one Exec of their summed time on that
  // GPU (or on the timer); it is exact because a GPU host runs one stream's kernels back to back,
  // nothing can start in between, and an alone collective's time depends on nothing else.
  std::vector<int32_t> fixed_run(int32_t v, Rank* gpu) const {
    std::vector<int32_t> run{v};
    const GraphNode& first = g_.nodes[static_cast<size_t>(v)];
    *gpu = first.kind == GraphNode::Kind::kCompute ? first.gpu() : -1;
    if (!in_runs(first)) return run;
    int32_t cur = v;
    while (true) {
      const GraphNode& c = g_.nodes[static_cast<size_t>(cur)];
      if (c.successors.size() != 1) break;
      std::vector<int32_t> joins;
      int32_t next = c.successors[0];
      while (g_.nodes[static_cast<size_t>(next)].kind == GraphNode::Kind::kJoin) {
        const GraphNode& j = g_.nodes[static_cast<size_t>(next)];
        if (j.predecessors != 1 || j.successors.size() != 1) break;
        joins.push_back(next);
        next = j.successors[0];
      }
      const GraphNode& n = g_.nodes[static_cast<size_t>(next)];
      if (!in_runs(n) || n.predecessors != 1 || joins.empty() ||
          g_.nodes[static_cast<size_t>(joins.back())].successors[0] != next)
        break;
      if (n.kind == GraphNode::Kind::kCompute) {
        if (*gpu >= 0 && n.gpu() != *gpu) break;
        *gpu = n.gpu();
      }
      run.insert(run.end(), joins.begin(), joins.end());
      run.push_back(next);
      cur = next;
    }
    return run;
  }

  void launch(int32_t v) {
    ++launched_;
    const GraphNode& node = g_.nodes[static_cast<size_t>(v)];
    uint32_t slot = 0;
    if (free_slots_.empty()) {
      slot = static_cast<uint32_t>(live_.size());
      live_.emplace_back();
    } else {
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    Live& held = live_[slot];
    held.node = v;
    if (node.kind == GraphNode::Kind::kFlow) {
      const auto [src, dst] = hosts_for(p_, node.src, node.dst, cluster_);
      auto c = sg4::Comm::sendto_init(src, dst);
      held.adopted = maestro_.adopt(*c);
      c->set_payload_size(static_cast<uint64_t>(std::llround(node.amount)));
      tag(*c, slot);
      held.activity = c;
      c->start();
    } else {
      auto e = sg4::Exec::init();
      held.adopted = maestro_.adopt(*e);
      if (node.kind == GraphNode::Kind::kCompute || node.kind == GraphNode::Kind::kAlone) {
        Rank gpu = -1;
        std::vector<int32_t> run = fixed_run(v, &gpu);
        double total = 0;
        for (int32_t u : run)
          if (g_.nodes[static_cast<size_t>(u)].kind != GraphNode::Kind::kJoin)
            total += seconds(g_.nodes[static_cast<size_t>(u)]);
        if (run.size() > 1) runs_[v] = Run{sg4::Engine::get_clock(), std::move(run)};
        if (gpu >= 0)
          e->set_flops_amount(total * p_.gpu_speed)->set_host(p_.gpu[static_cast<size_t>(gpu)]);
        else
          e->set_flops_amount(total)->set_host(p_.timer);  // the timer runs at 1 FLOP/s
      } else
        e->set_flops_amount(node.amount)->set_host(p_.timer);
      tag(*e, slot);
      held.activity = e;
      e->start();
    }
  }

  // The activity's slot in live_, in its user data (slot + 1; null: not ours). Cheaper than a
  // map from activities to nodes, which cost a hash node per activity.
  static void tag(sg4::Activity& a, uint32_t slot) {
    a.set_data(reinterpret_cast<void*>(static_cast<intptr_t>(slot) + 1));
  }

  void on_completion(sg4::Activity const& a) {
    const auto tagged = reinterpret_cast<intptr_t>(a.get_data<void>());
    if (tagged == 0) return;
    const auto slot = static_cast<uint32_t>(tagged - 1);
    if (slot >= live_.size() || live_[slot].activity.get() != &a) return;
    Live& held = live_[slot];
    const int32_t v = held.node;
    maestro_.release(held.adopted);
    // Drop our reference later: SimGrid is still using the activity inside this callback.
    graveyard_.clear();
    graveyard_.push_back(std::move(held.activity));
    held.activity = nullptr;
    free_slots_.push_back(slot);
    const double now = sg4::Engine::get_clock();
    int32_t last = v;
    if (auto run = runs_.find(v); run != runs_.end()) {
      // Spread the run's time over its kernels in proportion to their work.
      double total = 0;
      for (int32_t u : run->second.nodes)
        if (g_.nodes[static_cast<size_t>(u)].kind != GraphNode::Kind::kJoin)
          total += seconds(g_.nodes[static_cast<size_t>(u)]);
      const double scale = total > 0 ? (now - run->second.start) / total : 0;
      double t = run->second.start;
      for (int32_t u : run->second.nodes) {
        const GraphNode& n = g_.nodes[static_cast<size_t>(u)];
        if (n.kind != GraphNode::Kind::kJoin) t += seconds(n) * scale;
        finish_[static_cast<size_t>(u)] = t;
        waiting_[static_cast<size_t>(u)] = 0;
      }
      last = run->second.nodes.back();
      runs_.erase(run);
    }
    finish_[static_cast<size_t>(last)] = now;
    for (int32_t s : g_.nodes[static_cast<size_t>(last)].successors)
      if (--waiting_[static_cast<size_t>(s)] == 0) ready(s, now);
  }

  struct Run {
    double start = 0;
    std::vector<int32_t> nodes;  // the compute nodes and joins after the first, in order
  };
  std::unordered_map<int32_t, Run> runs_;  // by the node whose activity runs them

  static inline LazyRunner* running_ = nullptr;  // the runner the completion callback serves

  const ActivityGraph& g_;
  const Cluster& cluster_;
  const Platform& p_;
  MaestroActivities& maestro_;
  std::vector<double> alone_seconds_;
  double origin_ = 0;  // the engine's clock when the graph started (s)
  size_t launched_ = 0;
  std::vector<int32_t> waiting_;
  std::vector<double> finish_;
  // The activities in flight, in slots reused as they complete: a few thousand at a time against
  // millions of nodes, so neither a slot per node (whose pages alone cost more) nor a hash map
  // (a node allocated and a bucket searched per activity).
  struct Live {
    sg4::ActivityPtr activity;
    MaestroActivities::Handle adopted;  // its entry in maestro_
    int32_t node = -1;
  };
  std::vector<Live> live_;
  std::vector<uint32_t> free_slots_;
  std::vector<sg4::ActivityPtr> graveyard_;
  std::vector<int32_t> spare_stack_;  // ready()'s
};

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    ssize_t r = ::read(fd, p, size);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    size -= static_cast<size_t>(r);
  }
  return true;
}

// Waits for child `pid` to end; returns its wait status.
int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// A process forked from this one that runs `work` and writes the bytes it returns to the pipe
// `result_fd` reads, then ends without running SimGrid's and the parent's static destructors.
// It dies with this process, however that ends (SIGINT, SIGTERM, SIGKILL, a crash): the kernel
// sends SIGKILL when the parent exits, and a parent that died between fork and prctl is caught by
// the getppid check, so no simulation outlives dtsim as an orphan. It ignores Ctrl-C, which
// reaches the whole process group: the parent decides, and its death ends the child. With
// `stderr_fd` >= 0 its standard error goes there. Exit status: 0, 3 (the result could not be
// written), 4 (`work` threw; its message on standard error) or 5 (the parent was gone).
struct Child {
  pid_t pid = -1;
  int result_fd = -1;
};

Child fork_child(const std::function<std::string()>& work, int stderr_fd) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw RuntimeError(std::string("cannot create a pipe for the simulation: ") +
                       std::strerror(errno));
  std::fflush(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    throw RuntimeError(std::string("cannot start a simulation process: ") + std::strerror(errno));
  if (pid == 0) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(5);
    std::signal(SIGINT, SIG_IGN);
    ::close(fds[0]);
    if (stderr_fd >= 0) ::dup2(stderr_fd, STDERR_FILENO);
    int code = 0;
    try {
      const std::string bytes = work();
      if (!write_all(fds[1], bytes.data(), bytes.size())) code = 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      code = 4;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  ::close(fds[1]);
  return Child{pid, fds[0]};
}

// `value`'s bytes appended to `out` (results cross the pipe as raw bytes of this machine).
template <class T>
void append_bytes(std::string& out, const T& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

// Times schedules[k] for each k in `mine`, alone on the idle platform, one after another: the
// time from its start to its end (s). Adds the SimGrid activities it ran to *activities.
std::vector<double> time_schedules(const std::vector<CollectiveSchedule>& schedules,
                                   const std::vector<size_t>& mine, const Cluster& cluster,
                                   const Platform& p, MaestroActivities& maestro,
                                   size_t* activities) {
  std::vector<double> seconds;
  for (size_t k : mine) {
    ActivityGraph one;
    one.nodes.reserve(schedules[k].flows.size() + 3);
    const int32_t begin = one.add(GraphNode{}), end = one.add(GraphNode{});
    add_schedule(one, schedules[k], begin, end);
    LazyRunner probe(one, cluster, p, maestro);
    probe.start();
    sg4::Engine::get_instance()->run();
    seconds.push_back(probe.finish_times()[static_cast<size_t>(end)]);
    *activities += probe.activities();
  }
  return seconds;
}

// Each of g.alone's schedules timed alone on the idle platform (s). A schedule's time depends on
// nothing but the platform, so each large one (50,000 flows or more: a chunk-level schedule)
// is timed in a process of its own, forked from this one while its engine is still at time zero
// with no activity started, up to one per CPU at once; the small ones follow here, one after
// another. Which schedules run where does not depend on the number of CPUs, so the times are the
// same on every machine. A process that fails fails the run. DTSIM_SIMGRID_PROBE_PROCESSES=N
// sets how many run at once (1: one after another); DTSIM_SIMGRID_PROBE_FORK_FLOWS=N, from how
// many flows a schedule gets a process (tests/sim/alone_collectives_test.cc forks every one).
std::vector<double> time_alone_schedules(const ActivityGraph& g, const Cluster& cluster,
                                         const Platform& p, MaestroActivities& maestro,
                                         size_t* activities) {
  size_t fork_flows = 50000;  // a fork costs milliseconds; such a schedule, about a second
  if (const char* env = std::getenv("DTSIM_SIMGRID_PROBE_FORK_FLOWS"); env && *env)
    fork_flows = std::max(1L, std::strtol(env, nullptr, 10));
  const size_t n = g.alone.size();
  std::vector<double> seconds(n, 0.0);
  std::vector<size_t> large, small;
  for (size_t k = 0; k < n; ++k)
    (g.alone[k].flows.size() >= fork_flows ? large : small).push_back(k);
  long at_once = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (const char* env = std::getenv("DTSIM_SIMGRID_PROBE_PROCESSES"); env && *env)
    at_once = std::strtol(env, nullptr, 10);
  at_once = std::clamp(at_once, 1L, 64L);
  struct Probe {
    Child child;
    size_t schedule = 0;
  };
  std::vector<Probe> running;
  std::string failure;
  // Waits for the oldest running probe and takes its time.
  auto collect = [&] {
    const Probe probe = running.front();
    running.erase(running.begin());
    double time = 0;
    uint64_t count = 0;
    const bool got = read_all(probe.child.result_fd, &time, sizeof time) &&
                     read_all(probe.child.result_fd, &count, sizeof count);
    ::close(probe.child.result_fd);
    const int status = wait_for(probe.child.pid);
    if (!got || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failure = "a process timing a collective alone failed";
      return;
    }
    seconds[probe.schedule] = time;
    *activities += count;
  };
  for (size_t k : large) {
    if (running.size() >= static_cast<size_t>(at_once)) collect();
    const Child child = fork_child(
        [&, k] {
          size_t ran = 0;
          const double time = time_schedules(g.alone, {k}, cluster, p, maestro, &ran).front();
          std::string bytes;
          append_bytes(bytes, time);
          append_bytes(bytes, static_cast<uint64_t>(ran));
          return bytes;
        },
        -1);
    running.push_back(Probe{child, k});
  }
  while (!running.empty()) collect();
  if (!failure.empty()) throw RuntimeError(failure);
  const std::vector<double> here = time_schedules(g.alone, small, cluster, p, maestro, activities);
  for (size_t i = 0; i < small.size(); ++i) seconds[small[i]] = here[i];
  return seconds;
}

// The simulation proper; runs in the child process.
std::vector<double> simulate_in_this_process(const ActivityGraph& g, const Cluster& cluster,
                                             DType precision,
                                             const std::vector<DegradedNic>& degraded) {
  int argc = 2;
  char arg0[] = "dtsim";
  char arg1[] = "--log=root.thres:warning";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  // Before any activity exists (sim/maestro_activities.h). DTSIM_SIMGRID_BYPASS=0 turns the
  // bypass off, to measure it and to check that it changes no result.
  const char* bypass = std::getenv("DTSIM_SIMGRID_BYPASS");
  MaestroActivities maestro(bypass == nullptr || std::strcmp(bypass, "0") != 0);
  const Platform p = build_platform(cluster, precision, degraded);
  size_t probe_activities = 0;
  std::vector<double> alone_seconds =
      time_alone_schedules(g, cluster, p, maestro, &probe_activities);
  LazyRunner runner(g, cluster, p, maestro, std::move(alone_seconds));
  runner.start();
  engine.run();
  // DTSIM_SIMGRID_STATS=FILE appends what SimGrid ran, to measure the engine (bench/).
  if (const char* stats = std::getenv("DTSIM_SIMGRID_STATS"); stats && *stats)
    if (FILE* f = std::fopen(stats, "a")) {
      std::fprintf(f, "activities %zu nodes %zu alone_schedules %zu alone_activities %zu\n",
                   runner.activities(), g.nodes.size(), g.alone.size(), probe_activities);
      std::fclose(f);
    }
  return runner.finish_times();
}

}  // namespace

std::vector<double> simulate_graph(const ActivityGraph& graph, const Cluster& cluster,
                                   DType precision,
                                   const std::vector<Perturbation>& perturbations) {
  std::vector<DegradedNic> degraded;
  for (const Perturbation& pt : perturbations)
    if (pt.kind == Perturbation::Kind::kDegradedLink && pt.nic >= 0)
      degraded.push_back(DegradedNic{pt.node, pt.nic, pt.fraction});
  int error_pipe[2];
  if (::pipe(error_pipe) != 0)
    throw RuntimeError(std::string("cannot create a pipe for the simulation: ") +
                       std::strerror(errno));
  const Child child = fork_child(
      [&] {
        const std::vector<double> finish =
            simulate_in_this_process(graph, cluster, precision, degraded);
        std::string bytes;
        append_bytes(bytes, static_cast<uint64_t>(finish.size()));
        bytes.append(reinterpret_cast<const char*>(finish.data()), finish.size() * sizeof(double));
        return bytes;
      },
      error_pipe[1]);
  ::close(error_pipe[1]);
  std::string result_bytes, error_text;
  pollfd fds[2] = {{child.result_fd, POLLIN, 0}, {error_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[1 << 16];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < 2; ++k) {
      if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[k].fd, buf, sizeof buf);
      if (r > 0) {
        (k == 0 ? result_bytes : error_text).append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        ::close(fds[k].fd);
        fds[k].fd = -1;
        --open_fds;
      }
    }
  }
  const int status = wait_for(child.pid);
  auto tail = [&] {
    std::string t = error_text;
    if (t.size() > 2000) t = "..." + t.substr(t.size() - 2000);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    return t.empty() ? std::string("(no message)") : t;
  };
  if (WIFSIGNALED(status))
    throw RuntimeError("the SimGrid simulation failed (killed by signal " +
                       std::to_string(WTERMSIG(status)) + " " + strsignal(WTERMSIG(status)) +
                       "): " + tail());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw RuntimeError("the SimGrid simulation failed: " + tail());
  uint64_t count = 0;
  if (result_bytes.size() < sizeof count)
    throw RuntimeError("the SimGrid simulation returned no result: " + tail());
  std::memcpy(&count, result_bytes.data(), sizeof count);
  if (count != graph.nodes.size() || result_bytes.size() != sizeof count + count * sizeof(double))
    throw RuntimeError("the SimGrid simulation returned a truncated result: " + tail());
  std::vector<double> finish(count);
  std::memcpy(finish.data(), result_bytes.data() + sizeof count, count * sizeof(double));
  return finish;
}

CollectiveBody SimGridExecutor::body_for(const Job& job, const Cluster& cluster,
                                         int iterations) const {
  if (options_.fidelity == FidelitySetting::kCollective) return CollectiveBody::kCollectiveFlows;
  // Chunk-level flows of the whole run. Collectives are matched across members, so count each
  // once: on the program of the group's first simulated member. A program repeats the same
  // collective (every gradient bucket of one size, every layer's TP all-reduce), and counting one
  // builds its whole schedule, so each distinct collective is counted once and reused.
  double flows = 0;
  std::map<GroupId, Rank> counted_by;
  using Key = std::tuple<GroupId, CollectiveKind, double, DType, CollectiveAlgorithm, Rank,
                         CollectiveProtocol>;
  std::map<Key, double> flows_of;
  for (const auto& p : job.programs)
    for (const auto& s : p.streams)
      for (const auto& op : s.ops)
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
          auto [it, inserted] = counted_by.emplace(c->group, p.rank);
          if (!inserted && it->second != p.rank) continue;
          const Key key{c->group,     c->kind, c->bytes.value(), c->dtype,
                        c->algorithm, c->root, c->protocol};
          auto [known, fresh] = flows_of.emplace(key, 0.0);
          if (fresh) known->second = chunk_flow_count(*c, job.group(c->group).ranks, cluster);
          flows += known->second;
        }
  flows *= iterations;
  if (options_.fidelity == FidelitySetting::kChunk) {
    if (flows > kMaxChunkFlows)
      throw InputError(Diagnostic{
          SourceLocation{}, "simulate.fidelity",
          "chunk fidelity would simulate " + std::to_string(static_cast<int64_t>(flows)) +
              " flows (gigabytes of memory and hours); use collective or auto"});
    return CollectiveBody::kChunkFlows;
  }
  return flows <= kAutoChunkFlows ? CollectiveBody::kChunkFlows : CollectiveBody::kCollectiveFlows;
}

Trace SimGridExecutor::run(const Job& job, const Cluster& nominal, const RunOptions& options) {
  refuse_unsupported(options, name(),
                     {Perturbation::Kind::kSlowRank, Perturbation::Kind::kRandomSlowdown,
                      Perturbation::Kind::kThrottle, Perturbation::Kind::kDegradedLink});
  refuse_uplinks_and_torus(options, nominal, name());
  const Cluster cluster = apply_perturbations(nominal, options);
  const int iterations = options.iterations;
  const TransientSlowdowns transient = transient_slowdowns(job, cluster, options);
  // DTSIM_SIMGRID_ALONE=0 keeps every collective's flows, to measure the alone collectives and
  // to check that they change no result.
  const char* alone = std::getenv("DTSIM_SIMGRID_ALONE");
  const bool alone_collectives =
      options_.alone_collectives && (alone == nullptr || std::strcmp(alone, "0") != 0);
  const ActivityGraph graph =
      lower(job, cluster, iterations, body_for(job, cluster, iterations), &transient,
            !options.perturbations.empty(), nullptr, alone_collectives);
  return trace_from_times(graph, job,
                          simulate_graph(graph, cluster, options_.precision, options.perturbations),
                          name());
}

}  // namespace dtsim::sim
