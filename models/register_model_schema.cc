// Registers models/'s `model` section with the scenario schema at static initialisation. It is
// compiled into each program that links dtsim_model_schema (models/CMakeLists.txt), for the
// reason driver/CMakeLists.txt gives for the engines: an unreferenced object of a static library
// would be dropped by the linker, and its registration with it.
#include "core/scenario/scenario.h"
#include "models/model_schema.h"

namespace {
[[maybe_unused]] const bool registered = dtsim::register_model_schema(&dtsim::models::model_schema);
}  // namespace
