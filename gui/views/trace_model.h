// A Chrome trace-event file written by dtsim (`simulate --trace`, `real --trace`) as lanes of
// spans, for the GUI's timeline (gui/views/timeline_view.h).
//
// Contract:
// - load() reads the file whole (events straight from the text, with no JSON document in
//   between) and returns an immutable model; it throws InputError naming the
//   file and the reason for a file that cannot be read, is not JSON, is not a trace (an object
//   with a "traceEvents" array, or a bare array of events) or holds no complete events.
// - A lane is one (pid, tid) pair of the trace: with dtsim, one stream of one rank on one node,
//   named "node 0 / rank 3 compute" from the process_name and thread_name metadata events
//   ("node P / thread T" when the trace names neither). A named thread without spans is a lane
//   too (a pipeline stream with nothing to send), so a dtsim trace has ranks x streams lanes.
//   Lanes are ordered by pid, then tid
//   (dtsim's tid is rank x 64 + stream, so a rank's streams stay together).
// - Complete events ("ph": "X") become spans; times are microseconds, as in the file. Other
//   phases (metadata, instants) carry no duration and are not spans.
// - Kinds (classify_span): straggler_wait and failure by their cat; compute by cat; sends,
//   receives and anything of the "pp" group or the pipeline phase are pipeline communication;
//   the "tp" group is tensor-parallel; the "dp" and "edp" groups and the gradient_sync phase
//   (the tied-embedding all-reduce, for one) are data-parallel; any other collective (cp, ep,
//   amax, ...) is other communication.
// - Bubbles and idle time are not in the file: they are the gaps of at least kMinimumGap_us on a
//   compute lane (a stream named "compute", or a lane of compute spans when streams are not
//   named) between the trace's start and its end. They are bubbles when the trace is pipelined
//   (it has pipeline communication: a stage waits for its neighbour), else idle time; this is the
//   split the breakdown of core/report/metrics.h makes.
// - Spans of a lane are sorted by start; spans on one lane may overlap (a real trace's clocks).
// - Thread safety: the model is immutable after load(); share it across threads freely.
#pragma once

#include <QString>
#include <array>
#include <memory>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dtsim::gui {

struct RawTraceEvent;  // trace_model.cc: an event as read from the file

enum class SpanKind {
  kCompute,
  kTensorParallel,
  kDataParallel,
  kPipeline,
  kOtherCommunication,
  kBubble,
  kIdle,
  kStragglerWait,
  kFailure,  // the whole-run lane of a trace with failures: detection and restart
};
inline constexpr int kSpanKinds = 9;

// "compute", "tensor-parallel comm", ...: the legend's and the tooltip's words.
const char* span_kind_name(SpanKind kind);

// The kind of a complete event from its cat, args.group and args.phase (see the contract).
SpanKind classify_span(std::string_view cat, std::string_view group, std::string_view phase);

// Gaps shorter than this on a compute lane are launch latency between dependent kernels, not
// time a user looks for, so they do not become bubble or idle spans.
inline constexpr double kMinimumGap_us = 1.0;

struct TraceSpan {
  double start_us = 0, duration_us = 0;
  int lane = 0;
  SpanKind kind = SpanKind::kCompute;
  int name = -1;                     // index into TraceModel::names()
  int layer = -1, micro_batch = -1;  // args.layer (the block) and args.micro_batch; -1 absent
  double bytes = 0, flops = 0;       // args.bytes and args.flops; 0 absent
  // Added for the details: indices into names(), -1 when absent.
  int layer_name = -1;  // args.layer_name: "block.3", "embedding"
  int phase = -1;       // args.phase: "forward", "gradient_sync"
  int group = -1;       // args.group: "tp", "dp"
  double end_us() const { return start_us + duration_us; }
};

struct TraceLane {
  QString name;  // "node 0 / rank 3 compute"
  int pid = 0, tid = 0;
  int rank = -1;         // from a thread name "rank R ...", else -1
  QString stream;        // "compute", "grad_comm", ...; empty when the thread is not named so
  bool compute = false;  // gaps on this lane are bubbles or idle time
  std::vector<TraceSpan> spans;  // by start
  double longest_us = 0;         // the longest span's duration, for range searches
};

class TraceModel {
 public:
  // See the contract. Throws InputError.
  static std::shared_ptr<const TraceModel> load(const QString& path);
  // The same from a parsed trace; `source` names it in messages.
  static std::shared_ptr<const TraceModel> from_json(const nlohmann::json& trace,
                                                     const QString& source);

  const QString& source() const { return source_; }
  const std::vector<TraceLane>& lanes() const { return lanes_; }
  const std::vector<QString>& names() const { return names_; }
  // names()[index], or an empty string for -1.
  const QString& name(int index) const;
  double start_us() const { return start_us_; }
  double end_us() const { return end_us_; }
  size_t span_count() const { return span_count_; }  // gaps included
  size_t count(SpanKind kind) const { return per_kind_[static_cast<size_t>(kind)]; }
  bool pipelined() const { return count(SpanKind::kPipeline) > 0; }

  // The index in lanes()[lane].spans of the span that covers t_us, else of the nearest one
  // within tolerance_us; -1 when none. O(log n).
  int span_at(int lane, double t_us, double tolerance_us) const;

 private:
  TraceModel() = default;
  // The model from the events of a file (load) or a document (from_json); consumes `events`.
  static std::shared_ptr<const TraceModel> build(std::vector<RawTraceEvent>& events,
                                                 const QString& source);

  QString source_;
  std::vector<TraceLane> lanes_;
  std::vector<QString> names_;
  double start_us_ = 0, end_us_ = 0;
  size_t span_count_ = 0;
  std::array<size_t, kSpanKinds> per_kind_{};
};

// The text a user sees for a span: its name, kind, lane, layer, micro-batch, phase, duration,
// bytes and FLOPs, each with its unit, one per line.
QString describe_span(const TraceModel& model, const TraceSpan& span);

// A duration in microseconds with a unit that fits it: "850 ns", "12.3 us", "4.56 ms", "1.2 s".
QString format_us(double duration_us);

}  // namespace dtsim::gui
