#include "gui/app/scenario_form.h"

#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QVBoxLayout>

#include "driver/catalog.h"

namespace dtsim::gui {
namespace {

QString str(const nlohmann::json& node, const char* key) {
  if (!node.contains(key)) return {};
  const auto& v = node.at(key);
  return v.is_string() ? QString::fromStdString(v.get<std::string>())
                       : QString::fromStdString(v.dump());
}

QString last_part(const QString& path) {
  return path.section('.', -1);
}

// The form's tab for a top-level key.
QString section_of(const QString& key) {
  if (key == "name" || key == "description") return "General";
  if (key == "cluster") return "Cluster";
  if (key == "model") return "Model";
  if (key == "parallelism") return "Parallelism";
  if (key == "training") return "Training";
  if (key == "stragglers" || key == "failures" || key == "checkpoint")
    return "Failures";  // stragglers, failures and checkpoints (the tab's tooltip)
  if (key == "simulate") return "Simulate";
  return "Other";
}

const QString kErrorStyle = "border: 1px solid #c62828; background: #fdecea;";

}  // namespace

FieldEditor::FieldEditor(const nlohmann::json& node, const QStringList& extra_choices,
                         QWidget* parent)
    : QWidget(parent), path_(str(node, "key")) {
  const QString type = str(node, "type");
  const QString doc = str(node, "doc");
  const QString def = str(node, "default");
  QString hint = str(node, "description");
  if (hint == "text") hint = str(node, "doc");  // free text: its doc says more than its type
  QStringList choices;
  if (node.contains("choices"))
    for (const auto& c : node.at("choices"))
      choices << QString::fromStdString(c.get<std::string>());
  choices << extra_choices;
  choices.removeDuplicates();
  raw_yaml_ = type == "freeform" || type == "count-list";

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  const QString tip = path_ + ": " + doc + (def.isEmpty() ? "" : "\ndefault: " + def);
  if (type == "enum" || type == "bool") {
    combo_ = new QComboBox(this);
    combo_->addItem(def.isEmpty() ? "(not set)" : "(default: " + def + ")", QString());
    if (type == "bool") choices = QStringList{"true", "false"};
    for (const auto& c : choices) combo_->addItem(c, c);
    connect(combo_, &QComboBox::activated, this, [this](int) { commit(); });
    combo_->setToolTip(tip);
    layout->addWidget(combo_);
  } else if (type == "name-or-map" || !choices.isEmpty()) {
    editable_combo_ = true;
    combo_ = new QComboBox(this);
    combo_->setEditable(true);
    combo_->setInsertPolicy(QComboBox::NoInsert);
    combo_->addItems(choices);
    placeholder_ = def.isEmpty() ? hint : "default: " + def;
    combo_->lineEdit()->setPlaceholderText(placeholder_);
    combo_->setCurrentIndex(-1);
    connect(combo_, &QComboBox::activated, this, [this](int) { commit(); });
    connect(combo_->lineEdit(), &QLineEdit::editingFinished, this, [this] { commit(); });
    combo_->setToolTip(tip + "\nPick a catalog name or type one.");
    layout->addWidget(combo_);
  } else {
    line_ = new QLineEdit(this);
    placeholder_ = def.isEmpty() ? hint : "default: " + def;
    line_->setPlaceholderText(placeholder_);
    line_->setToolTip(tip + (hint.isEmpty() ? "" : "\n" + hint));
    connect(line_, &QLineEdit::editingFinished, this, [this] { commit(); });
    layout->addWidget(line_);
  }
  error_ = new QLabel(this);
  error_->setWordWrap(true);
  error_->setStyleSheet("color: #c62828;");
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  layout->addWidget(error_);
}

QWidget* FieldEditor::input() const {
  return line_ ? static_cast<QWidget*>(line_) : static_cast<QWidget*>(combo_);
}

QString FieldEditor::value() const {
  if (line_) return line_->text().trimmed();
  if (editable_combo_) return combo_->currentText().trimmed();
  return combo_->currentData().toString();
}

void FieldEditor::set_value(const QString& text, bool present, bool collection) {
  committed_ = present && !collection ? text : QString();
  if (line_) {
    line_->setText(present ? text : QString());
  } else if (editable_combo_) {
    combo_->lineEdit()->setPlaceholderText(collection ? "an inline spec (below)" : placeholder_);
    combo_->setEditText(present && !collection ? text : QString());
  } else {
    const int i = present ? combo_->findData(text) : 0;
    if (i >= 0) {
      combo_->setCurrentIndex(i);
    } else {  // a value the schema does not know: show it, so the error beside it makes sense
      combo_->addItem(text, text);
      combo_->setCurrentIndex(combo_->count() - 1);
    }
  }
  if (raw_yaml_ && line_) committed_ = line_->text();
}

void FieldEditor::edit(const QString& text) {
  if (line_) {
    line_->setText(text);
  } else if (editable_combo_) {
    combo_->setEditText(text);
  } else {
    int i = text.isEmpty() ? 0 : combo_->findData(text);
    if (i < 0) {
      combo_->addItem(text, text);
      i = combo_->count() - 1;
    }
    combo_->setCurrentIndex(i);
  }
  commit();
}

void FieldEditor::commit() {
  const QString v = value();
  if (v == committed_) return;
  committed_ = v;
  emit edited(path_, v, raw_yaml_);
}

void FieldEditor::set_error(const QString& message) {
  error_->setText(message);
  error_->setVisible(!message.isEmpty());
  input()->setStyleSheet(message.isEmpty() ? QString() : kErrorStyle);
}

QString FieldEditor::error() const {
  return error_->text();
}

ScenarioForm::ScenarioForm(QWidget* parent) : QTabWidget(parent) {
  for (const auto& m : driver::model_catalog_json())
    model_presets_ << QString::fromStdString(m.at("name").get<std::string>());
  const nlohmann::json keys = driver::scenario_keys_json().at("keys");
  std::map<QString, QFormLayout*> tabs;
  std::map<QString, QScrollArea*> pages;
  const QStringList order{"General",  "Cluster",  "Model",    "Parallelism",
                          "Training", "Failures", "Simulate", "Other"};
  for (const auto& node : keys) {
    const QString section = section_of(str(node, "key"));
    if (!tabs.count(section)) {
      auto* scroll = new QScrollArea(this);
      scroll->setWidgetResizable(true);
      auto* page = new QWidget(scroll);
      auto* form = new QFormLayout(page);
      form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
      scroll->setWidget(page);
      tabs[section] = form;
      pages[section] = scroll;
    }
  }
  for (const auto& name : order)
    if (pages.count(name))
      setTabToolTip(addTab(pages[name], name),
                    name == "Failures" ? "Stragglers, failures and checkpoints" : name);
  // Every section's tab stays in view at a laptop's width: names are elided to fit instead of
  // some tabs hiding behind scroll arrows (the full name is the tab's tooltip).
  setUsesScrollButtons(false);
  setElideMode(Qt::ElideRight);
  for (const auto& node : keys) add_node(node, tabs[section_of(str(node, "key"))]);
}

void ScenarioForm::add_node(const nlohmann::json& node, QFormLayout* layout) {
  const QString path = str(node, "key");
  const QString type = str(node, "type");
  const bool has_children = node.contains("children") && !node.at("children").empty();
  if (type != "map") {
    const QStringList extra = path == "model.preset" ? model_presets_ : QStringList();
    auto* field = new FieldEditor(node, extra, layout->parentWidget());
    fields_[path] = field;
    connect(field, &FieldEditor::edited, this, &ScenarioForm::edited);
    auto* label = new QLabel(last_part(path), layout->parentWidget());
    label->setToolTip(path + ": " + str(node, "doc"));
    layout->addRow(label, field);
    if (type == "name-or-map") name_or_map_ << path;
  }
  if (!has_children) return;
  // A map's keys go in a box of their own; a catalog name's inline spec is one too.
  QString title = path;
  if (type == "name-or-map") title = path + ": an inline spec instead of a catalog name";
  if (!path.contains('.') && type == "map") {
    for (const auto& child : node.at("children")) add_node(child, layout);
    return;
  }
  auto* box = new QGroupBox(title, layout->parentWidget());
  box->setToolTip(str(node, "doc"));
  auto* box_layout = new QVBoxLayout(box);
  auto* contents = new QWidget(box);
  box_layout->addWidget(contents);
  auto* inner = new QFormLayout(contents);
  inner->setContentsMargins(0, 0, 0, 0);
  inner->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  for (const auto& child : node.at("children")) add_node(child, inner);
  if (type == "name-or-map") {
    // Folded until wanted: most scenarios name a catalog entry and never write an inline spec.
    box->setCheckable(true);
    box->setChecked(false);
    contents->hide();
    connect(box, &QGroupBox::toggled, contents, &QWidget::setVisible);
    inline_boxes_[path] = box;
  }
  layout->addRow(box);
}

void ScenarioForm::set_values(const std::map<std::string, YamlEntry>& entries) {
  for (auto& [path, box] : inline_boxes_) {
    auto it = entries.find(path.toStdString());
    if (it != entries.end() && !it->second.scalar) box->setChecked(true);
  }
  for (auto& [path, field] : fields_) {
    auto it = entries.find(path.toStdString());
    if (it == entries.end()) {
      field->set_value({}, false);
    } else {
      field->set_value(QString::fromStdString(it->second.text), true,
                       !it->second.scalar && !field->raw_yaml());
    }
  }
}

FieldEditor* ScenarioForm::field(const QString& path) const {
  auto it = fields_.find(path);
  return it == fields_.end() ? nullptr : it->second;
}

FieldEditor* ScenarioForm::field_for(const QString& key_path) const {
  QString p = key_path;
  while (!p.isEmpty()) {
    if (auto* f = field(p)) return f;
    // "stragglers[0].slowdown" belongs to the stragglers field.
    const int bracket = p.indexOf('[');
    if (bracket > 0) {
      p = p.left(bracket);
      continue;
    }
    const int dot = p.lastIndexOf('.');
    if (dot < 0) break;
    p = p.left(dot);
  }
  return nullptr;
}

void ScenarioForm::set_errors(const std::multimap<std::string, std::string>& errors) {
  std::map<FieldEditor*, QStringList> shown;
  for (const auto& [path, message] : errors)
    if (auto* f = field_for(QString::fromStdString(path)))
      shown[f] << QString::fromStdString(message);
  for (auto& [path, field] : fields_) {
    auto it = shown.find(field);
    field->set_error(it == shown.end() ? QString() : it->second.join("\n"));
  }
}

}  // namespace dtsim::gui
