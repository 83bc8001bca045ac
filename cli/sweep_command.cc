#include "cli/sweep_command.h"

#include <sstream>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/units.h"
#include "driver/child_process.h"
#include "real/launch.h"

namespace dtsim::cli {

int run_sweep(SweepOptions o, std::ostream& out) {
  if (!o.merge.empty()) {
    const auto m = driver::merge_results(o.merge, o.request.output);
    out << "merged " << m.files << " files into " << o.request.output << ": " << m.rows << " rows";
    if (m.duplicates) out << " (" << m.duplicates << " duplicate rows dropped, the first kept)";
    out << "\n";
    return 0;
  }
  if (o.request.scenario.empty())
    throw InputError(Diagnostic{SourceLocation{}, "scenario",
                                "name the scenario to sweep, e.g. dtsim sweep "
                                "scenarios/default.yaml --vary cluster.nodes=1,2,4 -o r.csv"});
  if (!o.timeout.empty()) {
    const auto t = parse_duration(o.timeout);
    if (!t || t.value->value() <= 0)
      throw InputError(Diagnostic{
          SourceLocation{}, "--timeout",
          "expected a duration such as 60s or 5min, found '" + printable(o.timeout, 60) + "'"});
    o.request.timeout_s = t.value->value();
  }
  if (!o.shard.empty()) o.request.shard = driver::parse_shard(o.shard);
  if (o.request.dtsim.empty()) o.request.dtsim = driver::self_executable();
  const driver::SweepSummary s = driver::run_sweep(o.request);
  // Under mpirun every rank ran a share; rank 0 wrote the rows and speaks for the job.
  const real::LaunchInfo launch = real::detect_launch();
  if (launch.rank != 0) return 0;
  std::ostringstream line;
  line.precision(3);
  line << "sweep: " << s.configurations << " configurations";
  if (launch.world > 1) line << " on rank 0 of " << launch.world;
  if (o.request.shard.count > 1)
    line << " in shard " << o.request.shard.index << "/" << o.request.shard.count;
  line << ": " << s.ran << " run now (" << s.ok << " ok, ";
  if (s.does_not_fit) line << s.does_not_fit << " do not fit in memory, ";
  line << s.failed << " failed, " << s.timed_out << " timed out)";
  if (s.skipped) line << ", " << s.skipped << " already in the file";
  line << ", in " << s.wall_s << " s; rows in " << o.request.output << "\n";
  out << line.str();
  if (s.does_not_fit)
    out << "Configurations that do not fit are rows with status does-not-fit, their result and "
           "the shortfall; dtsim analyze leaves them out.\n";
  if (s.failed || s.timed_out)
    out << "Failed runs are rows with status error or timeout and their message; dtsim analyze "
           "skips them.\n";
  return 0;
}

}  // namespace dtsim::cli
