// The scenario editor: the schema's form and the YAML text side by side, kept in step, with
// inline validation by the loader the CLI uses.
//
// Contract:
// - The YAML text is the document. A form edit rewrites one key of the text
//   (gui/app/yaml_edit.h) as one undoable step; a text edit updates the form once typing pauses
//   (kSyncDelay). Undo and redo are the text's, so they cover edits made either way.
// - Every text change is validated by driver::load_text(), the loader of `dtsim simulate` with
//   the models' cross-checks, under the file's name: each problem is shown at its field, marked at
//   its YAML line, and listed as the CLI prints it ("error: FILE:LINE:COL: key: message").
// - Files: open(), save(), save_as(); recent files are kept in QSettings (recent_files()).
// - Lives on the UI thread; validation takes milliseconds (the loader does not build the Job).
#pragma once

#include <QString>
#include <QStringList>
#include <QWidget>
#include <string>
#include <vector>

#include "core/base/error.h"

class QListWidget;
class QPlainTextEdit;
class QTimer;

namespace dtsim::gui {

class ScenarioForm;

class ScenarioEditor : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kSyncDelay = 300;  // ms of quiet typing before the form and checks follow

  explicit ScenarioEditor(QWidget* parent = nullptr);

  // Reads a scenario; false with a message when the file cannot be read.
  bool open(const QString& path, QString* error);
  bool save(QString* error);
  bool save_as(const QString& path, QString* error);
  // An unnamed scenario with this text (File > New, tests).
  void set_text(const QString& text);
  QString text() const;
  QString file_path() const { return path_; }
  // The name diagnostics carry: the file's path, or "untitled.yaml".
  QString display_name() const;
  bool modified() const;

  // Sets one key as the form does (an empty value removes it).
  void set_field(const QString& path, const QString& value, bool raw_yaml = false);
  // Brings the form and the checks up to date now instead of after kSyncDelay.
  void refresh();
  bool valid() const { return valid_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  QString scenario_name() const { return scenario_name_; }

  void undo();
  void redo();

  ScenarioForm* form() const { return form_; }
  QPlainTextEdit* yaml() const { return yaml_; }
  QListWidget* problems() const { return problems_; }

  static QStringList recent_files();

 signals:
  void validated(bool ok);
  void modified_changed(bool modified);
  void file_changed(const QString& path);

 private:
  void apply_text(const QString& new_text);
  void remember_recent(const QString& path);
  void show_problems();

  QString path_;
  ScenarioForm* form_ = nullptr;
  QPlainTextEdit* yaml_ = nullptr;
  QListWidget* problems_ = nullptr;
  QTimer* sync_timer_ = nullptr;
  bool valid_ = false;
  std::vector<Diagnostic> diagnostics_;
  QString scenario_name_;
};

}  // namespace dtsim::gui
