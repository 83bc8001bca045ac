#include "core/base/module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "core/base/error.h"

namespace dtsim {
namespace {

// The folder of the running executable, or empty when /proc is not mounted.
std::filesystem::path executable_folder() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

struct Loaded {
  void* handle = nullptr;
  std::string tried;  // where it looked and why each failed
};

}  // namespace

void* load_module(const std::string& file, const std::string& what, ModuleSymbols symbols) {
  static std::mutex mutex;
  static std::map<std::string, Loaded> modules;
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = modules.try_emplace(file);
  Loaded& m = it->second;
  if (fresh) {
    std::vector<std::filesystem::path> places;
    if (const auto here = executable_folder(); !here.empty()) places.push_back(here / file);
#ifdef DTSIM_MODULE_DIR
    places.push_back(std::filesystem::path(DTSIM_MODULE_DIR) / file);
#endif
    for (const auto& path : places) {
      if (!std::filesystem::exists(path)) {
        m.tried += (m.tried.empty() ? "" : "; ") + path.string() + ": no such file";
        continue;
      }
      m.handle = dlopen(path.c_str(),
                        RTLD_NOW | (symbols == ModuleSymbols::kGlobal ? RTLD_GLOBAL : RTLD_LOCAL));
      if (m.handle) break;
      m.tried += (m.tried.empty() ? "" : "; ") + std::string(dlerror());
    }
  }
  if (!m.handle)
    throw RuntimeError("dtsim cannot load " + file + " (" + what + "): " + m.tried +
                       "; rebuild dtsim (scripts/setup.sh run) so the module sits beside the "
                       "dtsim program");
  return m.handle;
}

void* module_symbol(const std::string& file, const std::string& what, const char* name,
                    ModuleSymbols symbols) {
  void* f = dlsym(load_module(file, what, symbols), name);
  if (!f) throw RuntimeError(file + " (" + what + ") has no entry point " + name);
  return f;
}

}  // namespace dtsim
