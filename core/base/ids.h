// Identifiers shared by every stage: a global rank (GPU), a communication group, an event and a
// stream of one rank's Program (core/ir/program.h).
//
// They are plain integers: a rank is also an index into per-rank tables (the Cluster, the
// platform), and a group, event or stream id is an index into its Job's or Program's list.
// Endpoints that are not GPUs (a switch, a NIC, a pure delay) are never encoded as ranks; they
// have their own type (core/hardware/endpoint.h; a delay is a kind of Flow,
// core/collectives/collective_schedule.h).
#pragma once

#include <cstdint>

namespace dtsim {

using Rank = int32_t;      // global rank, 0 .. world_size - 1
using GroupId = int32_t;   // index into Job::groups
using EventId = int32_t;   // index into a Program's events
using StreamId = int32_t;  // index into a Program's streams

}  // namespace dtsim
