// `dtsim sweep`: flags and the closing summary; the work is driver/sweep.h.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "driver/sweep.h"

namespace dtsim::cli {

struct SweepOptions {
  driver::SweepRequest request;
  std::string timeout;             // --timeout text, e.g. 10min
  std::string shard;               // --shard i/n
  std::vector<std::string> merge;  // --merge A B ...
};
// Exit 0 when every configuration has its row (error rows included: they are results too).
int run_sweep(SweepOptions o, std::ostream& out);

}  // namespace dtsim::cli
