#include "gui/views/export.h"

#include <QFileInfo>
#include <QLayout>
#include <QPainter>
#include <QPixmap>
#include <QSaveFile>
#include <QWidget>
#include <QtSvg/QSvgGenerator>

#include "core/base/error.h"

namespace dtsim::gui {
namespace {

[[noreturn]] void input_error(const QString& path, const QString& why) {
  throw InputError(Diagnostic{SourceLocation{path.toStdString(), 0, 0}, "", why.toStdString()});
}

// A widget that was never shown has no layout yet and may be 0 x 0 or Qt's default 640 x 480.
void lay_out(QWidget* widget) {
  widget->ensurePolished();
  if (QLayout* layout = widget->layout()) layout->activate();
  if (!widget->testAttribute(Qt::WA_WState_Visible) && !widget->testAttribute(Qt::WA_Resized))
    widget->resize(widget->sizeHint().expandedTo(widget->minimumSizeHint()));
}

}  // namespace

void export_widget(QWidget* widget, const QString& path) {
  if (!widget) input_error(path, "nothing to export: no view");
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != "png" && suffix != "svg")
    input_error(path,
                "cannot export to '." + suffix + "': expected a file name ending in .png or .svg");
  lay_out(widget);
  if (suffix == "png") {
    const QPixmap image = widget->grab();
    QSaveFile file(path);
    if (image.isNull() || !file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG") ||
        !file.commit())
      throw RuntimeError("cannot write " + path.toStdString() + ": " +
                         file.errorString().toStdString());
    return;
  }
  // QSvgGenerator writes as it paints; write to a temporary name and rename, so that a failed
  // export leaves no half file behind.
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly))
    throw RuntimeError("cannot write " + path.toStdString() + ": " +
                       file.errorString().toStdString());
  {
    QSvgGenerator svg;
    svg.setOutputDevice(&file);
    svg.setSize(widget->size());
    svg.setViewBox(QRect(QPoint(0, 0), widget->size()));
    svg.setTitle(widget->windowTitle().isEmpty() ? QString("dtsim view") : widget->windowTitle());
    svg.setDescription("exported by dtsim-gui");
    QPainter painter;
    if (!painter.begin(&svg)) throw RuntimeError("cannot draw " + path.toStdString() + " as SVG");
    widget->render(&painter);
    painter.end();
  }
  if (!file.commit())
    throw RuntimeError("cannot write " + path.toStdString() + ": " +
                       file.errorString().toStdString());
}

}  // namespace dtsim::gui
