// Rank placement: how the parallel dimensions map onto global ranks, and the pipeline's split
// of the layers into stages.
//
// Contract:
// - A rank has coordinates (tp, cp, pp, dp). The placement order lists the dimensions from
//   innermost (consecutive ranks) to outermost; the default "tp-cp-pp-dp" keeps a TP group
//   inside a node, then context, then pipeline stages, then data-parallel replicas, as the
//   collectives issue asks (parallelism.order overrides it).
// - Ranks fill nodes in order (rank r is GPU r % gpus_per_node of node r / gpus_per_node), so
//   the innermost dimension stays on NVLink as long as it divides gpus_per_node.
// - Pipeline chunks: p·v model chunks; chunk c runs on stage c mod p (Megatron-LM's interleaved
//   assignment; v = 1 gives one contiguous chunk per stage). Transformer blocks are split
//   evenly (or by parallelism.layers_per_stage), the layers before the first block join the
//   first chunk and those after the last block the last chunk. A graph without blocks (CNN,
//   MLP) is split over all its layers.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/ir/model_graph.h"
#include "core/ir/program.h"
#include "core/config/config.h"

namespace dtsim {

struct RankLayout {
  std::array<int, 4> size{1, 1, 1, 1};  // by ParallelDim
  std::array<ParallelDim, 4> order = kDefaultPlacementOrder;

  Rank rank(int tp, int cp, int pp, int dp) const;
  // The inverse of rank(): the coordinates {tp, cp, pp, dp} of 0 <= r < the product of sizes.
  std::array<int, 4> coordinates(Rank r) const;
  // The ranks that differ from `base` only along `dim`, in coordinate order.
  std::vector<Rank> group(ParallelDim dim, int tp, int cp, int pp, int dp) const;
};

RankLayout rank_layout(const ParallelismConfig& parallelism);

// Layer index ranges [first, last] of each model chunk, chunk c on stage c mod p.
struct ChunkRange {
  int first = 0;
  int last = -1;
};
std::vector<ChunkRange> pipeline_chunks(const ModelGraph& model, int stages, int virtual_stages,
                                        const std::vector<int64_t>& layers_per_stage);

}  // namespace dtsim
