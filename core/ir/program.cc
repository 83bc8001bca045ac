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
  for (const auto& s : streams)
    for (const Op& op : s.ops)
      if (const auto* seg = std::get_if<SegmentOp>(&op.body))
        n += seg->ops->size();
      else
        ++n;
  return n;
}

bool Program::has_segments() const {
  for (const auto& s : streams)
    for (const Op& op : s.ops)
      if (std::holds_alternative<SegmentOp>(op.body)) return true;
  return false;
}

bool Job::has_segments() const {
  for (const auto& p : programs)
    if (p.has_segments()) return true;
  return false;
}

Program expand_segments(const Program& program) {
  if (!program.has_segments()) return program;
  Program out;
  out.rank = program.rank;
  out.num_events = program.num_events;
  out.streams.reserve(program.streams.size());
  for (const auto& s : program.streams) {
    Stream& to = out.streams.emplace_back(Stream{s.name, {}});
    to.ops.reserve(s.ops.size());
    for (const Op& op : s.ops) {
      const auto* seg = std::get_if<SegmentOp>(&op.body);
      if (seg == nullptr) {
        to.ops.push_back(op);
        continue;
      }
      const size_t first = to.ops.size();
      for (const Op& inner : *seg->ops) {
        Op& copy = to.ops.emplace_back(inner);
        copy.label.micro_batch = seg->micro_batch;
      }
      if (to.ops.size() == first) continue;  // an empty segment (never emitted) has no op
      auto& waits = to.ops[first].waits;
      waits.insert(waits.begin(), op.waits.begin(), op.waits.end());
      if (op.record) to.ops.back().record = op.record;
    }
  }
  return out;
}

Job expand_segments(const Job& job) {
  if (!job.has_segments()) return job;
  Job out;
  out.world_size = job.world_size;
  out.groups = job.groups;
  out.programs.reserve(job.programs.size());
  for (const auto& p : job.programs) out.programs.push_back(expand_segments(p));
  return out;
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
