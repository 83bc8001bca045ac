#include "real/trace_exchange.h"

#include <algorithm>
#include <cstring>

#include "core/base/error.h"

namespace dtsim::real {
namespace {

// A flat little-endian encoding (every rank of one job runs the same build on the same kind of
// machine): counts, then records of plain numbers, then strings with their lengths.
class Writer {
 public:
  template <class T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof v);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> bytes;
};

class Reader {
 public:
  Reader(const std::vector<uint8_t>& b, int rank) : b_(b), rank_(rank) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return s;
  }

 private:
  void need(size_t n) const {
    if (at_ + n > b_.size())
      throw RuntimeError("the trace rank " + std::to_string(rank_) +
                         " sent is truncated (the ranks may run different dtsim builds)");
  }
  const std::vector<uint8_t>& b_;
  int rank_;
  size_t at_ = 0;
};

std::vector<uint8_t> encode(const Trace& t) {
  Writer w;
  w.put<uint32_t>(0x64747231);  // "dtr1"
  w.put_string(t.engine);
  w.put<int32_t>(t.iterations);
  w.put<uint64_t>(t.spans.size());
  for (const Span& s : t.spans) {
    w.put<int32_t>(s.rank);
    w.put<int32_t>(s.stream);
    w.put<int32_t>(s.iteration);
    w.put<uint64_t>(s.op_index);
    w.put<int32_t>(static_cast<int32_t>(s.kind));
    w.put<double>(s.start.value());
    w.put<double>(s.end.value());
    w.put<double>(s.moved.value());
  }
  w.put<uint64_t>(t.memory.size());
  for (const RankMemory& m : t.memory) {
    w.put<int32_t>(m.rank);
    w.put<double>(m.peak.value());
    for (const Bytes& b : m.at_peak) w.put<double>(b.value());
  }
  w.put<uint64_t>(t.iteration_end.size());
  for (const Seconds& e : t.iteration_end) w.put<double>(e.value());
  w.put<uint64_t>(t.notes.size());
  for (const auto& n : t.notes) w.put_string(n);
  return std::move(w.bytes);
}

Trace decode(const std::vector<uint8_t>& bytes, int rank) {
  Reader r(bytes, rank);
  if (r.get<uint32_t>() != 0x64747231)
    throw RuntimeError("rank " + std::to_string(rank) +
                       " sent a trace in another format (the ranks may run different dtsim "
                       "builds)");
  Trace t;
  t.engine = r.get_string();
  t.iterations = r.get<int32_t>();
  const auto spans = r.get<uint64_t>();
  t.spans.reserve(spans);
  for (uint64_t i = 0; i < spans; ++i) {
    Span s;
    s.rank = r.get<int32_t>();
    s.stream = r.get<int32_t>();
    s.iteration = r.get<int32_t>();
    s.op_index = r.get<uint64_t>();
    s.kind = static_cast<SpanKind>(r.get<int32_t>());
    s.start = Seconds(r.get<double>());
    s.end = Seconds(r.get<double>());
    s.moved = Bytes(r.get<double>());
    t.spans.push_back(s);
  }
  const auto memory = r.get<uint64_t>();
  for (uint64_t i = 0; i < memory; ++i) {
    RankMemory m;
    m.rank = r.get<int32_t>();
    m.peak = Bytes(r.get<double>());
    for (auto& b : m.at_peak) b = Bytes(r.get<double>());
    t.memory.push_back(m);
  }
  const auto ends = r.get<uint64_t>();
  for (uint64_t i = 0; i < ends; ++i) t.iteration_end.push_back(Seconds(r.get<double>()));
  const auto notes = r.get<uint64_t>();
  for (uint64_t i = 0; i < notes; ++i) t.notes.push_back(r.get_string());
  return t;
}

}  // namespace

Trace gather_trace(Channel& channel, Trace local) {
  if (channel.world() == 1) return local;
  auto all = channel.gather(encode(local));
  if (channel.rank() != 0) return local;
  Trace merged;
  merged.engine = local.engine;
  merged.iterations = local.iterations;
  merged.notes = local.notes;
  merged.iteration_end.assign(static_cast<size_t>(std::max(0, local.iterations)), Seconds(0));
  for (size_t r = 0; r < all.size(); ++r) {
    Trace t = r == 0 ? std::move(local) : decode(all[r], static_cast<int>(r));
    merged.spans.insert(merged.spans.end(), t.spans.begin(), t.spans.end());
    merged.memory.insert(merged.memory.end(), t.memory.begin(), t.memory.end());
    for (size_t i = 0; i < t.iteration_end.size() && i < merged.iteration_end.size(); ++i)
      merged.iteration_end[i] = std::max(merged.iteration_end[i], t.iteration_end[i]);
    for (const auto& n : t.notes)
      if (std::find(merged.notes.begin(), merged.notes.end(), n) == merged.notes.end())
        merged.notes.push_back(n);
  }
  return merged;
}

}  // namespace dtsim::real
