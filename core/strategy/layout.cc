#include "core/strategy/layout.h"
#include "core/base/checked.h"

#include <algorithm>

#include "core/base/error.h"

namespace dtsim {

Rank RankLayout::rank(int tp, int cp, int pp, int dp) const {
  const std::array<int, 4> coord{tp, cp, pp, dp};
  Rank r = 0;
  for (int k = 3; k >= 0; --k) {
    const auto d = static_cast<size_t>(order[static_cast<size_t>(k)]);
    r = r * size[d] + coord[d];
  }
  return r;
}

std::array<int, 4> RankLayout::coordinates(Rank r) const {
  std::array<int, 4> coord{};
  for (const ParallelDim dim : order) {
    const auto d = static_cast<size_t>(dim);
    coord[d] = r % size[d];
    r /= size[d];
  }
  return coord;
}

std::vector<Rank> RankLayout::group(ParallelDim dim, int tp, int cp, int pp, int dp) const {
  std::array<int, 4> coord{tp, cp, pp, dp};
  std::vector<Rank> ranks;
  const auto d = static_cast<size_t>(dim);
  for (int i = 0; i < size[d]; ++i) {
    coord[d] = i;
    ranks.push_back(rank(coord[0], coord[1], coord[2], coord[3]));
  }
  return ranks;
}

RankLayout rank_layout(const ParallelismConfig& par) {
  RankLayout l;
  l.size = {par.tensor.value, par.context.value, par.pipeline.value, par.data.value};
  l.order = par.placement_order;
  return l;
}

std::vector<ChunkRange> pipeline_chunks(const ModelGraph& model, int stages, int virtual_stages,
                                        const std::vector<int64_t>& layers_per_stage) {
  const int n = static_cast<int>(model.layers.size());
  const int chunks = stages * virtual_stages;
  // The repeated blocks: the recomputable layers, contiguous in every transformer graph.
  int first_block = -1, last_block = -1;
  for (int i = 0; i < n; ++i)
    if (model.layers[static_cast<size_t>(i)].recomputable) {
      if (first_block < 0) first_block = i;
      last_block = i;
    }
  if (first_block < 0) {  // no blocks: split every layer
    first_block = 0;
    last_block = n - 1;
  }
  const int blocks = last_block - first_block + 1;
  std::vector<int> per_chunk(static_cast<size_t>(chunks), 0);
  if (!layers_per_stage.empty()) {
    for (int c = 0; c < chunks; ++c)
      per_chunk[static_cast<size_t>(c)] =
          narrow<int>(layers_per_stage[static_cast<size_t>(c)], "parallelism.layers_per_stage");
  } else {
    for (int c = 0; c < chunks; ++c)
      per_chunk[static_cast<size_t>(c)] = blocks / chunks + (c < blocks % chunks ? 1 : 0);
  }
  int total = 0;
  for (int k : per_chunk) total += k;
  if (total != blocks || blocks < chunks)
    throw RuntimeError("pipeline split of " + std::to_string(blocks) + " blocks into " +
                       std::to_string(chunks) + " chunks does not add up");
  std::vector<ChunkRange> out(static_cast<size_t>(chunks));
  int next = first_block;
  for (int c = 0; c < chunks; ++c) {
    out[static_cast<size_t>(c)].first = next;
    next += per_chunk[static_cast<size_t>(c)];
    out[static_cast<size_t>(c)].last = next - 1;
  }
  out.front().first = 0;
  out.back().last = n - 1;
  return out;
}

}  // namespace dtsim
