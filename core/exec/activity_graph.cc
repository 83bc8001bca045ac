#include "core/exec/activity_graph.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/collectives/cost_model.h"
#include "core/exec/compute_cost.h"
#include "core/exec/overlap_contention.h"
#include "core/hardware/network_topology.h"
#include "core/hardware/nvlink_mesh.h"

namespace dtsim {

int32_t ActivityGraph::add(GraphNode n) {
  nodes.push_back(std::move(n));
  return static_cast<int32_t>(nodes.size() - 1);
}

void ActivityGraph::edge(int32_t from, int32_t to) {
  nodes[static_cast<size_t>(from)].successors.push_back(to);
  ++nodes[static_cast<size_t>(to)].predecessors;
}

namespace {

// Hashes a tuple of integers (send/receive matching: thousands of lookups per Job).
struct TupleHash {
  template <typename... T>
  size_t operator()(const std::tuple<T...>& t) const {
    size_t h = 0;
    std::apply([&](const auto&... v) { ((h = h * 1000003u ^ static_cast<size_t>(v)), ...); }, t);
    return h;
  }
};

GraphNode join() {
  return GraphNode{};
}

std::string op_name(const Program& p, StreamId s, size_t i) {
  return "rank " + std::to_string(p.rank) + ", stream '" + p.streams[static_cast<size_t>(s)].name +
         "', op '" + p.streams[static_cast<size_t>(s)].ops[i].label.name + "'";
}

// A collective or transfer that several op instances share; `first` names the op that made it
// (for errors: building the name for every instance cost a string each).
struct Shared {
  int32_t begin = -1;
  int32_t end = -1;
  int arrived = 0;
  int expected = 0;
  const Program* first = nullptr;
  StreamId stream = 0;
  size_t op_index = 0;
  std::string first_op() const { return op_name(*first, stream, op_index); }
};

// Collectives a job repeats (hundreds of equal gradient buckets, every iteration) are timed or
// decomposed once: both cost O(group size), which a million-rank group makes seconds each.
struct CollectiveMemo {
  using Key = std::tuple<GroupId, int, double, int, int, Rank, int>;
  static Key key(const CollectiveOp& op) {
    return {op.group,
            static_cast<int>(op.kind),
            op.bytes.value(),
            static_cast<int>(op.dtype),
            static_cast<int>(op.algorithm),
            op.root,
            static_cast<int>(op.protocol)};
  }
  std::map<Key, Seconds> times;
  std::map<Key, CollectiveSchedule> schedules;        // collective fidelity
  std::map<Key, CollectiveSchedule> chunk_schedules;  // chunk fidelity: only alone_groups' own
  std::map<Key, size_t> alone;                        // index in ActivityGraph::alone

  const CollectiveSchedule& schedule(const CollectiveOp& op, const Group& group,
                                     const Cluster& cluster,
                                     Fidelity fidelity = Fidelity::kCollective) {
    auto& by_key = fidelity == Fidelity::kChunk ? chunk_schedules : schedules;
    const auto k = key(op);
    auto it = by_key.find(k);
    if (it == by_key.end())
      it = by_key.emplace(k, decompose(op, group.ranks, cluster, fidelity)).first;
    return it->second;
  }
  // The schedule for a kAlone node, which is built once per key: a chunk schedule (large, and
  // needed only once) is moved out of the memo.
  CollectiveSchedule take(const CollectiveOp& op, const Group& group, const Cluster& cluster,
                          Fidelity fidelity) {
    if (fidelity != Fidelity::kChunk) return schedule(op, group, cluster, fidelity);
    auto it = chunk_schedules.find(key(op));
    if (it == chunk_schedules.end()) return decompose(op, group.ranks, cluster, fidelity);
    CollectiveSchedule s = std::move(it->second);
    chunk_schedules.erase(it);
    return s;
  }
};

// The schedule fidelity of a body that has flows.
Fidelity fidelity_of(CollectiveBody body) {
  return body == CollectiveBody::kChunkFlows ? Fidelity::kChunk : Fidelity::kCollective;
}

// The op class of an op for alone_groups(): a collective's group (>= 0), or -1 - peer for sends
// and receives; nullopt for compute and memory ops.
std::optional<int64_t> op_class(const Op& op) {
  if (const auto* c = std::get_if<CollectiveOp>(&op.body)) return c->group;
  if (const auto* x = std::get_if<SendOp>(&op.body)) return -1 - static_cast<int64_t>(x->peer);
  if (const auto* x = std::get_if<RecvOp>(&op.body)) return -1 - static_cast<int64_t>(x->peer);
  return std::nullopt;
}

// Whether a program's ops of classes a and b follow one another: each ends before the next one
// starts through its streams' order and event waits (as lower() joins them: a wait is on the
// iteration's last op, in stream then op order, that records the event), over two iterations,
// so that the last of one iteration also precedes the first of the next. Walks the ops in an
// order that respects those edges, keeping for each op the last of the chain's ops that precede
// it (while the ops met so far form a chain, those preceding an op are a prefix of it); each op
// of a or b must follow the one met before it. False where the walk stalls (a program that
// cannot finish), which lower() reports.
bool ops_in_chain(const Program& p, int64_t a, int64_t b) {
  const size_t streams = p.streams.size();
  std::vector<std::vector<char>> member(streams);
  std::vector<int32_t> recorder_stream(static_cast<size_t>(std::max(p.num_events, 0)), -1);
  std::vector<size_t> recorder_op(recorder_stream.size(), 0);
  for (size_t s = 0; s < streams; ++s) {
    const auto& ops = p.streams[s].ops;
    member[s].resize(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      const auto c = op_class(ops[i]);
      member[s][i] = c && (*c == a || *c == b) ? 1 : 0;
      if (ops[i].record) {
        const auto e = static_cast<size_t>(*ops[i].record);
        if (e >= recorder_stream.size()) {
          recorder_stream.resize(e + 1, -1);
          recorder_op.resize(e + 1, 0);
        }
        recorder_stream[e] = static_cast<int32_t>(s);
        recorder_op[e] = i;
      }
    }
  }
  int chain = -1;                      // the index of the last chain op met
  std::vector<int> tail(streams, -1);  // the previous iteration's last value on each stream
  for (int it = 0; it < 2; ++it) {
    std::vector<size_t> next(streams, 0);
    std::vector<std::vector<int>> last(streams);  // by stream and op: the last chain op before
    for (size_t s = 0; s < streams; ++s) last[s].resize(p.streams[s].ops.size(), -1);
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t s = 0; s < streams; ++s) {
        const auto& ops = p.streams[s].ops;
        while (next[s] < ops.size()) {
          const size_t i = next[s];
          int before = i > 0 ? last[s][i - 1] : tail[s];
          bool ready = true;
          for (EventId e : ops[i].waits) {
            const auto ei = static_cast<size_t>(e);
            if (e < 0 || ei >= recorder_stream.size() || recorder_stream[ei] < 0) return false;
            const auto rs = static_cast<size_t>(recorder_stream[ei]);
            if (next[rs] <= recorder_op[ei]) {
              ready = false;
              break;
            }
            before = std::max(before, last[rs][recorder_op[ei]]);
          }
          if (!ready) break;
          if (member[s][i]) {
            if (before != chain) return false;
            before = ++chain;
          }
          last[s][i] = before;
          ++next[s];
          progress = true;
        }
      }
    }
    for (size_t s = 0; s < streams; ++s) {
      if (next[s] < p.streams[s].ops.size()) return false;
      if (!last[s].empty()) tail[s] = last[s].back();
    }
  }
  return true;
}

// Which groups' collectives run alone on their links (activity_graph.h), by GroupId.
//
// A flow's rate under max-min sharing depends only on the flows it shares a link with, so a
// collective none of whose flows can ever share a link with another flow that runs at the same
// time takes, wherever it starts, the time its schedule takes alone. The proof here:
// - the links a flow crosses are the GPUs' own fabric links fabric_link_users names (inside a
//   node: those of its ends; between nodes: none, or on PCIe nodes and rail-only relays those it
//   lists) and, for a flow between two nodes, the inter-node network, taken as one link (kNetwork:
//   NICs, uplinks, rails, cables and routers alike, so any two flows between nodes count as
//   sharing; conservative); and
// - every other flow that crosses one of those links belongs to an op X (a collective, or the
//   sends and receives between two ranks) that cannot run at the same time as any of the
//   group's collectives: on some simulated rank, every one of X's ops and the group's
//   collectives is ordered after another (ops_in_chain). A collective starts after each
//   simulated member's ops that precede it and ends before those that follow it, so that rank
//   orders them. The cheap case: the rank issues them all on one stream. Otherwise its program's
//   stream order and event waits must order them (a collective on a side stream that waits for
//   the kernel before it and that the kernel after it waits for, as Megatron's asynchronous
//   tensor-parallel backward collectives do). The group itself is such an X too (two of its own
//   collectives never overlap).
// The test is on groups, not op instances: conservative (a group with one unordered collective
// keeps its flows) and cheap (a few entries per rank, one schedule per distinct collective, and a
// walk of a program only where the op classes are on more than one stream).
std::vector<char> alone_groups(const Job& job, const Cluster& cluster, CollectiveMemo& memo,
                               Fidelity fidelity) {
  std::vector<char> alone(job.groups.size(), 0);
  // The inter-node network as one link, beside the GPUs' links (ranks are >= 0).
  constexpr Rank kNetwork = -1;
  // The stream on which each simulated rank issues an op class: a group's collectives (id >= 0)
  // or its sends and receives with one peer (id -1 - peer); kSeveral when on more than one.
  constexpr StreamId kSeveral = -2;
  std::map<std::pair<Rank, int64_t>, StreamId> stream_of;
  std::map<GroupId, std::map<CollectiveMemo::Key, const CollectiveOp*>> collectives;
  auto note = [&](Rank r, int64_t id, StreamId s) {
    auto [it, inserted] = stream_of.emplace(std::make_pair(r, id), s);
    if (!inserted && it->second != s) it->second = kSeveral;
  };
  for (const auto& p : job.programs)
    for (size_t s = 0; s < p.streams.size(); ++s)
      for (const Op& op : p.streams[s].ops) {
        const auto stream = static_cast<StreamId>(s);
        if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
          note(p.rank, c->group, stream);
          collectives[c->group].emplace(CollectiveMemo::key(*c), c);
        } else if (const auto* x = std::get_if<SendOp>(&op.body)) {
          note(p.rank, -1 - static_cast<int64_t>(x->peer), stream);
        } else if (const auto* x = std::get_if<RecvOp>(&op.body)) {
          note(p.rank, -1 - static_cast<int64_t>(x->peer), stream);
        }
      }
  // The op classes whose flows cross each GPU's fabric link (or the network), and the GPUs'
  // links (and the network) each group's flows use.
  std::map<Rank, std::vector<int64_t>> crossing;  // p2p classes as -1 - (a * world + b), a < b
  std::map<GroupId, std::vector<Rank>> links_of;
  for (const auto& [group, ops] : collectives) {
    // The links depend on a flow's ends only: each pair once (a chunk schedule has many flows
    // per pair).
    std::vector<std::pair<Endpoint, Endpoint>> pairs;
    std::unordered_set<uint64_t> seen;
    auto code = [](Endpoint e) {  // 32 bits: the kind, then the rank or node
      return (e.is_switch() ? uint64_t{1} << 31 : 0) |
             static_cast<uint32_t>(e.is_switch() ? e.node() : e.rank());
    };
    for (const auto& [key, op] : ops)
      for (const Flow& f : memo.schedule(*op, job.group(group), cluster, fidelity).flows)
        if (!f.is_delay() &&
            seen.insert(code(f.transfer().src) << 32 | code(f.transfer().dst)).second)
          pairs.emplace_back(f.transfer().src, f.transfer().dst);
    std::vector<Rank> gpus;
    for (const auto& [src, dst] : pairs) {
      for (Rank r : fabric_link_users(Transfer{src, dst, Bytes(0)}, cluster)) gpus.push_back(r);
      if (cluster.node_of(src) != cluster.node_of(dst)) gpus.push_back(kNetwork);
    }
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    for (Rank r : gpus) crossing[r].push_back(group);
    links_of[group] = std::move(gpus);
  }
  const auto world = static_cast<int64_t>(job.world_size);
  for (const auto& [use, stream] : stream_of) {
    if (use.second >= 0) continue;
    const Rank a = use.first, b = static_cast<Rank>(-1 - use.second);
    if (a > b && stream_of.count({b, -1 - static_cast<int64_t>(a)})) continue;  // counted at b
    const int64_t pair = -1 - (std::min(a, b) * world + std::max(a, b));
    for (Rank r :
         fabric_link_users(Transfer{Endpoint::gpu(a), Endpoint::gpu(b), Bytes(0)}, cluster))
      crossing[r].push_back(pair);
    if (cluster.node_of(a) != cluster.node_of(b)) crossing[kNetwork].push_back(pair);
  }
  std::map<Rank, const Program*> program_of;
  for (const auto& p : job.programs) program_of[p.rank] = &p;
  std::map<std::tuple<Rank, int64_t, int64_t>, bool> chained;  // ops_in_chain, by (rank, a, b)
  // Each group's simulated members (a group across nodes may have thousands of members and one
  // simulated).
  std::map<GroupId, std::vector<Rank>> simulated_members;
  auto members = [&](GroupId group) -> const std::vector<Rank>& {
    auto it = simulated_members.find(group);
    if (it == simulated_members.end()) {
      std::vector<Rank> mine;
      for (Rank r : job.group(group).ranks)
        if (program_of.count(r)) mine.push_back(r);
      it = simulated_members.emplace(group, std::move(mine)).first;
    }
    return it->second;
  };
  // On some simulated rank, the group's collectives and X's ops follow one another.
  auto ordered = [&](GroupId group, int64_t x) {
    std::vector<std::pair<Rank, int64_t>> sides;  // (rank, its id for X)
    if (x >= 0) {  // the group's own simulated members, which may also issue X
      for (Rank r : members(group)) sides.emplace_back(r, x);
    } else {
      const int64_t pair = -1 - x;
      const auto a = static_cast<Rank>(pair / world), b = static_cast<Rank>(pair % world);
      sides = {{a, -1 - static_cast<int64_t>(b)}, {b, -1 - static_cast<int64_t>(a)}};
    }
    for (const auto& [r, id] : sides) {
      auto mine = stream_of.find({r, group});
      auto theirs = stream_of.find({r, id});
      if (mine == stream_of.end() || theirs == stream_of.end()) continue;
      if (mine->second != kSeveral && mine->second == theirs->second) return true;
      const auto key = std::make_tuple(r, static_cast<int64_t>(group), id);
      auto known = chained.find(key);
      if (known == chained.end())
        known = chained.emplace(key, ops_in_chain(*program_of.at(r), group, id)).first;
      if (known->second) return true;
    }
    return false;
  };
  for (const auto& [group, gpus] : links_of) {
    if (gpus.empty()) continue;
    bool ok = true;
    for (Rank r : gpus) {
      for (int64_t x : crossing[r]) {
        ok = ordered(group, x);
        if (!ok) break;
      }
      if (!ok) break;
    }
    alone[static_cast<size_t>(group)] = ok ? 1 : 0;
  }
  // Chunk schedules are kept for the alone groups only (their kAlone nodes take them); the others
  // are decomposed per collective as they are lowered, as without this proof.
  for (auto it = memo.chunk_schedules.begin(); it != memo.chunk_schedules.end();)
    it = alone[static_cast<size_t>(std::get<0>(it->first))] ? std::next(it)
                                                            : memo.chunk_schedules.erase(it);
  return alone;
}

// Builds the body of a collective between `begin` and `end`; `alone`: it is alone on its links.
void collective_body(ActivityGraph& g, const CollectiveOp& op, const Group& group,
                     const Cluster& cluster, CollectiveBody body, int32_t begin, int32_t end,
                     CollectiveMemo& memo, bool alone) {
  const auto key = CollectiveMemo::key(op);
  if (alone && body != CollectiveBody::kClosedForm) {
    auto it = memo.alone.find(key);
    if (it == memo.alone.end()) {
      it = memo.alone.emplace(key, g.alone.size()).first;
      g.alone.push_back(memo.take(op, group, cluster, fidelity_of(body)));
    }
    int32_t d = g.add(GraphNode::alone(it->second));
    g.edge(begin, d);
    g.edge(d, end);
    return;
  }
  if (body == CollectiveBody::kClosedForm) {
    auto it = memo.times.find(key);
    if (it == memo.times.end())
      it = memo.times.emplace(key, collective_time(op, group.ranks, cluster)).first;
    int32_t d = g.add(GraphNode::delay(it->second));
    g.edge(begin, d);
    g.edge(d, end);
    return;
  }
  if (body == CollectiveBody::kChunkFlows) {  // small jobs only, and large schedules: no memo
    add_schedule(g, decompose(op, group.ranks, cluster, Fidelity::kChunk), begin, end);
    return;
  }
  add_schedule(g, memo.schedule(op, group, cluster), begin, end);
}

// Whether lower() may time each segment of `job` as one node (the header's conditions).
bool segments_lower_as_one(const Job& job, CollectiveBody body, const TransientSlowdowns* transient,
                           bool track_waits, const DegradedNics* degraded) {
  if (body != CollectiveBody::kClosedForm || transient || track_waits || degraded) return false;
  std::vector<char> simulated(static_cast<size_t>(std::max(job.world_size, 0)), 0);
  for (const auto& p : job.programs)
    if (p.rank >= 0 && p.rank < job.world_size) simulated[static_cast<size_t>(p.rank)] = 1;
  std::map<GroupId, bool> alone;  // by group: whether one simulated rank joins it
  std::set<const std::vector<Op>*> seen;
  for (const auto& p : job.programs)
    for (const auto& stream : p.streams)
      for (const Op& op : stream.ops) {
        const auto* seg = std::get_if<SegmentOp>(&op.body);
        if (seg == nullptr || !seen.insert(seg->ops.get()).second) continue;
        for (const Op& inner : *seg->ops) {
          if (std::holds_alternative<SendOp>(inner.body) ||
              std::holds_alternative<RecvOp>(inner.body) ||
              std::holds_alternative<SegmentOp>(inner.body))
            return false;
          const auto* c = std::get_if<CollectiveOp>(&inner.body);
          if (c == nullptr) continue;
          auto [it, fresh] = alone.emplace(c->group, false);
          if (fresh) {
            int members = 0;
            for (Rank r : job.group(c->group).ranks)
              members += r >= 0 && r < job.world_size && simulated[static_cast<size_t>(r)] ? 1 : 0;
            it->second = members == 1;
          }
          if (!it->second) return false;
        }
      }
  return true;
}

// A segment's times on `rank` (ActivityGraph::segment_times), computed once per segment.
const ActivityGraph::SegmentTimes& segment_times(ActivityGraph& g, const SegmentOp& seg, Rank rank,
                                                 const Job& job, const Cluster& cluster,
                                                 CollectiveMemo& memo) {
  auto [it, fresh] = g.segment_times.try_emplace({seg.ops.get(), rank});
  if (!fresh) return it->second;
  ActivityGraph::SegmentTimes& times = it->second;
  times.each.reserve(seg.ops->size());
  for (const Op& op : *seg.ops) {
    double d = 0;
    if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
      d = (compute_time(*c, cluster.gpu) / cluster.speed_scale(rank)).value();
    } else if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
      const auto key = CollectiveMemo::key(*c);
      auto found = memo.times.find(key);
      if (found == memo.times.end())
        found =
            memo.times.emplace(key, collective_time(*c, job.group(c->group).ranks, cluster)).first;
      d = found->second.value();
    }
    times.each.push_back(d);
    times.total += d;
  }
  return times;
}

}  // namespace

void add_schedule(ActivityGraph& g, const CollectiveSchedule& s, int32_t begin, int32_t end) {
  if (s.flows.empty()) {
    g.edge(begin, end);
    return;
  }
  const int32_t first = static_cast<int32_t>(g.nodes.size());
  // Room for the flows and the trailing delay at once (growing geometrically: add_schedule runs
  // once per collective).
  if (const size_t need = g.nodes.size() + s.flows.size() + 1; need > g.nodes.capacity())
    g.nodes.reserve(std::max(need, 2 * g.nodes.capacity()));
  for (const auto& f : s.flows) {
    if (f.is_delay())
      g.add(GraphNode::delay(f.delay()));
    else
      g.add(GraphNode::flow(f.transfer().src, f.transfer().dst, f.transfer().bytes));
  }
  // Each node's successors reserved at once (a schedule's flows have a few each).
  std::vector<int32_t> successors(s.flows.size(), 0);
  for (const auto& f : s.flows)
    for (int a : f.after) ++successors[static_cast<size_t>(a)];
  for (size_t i = 0; i < s.flows.size(); ++i)
    g.nodes[static_cast<size_t>(first) + i].successors.reserve(
        static_cast<size_t>(std::max(successors[i], 1)));
  std::vector<bool> has_successor(s.flows.size(), false);
  for (size_t i = 0; i < s.flows.size(); ++i) {
    if (s.flows[i].after.empty()) g.edge(begin, first + static_cast<int32_t>(i));
    for (int a : s.flows[i].after) {
      g.edge(first + a, first + static_cast<int32_t>(i));
      has_successor[static_cast<size_t>(a)] = true;
    }
  }
  int32_t tail = end;
  if (s.trailing_latency.value() > 0) {
    tail = g.add(GraphNode::delay(s.trailing_latency));
    g.edge(tail, end);
  }
  for (size_t i = 0; i < s.flows.size(); ++i)
    if (!has_successor[i]) g.edge(first + static_cast<int32_t>(i), tail);
}

namespace {

// Lowering a Job: one object per call, holding what every op instance looks up. Lookups by rank,
// group, program and event are vectors: lowering touches them once per op instance (millions),
// where maps cost a tree walk each.
class Lowering {
 public:
  Lowering(const Job& job, const Cluster& cluster, int iterations, CollectiveBody body,
           const TransientSlowdowns* transient, bool track_waits, const DegradedNics* degraded,
           bool alone_collectives)
      : job_(job),
        cluster_(cluster),
        body_(body),
        transient_(transient),
        degraded_(degraded),
        compute_ops_(job.programs.size(), 0),
        simulated_(static_cast<size_t>(job.world_size), 0),
        expected_members_(job.groups.size(), -1),
        stream_tail_(job.programs.size()),
        coll_seq_(job.groups.size(), 0) {
    g_.iterations = iterations;
    g_.tracks_waits = track_waits;
    alone_ = alone_collectives && body != CollectiveBody::kClosedForm
                 ? alone_groups(job, cluster, memo_, fidelity_of(body))
                 : std::vector<char>(job.groups.size(), 0);
    g_.one_compute_stream = one_compute_stream(job);
    for (const auto& p : job.programs)
      if (p.rank >= 0 && p.rank < job.world_size) simulated_[static_cast<size_t>(p.rank)] = 1;
    for (size_t k = 0; k < job.programs.size(); ++k)
      stream_tail_[k].assign(job.programs[k].streams.size(), -1);
    // Every op instance, and about two nodes each (compute: a join and the kernel): reserved, so
    // that millions of nodes are not copied as the vectors grow (untouched capacity costs no
    // page).
    double instances = 0;
    for (const auto& p : job.programs)
      for (const auto& stream : p.streams) instances += static_cast<double>(stream.ops.size());
    instances *= iterations;
    g_.ops.reserve(static_cast<size_t>(instances));
    g_.nodes.reserve(static_cast<size_t>(2 * instances));
  }

  ActivityGraph run() && {
    for (int it = 0; it < g_.iterations; ++it) lower_iteration(it);
    charge_overlap_contention(g_, job_, cluster_);
    return std::move(g_);
  }

 private:
  // An op instance whose stream order and event waits pass 2 connects.
  struct Pending {
    size_t instance;
    size_t program;
    StreamId stream;
    size_t op_index;
  };
  // What one iteration matches: collectives by group, then by their position in each member's
  // order on that group; sends and receives by (src, dst, tag, seq).
  struct Iteration {
    std::vector<std::vector<Shared>> collectives;
    std::unordered_map<std::tuple<Rank, Rank, int, int>, Shared, TupleHash> p2p;
    std::vector<Pending> pending;
    std::vector<std::vector<int32_t>> event_end;  // by program, event
  };

  // Whether every program runs its compute on one stream.
  static bool one_compute_stream(const Job& job) {
    for (const auto& p : job.programs) {
      int compute_stream = -1;
      for (size_t s = 0; s < p.streams.size(); ++s)
        for (const Op& op : p.streams[s].ops)
          if (std::holds_alternative<ComputeOp>(op.body) ||
              std::holds_alternative<SegmentOp>(op.body)) {
            if (compute_stream >= 0 && compute_stream != static_cast<int>(s)) return false;
            compute_stream = static_cast<int>(s);
            break;
          }
    }
    return true;
  }

  bool is_simulated(Rank r) const {
    return r >= 0 && r < job_.world_size && simulated_[static_cast<size_t>(r)] != 0;
  }

  void lower_iteration(int it) {
    Iteration iter;
    iter.collectives.resize(job_.groups.size());
    iter.event_end.resize(job_.programs.size());
    // Pass 1: nodes for every op instance; remember where events are recorded.
    for (size_t k = 0; k < job_.programs.size(); ++k) {
      const Program& p = job_.programs[k];
      iter.event_end[k].assign(static_cast<size_t>(std::max(p.num_events, 0)), -1);
      for (GroupId t : touched_) coll_seq_[static_cast<size_t>(t)] = 0;
      touched_.clear();
      std::unordered_map<std::tuple<Rank, int, bool>, int, TupleHash> p2p_seq;
      for (size_t s = 0; s < p.streams.size(); ++s) {
        const auto& ops = p.streams[s].ops;
        for (size_t i = 0; i < ops.size(); ++i) {
          const Op& op = ops[i];
          OpInstance inst{p.rank, static_cast<StreamId>(s), it, static_cast<uint32_t>(i), -1, -1};
          if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
            Seconds duration = compute_time(*c, cluster_.gpu) / cluster_.speed_scale(p.rank);
            if (transient_) duration = duration * transient_->factor(p.rank, it, compute_ops_[k]++);
            inst.begin = g_.add(join());
            inst.end = g_.add(GraphNode::compute(p.rank, duration));
            g_.edge(inst.begin, inst.end);
          } else if (std::holds_alternative<MemoryOp>(op.body)) {
            inst.begin = inst.end = g_.add(join());
          } else if (const auto* seg = std::get_if<SegmentOp>(&op.body)) {
            const auto& times = segment_times(g_, *seg, p.rank, job_, cluster_, memo_);
            inst.begin = inst.end = g_.add(GraphNode::compute(p.rank, Seconds(times.total)));
          } else if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
            const Shared& found = arrive_at_collective(iter, *c, p, s, i);
            inst.begin = found.begin;
            inst.end = found.end;
          } else {
            const Shared& found = arrive_at_transfer(iter, op, p, s, i, p2p_seq);
            inst.begin = found.begin;
            inst.end = found.end;
          }
          if (op.record) {
            auto& recorded = iter.event_end[k];
            const auto e = static_cast<size_t>(*op.record);
            if (e >= recorded.size()) recorded.resize(e + 1, -1);
            recorded[e] = inst.end;
          }
          iter.pending.push_back(Pending{g_.ops.size(), k, static_cast<StreamId>(s), i});
          g_.ops.push_back(inst);
        }
      }
    }
    check_every_member_arrived(iter);
    connect(iter);
  }

  // This program's arrival at the seq-th collective on its group: the collective's nodes, made
  // by its first member to arrive.
  const Shared& arrive_at_collective(Iteration& iter, const CollectiveOp& c, const Program& p,
                                     size_t s, size_t i) {
    const Group& group = job_.group(c.group);
    const auto gi = static_cast<size_t>(c.group);
    if (coll_seq_[gi] == 0) touched_.push_back(c.group);
    const auto seq = static_cast<size_t>(coll_seq_[gi]++);
    auto& shared = iter.collectives[gi];
    if (seq == shared.size()) {
      if (expected_members_[gi] < 0) {
        expected_members_[gi] = 0;
        for (Rank r : group.ranks) expected_members_[gi] += is_simulated(r) ? 1 : 0;
      }
      Shared sh;
      sh.begin = g_.add(join());
      sh.end = g_.add(join());
      sh.expected = expected_members_[gi];
      sh.first = &p;
      sh.stream = static_cast<StreamId>(s);
      sh.op_index = i;
      const double slowest = degraded_ ? degraded_->slowest(group.ranks) : 1;
      collective_body(g_, c, group, slowest < 1 ? degraded_->at(slowest) : cluster_, body_,
                      sh.begin, sh.end, memo_, alone_[gi] != 0);
      shared.push_back(sh);
    }
    Shared& found = shared[seq];
    ++found.arrived;
    return found;
  }

  // This program's send or receive: the transfer's nodes, made by whichever side comes first.
  const Shared& arrive_at_transfer(
      Iteration& iter, const Op& op, const Program& p, size_t s, size_t i,
      std::unordered_map<std::tuple<Rank, int, bool>, int, TupleHash>& p2p_seq) {
    const bool is_send = std::holds_alternative<SendOp>(op.body);
    const Rank peer = is_send ? std::get<SendOp>(op.body).peer : std::get<RecvOp>(op.body).peer;
    const int tag = is_send ? std::get<SendOp>(op.body).tag : std::get<RecvOp>(op.body).tag;
    const Bytes bytes = is_send ? std::get<SendOp>(op.body).bytes : std::get<RecvOp>(op.body).bytes;
    const Rank src = is_send ? p.rank : peer, dst = is_send ? peer : p.rank;
    const int seq = p2p_seq[{peer, tag, is_send}]++;
    auto key = std::make_tuple(src, dst, tag, seq);
    auto found = iter.p2p.find(key);
    if (found == iter.p2p.end()) {
      Shared sh;
      sh.begin = g_.add(join());
      sh.expected = is_simulated(peer) ? 2 : 1;
      sh.first = &p;
      sh.stream = static_cast<StreamId>(s);
      sh.op_index = i;
      const Endpoint from = Endpoint::gpu(src), to = Endpoint::gpu(dst);
      const double slowest = degraded_ ? degraded_->slowest({src, dst}) : 1;
      if (body_ == CollectiveBody::kClosedForm)
        sh.end = g_.add(GraphNode::delay(
            point_to_point_time(bytes, from, to, slowest < 1 ? degraded_->at(slowest) : cluster_)));
      else
        sh.end = g_.add(GraphNode::flow(from, to, bytes));
      g_.edge(sh.begin, sh.end);
      found = iter.p2p.emplace(key, sh).first;
    }
    ++found->second.arrived;
    return found->second;
  }

  static void check_every_member_arrived(const Iteration& iter) {
    for (const auto& shared : iter.collectives)
      for (const Shared& sh : shared)
        if (sh.arrived != sh.expected)
          throw RuntimeError("the program cannot finish: a collective is reached by " +
                             std::to_string(sh.arrived) + " of its " + std::to_string(sh.expected) +
                             " simulated members (first: " + sh.first_op() + ")");
    for (const auto& [key, sh] : iter.p2p)
      if (sh.arrived != sh.expected)
        throw RuntimeError("the program cannot finish: " + sh.first_op() +
                           " has no matching send or receive");
  }

  // Pass 2: stream order and event waits.
  void connect(const Iteration& iter) {
    for (const auto& pd : iter.pending) {
      const OpInstance& inst = g_.ops[pd.instance];
      const Program& program = job_.programs[pd.program];
      const Op& op = program.streams[static_cast<size_t>(pd.stream)].ops[pd.op_index];
      const int32_t entry = inst.begin;
      const bool tracked = g_.tracks_waits && std::holds_alternative<CollectiveOp>(op.body);
      const auto instance = static_cast<uint32_t>(pd.instance);
      int32_t& tail = stream_tail_[pd.program][static_cast<size_t>(pd.stream)];
      if (tail >= 0) {
        g_.edge(tail, entry);
        if (tracked) g_.member_predecessors.emplace_back(instance, tail);
      }
      tail = inst.end;
      const auto& recorded = iter.event_end[pd.program];
      for (EventId e : op.waits) {
        const auto ei = static_cast<size_t>(e);
        if (e < 0 || ei >= recorded.size() || recorded[ei] < 0)
          throw RuntimeError(
              "the program cannot finish: " + op_name(program, pd.stream, pd.op_index) +
              " waits for event " + std::to_string(e) + ", which no op records");
        g_.edge(recorded[ei], entry);
        if (tracked) g_.member_predecessors.emplace_back(instance, recorded[ei]);
      }
    }
  }

  const Job& job_;
  const Cluster& cluster_;
  const CollectiveBody body_;
  const TransientSlowdowns* transient_;
  const DegradedNics* degraded_;
  ActivityGraph g_;
  CollectiveMemo memo_;
  std::vector<char> alone_;                        // by group: its collectives run alone
  std::vector<uint64_t> compute_ops_;              // by program: kernels run so far (per-op draws)
  std::vector<char> simulated_;                    // by rank
  std::vector<int> expected_members_;              // by group: simulated members, -1 until counted
  std::vector<std::vector<int32_t>> stream_tail_;  // by program, stream: the last op's end node
  std::vector<int> coll_seq_;                      // by group, within one program
  std::vector<GroupId> touched_;                   // the groups whose coll_seq_ to reset
};

}  // namespace

ActivityGraph lower(const Job& job, const Cluster& cluster, int iterations, CollectiveBody body,
                    const TransientSlowdowns* transient, bool track_waits,
                    const DegradedNics* degraded, bool alone_collectives) {
  if (degraded && degraded->empty()) degraded = nullptr;
  if (transient && transient->empty()) transient = nullptr;
  if (job.has_segments() && !segments_lower_as_one(job, body, transient, track_waits, degraded))
    return lower(expand_segments(job), cluster, iterations, body, transient, track_waits, degraded,
                 alone_collectives);
  return Lowering(job, cluster, iterations, body, transient, track_waits, degraded,
                  alone_collectives)
      .run();
}

TransientSlowdowns transient_slowdowns(const Job& job, const Cluster& cluster,
                                       const RunOptions& options) {
  TransientSlowdowns probe(options, cluster.world_size());
  if (!probe.has_throttle()) return probe;
  const ActivityGraph one = lower(job, cluster, 1, CollectiveBody::kClosedForm);
  const std::vector<double> finish = finish_times_without_contention(one, cluster);
  double step = 0;
  for (double f : finish) step = std::max(step, f);
  return TransientSlowdowns(options, cluster.world_size(), step);
}

std::vector<Rank> fabric_link_users(const Transfer& t, const Cluster& cluster) {
  std::vector<Rank> users;
  const bool inside = cluster.node_of(t.src) == cluster.node_of(t.dst);
  // Rail-only: a flow to another rail crosses its source's fabric link and the relay GPU's
  // (sim/platform.h).
  // On mesh nodes (core/hardware/nvlink_mesh.h) a flow between GPUs with no link crosses links of
  // the relay GPU too: every GPU on its route counts, so two flows that share a link share a user.
  const NvlinkMesh* mesh = cluster_mesh(cluster);
  auto route = [&](Rank a, Rank b) {
    std::vector<Rank> gpus{a, b};
    if (!mesh) return gpus;
    gpus.clear();
    const Rank base = a - cluster.local_index(a);
    for (int l : relay_route(*mesh, cluster.local_index(a), cluster.local_index(b)))
      gpus.push_back(base + l);
    return gpus;
  };
  if (!inside && network_topology(cluster).relays_between_rails(cluster) && t.src.is_gpu() &&
      t.dst.is_gpu()) {
    const int rail = cluster.network_group(t.dst.rank());
    if (rail != cluster.network_group(t.src.rank())) {
      users = route(t.src.rank(), cluster.rail_relay(t.src.rank(), rail));
      if (cluster.gpus_on_pcie()) users.push_back(t.dst.rank());
      return users;
    }
  }
  if (!inside && !cluster.gpus_on_pcie()) return users;
  if (inside && mesh && t.src.is_gpu() && t.dst.is_gpu()) return route(t.src.rank(), t.dst.rank());
  for (Endpoint e : {t.src, t.dst})
    if (e.is_gpu()) users.push_back(e.rank());
  return users;
}

}  // namespace dtsim
