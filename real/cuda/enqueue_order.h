// Internal to the CUDA back end: the order in which one host thread enqueues a step's ops.
//
// CUDA's cudaStreamWaitEvent waits for the event's most recent cudaEventRecord at the time of
// the call; on an event not recorded yet it waits for nothing. So an op may be enqueued only after
// every op that records an event it waits on: enqueue_order() walks the streams round robin, one
// op at a time (close to the order a training framework issues them), and holds back an op whose
// events are not yet recorded in this step.
//
// Contract: returns every op of the Program exactly once, each stream's ops in stream order, each
// op after the recorders of the events it waits on (their latest recorder before it in host
// order). A Program that cannot progress (a cycle of waits, an event nobody records first, an
// event id out of range) is a RuntimeError naming every blocked op and the events it waits for.
// Pure: no CUDA, tested without a GPU.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/ir/program.h"

namespace dtsim::real::cuda {

struct EnqueueStep {
  size_t stream = 0, op = 0;
};

std::vector<EnqueueStep> enqueue_order(const Program& p);

// "block.3.qkv (micro-batch 2) [stream compute, op 17]", for messages.
std::string op_name(const Program& p, size_t stream, size_t op);

}  // namespace dtsim::real::cuda
