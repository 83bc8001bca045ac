// The loader of the modules the dtsim program opens on demand (core/base/module_loader.h): a
// module that is not there is an error naming the file, what it is for and where it looked, every
// time it is asked for; a real module opens and gives its entry points.
#include "core/base/module_loader.h"

#include <gtest/gtest.h>

#include <string>

#include "core/base/error.h"

namespace dtsim {
namespace {

TEST(ModuleLoader, AMissingModuleIsAnErrorNamingItAndWhereItLooked) {
  for (int attempt = 0; attempt < 2; ++attempt) {  // the failure is kept, not forgotten
    try {
      load_module("libdtsim_no_such_module.so", "a test module");
      FAIL() << "loading a missing module succeeded";
    } catch (const RuntimeError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("libdtsim_no_such_module.so"), std::string::npos) << what;
      EXPECT_NE(what.find("a test module"), std::string::npos) << what;
      EXPECT_NE(what.find("no such file"), std::string::npos) << what;
    }
  }
}

// The build puts the SimGrid engine's module in DTSIM_MODULE_DIR, the loader's fallback for
// programs elsewhere in the build tree, such as this test.
TEST(ModuleLoader, OpensABuiltModuleAndFindsItsEntryPoint) {
  EXPECT_NE(module_symbol("libdtsim_simgrid_engine.so", "the SimGrid engine",
                          "dtsim_simgrid_engine_create"),
            nullptr);
  EXPECT_THROW(
      module_symbol("libdtsim_simgrid_engine.so", "the SimGrid engine", "no_such_entry_point"),
      RuntimeError);
}

}  // namespace
}  // namespace dtsim
