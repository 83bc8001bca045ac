#include "gui/app/scenario_editor.h"

#include <QFileInfo>
#include <QFontDatabase>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QSaveFile>
#include <QSettings>
#include <QSplitter>
#include <QTextBlock>
#include <QTimer>
#include <QVBoxLayout>

#include "core/base/error.h"
#include "core/scenario/scenario_file.h"
#include "driver/predict.h"
#include "gui/app/scenario_form.h"
#include "gui/app/yaml_edit.h"

namespace dtsim::gui {
namespace {

constexpr int kMaxRecentFiles = 8;
const char* const kRecentKey = "recent_files";

}  // namespace

ScenarioEditor::ScenarioEditor(QWidget* parent) : QWidget(parent) {
  form_ = new ScenarioForm(this);
  yaml_ = new QPlainTextEdit(this);
  yaml_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  yaml_->setLineWrapMode(QPlainTextEdit::NoWrap);
  yaml_->setTabChangesFocus(false);
  yaml_->setToolTip(
      "The scenario as YAML (docs/scenario-reference.md). Edits here update the form.");
  problems_ = new QListWidget(this);
  problems_->setToolTip(
      "Problems the loader found, as dtsim validate prints them. Click one to "
      "go to its line.");
  problems_->setWordWrap(true);

  auto* right = new QWidget(this);
  auto* right_layout = new QVBoxLayout(right);
  right_layout->setContentsMargins(0, 0, 0, 0);
  right_layout->addWidget(new QLabel("YAML", right));
  auto* text_split = new QSplitter(Qt::Vertical, right);
  text_split->addWidget(yaml_);
  text_split->addWidget(problems_);
  text_split->setStretchFactor(0, 4);
  text_split->setStretchFactor(1, 1);
  right_layout->addWidget(text_split);

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(form_);
  split->addWidget(right);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(split);

  sync_timer_ = new QTimer(this);
  sync_timer_->setSingleShot(true);
  sync_timer_->setInterval(kSyncDelay);
  connect(sync_timer_, &QTimer::timeout, this, &ScenarioEditor::refresh);
  connect(yaml_, &QPlainTextEdit::textChanged, sync_timer_, qOverload<>(&QTimer::start));
  connect(yaml_->document(), &QTextDocument::modificationChanged, this,
          &ScenarioEditor::modified_changed);
  connect(
      form_, &ScenarioForm::edited, this,
      [this](const QString& path, const QString& value, bool raw) { set_field(path, value, raw); });
  connect(problems_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const int line = item->data(Qt::UserRole).toInt();
    if (line <= 0) return;
    QTextCursor c(yaml_->document()->findBlockByNumber(line - 1));
    yaml_->setTextCursor(c);
    yaml_->setFocus();
  });
  set_text("");
}

QString ScenarioEditor::display_name() const {
  return path_.isEmpty() ? "untitled.yaml" : path_;
}

QString ScenarioEditor::text() const {
  return yaml_->toPlainText();
}

bool ScenarioEditor::modified() const {
  return yaml_->document()->isModified();
}

void ScenarioEditor::set_text(const QString& text) {
  path_.clear();
  yaml_->setPlainText(text);
  yaml_->document()->setModified(false);
  refresh();
  emit file_changed(path_);
}

bool ScenarioEditor::open(const QString& path, QString* error) {
  // The loader's own checks (a regular file, bounded in size, UTF-8), so that a device such as
  // /dev/zero or a pipe is refused instead of read without end.
  QString text;
  try {
    text = QString::fromStdString(read_scenario_file(path.toStdString()));
  } catch (const InputError& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  path_ = path;
  yaml_->setPlainText(text);
  yaml_->document()->setModified(false);
  remember_recent(path);
  refresh();
  emit file_changed(path_);
  return true;
}

bool ScenarioEditor::save(QString* error) {
  if (path_.isEmpty()) {
    *error = "the scenario has no file name yet: use File > Save As";
    return false;
  }
  return save_as(path_, error);
}

bool ScenarioEditor::save_as(const QString& path, QString* error) {
  QSaveFile file(path);  // written whole or not at all, as dtsim writes its outputs
  if (!file.open(QIODevice::WriteOnly)) {
    *error = path + ": cannot write: " + file.errorString();
    return false;
  }
  file.write(yaml_->toPlainText().toUtf8());
  if (!file.commit()) {
    *error = path + ": cannot write: " + file.errorString();
    return false;
  }
  const bool renamed = path != path_;
  path_ = path;
  yaml_->document()->setModified(false);
  remember_recent(path);
  if (renamed) {
    refresh();  // diagnostics now name the new file
    emit file_changed(path_);
  }
  return true;
}

void ScenarioEditor::set_field(const QString& path, const QString& value, bool raw_yaml) {
  std::string text = yaml_->toPlainText().toStdString();
  try {
    // A key inside a catalog name's inline spec turns the name into the spec's base:
    // "gpu: H100-SXM" becomes "gpu: {base: H100-SXM, ...}" in block form.
    const auto entries = yaml_entries(text);
    QString ancestor = path.section('.', 0, 0);
    for (int i = 1; i < path.count('.') + 1; ++i) {
      if (form_->is_name_or_map(ancestor)) {
        auto it = entries.find(ancestor.toStdString());
        if (it != entries.end() && it->second.scalar && !it->second.text.empty()) {
          const std::string name = it->second.text;
          text = set_yaml_value(text, ancestor.toStdString(), "");
          text = set_yaml_value(text, ancestor.toStdString() + ".base", name);
        }
      }
      ancestor += "." + path.section('.', i, i);
    }
    text = set_yaml_value(text, path.toStdString(), value.toStdString(), raw_yaml);
  } catch (const YamlEditError& e) {
    // The form cannot place a key in text that is not YAML; the loader's message says where.
    refresh();
    auto* item =
        new QListWidgetItem(path + ": not changed, because " + QString::fromStdString(e.what()) +
                            "; fix the YAML text first");
    item->setForeground(QColor(0xc6, 0x28, 0x28));
    problems_->insertItem(0, item);
    return;
  }
  apply_text(QString::fromStdString(text));
  refresh();
}

void ScenarioEditor::apply_text(const QString& new_text) {
  // Replace only what changed, as one undo step, so the cursor and undo history stay useful.
  const QString old = yaml_->toPlainText();
  const qsizetype shortest = std::min(old.size(), new_text.size());
  qsizetype prefix = 0;
  while (prefix < shortest && old[prefix] == new_text[prefix]) ++prefix;
  qsizetype suffix = 0;
  while (suffix < shortest - prefix &&
         old[old.size() - 1 - suffix] == new_text[new_text.size() - 1 - suffix])
    ++suffix;
  QTextCursor c(yaml_->document());
  c.beginEditBlock();
  c.setPosition(static_cast<int>(prefix));
  c.setPosition(static_cast<int>(old.size() - suffix), QTextCursor::KeepAnchor);
  c.insertText(new_text.mid(prefix, new_text.size() - suffix - prefix));
  c.endEditBlock();
}

void ScenarioEditor::refresh() {
  sync_timer_->stop();
  const std::string text = yaml_->toPlainText().toStdString();
  try {
    form_->set_values(yaml_entries(text));
  } catch (const YamlEditError&) {
    // Text that is not YAML keeps the form as it was; the loader below says where it breaks.
  }
  diagnostics_.clear();
  valid_ = false;
  try {
    const Scenario scenario = driver::load_text(text, display_name().toStdString());
    scenario_name_ = QString::fromStdString(scenario.name);
    valid_ = true;
  } catch (const InputError& e) {
    diagnostics_ = e.diagnostics();
  } catch (const std::exception& e) {
    diagnostics_.push_back(
        Diagnostic{SourceLocation{display_name().toStdString(), 0, 0}, "", e.what()});
  }
  show_problems();
  emit validated(valid_);
}

void ScenarioEditor::show_problems() {
  problems_->clear();
  std::multimap<std::string, std::string> by_key;
  QList<QTextEdit::ExtraSelection> marks;
  const std::string name = display_name().toStdString();
  for (const Diagnostic& d : diagnostics_) {
    auto* item = new QListWidgetItem(QString::fromStdString(d.render()), problems_);
    item->setForeground(QColor(0xc6, 0x28, 0x28));
    by_key.emplace(d.key_path, d.message);
    if (d.location.file == name && d.location.line > 0) {
      item->setData(Qt::UserRole, d.location.line);
      QTextEdit::ExtraSelection mark;
      mark.cursor = QTextCursor(yaml_->document()->findBlockByNumber(d.location.line - 1));
      mark.format.setBackground(QColor(0xfd, 0xec, 0xea));
      mark.format.setProperty(QTextFormat::FullWidthSelection, true);
      mark.format.setToolTip(QString::fromStdString(d.message));
      marks << mark;
    }
  }
  if (diagnostics_.empty()) {
    auto* item = new QListWidgetItem("No problems: the scenario loads as dtsim simulate reads it.",
                                     problems_);
    item->setForeground(QColor(0x2e, 0x7d, 0x32));
  }
  yaml_->setExtraSelections(marks);
  form_->set_errors(by_key);
}

void ScenarioEditor::undo() {
  yaml_->undo();
  refresh();
}

void ScenarioEditor::redo() {
  yaml_->redo();
  refresh();
}

QStringList ScenarioEditor::recent_files() {
  return QSettings().value(kRecentKey).toStringList();
}

void ScenarioEditor::remember_recent(const QString& path) {
  QStringList files = recent_files();
  const QString absolute = QFileInfo(path).absoluteFilePath();
  files.removeAll(absolute);
  files.prepend(absolute);
  while (files.size() > kMaxRecentFiles) files.removeLast();
  QSettings().setValue(kRecentKey, files);
}

}  // namespace dtsim::gui
