// Gathering a real-mode job's measured spans on rank 0 (real/real_executor.h): each rank
// serialises its own spans and peak memory, the channel gathers them, and rank 0 merges them
// into one Trace with iteration_end the maximum over ranks.
#pragma once

#include "core/ir/trace.h"
#include "real/channel.h"

namespace dtsim::real {

// `local` holds this rank's spans (times in seconds from the common start), its RankMemory
// (one entry) and its iteration ends. Returns the merged Trace on rank 0, `local` elsewhere.
Trace gather_trace(Channel& channel, Trace local);

}  // namespace dtsim::real
