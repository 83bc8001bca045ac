// The scenario editor's form: one field per scenario key, generated from the schema tree that
// `dtsim catalog keys --json` prints (driver::scenario_keys_json()), so a key added to the schema
// appears here with its doc, default and choices, and no list of keys is kept in the GUI.
//
// Contract:
// - Sections are tabs: General (name, description), Cluster, Model, Parallelism, Training,
//   Failures (stragglers, failures and checkpoints), Simulate. Enums and booleans are pick-lists
//   whose first entry is the default (the key left out); catalog names (GPUs, intra-node fabrics,
//   networks, model presets) are editable pick-lists; everything else is a line of text, in the
//   scenario's own syntax with units ("80GiB", "400Gbps"), so the loader checks it as it checks
//   a file.
// - A user's edit emits edited(path, value, raw_yaml) once per committed change (Enter, focus
//   leaving the field, a pick); an empty value means "leave the key out". set_values() shows the
//   YAML's values and emits nothing.
// - A catalog name's inline spec (cluster.gpu, cluster.intra_node) is a box folded until it is
//   ticked or the YAML holds a map there.
// - set_errors() shows each loader message at the field of its key (or of the nearest ancestor
//   that has a field), and clears the others.
#pragma once

#include <QString>
#include <QTabWidget>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "gui/app/yaml_edit.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QFormLayout;
class QGroupBox;

namespace dtsim::gui {

class FieldEditor : public QWidget {
  Q_OBJECT

 public:
  // `node`: one schema node as scenario_keys_json() prints it; `extra_choices` are catalog names
  // offered besides the node's own choices.
  FieldEditor(const nlohmann::json& node, const QStringList& extra_choices, QWidget* parent);

  QString path() const { return path_; }
  bool raw_yaml() const { return raw_yaml_; }
  QString value() const;
  // From the YAML text; `present` false shows the default. Emits nothing.
  void set_value(const QString& text, bool present, bool collection = false);
  // As a user would: enter `text` (or pick it) and commit.
  void edit(const QString& text);
  void set_error(const QString& message);
  QString error() const;
  QWidget* input() const;

 signals:
  void edited(const QString& path, const QString& value, bool raw_yaml);

 private:
  void commit();

  QString path_;
  bool raw_yaml_ = false;
  QString committed_;  // the value the YAML holds, so that an unchanged field emits nothing
  QLineEdit* line_ = nullptr;
  QComboBox* combo_ = nullptr;
  bool editable_combo_ = false;
  QString placeholder_;
  QLabel* error_ = nullptr;
};

class ScenarioForm : public QTabWidget {
  Q_OBJECT

 public:
  explicit ScenarioForm(QWidget* parent = nullptr);

  void set_values(const std::map<std::string, YamlEntry>& entries);
  // key path -> message; several messages for one field are joined.
  void set_errors(const std::multimap<std::string, std::string>& errors);
  FieldEditor* field(const QString& path) const;
  // The field that shows a problem with `key_path`: its own, or its nearest ancestor's.
  FieldEditor* field_for(const QString& key_path) const;
  // The schema paths whose values are catalog names that may also be maps (cluster.gpu, ...).
  bool is_name_or_map(const QString& path) const { return name_or_map_.contains(path); }

 signals:
  void edited(const QString& path, const QString& value, bool raw_yaml);

 private:
  void add_node(const nlohmann::json& node, QFormLayout* layout);

  std::map<QString, FieldEditor*> fields_;
  std::map<QString, QGroupBox*> inline_boxes_;
  QStringList name_or_map_;
  QStringList model_presets_;
};

}  // namespace dtsim::gui
