#include "core/ir/program.h"

namespace dtsim {

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kRecompute:
      return "recompute";
    case Phase::kGradientSync:
      return "gradient_sync";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kPipeline:
      return "pipeline";
    case Phase::kOther:
      return "other";
  }
  return "other";
}

std::string_view to_string(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kReduce:
      return "reduce";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "?";
}

std::string_view to_string(CollectiveProtocol p) {
  switch (p) {
    case CollectiveProtocol::kAuto:
      return "auto";
    case CollectiveProtocol::kLL:
      return "LL";
    case CollectiveProtocol::kLL128:
      return "LL128";
    case CollectiveProtocol::kSimple:
      return "Simple";
  }
  return "?";
}

std::string_view to_string(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kAuto:
      return "auto";
    case CollectiveAlgorithm::kRing:
      return "ring";
    case CollectiveAlgorithm::kTree:
      return "tree";
    case CollectiveAlgorithm::kHalvingDoubling:
      return "halving-doubling";
    case CollectiveAlgorithm::kNvls:
      return "nvls";
    case CollectiveAlgorithm::kHierarchical:
      return "hierarchical";
  }
  return "?";
}

std::string_view to_string(MemoryCategory c) {
  switch (c) {
    case MemoryCategory::kWeights:
      return "weights";
    case MemoryCategory::kGradients:
      return "gradients";
    case MemoryCategory::kOptimizer:
      return "optimizer";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kBuffers:
      return "buffers";
  }
  return "?";
}

StreamId Program::add_stream(std::string name) {
  streams.push_back(Stream{std::move(name), {}});
  return static_cast<StreamId>(streams.size() - 1);
}

Op& Program::append(StreamId stream, OpBody body, Label label) {
  auto& ops = streams.at(static_cast<size_t>(stream)).ops;
  ops.push_back(Op{std::move(body), std::move(label), {}, std::nullopt});
  return ops.back();
}

size_t Program::op_count() const {
  size_t n = 0;
  for (const auto& s : streams) n += s.ops.size();
  return n;
}

const Program* Job::program_for(Rank r) const {
  for (const auto& p : programs)
    if (p.rank == r) return &p;
  return nullptr;
}

CollectiveKind collective_kind(CommPattern pattern) {
  switch (pattern) {
    case CommPattern::kAllReduce:
      return CollectiveKind::kAllReduce;
    case CommPattern::kAllGather:
      return CollectiveKind::kAllGather;
    case CommPattern::kReduceScatter:
      return CollectiveKind::kReduceScatter;
    case CommPattern::kAllToAll:
      return CollectiveKind::kAllToAll;
  }
  return CollectiveKind::kAllReduce;
}

}  // namespace dtsim
