#include "core/config/engine_choices.h"

#include <algorithm>
#include <mutex>

namespace dtsim {
namespace {

std::mutex& lock() {
  static std::mutex m;
  return m;
}
std::vector<EngineChoice>& list() {
  static std::vector<EngineChoice> l;
  return l;
}

}  // namespace

void add_engine_choice(EngineChoice choice) {
  std::lock_guard<std::mutex> guard(lock());
  for (auto& c : list())
    if (c.name == choice.name) {
      c = std::move(choice);
      return;
    }
  list().push_back(std::move(choice));
  // By name, so that the order never depends on the order static initializers ran in.
  std::sort(list().begin(), list().end(),
            [](const EngineChoice& a, const EngineChoice& b) { return a.name < b.name; });
}

std::vector<EngineChoice> engine_choice_list() {
  std::lock_guard<std::mutex> guard(lock());
  return list();
}

std::vector<std::string> engine_choices() {
  std::vector<std::string> names;
  for (const auto& c : engine_choice_list()) names.push_back(c.name);
  return names;
}

}  // namespace dtsim
