#include "core/ir/program.h"

namespace dtsim {

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
