// `dtsim plan`: flags, progress and rendering; the search is driver/plan_search.h.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace dtsim::cli {

struct PlanOptions {
  std::string scenario;
  std::vector<std::string> overrides;    // --set
  std::vector<std::string> constraints;  // --constraint
  int top = 5;
  int jobs = 2;
  std::string timeout;                 // --timeout per simulation, e.g. 10min; empty: none
  std::string max_search_time = "2h";  // --max-search-time: refuse a longer estimated search
  bool json = false;
  bool analytic_only = false;      // --analytic-only: rank without SimGrid runs
  std::string rank_by = "step";    // --rank-by step|high
  std::string objective = "time";  // --objective time|cost|energy
  std::string deadline;            // --deadline 30d
  std::string budget;              // --budget 2MUSD
  std::string dtsim;               // the binary the children run (self_executable() from main)
};
// Exit 0 with the ranked table (or JSON); InputError (exit 2) for bad input or nothing that fits.
int run_plan(const PlanOptions& o, std::ostream& out);

}  // namespace dtsim::cli
