// Removes a cost per completed activity that grows with the number of activities in flight, a
// property of SimGrid 3.32 that made large simulations quadratic. Internal to sim/.
//
// Why: SimGrid 3.32 records every activity created outside an actor in maestro's
// `ActorImpl::activities_`, a std::list: host-to-host comms are detached into it
// (`CommImpl::detach`, src/kernel/activity/CommImpl.cpp), and `Exec::init()` called from maestro
// appends to it (`ExecImpl::ExecImpl`). On completion, `CommImpl::finish` and `ExecImpl::finish`
// remove the activity with `std::list::remove`, which walks the whole list. With n activities in
// flight each completion costs O(n): a 1 GiB ring all-reduce over 16384 ranks at collective
// fidelity (about 131k concurrent comms) spent 81% of its time there.
//
// What: this class moves each activity's node, right after SimGrid appended it, from maestro's
// list into a list owned here (an O(1) splice of the same std::list type), and erases it when the
// activity completes. SimGrid's own removal then walks an empty list. Nothing else in SimGrid reads
// maestro's list during a run without actors: it is used to cancel activities when maestro is
// killed, suspended or resumed, and by the model checker, none of which happens in dtsim.
//
// Contract:
// - Construct after the Engine exists (enable = false: the bypass stays off) and before any
// activity is created. The list is looked up in
//   maestro's ActorImpl at its offset in SimGrid 3.32 as Debian builds it (kListOffset, from
//   src/kernel/actor/ActorImpl.hpp), and is accepted only if the memory there is exactly an empty
//   libstdc++ std::list (both links pointing at the header itself, size 0). On another SimGrid
//   version or any mismatch the bypass stays off (active() is false) and every call below is a
//   no-op: the simulation gives the same results, only more slowly.
// - adopt(activity) right after creating the activity (Comm::sendto_init, Exec::init), before
//   creating another; it takes the node only if it is the last element of maestro's list and holds
//   that activity, and returns a handle (or none()).
// - release(handle) when the activity completes; the list here holds one reference to the
//   activity's kernel object until then.
// - Not thread-safe; one instance per simulation, destroyed before the Engine.
#pragma once

#include <simgrid/s4u.hpp>

#include <cstddef>
#include <list>

namespace dtsim::sim {

class MaestroActivities {
 public:
  using List = std::list<simgrid::kernel::activity::ActivityImplPtr>;
  using Handle = List::iterator;

  explicit MaestroActivities(bool enable = true);
  MaestroActivities(const MaestroActivities&) = delete;
  MaestroActivities& operator=(const MaestroActivities&) = delete;

  bool active() const { return maestro_list_ != nullptr; }
  Handle none() { return owned_.end(); }
  Handle adopt(const simgrid::s4u::Activity& activity);
  void release(Handle h);
  size_t adopted() const { return adopted_; }  // activities taken over so far, for tests

 private:
  static constexpr size_t kListOffset = 192;  // offsetof(ActorImpl, activities_) in 3.32, x86-64
  List* maestro_list_ = nullptr;
  List owned_;
  size_t adopted_ = 0;
};

}  // namespace dtsim::sim
