#include "gui/views/trace_model.h"

#include <QStringList>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/units.h"

namespace dtsim::gui {

// One event of a trace, with the fields the model reads (see EventReader and from_json).
struct RawTraceEvent {
  size_t index = 0;  // 1-based, in the file's order, for messages
  std::string ph, name, cat;
  double pid = 0, tid = 0, ts = NAN, dur = NAN;
  std::string args_name, group, phase, layer_name;
  double layer = -1, micro_batch = -1, bytes = 0, flops = 0;
};

namespace {

struct KindName {
  SpanKind kind;
  const char* name;
};
// One table for the enum's words (docs/style.md: one table per enum).
constexpr std::array<KindName, kSpanKinds> kKindNames = {{
    {SpanKind::kCompute, "compute"},
    {SpanKind::kTensorParallel, "tensor-parallel comm"},
    {SpanKind::kDataParallel, "data-parallel comm"},
    {SpanKind::kPipeline, "pipeline comm"},
    {SpanKind::kOtherCommunication, "other comm"},
    {SpanKind::kBubble, "pipeline bubble"},
    {SpanKind::kIdle, "idle"},
    {SpanKind::kStragglerWait, "straggler wait"},
    {SpanKind::kFailure, "failure and restart"},
}};

[[noreturn]] void fail(const QString& source, const std::string& why) {
  throw InputError(Diagnostic{SourceLocation{source.toStdString(), 0, 0}, "", why});
}

std::string text_of(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

double number_of(const nlohmann::json& object, const char* key, double fallback) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  return it->get<double>();
}

// Interns strings so that a span holds an index, not a copy: 100k spans share a few hundred
// names.
class NameTable {
 public:
  explicit NameTable(std::vector<QString>& names) : names_(names) {}
  int intern(const std::string& text) {
    if (text.empty()) return -1;
    const auto [it, inserted] = index_.try_emplace(text, static_cast<int>(names_.size()));
    if (inserted) names_.push_back(QString::fromStdString(text));
    return it->second;
  }

 private:
  std::vector<QString>& names_;
  std::unordered_map<std::string, int> index_;
};

// "rank 3 compute" -> rank 3, stream "compute".
void parse_thread_name(const QString& thread, TraceLane& lane) {
  const QStringList words = thread.split(' ', Qt::SkipEmptyParts);
  if (words.size() >= 3 && words[0] == "rank") {
    bool ok = false;
    const int rank = words[1].toInt(&ok);
    if (ok) {
      lane.rank = rank;
      lane.stream = words.mid(2).join(' ');
    }
  }
}

// Reads the events of a trace straight from the text (nlohmann's SAX interface) into
// RawTraceEvents, keeping only the fields the model uses: a 100k-span trace would otherwise
// become a document of a million small JSON values first, which doubles the load time.
class EventReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<RawTraceEvent> events;
  bool found_events = false;  // a "traceEvents" array, or a bare array of events
  std::string error;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t v) override { return number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return number(v); }
  bool binary(binary_t&) override { return true; }
  bool string(string_t& v) override {
    if (in_args_ && depth_ == events_depth_ + 2) {
      if (args_key_ == "name")
        event_.args_name = std::move(v);
      else if (args_key_ == "group")
        event_.group = std::move(v);
      else if (args_key_ == "phase")
        event_.phase = std::move(v);
      else if (args_key_ == "layer_name")
        event_.layer_name = std::move(v);
    } else if (in_event_ && depth_ == events_depth_ + 1) {
      if (event_key_ == "ph")
        event_.ph = std::move(v);
      else if (event_key_ == "name")
        event_.name = std::move(v);
      else if (event_key_ == "cat")
        event_.cat = std::move(v);
    }
    return true;
  }
  bool start_object(std::size_t) override {
    ++depth_;
    if (events_depth_ > 0 && depth_ == events_depth_ + 1) {
      event_ = RawTraceEvent{};
      event_.index = ++count_;
      in_event_ = true;
    } else if (in_event_ && depth_ == events_depth_ + 2 && event_key_ == "args") {
      in_args_ = true;
    }
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) top_key_ = k;
    if (in_args_ && depth_ == events_depth_ + 2)
      args_key_ = k;
    else if (in_event_ && depth_ == events_depth_ + 1)
      event_key_ = k;
    return true;
  }
  bool end_object() override {
    if (in_args_ && depth_ == events_depth_ + 2) {
      in_args_ = false;
    } else if (in_event_ && depth_ == events_depth_ + 1) {
      in_event_ = false;
      if (event_.ph == "X" || event_.ph == "M") events.push_back(std::move(event_));
    }
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    ++depth_;
    if (!found_events && (depth_ == 1 || (depth_ == 2 && top_key_ == "traceEvents"))) {
      events_depth_ = depth_;
      found_events = true;
    } else if (events_depth_ > 0 && depth_ == events_depth_ + 1) {
      ++count_;  // an event that is not an object: counted, not read
    }
    return true;
  }
  bool end_array() override {
    if (depth_ == events_depth_) events_depth_ = -1;
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = e.what();
    return false;
  }

 private:
  bool number(double v) {
    if (in_args_ && depth_ == events_depth_ + 2) {
      if (args_key_ == "layer")
        event_.layer = v;
      else if (args_key_ == "micro_batch")
        event_.micro_batch = v;
      else if (args_key_ == "bytes")
        event_.bytes = v;
      else if (args_key_ == "flops")
        event_.flops = v;
    } else if (in_event_ && depth_ == events_depth_ + 1) {
      if (event_key_ == "pid")
        event_.pid = v;
      else if (event_key_ == "tid")
        event_.tid = v;
      else if (event_key_ == "ts")
        event_.ts = v;
      else if (event_key_ == "dur")
        event_.dur = v;
    }
    return true;
  }

  int depth_ = 0, events_depth_ = -1;
  size_t count_ = 0;
  bool in_event_ = false, in_args_ = false;
  std::string top_key_, event_key_, args_key_;
  RawTraceEvent event_;
};

}  // namespace

const char* span_kind_name(SpanKind kind) {
  for (const auto& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "?";
}

SpanKind classify_span(std::string_view cat, std::string_view group, std::string_view phase) {
  if (cat == "straggler_wait") return SpanKind::kStragglerWait;
  if (cat == "failure") return SpanKind::kFailure;
  if (cat == "compute") return SpanKind::kCompute;
  if (cat == "send" || cat == "recv" || group == "pp" || phase == "pipeline")
    return SpanKind::kPipeline;
  if (group == "tp") return SpanKind::kTensorParallel;
  if (group == "dp" || group == "edp" || phase == "gradient_sync") return SpanKind::kDataParallel;
  return SpanKind::kOtherCommunication;
}

const QString& TraceModel::name(int index) const {
  static const QString kNone;
  if (index < 0 || static_cast<size_t>(index) >= names_.size()) return kNone;
  return names_[static_cast<size_t>(index)];
}

std::shared_ptr<const TraceModel> TraceModel::load(const QString& path) {
  std::ifstream in(path.toStdString(), std::ios::binary);
  if (!in) fail(path, "cannot read the trace file: it does not exist or is not readable");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(path, "cannot read the trace file");
  EventReader reader;
  const std::string& bytes = text.str();
  if (!nlohmann::json::sax_parse(bytes, &reader))
    fail(path,
         "not a trace: the file is not JSON (" + reader.error +
             "); expected the Chrome trace-event file of dtsim simulate --trace or dtsim real "
             "--trace");
  if (!reader.found_events)
    fail(path, "not a trace: expected an object with a \"traceEvents\" array");
  return build(reader.events, path);
}

std::shared_ptr<const TraceModel> TraceModel::from_json(const nlohmann::json& trace,
                                                        const QString& source) {
  const nlohmann::json* events = nullptr;
  if (trace.is_array()) {
    events = &trace;
  } else if (trace.is_object() && trace.contains("traceEvents") &&
             trace["traceEvents"].is_array()) {
    events = &trace["traceEvents"];
  } else {
    fail(source, "not a trace: expected an object with a \"traceEvents\" array");
  }
  std::vector<RawTraceEvent> raw;
  raw.reserve(events->size());
  size_t index = 0;
  for (const auto& e : *events) {
    ++index;
    if (!e.is_object()) continue;
    RawTraceEvent r;
    r.index = index;
    r.ph = text_of(e, "ph");
    if (r.ph != "X" && r.ph != "M") continue;
    r.name = text_of(e, "name");
    r.cat = text_of(e, "cat");
    r.pid = number_of(e, "pid", 0);
    r.tid = number_of(e, "tid", 0);
    r.ts = number_of(e, "ts", NAN);
    r.dur = number_of(e, "dur", NAN);
    const auto args = e.find("args");
    if (args != e.end() && args->is_object()) {
      r.args_name = text_of(*args, "name");
      r.group = text_of(*args, "group");
      r.phase = text_of(*args, "phase");
      r.layer_name = text_of(*args, "layer_name");
      r.layer = number_of(*args, "layer", -1);
      r.micro_batch = number_of(*args, "micro_batch", -1);
      r.bytes = number_of(*args, "bytes", 0);
      r.flops = number_of(*args, "flops", 0);
    }
    raw.push_back(std::move(r));
  }
  return build(raw, source);
}

std::shared_ptr<const TraceModel> TraceModel::build(std::vector<RawTraceEvent>& events,
                                                    const QString& source) {
  std::shared_ptr<TraceModel> model(new TraceModel());
  model->source_ = source;
  NameTable names(model->names_);

  // Lanes by (pid, tid) in order; names from the metadata events.
  std::map<std::pair<int, int>, size_t> lane_of;
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  struct Pending {
    std::pair<int, int> key;
    TraceSpan span;
  };
  std::vector<Pending> pending;
  pending.reserve(events.size());
  for (RawTraceEvent& e : events) {
    const int pid = static_cast<int>(e.pid), tid = static_cast<int>(e.tid);
    if (e.ph == "M") {
      if (e.name == "process_name") process_names[pid] = e.args_name;
      if (e.name == "thread_name") thread_names[{pid, tid}] = e.args_name;
      continue;
    }
    if (e.ph != "X") continue;
    if (!std::isfinite(e.ts) || !std::isfinite(e.dur) || e.dur < 0)
      fail(source, "event " + std::to_string(e.index) +
                       " (a complete event, \"ph\": \"X\"): expected numbers ts and dur >= 0 "
                       "(microseconds)");
    TraceSpan span;
    span.start_us = e.ts;
    span.duration_us = e.dur;
    span.name = names.intern(e.name);
    span.layer = static_cast<int>(e.layer);
    span.micro_batch = static_cast<int>(e.micro_batch);
    span.bytes = e.bytes;
    span.flops = e.flops;
    span.layer_name = names.intern(e.layer_name);
    span.phase = names.intern(e.phase);
    span.group = names.intern(e.group);
    span.kind = classify_span(e.cat, e.group, e.phase);
    pending.push_back({{pid, tid}, span});
    lane_of.try_emplace({pid, tid}, 0);
  }
  events.clear();
  events.shrink_to_fit();
  if (pending.empty())
    fail(source, "no spans: expected complete events (\"ph\": \"X\") in traceEvents");
  // A named thread is a lane even without spans: a stream that had nothing to do is worth seeing.
  for (const auto& [key, name] : thread_names) lane_of.try_emplace(key, 0);

  // Lanes in (pid, tid) order.
  for (auto& [key, lane_index] : lane_of) {
    lane_index = model->lanes_.size();
    TraceLane lane;
    lane.pid = key.first;
    lane.tid = key.second;
    const auto process = process_names.find(key.first);
    const QString process_name = process != process_names.end()
                                     ? QString::fromStdString(process->second)
                                     : QString("node %1").arg(key.first);
    const auto thread = thread_names.find(key);
    if (thread != thread_names.end()) {
      const QString thread_name = QString::fromStdString(thread->second);
      lane.name = process_name + " / " + thread_name;
      parse_thread_name(thread_name, lane);
    } else if (process != process_names.end() && key.second == 0) {
      lane.name = process_name;  // a process with one unnamed thread (the whole-run lane)
    } else {
      lane.name = process_name + QString(" / thread %1").arg(key.second);
    }
    model->lanes_.push_back(std::move(lane));
  }

  double start = INFINITY, end = -INFINITY;
  for (Pending& p : pending) {
    const size_t lane = lane_of[p.key];
    p.span.lane = static_cast<int>(lane);
    start = std::min(start, p.span.start_us);
    end = std::max(end, p.span.end_us());
    model->lanes_[lane].spans.push_back(p.span);
  }
  pending.clear();
  pending.shrink_to_fit();
  model->start_us_ = start;
  model->end_us_ = end;

  for (TraceLane& lane : model->lanes_) {
    std::stable_sort(
        lane.spans.begin(), lane.spans.end(),
        [](const TraceSpan& a, const TraceSpan& b) { return a.start_us < b.start_us; });
    bool any_compute = false, only_compute = true;
    for (const TraceSpan& s : lane.spans) {
      any_compute |= s.kind == SpanKind::kCompute;
      only_compute &= s.kind == SpanKind::kCompute;
    }
    lane.compute = lane.stream.isEmpty() ? any_compute && only_compute : lane.stream == "compute";
  }
  const bool pipelined = std::any_of(model->lanes_.begin(), model->lanes_.end(), [](const auto& l) {
    return std::any_of(l.spans.begin(), l.spans.end(),
                       [](const TraceSpan& s) { return s.kind == SpanKind::kPipeline; });
  });

  // Bubbles or idle time: the gaps on compute lanes, over the trace's whole range.
  const SpanKind gap_kind = pipelined ? SpanKind::kBubble : SpanKind::kIdle;
  const int gap_name = names.intern(pipelined ? "pipeline bubble" : "idle");
  for (size_t lane_index = 0; lane_index < model->lanes_.size(); ++lane_index) {
    TraceLane& lane = model->lanes_[lane_index];
    if (!lane.compute) continue;
    std::vector<TraceSpan> with_gaps;
    with_gaps.reserve(lane.spans.size() * 2 + 1);
    double busy_until = start;
    auto add_gap = [&](double from, double to) {
      if (to - from < kMinimumGap_us) return;
      TraceSpan gap;
      gap.start_us = from;
      gap.duration_us = to - from;
      gap.lane = static_cast<int>(lane_index);
      gap.kind = gap_kind;
      gap.name = gap_name;
      with_gaps.push_back(gap);
    };
    for (const TraceSpan& s : lane.spans) {
      add_gap(busy_until, s.start_us);
      with_gaps.push_back(s);
      busy_until = std::max(busy_until, s.end_us());
    }
    add_gap(busy_until, end);
    lane.spans = std::move(with_gaps);
  }

  for (TraceLane& lane : model->lanes_) {
    for (const TraceSpan& s : lane.spans) {
      lane.longest_us = std::max(lane.longest_us, s.duration_us);
      ++model->per_kind_[static_cast<size_t>(s.kind)];
    }
    model->span_count_ += lane.spans.size();
  }
  return model;
}

int TraceModel::span_at(int lane_index, double t_us, double tolerance_us) const {
  if (lane_index < 0 || static_cast<size_t>(lane_index) >= lanes_.size()) return -1;
  const TraceLane& lane = lanes_[static_cast<size_t>(lane_index)];
  // Every span that can reach t starts after t - longest - tolerance.
  const double from = t_us - lane.longest_us - tolerance_us;
  auto it = std::lower_bound(lane.spans.begin(), lane.spans.end(), from,
                             [](const TraceSpan& s, double t) { return s.start_us < t; });
  int best = -1;
  double best_distance = 0;
  for (; it != lane.spans.end() && it->start_us <= t_us + tolerance_us; ++it) {
    const double distance =
        t_us < it->start_us ? it->start_us - t_us : std::max(0.0, t_us - it->end_us());
    if (distance > tolerance_us) continue;
    // The nearest span wins; among covering ones, the shortest (the most specific).
    const TraceSpan* current = best < 0 ? nullptr : &lane.spans[static_cast<size_t>(best)];
    if (!current || distance < best_distance ||
        (distance == best_distance && it->duration_us < current->duration_us)) {
      best = static_cast<int>(it - lane.spans.begin());
      best_distance = distance;
    }
  }
  return best;
}

QString format_us(double duration_us) {
  const double a = std::fabs(duration_us);
  auto fixed = [](double v, const char* unit) {
    // Three significant digits: what a tooltip or an axis needs.
    const double magnitude = std::fabs(v);
    const int decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2;
    return QString::number(v, 'f', decimals) + " " + unit;
  };
  if (a == 0) return "0 s";
  if (a < 1) return fixed(duration_us * 1e3, "ns");
  if (a < 1e3) return fixed(duration_us, "us");
  if (a < 1e6) return fixed(duration_us / 1e3, "ms");
  return fixed(duration_us / 1e6, "s");
}

QString describe_span(const TraceModel& model, const TraceSpan& span) {
  QStringList lines;
  const QString& name = model.name(span.name);
  lines << (name.isEmpty() ? QString("(unnamed)") : name);
  lines << QString("kind: %1").arg(span_kind_name(span.kind));
  if (span.lane >= 0 && static_cast<size_t>(span.lane) < model.lanes().size())
    lines << QString("lane: %1").arg(model.lanes()[static_cast<size_t>(span.lane)].name);
  if (span.layer_name >= 0 || span.layer >= 0) {
    QString layer = model.name(span.layer_name);
    if (span.layer >= 0)
      layer += (layer.isEmpty() ? QString("block %1") : QString(" (block %1)")).arg(span.layer);
    lines << "layer: " + layer;
  }
  if (span.micro_batch >= 0) lines << QString("micro-batch: %1").arg(span.micro_batch);
  if (span.phase >= 0) lines << "phase: " + model.name(span.phase);
  if (span.group >= 0) lines << "group: " + model.name(span.group);
  lines << "start: " + format_us(span.start_us - model.start_us()) + " after the trace's start";
  lines << "duration: " + format_us(span.duration_us);
  if (span.bytes > 0) lines << "bytes: " + QString::fromStdString(format_bytes(Bytes(span.bytes)));
  if (span.flops > 0) {
    lines << "FLOPs: " + QString::fromStdString(format_flops(Flops(span.flops)));
    if (span.duration_us > 0)
      lines << "rate: " + QString::number(span.flops / (span.duration_us * 1e-6) / 1e12, 'f', 1) +
                   " TFLOP/s";
  }
  return lines.join('\n');
}

}  // namespace dtsim::gui
