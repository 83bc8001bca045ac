#include "core/analytic_executor.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "core/cost_model.h"
#include "core/error.h"

namespace dtsim {
namespace {

struct StreamState {
  size_t next = 0;      // index of the next op
  Seconds ready{0};     // end of the previous op
  bool arrived = false; // the current collective/p2p op is registered and waiting
};

struct RankState {
  const Program* program = nullptr;
  std::vector<StreamState> streams;
  std::vector<Seconds> event_time;
  std::vector<bool> event_done;
  std::map<GroupId, int> collective_seq;
  std::map<std::tuple<Rank, int>, int> send_seq, recv_seq;  // (peer, tag) -> count
};

struct Waiter {
  size_t rank_index;
  StreamId stream;
  Seconds ready;
};

struct MemEvent {
  Seconds time;
  size_t order;
  MemoryCategory category;
  Bytes bytes;
};

class Run {
 public:
  Run(const Job& job, const ClusterConfig& cluster, Trace& trace)
      : job_(job), cluster_(cluster), trace_(trace) {
    for (const auto& p : job.programs) {
      rank_index_[p.rank] = ranks_.size();
      ranks_.push_back(RankState{&p, {}, {}, {}, {}, {}, {}});
    }
    mem_.resize(ranks_.size());
  }

  Seconds iteration(int it, Seconds start) {
    iteration_ = it;
    for (auto& r : ranks_) {
      r.streams.assign(r.program->streams.size(), StreamState{0, start, false});
      r.event_time.assign(static_cast<size_t>(r.program->num_events), Seconds(0));
      r.event_done.assign(static_cast<size_t>(r.program->num_events), false);
      r.collective_seq.clear();
      r.send_seq.clear();
      r.recv_seq.clear();
    }
    pending_collectives_.clear();
    pending_p2p_.clear();
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t ri = 0; ri < ranks_.size(); ++ri)
        for (size_t s = 0; s < ranks_[ri].streams.size(); ++s)
          while (step(ri, static_cast<StreamId>(s))) progress = true;
    }
    Seconds end = start;
    for (size_t ri = 0; ri < ranks_.size(); ++ri) {
      for (size_t s = 0; s < ranks_[ri].streams.size(); ++s) {
        const auto& st = ranks_[ri].streams[s];
        if (st.next < ranks_[ri].program->streams[s].ops.size()) stuck(ri, s);
        end = std::max(end, st.ready);
      }
    }
    return end;
  }

  void finish_memory() {
    for (size_t ri = 0; ri < ranks_.size(); ++ri) {
      auto& events = mem_[ri];
      std::stable_sort(events.begin(), events.end(),
                       [](const MemEvent& a, const MemEvent& b) {
                         return std::tie(a.time, a.order) < std::tie(b.time, b.order);
                       });
      RankMemory rm;
      rm.rank = ranks_[ri].program->rank;
      std::array<Bytes, kMemoryCategories> live{};
      Bytes total{0};
      for (const auto& e : events) {
        live[static_cast<size_t>(e.category)] += e.bytes;
        total += e.bytes;
        if (total > rm.peak) {
          rm.peak = total;
          rm.at_peak = live;
        }
      }
      trace_.memory.push_back(rm);
    }
  }

 private:
  [[noreturn]] void stuck(size_t ri, size_t s) {
    const auto& st = ranks_[ri].streams[s];
    const auto& op = ranks_[ri].program->streams[s].ops[st.next];
    throw RuntimeError("the program cannot finish: rank " + std::to_string(ranks_[ri].program->rank) +
                       ", stream '" + ranks_[ri].program->streams[s].name + "' is stuck at op '" +
                       op.label.name + "' (a wait that is never satisfied, or a collective or "
                       "send/recv without its partners)");
  }

  bool step(size_t ri, StreamId s) {
    RankState& r = ranks_[ri];
    StreamState& st = r.streams[static_cast<size_t>(s)];
    const auto& ops = r.program->streams[static_cast<size_t>(s)].ops;
    if (st.next >= ops.size() || st.arrived) return false;
    const Op& op = ops[st.next];
    Seconds start = st.ready;
    for (EventId e : op.waits) {
      if (e < 0 || static_cast<size_t>(e) >= r.event_done.size()) stuck(ri, static_cast<size_t>(s));
      if (!r.event_done[static_cast<size_t>(e)]) return false;
      start = std::max(start, r.event_time[static_cast<size_t>(e)]);
    }
    if (const auto* c = std::get_if<ComputeOp>(&op.body)) {
      complete(ri, s, SpanKind::kCompute, start, start + compute_time(*c, cluster_.gpu));
      return true;
    }
    if (const auto* m = std::get_if<MemoryOp>(&op.body)) {
      mem_[ri].push_back(MemEvent{start, mem_order_++, m->category, m->bytes});
      finish_op(ri, s, start);
      return true;
    }
    if (const auto* c = std::get_if<CollectiveOp>(&op.body)) {
      int seq = r.collective_seq[c->group]++;
      auto key = std::make_pair(c->group, seq);
      auto& waiters = pending_collectives_[key];
      waiters.push_back(Waiter{ri, s, start});
      st.arrived = true;
      const Group& g = job_.group(c->group);
      size_t expected = 0;
      for (Rank member : g.ranks)
        if (rank_index_.count(member)) ++expected;
      if (waiters.size() == expected) {
        Seconds begin{0};
        for (const auto& w : waiters) begin = std::max(begin, w.ready);
        const Seconds end = begin + collective_time(*c, g.ranks, cluster_);
        for (const auto& w : waiters) {
          ranks_[w.rank_index].streams[static_cast<size_t>(w.stream)].arrived = false;
          complete(w.rank_index, w.stream, SpanKind::kCollective, begin, end);
        }
        pending_collectives_.erase(key);
      }
      return true;
    }
    // Send and Recv meet: both end when the transfer ends. A peer without a Program is a
    // folded replica that is assumed ready at the same time.
    const bool is_send = std::holds_alternative<SendOp>(op.body);
    const Rank peer = is_send ? std::get<SendOp>(op.body).peer : std::get<RecvOp>(op.body).peer;
    const int tag = is_send ? std::get<SendOp>(op.body).tag : std::get<RecvOp>(op.body).tag;
    const Bytes bytes = is_send ? std::get<SendOp>(op.body).bytes : std::get<RecvOp>(op.body).bytes;
    const Rank self = r.program->rank;
    const SpanKind kind = is_send ? SpanKind::kSend : SpanKind::kRecv;
    if (!rank_index_.count(peer)) {
      complete(ri, s, kind, start, start + point_to_point_time(bytes, self, peer, cluster_));
      return true;
    }
    const Rank src = is_send ? self : peer, dst = is_send ? peer : self;
    int seq = (is_send ? r.send_seq : r.recv_seq)[{peer, tag}]++;
    auto key = std::make_tuple(src, dst, tag, seq);
    auto& waiters = pending_p2p_[key];
    waiters.push_back(Waiter{ri, s, start});
    st.arrived = true;
    if (waiters.size() == 2) {
      const Seconds begin = std::max(waiters[0].ready, waiters[1].ready);
      const Seconds end = begin + point_to_point_time(bytes, src, dst, cluster_);
      for (const auto& w : waiters) {
        ranks_[w.rank_index].streams[static_cast<size_t>(w.stream)].arrived = false;
        const Op& wop = ranks_[w.rank_index].program->streams[static_cast<size_t>(w.stream)]
                            .ops[ranks_[w.rank_index].streams[static_cast<size_t>(w.stream)].next];
        complete(w.rank_index, w.stream,
                 std::holds_alternative<SendOp>(wop.body) ? SpanKind::kSend : SpanKind::kRecv, begin,
                 end);
      }
      pending_p2p_.erase(key);
    }
    return true;
  }

  void complete(size_t ri, StreamId s, SpanKind kind, Seconds start, Seconds end) {
    RankState& r = ranks_[ri];
    trace_.spans.push_back(Span{r.program->rank, s, iteration_, r.streams[static_cast<size_t>(s)].next,
                                kind, start, end});
    finish_op(ri, s, end);
  }

  void finish_op(size_t ri, StreamId s, Seconds end) {
    RankState& r = ranks_[ri];
    StreamState& st = r.streams[static_cast<size_t>(s)];
    const Op& op = r.program->streams[static_cast<size_t>(s)].ops[st.next];
    if (op.record) {
      r.event_done[static_cast<size_t>(*op.record)] = true;
      r.event_time[static_cast<size_t>(*op.record)] = end;
    }
    st.ready = end;
    ++st.next;
  }

  const Job& job_;
  const ClusterConfig& cluster_;
  Trace& trace_;
  std::vector<RankState> ranks_;
  std::map<Rank, size_t> rank_index_;
  std::map<std::pair<GroupId, int>, std::vector<Waiter>> pending_collectives_;
  std::map<std::tuple<Rank, Rank, int, int>, std::vector<Waiter>> pending_p2p_;
  std::vector<std::vector<MemEvent>> mem_;
  size_t mem_order_ = 0;
  int iteration_ = 0;
};

}  // namespace

Trace AnalyticExecutor::run(const Job& job, const ClusterConfig& cluster, int iterations) {
  Trace trace;
  trace.engine = name();
  trace.iterations = iterations;
  Run run(job, cluster, trace);
  Seconds t{0};
  for (int it = 0; it < iterations; ++it) {
    t = run.iteration(it, t);
    trace.iteration_end.push_back(t);
  }
  run.finish_memory();
  return trace;
}

}  // namespace dtsim
