#include "gui/views/memory_view.h"

#include <QFontMetrics>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

namespace dtsim::gui {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

constexpr std::array<QRgb, 5> kCategoryColors = {
    qRgb(76, 114, 176),   // weights
    qRgb(85, 168, 104),   // gradients
    qRgb(221, 132, 82),   // optimizer
    qRgb(129, 114, 179),  // activations
    qRgb(147, 120, 96),   // buffers
};

QString gib(double bytes) {
  return QString::number(bytes / kGiB, 'f', 1) + " GiB";
}

// A tick step of 1, 2 or 5 x 10^k GiB giving about `ticks` ticks up to `top_gib`.
double nice_step(double top_gib, int ticks) {
  const double raw = std::max(top_gib / ticks, 1e-9);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

const nlohmann::json* member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool read_categories(const nlohmann::json& per_category, std::array<double, 5>& bytes) {
  if (!per_category.is_object()) return false;
  for (size_t c = 0; c < MemoryView::kCategories.size(); ++c) {
    const nlohmann::json* v = member(per_category, MemoryView::kCategories[c]);
    if (!v || !v->is_number()) return false;
    bytes[c] = v->get<double>();
  }
  return true;
}

}  // namespace

// The stacked bars and the capacity line, painted directly: a handful of rectangles.
class MemoryChart : public QWidget {
 public:
  explicit MemoryChart(const MemoryView& view, QWidget* parent) : QWidget(parent), view_(view) {
    setMinimumSize(360, 240);
  }
  QSize sizeHint() const override { return {720, 380}; }

  // Where things go at the widget's size: the plot area, the GiB scale and the bars' slots.
  struct Layout {
    QRect plot;
    double top_gib = 1, step_gib = 1;
    double slot = 0, bar_width = 0;
    double y_of(double bytes) const {
      return plot.bottom() - bytes / kGiB / top_gib * plot.height();
    }
    double bar_left(size_t i) const { return plot.left() + slot * (i + 0.5) - bar_width / 2; }
  };

  Layout layout() const {
    const auto& bars = view_.bars();
    Layout l;
    const int legend_width = 150;
    const int label_height = QFontMetrics(font()).height() + 8;  // one line of bar names
    l.plot = QRect(64, 16, std::max(80, width() - 64 - legend_width - 16),
                   std::max(60, height() - 16 - label_height - 8));
    double top = view_.capacity_bytes();
    for (const auto& b : bars) top = std::max(top, b.peak_bytes);
    top = std::max(top * 1.1, kGiB) / kGiB;  // GiB
    l.step_gib = nice_step(top, 5);
    l.top_gib = std::ceil(top / l.step_gib) * l.step_gib;
    l.slot = bars.empty() ? 0 : static_cast<double>(l.plot.width()) / bars.size();
    l.bar_width = std::min(120.0, l.slot * 0.6);
    return l;
  }

  std::vector<MemoryView::ChartLabel> labels() const {
    const auto& bars = view_.bars();
    const Layout l = layout();
    const QFontMetricsF metrics(font());
    std::vector<MemoryView::ChartLabel> out;
    std::vector<QRectF> peaks;
    for (size_t i = 0; i < bars.size(); ++i) {
      const double centre = l.plot.left() + l.slot * (i + 0.5);
      // The peak above the bar: with its unit when the slot allows, else the number alone.
      QString peak = gib(bars[i].peak_bytes);
      if (metrics.horizontalAdvance(peak) + 4 > l.slot)
        peak = QString::number(bars[i].peak_bytes / kGiB, 'f', 1);
      const double w = metrics.horizontalAdvance(peak) + 2;
      const QRectF peak_rect(centre - w / 2, l.y_of(bars[i].peak_bytes) - metrics.height() - 2, w,
                             metrics.height());
      const bool clear = std::none_of(peaks.begin(), peaks.end(), [&](const QRectF& r) {
        return r.adjusted(-2, 0, 2, 0).intersects(peak_rect);
      });
      if (clear) {
        peaks.push_back(peak_rect);
        out.push_back({peak_rect, peak, true});
      }
      // The name below: the longest form that fits the slot.
      QString name = bars[i].label;
      const QString without_rank = name.section(" (", 0, 0);
      for (const QString& candidate : {name, without_rank, bars[i].short_label})
        if (!candidate.isEmpty()) {
          name = candidate;
          if (metrics.horizontalAdvance(candidate) + 4 <= l.slot) break;
        }
      out.push_back(
          {QRectF(l.plot.left() + l.slot * i, l.plot.bottom() + 4, l.slot, metrics.height()), name,
           false});
    }
    return out;
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    const auto& bars = view_.bars();
    if (bars.empty()) return;
    p.setRenderHint(QPainter::Antialiasing, false);
    const Layout l = layout();
    const QRect& plot = l.plot;

    // Axis, ticks and grid in GiB.
    for (double v = 0; v <= l.top_gib + 1e-9; v += l.step_gib) {
      const int y = static_cast<int>(std::lround(l.y_of(v * kGiB)));
      p.setPen(QColor(235, 235, 235));
      p.drawLine(plot.left(), y, plot.right(), y);
      p.setPen(Qt::black);
      p.drawText(QRect(0, y - 8, plot.left() - 6, 16), Qt::AlignRight | Qt::AlignVCenter,
                 QString::number(v, 'g', 4));
    }
    p.save();
    p.translate(12, plot.center().y());
    p.rotate(-90);
    p.drawText(QRect(-80, -10, 160, 20), Qt::AlignCenter, "memory per GPU (GiB)");
    p.restore();
    p.setPen(Qt::black);
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    p.drawLine(plot.bottomLeft(), plot.topLeft());

    // Stacked bars.
    for (size_t i = 0; i < bars.size(); ++i) {
      const double x = l.bar_left(i);
      double base = 0;
      for (size_t c = 0; c < kCategoryColors.size(); ++c) {
        const double bytes = bars[i].bytes[c];
        if (bytes <= 0) continue;
        const QRectF box(x, l.y_of(base + bytes), l.bar_width, l.y_of(base) - l.y_of(base + bytes));
        p.fillRect(box, QColor(kCategoryColors[c]));
        base += bytes;
      }
    }
    p.setPen(Qt::black);
    for (const auto& label : labels())
      p.drawText(label.rect, Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextSingleLine, label.text);

    // The capacity line.
    if (view_.capacity_bytes() > 0) {
      const int y = static_cast<int>(std::lround(l.y_of(view_.capacity_bytes())));
      QPen pen(QColor(196, 78, 82), 2, Qt::DashLine);
      p.setPen(pen);
      p.drawLine(plot.left(), y, plot.right(), y);
      p.drawText(plot.right() - 220, y - 19, 216, 16, Qt::AlignRight | Qt::AlignBottom,
                 "capacity " + gib(view_.capacity_bytes()));
    }

    // Legend, top of stack first (as the bars read).
    int ly = plot.top();
    const int lx = plot.right() + 16;
    for (size_t c = kCategoryColors.size(); c-- > 0;) {
      p.fillRect(QRect(lx, ly + 2, 12, 12), QColor(kCategoryColors[c]));
      p.setPen(Qt::black);
      p.drawText(lx + 18, ly + 13, MemoryView::kCategories[c]);
      ly += 20;
    }
    QPen pen(QColor(196, 78, 82), 2, Qt::DashLine);
    p.setPen(pen);
    p.drawLine(lx, ly + 8, lx + 12, ly + 8);
    p.setPen(Qt::black);
    p.drawText(lx + 18, ly + 13, "capacity");
  }

 private:
  const MemoryView& view_;
};

MemoryView::MemoryView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  verdict_ = new QLabel("No result: run a simulation to see its memory", this);
  verdict_->setWordWrap(true);
  QFont bold = verdict_->font();
  bold.setBold(true);
  verdict_->setFont(bold);
  chart_ = new MemoryChart(*this, this);
  table_ = new QTableWidget(this);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(true);
  table_->setMaximumHeight(200);
  layout->addWidget(verdict_);
  layout->addWidget(chart_, 1);
  layout->addWidget(table_);
}

std::vector<MemoryView::ChartLabel> MemoryView::chart_labels() const {
  return chart_->labels();
}

QString MemoryView::verdict() const {
  return verdict_->text();
}

void MemoryView::show_problem(const QString& why) {
  bars_.clear();
  capacity_bytes_ = 0;
  fits_ = false;
  verdict_->setText(why);
  verdict_->setStyleSheet({});
  table_->clear();
  table_->setRowCount(0);
  table_->setColumnCount(0);
  chart_->update();
}

void MemoryView::set_result(const nlohmann::json& result) {
  const nlohmann::json* memory = member(result, "memory");
  if (!memory || !memory->is_object()) {
    show_problem("This result has no memory section (memory.per_category_bytes).");
    return;
  }
  const nlohmann::json* capacity = member(*memory, "capacity_bytes");
  const nlohmann::json* peak = member(*memory, "peak_bytes_per_gpu");
  const nlohmann::json* per_category = member(*memory, "per_category_bytes");
  Bar overall;
  overall.label = "peak GPU";
  overall.short_label = "peak";
  if (!capacity || !capacity->is_number() || !peak || !peak->is_number() || !per_category ||
      !read_categories(*per_category, overall.bytes)) {
    show_problem(
        "This result's memory section lacks capacity_bytes, peak_bytes_per_gpu or one of "
        "per_category_bytes.{weights, gradients, optimizer, activations, buffers}.");
    return;
  }
  overall.peak_bytes = peak->get<double>();
  bars_.clear();
  bars_.push_back(overall);
  if (const nlohmann::json* stages = member(*memory, "per_stage"); stages && stages->is_array()) {
    for (const auto& s : *stages) {
      Bar bar;
      const nlohmann::json* cats = member(s, "per_category_bytes");
      const nlohmann::json* stage_peak = member(s, "peak_bytes");
      if (!cats || !read_categories(*cats, bar.bytes) || !stage_peak || !stage_peak->is_number())
        continue;
      bar.peak_bytes = stage_peak->get<double>();
      const nlohmann::json* stage = member(s, "stage");
      const nlohmann::json* rank = member(s, "rank");
      const int stage_number = stage && stage->is_number() ? stage->get<int>() : 0;
      bar.label = QString("stage %1").arg(stage_number);
      bar.short_label = QString::number(stage_number);
      if (rank && rank->is_number()) bar.label += QString(" (rank %1)").arg(rank->get<int>());
      bars_.push_back(bar);
    }
    // A single stage is the overall bar again.
    if (bars_.size() == 2) bars_.pop_back();
  }
  capacity_bytes_ = capacity->get<double>();
  fits_ = overall.peak_bytes <= capacity_bytes_;
  const double headroom = capacity_bytes_ - overall.peak_bytes;
  const QString of = " (peak " + gib(overall.peak_bytes) + " of " + gib(capacity_bytes_) + ")";
  verdict_->setText(fits_ ? "fits: " + gib(headroom) + " of headroom per GPU" + of
                          : "does not fit: " + gib(-headroom) + " over capacity per GPU" + of);
  verdict_->setStyleSheet(fits_ ? "color: #2e7d32" : "color: #c62828");

  table_->clear();
  table_->setRowCount(static_cast<int>(kCategories.size()) + 1);
  table_->setColumnCount(static_cast<int>(bars_.size()));
  QStringList rows;
  for (const char* c : kCategories) rows << c;
  rows << "total";
  table_->setVerticalHeaderLabels(rows);
  for (size_t b = 0; b < bars_.size(); ++b) {
    table_->setHorizontalHeaderItem(static_cast<int>(b), new QTableWidgetItem(bars_[b].label));
    double total = 0;
    for (size_t c = 0; c < kCategories.size(); ++c) {
      auto* item = new QTableWidgetItem(gib(bars_[b].bytes[c]));
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      table_->setItem(static_cast<int>(c), static_cast<int>(b), item);
      total += bars_[b].bytes[c];
    }
    auto* item = new QTableWidgetItem(gib(total));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(static_cast<int>(kCategories.size()), static_cast<int>(b), item);
  }
  table_->resizeColumnsToContents();
  chart_->update();
}

}  // namespace dtsim::gui
