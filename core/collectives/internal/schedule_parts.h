// The pieces of the collective schedules that several of core/collectives' files share, private to
// core/collectives (nothing outside it includes this header): the ring passes and the rings inside
// nodes (ring.cc), the multi-phase schedule builder and halving-doubling (phased.cc), the torus
// all-reduce's flows (torus_schedule.cc), the NCCL protocol of a dtsim protocol
// (algorithm_choice.cc) and the tree's flows (tree.cc). decompose() (collective_schedule.cc) puts
// them together; their contracts are in core/collectives/collective_schedule.h and at their
// definitions.
#pragma once

#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include "core/collectives/collective_schedule.h"
#include "core/collectives/nccl_model.h"

namespace dtsim::collectives_internal {

// ring.cc: the rings inside each node of a hierarchical all-reduce, with the channels per node.
std::pair<std::vector<std::vector<Rank>>, size_t> node_ring_orders(
    const std::vector<std::vector<Rank>>& nodes, const Cluster& cluster);
// ring.cc: a pipelined ring pass of `steps` steps over `order` (chunk fidelity).
void ring_steps(const std::vector<Rank>& order, int steps, Bytes segment, Seconds period,
                const Cluster& cluster, std::vector<Flow>& flows);
// ring.cc: one bulk flow per ring edge (collective fidelity).
void ring_bulk(const std::vector<Rank>& order, Bytes per_edge, std::vector<Flow>& flows);

// Builds multi-phase schedules. Each phase starts after everything before it has finished, so a
// schedule's time on a contention-free network is the sum of its phases' closed forms.
class PhasedBuilder {
 public:
  PhasedBuilder(std::vector<Flow>& flows, Fidelity fidelity) : flows_(flows), fidelity_(fidelity) {}
  // A builder whose first phase waits for `start` (flows of another builder): concurrent branches.
  PhasedBuilder(std::vector<Flow>& flows, Fidelity fidelity, std::vector<int> start)
      : flows_(flows), fidelity_(fidelity), barrier_(start), start_(std::move(start)) {}
  // What the next phase would wait for; join() makes this builder wait for other branches too.
  const std::vector<int>& barrier() const { return barrier_; }
  void join(const std::vector<int>& other) {
    barrier_.insert(barrier_.end(), other.begin(), other.end());
    start_ = barrier_;
  }

  // Ring passes over several independent orders at once (one per node, or per local index).
  void rings(const std::vector<std::vector<Rank>>& orders, int steps, Bytes segment, Seconds alpha);

  // One step in which every (src, dst, bytes) transfer happens at once; `chained` makes each
  // transfer wait for its source's previous send and receive (chunk fidelity).
  void exchange(const std::vector<std::tuple<Rank, Rank, Bytes>>& transfers);

  // Ends a run of exchange() steps (collective fidelity: one bulk phase for all of them).
  void end_exchanges(Seconds alpha);

 private:
  // Concurrent bulk flows, merged per pair, then the latency of the remaining steps.
  void bulk_phase(const std::vector<std::tuple<Rank, Rank, Bytes>>& transfers,
                  Seconds extra_latency);

  std::vector<Flow>& flows_;
  Fidelity fidelity_;
  std::vector<int> barrier_;  // what the next phase waits for
  std::vector<int> start_;    // the end of the previous completed phase
  std::vector<std::tuple<Rank, Rank, Bytes>> pending_;
  int pending_steps_ = 0;
};

// phased.cc: Rabenseifner's halving-doubling all-reduce of `s` bytes over `ranks`.
void halving_doubling(const std::vector<Rank>& ranks, Bytes s, Seconds alpha, PhasedBuilder& b);

// torus_schedule.cc: the torus all-reduce's flows (torus_all_reduce_plan).
void torus_all_reduce(const TorusAllReducePlan& plan, Bytes s, const Cluster& cluster,
                      PhasedBuilder& b, std::vector<Flow>& flows, Fidelity fidelity);

// algorithm_choice.cc: NCCL's protocol for one of dtsim's (kAuto and kFastest: Simple).
NcclProtocol nccl_protocol(CollectiveProtocol p);

// tree.cc: the tree's flows, at either fidelity, into `s`.
void tree_flows(const TreePlan& plan, Fidelity fidelity, bool merge_pairs, CollectiveSchedule& s);

}  // namespace dtsim::collectives_internal
