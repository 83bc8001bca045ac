// Exports any view (or any widget) as it looks on screen, to PNG or SVG, for reports and docs.
//
// Contract:
// - export_widget(widget, path): the format comes from the path's extension, in any case:
//   .png is a raster image of the widget (QWidget::grab, at the screen's pixel ratio); .svg is a
//   vector drawing of the same widget (QSvgGenerator), whose view box is the widget's size in
//   pixels. Any other extension is an InputError naming the path.
// - A widget that was never shown is laid out at its size hint first, so a view built off screen
//   exports at a sensible size.
// - The file is written whole; a failure to write it is a RuntimeError naming the path.
// - Call it from the GUI thread (Qt's widgets are not thread-safe).
#pragma once

#include <QString>

class QWidget;

namespace dtsim::gui {

void export_widget(QWidget* widget, const QString& path);

}  // namespace dtsim::gui
