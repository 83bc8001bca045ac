#include "gui/app/summary_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>

#include "core/base/units.h"

namespace dtsim::gui {
namespace {

const nlohmann::json* find_key(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object() || !cur->contains(key)) return nullptr;
    cur = &(*cur)[key];
  }
  return cur;
}

std::optional<double> number(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* v = find_key(j, path);
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

QString scaled(double v, const QString& unit) {  // 1.21 M tokens/s
  if (v >= 1e9) return QString::number(v / 1e9, 'f', 2) + " G" + unit;
  if (v >= 1e6) return QString::number(v / 1e6, 'f', 2) + " M" + unit;
  if (v >= 1e4) return QString::number(v / 1e3, 'f', 1) + " k" + unit;
  return QString::number(v, 'f', 1) + " " + unit;
}

const QString kNotAvailable = "n/a";

// "86.84 days (2084 h)": a run's wall-clock length.
QString format_days(double s) {
  return QString("%1 days (%2 h)").arg(s / 86400, 0, 'f', 2).arg(s / 3600, 0, 'f', 0);
}

}  // namespace

QString format_seconds(double s) {
  return QString::fromStdString(format_duration(Seconds(s)));
}

QString format_gib(double bytes) {
  return QString::number(bytes / (1024.0 * 1024 * 1024), 'f', 2) + " GiB";
}

BreakdownBar::BreakdownBar(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(90);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
}

QSize BreakdownBar::sizeHint() const {
  return {600, 40 + 22 * static_cast<int>(parts_.size()) / 2 + 40};
}

void BreakdownBar::set_parts(std::vector<Part> parts) {
  parts_ = std::move(parts);
  setMinimumHeight(sizeHint().height());
  update();
}

void BreakdownBar::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  double total = 0;
  for (const auto& part : parts_) total += std::max(0.0, part.seconds);
  const QRectF bar(4, 4, width() - 8, 32);
  p.setPen(QColor(0x90, 0x90, 0x90));
  p.setBrush(QColor(0xf2, 0xf2, 0xf2));
  p.drawRect(bar);
  if (total > 0) {
    double x = bar.left();
    for (const auto& part : parts_) {
      const double w = bar.width() * std::max(0.0, part.seconds) / total;
      if (w <= 0) continue;
      p.setPen(Qt::NoPen);
      p.setBrush(part.color);
      p.drawRect(QRectF(x, bar.top(), w, bar.height()));
      x += w;
    }
  }
  // Legend: two columns of "name: seconds (share)".
  p.setPen(palette().color(QPalette::WindowText));
  const int row_h = 22;
  const int col_w = std::max(200, (width() - 8) / 2);
  for (size_t i = 0; i < parts_.size(); ++i) {
    const auto& part = parts_[i];
    const int col = static_cast<int>(i % 2), row = static_cast<int>(i / 2);
    const QRect swatch(4 + col * col_w, 46 + row * row_h, 14, 14);
    p.setBrush(part.color);
    p.setPen(Qt::NoPen);
    p.drawRect(swatch);
    p.setPen(palette().color(QPalette::WindowText));
    const double share = total > 0 ? 100.0 * part.seconds / total : 0.0;
    p.drawText(QRect(swatch.right() + 6, swatch.top() - 3, col_w - 24, row_h),
               Qt::AlignLeft | Qt::AlignVCenter,
               QString("%1: %2 (%3 %)")
                   .arg(part.name, format_seconds(part.seconds), QString::number(share, 'f', 1)));
  }
}

SummaryView::SummaryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  title_ = new QLabel(this);
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.4);
  big.setBold(true);
  title_->setFont(big);
  title_->setWordWrap(true);
  layout->addWidget(title_);
  message_ = new QLabel(this);
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  message_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  layout->addWidget(message_);
  figures_ = new QWidget(this);
  grid_ = new QGridLayout(figures_);
  grid_->setHorizontalSpacing(24);
  const QStringList names{"Step time",
                          "80 % interval",
                          "Throughput",
                          "Tokens",
                          "MFU",
                          "HFU",
                          "Model TFLOP/s per GPU",
                          "Peak memory per GPU",
                          "GPU memory",
                          "Fits in memory",
                          "Configuration",
                          "Engine",
                          "Goodput",
                          "Time to train",
                          "Interruptions",
                          "Checkpoint interval"};
  int row = 0;
  for (const QString& name : names) {
    auto* key = new QLabel(name + ":", figures_);
    auto* value = new QLabel(kNotAvailable, figures_);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont f = value->font();
    f.setBold(true);
    value->setFont(f);
    value->setWordWrap(true);
    grid_->addWidget(key, row / 2, (row % 2) * 2);
    grid_->addWidget(value, row / 2, (row % 2) * 2 + 1);
    values_.push_back({name, key, value});
    ++row;
  }
  grid_->setColumnStretch(1, 1);
  grid_->setColumnStretch(3, 1);
  layout->addWidget(figures_);
  auto* where = new QLabel("Where one step's time goes:", this);
  layout->addWidget(where);
  bar_ = new BreakdownBar(this);
  layout->addWidget(bar_);
  layout->addStretch(1);
  show_message("No simulation yet: open a scenario and press Run (Ctrl+R).");
}

void SummaryView::show_message(const QString& text) {
  title_->setText("Summary");
  message_->setText(text);
  message_->show();
  figures_->hide();
  bar_->set_parts({});
}

SummaryView::Figure* SummaryView::find_figure(const QString& name) {
  for (auto& f : values_)
    if (f.name == name) return &f;
  return nullptr;
}

QString SummaryView::figure(const QString& name) const {
  for (const auto& f : values_)
    if (f.name == name) return f.value->text();
  return {};
}

bool SummaryView::figure_shown(const QString& name) const {
  for (const auto& f : values_)
    if (f.name == name) return !f.value->isHidden();
  return false;
}

void SummaryView::set_result(const nlohmann::json& r, const QString& title) {
  title_->setText(title);
  message_->hide();
  figures_->show();
  auto set = [this](const QString& name, const QString& text) {
    if (Figure* f = find_figure(name)) f->value->setText(text.isEmpty() ? kNotAvailable : text);
  };
  auto fmt = [&](std::initializer_list<const char*> path, auto render) -> QString {
    const auto v = number(r, path);
    return v ? render(*v) : QString();
  };
  const nlohmann::json* fits = find_key(r, {"memory", "fits"});
  const bool does_not_fit = fits && fits->is_boolean() && !fits->get<bool>();
  // A configuration that does not fit cannot run: the verdict stands where the step time is.
  set("Step time", fmt({"step_time_s"}, format_seconds) +
                       (does_not_fit ? "  (does not fit in memory: cannot run)" : ""));
  // The interval from comparable published runs (JSON step_time_interval_s); its basis, which
  // names the runs or says why there are none, is the label's tooltip.
  QString interval, basis;
  if (const auto* i = find_key(r, {"step_time_interval_s"}); i && i->is_object()) {
    const auto low = number(*i, {"low"}), high = number(*i, {"high"}), runs = number(*i, {"runs"});
    interval = low && high && runs ? format_seconds(*low) + " to " + format_seconds(*high) + " (" +
                                         QString::number(*runs) + " published runs)"
                                   : QString("none: no comparable published runs");
    if (i->contains("basis") && (*i)["basis"].is_string())
      basis = QString::fromStdString((*i)["basis"].get<std::string>());
  }
  set("80 % interval", interval);
  if (Figure* f = find_figure("80 % interval")) f->value->setToolTip(basis);
  set("Throughput",
      fmt({"throughput", "samples_per_s"}, [](double v) { return scaled(v, "samples/s"); }));
  set("Tokens",
      fmt({"throughput", "tokens_per_s"}, [](double v) { return scaled(v, "tokens/s"); }));
  set("MFU",
      fmt({"flops", "mfu"}, [](double v) { return QString::number(100 * v, 'f', 1) + " %"; }));
  set("HFU",
      fmt({"flops", "hfu"}, [](double v) { return QString::number(100 * v, 'f', 1) + " %"; }));
  set("Model TFLOP/s per GPU", fmt({"flops", "model_tflops_per_gpu"}, [](double v) {
        return QString::number(v, 'f', 1) + " TFLOP/s";
      }));
  set("Peak memory per GPU", fmt({"memory", "peak_bytes_per_gpu"}, format_gib));
  set("GPU memory", fmt({"memory", "capacity_bytes"}, format_gib));
  set("Fits in memory",
      fits && fits->is_boolean() ? (fits->get<bool>() ? "yes" : "no: does not fit") : QString());
  QString config;
  if (const auto* c = find_key(r, {"config"}); c && c->is_object()) {
    auto count = [&](const char* key) {
      return c->contains(key) && (*c)[key].is_number() ? QString::number((*c)[key].get<double>())
                                                       : QString("?");
    };
    config = count("gpus") + " GPUs: TP " + count("tp") + " x PP " + count("pp") + " x DP " +
             count("dp");
  }
  set("Configuration", config);
  const nlohmann::json* engine = find_key(r, {"engine"});
  set("Engine", engine && engine->is_string() ? QString::fromStdString(engine->get<std::string>())
                                              : QString());
  set("Goodput", fmt({"reliability", "goodput"},
                     [](double v) { return QString::number(100 * v, 'f', 1) + " %"; }));
  show_reliability(r);
  std::vector<BreakdownBar::Part> parts;
  const std::vector<std::tuple<const char*, QString, QColor>> categories{
      {"compute", "Compute", QColor(0x1f, 0x77, 0xb4)},
      {"exposed_communication", "Exposed communication", QColor(0xff, 0x7f, 0x0e)},
      {"pipeline_bubble", "Pipeline bubble", QColor(0x9e, 0x9e, 0x9e)},
      {"straggler_wait", "Straggler wait", QColor(0xd6, 0x27, 0x28)},
      {"other", "Other", QColor(0x94, 0x67, 0xbd)}};
  for (const auto& [key, name, color] : categories)
    parts.push_back({name, number(r, {"breakdown_s", key}).value_or(0.0), color});
  bar_->set_parts(parts);
}

// The failure model's figures (JSON `reliability`, when `modelled`): the time to train with
// failures, the interruptions by cause, largest first, and the checkpoint interval with how it
// was chosen. Hidden for a result without a failure model, where they do not apply.
void SummaryView::show_reliability(const nlohmann::json& r) {
  const nlohmann::json* rel = find_key(r, {"reliability"});
  const nlohmann::json* modelled = rel ? find_key(*rel, {"modelled"}) : nullptr;
  const bool shown = modelled && modelled->is_boolean() && modelled->get<bool>();
  for (const char* name : {"Time to train", "Interruptions", "Checkpoint interval"}) {
    Figure* f = find_figure(name);
    f->key->setVisible(shown);
    f->value->setVisible(shown);
    f->value->setText(kNotAvailable);
  }
  if (!shown) return;
  if (const auto t = number(*rel, {"time_to_train_s"}))
    find_figure("Time to train")->value->setText(format_days(*t));
  if (const auto n = number(*rel, {"interruptions"})) {
    std::vector<std::pair<double, QString>> causes;
    if (const auto* by = find_key(*rel, {"interruptions_by_cause"}); by && by->is_object())
      for (const auto& [cause, count] : by->items())
        if (count.is_number() && count.get<double>() > 0)
          causes.emplace_back(count.get<double>(), QString::fromStdString(cause));
    std::stable_sort(causes.begin(), causes.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    QStringList parts;
    for (const auto& [count, cause] : causes) parts << cause + " " + QString::number(count);
    find_figure("Interruptions")
        ->value->setText(QString::number(*n) +
                         (parts.isEmpty() ? QString() : " (" + parts.join(", ") + ")"));
  }
  if (const auto s = number(*rel, {"checkpoint_interval_s"})) {
    QString text = format_seconds(*s);
    if (const auto steps = number(*rel, {"checkpoint_interval_steps"}))
      text = QString::number(*steps) + " steps, " + text;
    if (const auto* source = find_key(*rel, {"checkpoint_interval_source"});
        source && source->is_string())
      text += " (" + QString::fromStdString(source->get<std::string>()) + ")";
    find_figure("Checkpoint interval")->value->setText(text);
  }
}

}  // namespace dtsim::gui
