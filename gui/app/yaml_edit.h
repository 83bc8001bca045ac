// Edits of a scenario's YAML text, key by key, for the GUI editor's form: the form sets one key
// and the text view keeps the user's comments, order and layout everywhere else.
//
// Contract:
// - yaml_entries() reads every key of a YAML text into a flat map from dotted key path
//   ("cluster.network.topology") to its value: scalars as written (unquoted), lists and maps as
//   one-line flow YAML. It throws YamlEditError when the text is not YAML.
// - set_yaml_value() returns the text with one key set, or removed when `value` is empty. A scalar
//   on one line is replaced where it stands; a missing key is inserted under its nearest existing
//   block map, at that map's indentation, creating the sections between. Where the text's shape
//   allows no local edit (a block scalar, a multi-line value, a flow map holding the key), the
//   whole document is emitted again by yaml-cpp, which drops comments there.
// - `value` is a scalar unless `raw_yaml`: a scalar is quoted when YAML would read it otherwise
//   (a colon-space, a leading '[', "#"); raw YAML (a list, a flow map) is written as given.
// - Qt-free and pure: no state, any thread.
#pragma once

#include <map>
#include <stdexcept>
#include <string>

namespace dtsim::gui {

class YamlEditError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct YamlEntry {
  std::string text;    // a scalar as written, without quotes; a list or map as flow YAML
  bool scalar = true;  // false for lists and maps
  int line = 0;        // 1-based line of the key
};

std::map<std::string, YamlEntry> yaml_entries(const std::string& yaml_text);

std::string set_yaml_value(const std::string& yaml_text, const std::string& key_path,
                           const std::string& value, bool raw_yaml = false);

// `value` as YAML would read it back as the same string: plain where it can be, else quoted.
std::string yaml_scalar(const std::string& value);

}  // namespace dtsim::gui
