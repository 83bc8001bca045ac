// `dtsim validate`: every check short of simulating, and a report of what the scenario resolves
// to (cluster, model, parallel layout, the groups that communicate and the algorithm each of
// their collectives resolves to, memory per GPU at its peak).
//
// Contract: writes the report to `out`; a job that does not fit in memory is an InputError that
// names the shortfall, the largest category and what shrinks it.
#pragma once

#include <ostream>

#include "driver/predict.h"

namespace dtsim::driver {

void validate(const Plan& plan, std::ostream& out);

}  // namespace dtsim::driver
