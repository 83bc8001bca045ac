#include "core/exec/engine_registry.h"

#include <mutex>

#include "core/base/error.h"

namespace dtsim {
namespace {

struct Registry {
  std::mutex lock;
  std::vector<EngineInfo> engines;
};

bool add(Registry& r, EngineInfo info) {
  add_engine_choice({info.name, info.description});
  std::lock_guard<std::mutex> guard(r.lock);
  for (auto& e : r.engines)
    if (e.name == info.name) {
      e = std::move(info);
      return true;
    }
  r.engines.push_back(std::move(info));
  return true;
}

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: static registrars run in any order
  return *r;
}

}  // namespace

bool register_engine(EngineInfo info) {
  return add(registry(), std::move(info));
}

std::vector<EngineInfo> registered_engines() {
  Registry& r = registry();
  std::lock_guard<std::mutex> guard(r.lock);
  return r.engines;
}

std::unique_ptr<Executor> make_engine(const std::string& name, const EngineSettings& settings) {
  std::string names;
  for (const auto& e : registered_engines()) {
    if (e.name == name) return e.make(settings);
    names += (names.empty() ? "" : ", ") + e.name;
  }
  throw InputError(Diagnostic{SourceLocation{}, "simulate.engine",
                              "unknown engine '" + name + "'; registered engines: " + names});
}

}  // namespace dtsim
