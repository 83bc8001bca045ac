// The MoE layer's router and token-permutation kernels (docs/models.md, "Kernel inventory",
// mixture of experts) against the built graph, for Megatron-core v0.9's PyTorch operations and
// for the fused kernels: every kernel found by name with the bytes and launches written out here
// from the dimensions (independently of models/transformer.cc), and no router, auxiliary-loss,
// token or MoE-input kernel the inventory does not list.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/model_builder.h"
#include "models/model_spec.h"
#include "tests/models/graph_sums.h"

namespace dtsim::models {
namespace {

struct Expected {
  double bytes;
  int launches;
};
using Inventory = std::map<std::pair<std::string, bool>, Expected>;  // (name, backward)

constexpr double kE = 2;  // bf16 activations

// Mixtral 8x7B's MoE layer (h 4096, 8 experts, top-2) on `seq` tokens, expert parallelism 8.
ModelGraph build(int seq, bool fused) {
  ModelSpec spec = *find_preset("mixtral-8x7b");
  spec.num_layers = 2;
  spec.seq_length = seq;
  BuildOptions options;
  options.expert_parallel = 8;
  options.moe_permute_fusion = fused;
  options.moe_router_fusion = fused;
  return build_model(spec, options);
}

Inventory inventory(int seq, bool fused) {
  const double T = seq, h = 4096, E = 8, k = 2, ep = 8, e = kE;
  const double te = T * E, tk = T * k, routed = tk * h, tokens = T * h;
  Inventory inv;
  auto add = [&inv](const std::string& name, bool backward, double bytes, int launches) {
    inv[{backward ? name + ".backward" : name, backward}] = {bytes, launches};
  };
  // In every layout: the sum of the MLP input's two gradients (router and permutation), the
  // router weight's gradient into its fp32 main gradient, and the dispatcher's counts.
  add("moe_input_grad_add", true, 3 * e * tokens, 1);
  add("router_weight_grad_accumulate", true, (4 + 4 + e) * h * E, 1);
  add("token_count_histogram", false, 8 * tk + 2 * 8 * E, 2);
  add("token_count_splits", false, 2 * 8 * E * ep, 9);  // 5 sums, 4 copies to the host
  if (fused) {
    add("router_softmax_topk", false, 2 * e * te, 1);
    add("router_softmax_topk", true, 3 * e * te, 1);
    add("token_dispatch", false, 2 * e * routed, 1);
    add("token_dispatch", true, 2 * e * routed, 1);
    add("token_combine", false, e * (routed + tokens + tk), 1);
    add("token_combine", true, e * (2 * routed + tokens), 1);
    return inv;
  }
  // Router (router.py, moe_utils.py at core_r0.9.0): topk reads the logits and writes values
  // and int64 indices, then sorts them in place; softmax of the k in fp32 between two casts;
  // histc; the auxiliary loss's softmax of all E in fp32 and its 6 scalar steps.
  add("router_topk", false, e * te + (e + 8) * tk + 2 * (e + 8) * tk, 2);
  add("router_softmax", false, (e * tk + 4 * tk) + 2 * 4 * tk + (4 * tk + e * tk), 3);
  add("router_token_histogram", false, 8 * E + (8 * tk + 8 * E), 2);
  add("aux_loss_softmax", false, (e * te + 4 * te) + 2 * 4 * te, 2);
  add("aux_loss", false, 4 * te, 6);
  add("aux_loss", true, 0, 5);
  add("aux_loss_softmax", true, (4 * te + 4 * te) + (2 * 4 * te + 4 * te) + (4 * te + e * te), 3);
  add("router_softmax", true,
      (e * tk + 4 * tk) + (2 * 4 * tk + 4 * tk) + (2 * 4 * tk + 4 * tk) + (4 * tk + e * tk), 4);
  add("router_topk", true, e * te + ((8 + e) * tk + e * te), 2);  // zeros, scatter
  add("router_logits_grad_add", true, 3 * e * te, 1);
  // Permutation: stable argsort of tk int64 keys with values; the floor division; the gather of
  // routed rows; backward, zeros of the input's size and the scatter-add into it.
  if (tk > 4096)  // CUB onesweep over 64 bits: copy, index fill, histogram, 8 passes, + scan
    add("token_argsort", false, 8 * tk * (2 + 1 + 1) + 8 * (2 * 16 * tk) + 32 * 1024, 22);
  else  // one block: arange, two copies, the sort
    add("token_argsort", false, 8 * tk + 2 * 16 * tk + 4 * 8 * tk, 4);
  add("token_index_div", false, 2 * 8 * tk, 1);
  add("token_gather", false, 2 * e * routed, 1);
  add("token_gather", true, e * tokens + (e * routed + 2 * e * tokens), 2);
  // Unpermutation: zeros of the routed rows, the scatter-add (reads its source and the output it
  // adds into, writes it), the multiply by the probabilities, the sum over k; backward, the
  // probabilities' gradient (product, then summed over h), the input's gradient, and a gather.
  add("token_unpermute_zeros", false, e * routed, 1);
  add("token_unpermute_scatter_add", false, e * routed + 2 * e * routed, 1);
  add("token_unpermute_scatter_add", true, 2 * e * routed, 1);
  add("token_combine_weight", false, 2 * e * routed + e * tk, 1);
  add("token_combine_weight", true,
      (e * tokens + e * routed + e * routed) + (e * tokens + e * tk + e * routed) + e * routed, 3);
  add("token_combine_sum", false, e * routed + e * tokens, 1);
  return inv;
}

bool moe_side(const std::string& name) {
  for (const char* prefix : {"router", "aux_loss", "token_", "moe_"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

void check(int seq, bool fused) {
  const ModelGraph g = build(seq, fused);
  const Layer* block = testing::find_layer(g, "block.0");
  ASSERT_NE(block, nullptr);
  Inventory inv = inventory(seq, fused);
  for (const bool backward : {false, true})
    for (const Kernel& k : backward ? block->backward : block->forward) {
      if (!moe_side(k.name) || k.kind != KernelKind::kElementwise) continue;
      SCOPED_TRACE(k.name + (backward ? " (backward)" : " (forward)"));
      const auto it = inv.find({k.name, backward});
      if (it == inv.end()) {
        ADD_FAILURE() << "in the graph, not in the inventory";
        continue;
      }
      EXPECT_DOUBLE_EQ(k.bytes.value(), it->second.bytes);
      EXPECT_EQ(k.launches, it->second.launches);
      inv.erase(it);
    }
  for (const auto& [key, x] : inv)
    ADD_FAILURE() << key.first << (key.second ? " (backward)" : " (forward)")
                  << " is in the inventory but not in the graph";
}

TEST(MoeKernelInventory, MegatronCoreV09OperationsOverOneRadixSortTile) {
  check(4096, false);  // 8192 routed rows: the multi-pass radix sort
}
TEST(MoeKernelInventory, MegatronCoreV09OperationsWithTheOneBlockSort) {
  check(1024, false);  // 2048 routed rows
}
TEST(MoeKernelInventory, FusedKernels) {
  check(4096, true);
}

// The unfused layer moves about 1.2 GB per layer and micro-batch at Mixtral 8x7B's shape in its
// permutation and router, against about 0.5 GB fused, and launches 64 router and permutation
// kernels (15 + 15 router, 24 + 2 + 4 + 4 permutation) where the fused ones launch 6.
TEST(MoeKernelInventory, UnfusedMovesMoreAndLaunchesMore) {
  auto totals = [](const ModelGraph& g) {
    double bytes = 0;
    int launches = 0;
    const Layer* block = testing::find_layer(g, "block.0");
    for (const auto* list : {&block->forward, &block->backward})
      for (const Kernel& k : *list)
        if (moe_side(k.name) && k.kind == KernelKind::kElementwise &&
            k.name.rfind("token_count", 0) != 0 && k.name.rfind("moe_", 0) != 0 &&
            k.name.rfind("router_weight", 0) != 0) {
          bytes += k.bytes.value();
          launches += k.launches;
        }
    return std::make_pair(bytes, launches);
  };
  const auto [unfused_bytes, unfused_launches] = totals(build(4096, false));
  const auto [fused_bytes, fused_launches] = totals(build(4096, true));
  EXPECT_NEAR(unfused_bytes / 1e9, 1.28, 0.02);
  EXPECT_NEAR(fused_bytes / 1e9, 0.54, 0.02);
  EXPECT_EQ(unfused_launches, 15 + 15 + 24 + 2 + 4 + 4);
  EXPECT_EQ(fused_launches, 2 + 2 + 2);
}

}  // namespace
}  // namespace dtsim::models
