// The public validation manifest, scenarios/validation/published.yaml, as it was when dtsim was
// built (driver/CMakeLists.txt copies it into a generated source at configure time and re-runs
// the copy whenever the file changes), so that an installed dtsim needs no source tree to say
// how sure its predictions are (driver/prediction_interval.h).
#pragma once

namespace dtsim::driver {

const char* published_runs_yaml();

}  // namespace dtsim::driver
