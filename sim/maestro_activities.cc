#include "sim/maestro_activities.h"

#include <simgrid/version.h>

#include <cstring>

namespace dtsim::sim {

MaestroActivities::MaestroActivities(bool enable) {
  if (!enable) return;
#if SIMGRID_VERSION_MAJOR == 3 && SIMGRID_VERSION_MINOR == 32 && defined(__GLIBCXX__) && \
    defined(__x86_64__)
  const simgrid::s4u::Actor* maestro = simgrid::s4u::Actor::self();
  if (maestro == nullptr || maestro->get_impl() == nullptr) return;
  char* header = reinterpret_cast<char*>(maestro->get_impl()) + kListOffset;
  // An empty libstdc++ list is {next = header, prev = header, size = 0}: two self-pointers that
  // other data at this offset would not match.
  void* words[3];
  std::memcpy(words, header, sizeof words);
  if (words[0] == header && words[1] == header && words[2] == nullptr)
    maestro_list_ = reinterpret_cast<List*>(header);
#endif
}

MaestroActivities::Handle MaestroActivities::adopt(const simgrid::s4u::Activity& activity) {
  if (maestro_list_ == nullptr || maestro_list_->empty() ||
      maestro_list_->back().get() != activity.get_impl())
    return owned_.end();
  owned_.splice(owned_.end(), *maestro_list_, std::prev(maestro_list_->end()));
  ++adopted_;
  return std::prev(owned_.end());
}

void MaestroActivities::release(Handle h) {
  if (h != owned_.end()) owned_.erase(h);
}

}  // namespace dtsim::sim
