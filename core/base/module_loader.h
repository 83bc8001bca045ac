// Parts of dtsim that only some commands need, built as loadable modules and loaded on first use.
//
// Why: every library a program links is loaded, relocated and initialised by every process, and
// dtsim runs as thousands of short processes (sweeps, plans, tests). SimGrid (with the ns-3
// libraries Debian builds it against), Qt, MPI and the CUDA runtime with NCCL took about 90 ms
// of the 105 ms that `dtsim --version` took (bench/results/startup.md), though an analytic
// prediction uses none of them. The `dtsim` program therefore loads the SimGrid engine, the
// plotting module and the real-mode back ends from files beside it when a command first needs
// them; programs that link them (the tests, the GUI) are unchanged.
//
// Contract:
// - load_module(file, what) finds `file` beside the running executable, then in the build's
//   module folder (DTSIM_MODULE_DIR, set at compile time), and opens it once per process.
// - A module that cannot be loaded, or lacks an entry point, is a RuntimeError naming the file,
//   what it is for, and the loader's reason. Nothing is stubbed: the module is the real code.
// - Thread-safe.
#pragma once

#include <string>

namespace dtsim {

// Whether the libraries a module brings resolve symbols for objects loaded after it (RTLD_GLOBAL):
// Open MPI's plugins look up MPI's own symbols in the process. The first load decides.
enum class ModuleSymbols { kLocal, kGlobal };

// The handle of the module `file` (a file name such as "libdtsim_simgrid_engine.so").
void* load_module(const std::string& file, const std::string& what,
                  ModuleSymbols symbols = ModuleSymbols::kLocal);

// The entry point `name` of the module `file`, with the type F it was declared with.
void* module_symbol(const std::string& file, const std::string& what, const char* name,
                    ModuleSymbols symbols = ModuleSymbols::kLocal);
template <class F>
F* module_entry(const std::string& file, const std::string& what, const char* name,
                ModuleSymbols symbols = ModuleSymbols::kLocal) {
  return reinterpret_cast<F*>(module_symbol(file, what, name, symbols));
}

}  // namespace dtsim
