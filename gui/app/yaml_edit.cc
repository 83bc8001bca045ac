#include "gui/app/yaml_edit.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <vector>

namespace dtsim::gui {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : path) {
    if (c == '.') {
      parts.push_back(part);
      part.clear();
    } else {
      part += c;
    }
  }
  parts.push_back(part);
  return parts;
}

YAML::Node parse(const std::string& text) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw YamlEditError("the YAML text does not parse: " + e.msg);
  }
}

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << node;
  return out.c_str();
}

void collect(const YAML::Node& map, const std::string& prefix,
             std::map<std::string, YamlEntry>& entries) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const std::string path =
        prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    const YAML::Node& value = it->second;
    YamlEntry entry;
    entry.line = it->first.Mark().line + 1;
    if (value.IsScalar()) {
      entry.text = value.Scalar();
    } else if (value.IsMap() || value.IsSequence()) {
      entry.scalar = false;
      entry.text = flow_text(value);
    }
    entries[path] = entry;
    if (value.IsMap()) collect(value, path, entries);
  }
}

// Where the token starting at `pos` ends (one past its last character): a quoted scalar, a flow
// collection, or a plain scalar (which ends at a comment, the line's end, and in flow context at
// a separator; a key also ends at its colon).
size_t token_end(const std::string& text, size_t pos, bool flow, bool key = false) {
  const size_t n = text.size();
  if (pos >= n) return pos;
  const char c = text[pos];
  if (c == '"') {
    size_t i = pos + 1;
    while (i < n && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
    return std::min(n, i + 1);
  }
  if (c == '\'') {
    size_t i = pos + 1;
    while (i < n) {
      if (text[i] == '\'') {
        if (i + 1 < n && text[i + 1] == '\'') {
          i += 2;
          continue;
        }
        break;
      }
      ++i;
    }
    return std::min(n, i + 1);
  }
  if (c == '[' || c == '{') {
    int depth = 0;
    size_t i = pos;
    while (i < n) {
      const char d = text[i];
      if (d == '"' || d == '\'') {
        i = token_end(text, i, true);
        continue;
      }
      if (d == '[' || d == '{') ++depth;
      if (d == ']' || d == '}') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return n;
  }
  size_t i = pos;
  while (i < n && text[i] != '\n') {
    const char d = text[i];
    if (d == '#' && i > pos && std::isspace(static_cast<unsigned char>(text[i - 1]))) break;
    if (flow && (d == ',' || d == ']' || d == '}')) break;
    if (key && d == ':' && (i + 1 == n || std::isspace(static_cast<unsigned char>(text[i + 1]))))
      break;
    ++i;
  }
  while (i > pos && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
  return i;
}

size_t line_start(const std::string& text, size_t pos) {
  while (pos > 0 && text[pos - 1] != '\n') --pos;
  return pos;
}

size_t line_end(const std::string& text, size_t pos) {  // one past the '\n', or the text's end
  const size_t nl = text.find('\n', pos);
  return nl == std::string::npos ? text.size() : nl + 1;
}

// Column of the first non-blank character of the line at `start`; npos for a blank or comment
// line.
size_t indent_of(const std::string& text, size_t start) {
  size_t i = start;
  while (i < text.size() && text[i] == ' ') ++i;
  if (i >= text.size() || text[i] == '\n' || text[i] == '#' || text[i] == '\r')
    return std::string::npos;
  return i - start;
}

// One past the last line that belongs to the block whose key starts a line at column `column`:
// the following lines indented deeper (blank and comment lines inside count; trailing ones do
// not).
size_t block_end(const std::string& text, size_t key_line_start, size_t column) {
  size_t end = line_end(text, key_line_start);
  size_t pos = end;
  while (pos < text.size()) {
    const size_t indent = indent_of(text, pos);
    if (indent != std::string::npos && indent <= column) break;
    const size_t next = line_end(text, pos);
    if (indent != std::string::npos) end = next;
    pos = next;
  }
  return end;
}

// The whole document emitted again with the key set: the fallback when no local edit fits.
std::string reemit(const YAML::Node& root, const std::vector<std::string>& parts,
                   const std::string& value, bool raw_yaml) {
  YAML::Node doc = root.IsMap() ? YAML::Clone(root) : YAML::Node(YAML::NodeType::Map);
  YAML::Node cur;
  cur.reset(doc);
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!cur[parts[i]].IsMap()) {
      if (value.empty()) return YAML::Dump(doc) + "\n";
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
    }
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  if (value.empty()) {
    cur.remove(parts.back());
  } else if (raw_yaml) {
    cur[parts.back()] = parse(value);
  } else {
    cur[parts.back()] = value;
  }
  return YAML::Dump(doc) + "\n";
}

}  // namespace

std::map<std::string, YamlEntry> yaml_entries(const std::string& yaml_text) {
  const YAML::Node root = parse(yaml_text);
  std::map<std::string, YamlEntry> entries;
  if (root.IsMap()) collect(root, "", entries);
  return entries;
}

std::string yaml_scalar(const std::string& value) {
  if (value.empty()) return "''";
  bool plain = true;
  const std::string special_first = "-?:,[]{}#&*!|>'\"%@`";
  if (special_first.find(value.front()) != std::string::npos || value.front() == ' ' ||
      value.back() == ' ' || value.back() == ':')
    plain = false;
  if (value.find(": ") != std::string::npos || value.find(" #") != std::string::npos) plain = false;
  bool control = false;
  for (char c : value)
    if (static_cast<unsigned char>(c) < 0x20) control = true;
  if (control) {
    std::string out = "\"";
    for (char c : value) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (static_cast<unsigned char>(c) < 0x20) {
        out += ' ';
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  if (plain) return value;
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string set_yaml_value(const std::string& yaml_text, const std::string& key_path,
                           const std::string& value, bool raw_yaml) {
  const std::vector<std::string> parts = split_path(key_path);
  const YAML::Node root = parse(yaml_text);
  if (raw_yaml && !value.empty()) parse(value);  // refuse what is not YAML before any edit
  const std::string token = raw_yaml ? value : yaml_scalar(value);
  if (!root.IsMap() && !root.IsNull()) return reemit(root, parts, value, raw_yaml);

  // The deepest existing node on the path, its parent and its key.
  YAML::Node cur;
  cur.reset(root);
  YAML::Node parent;
  YAML::Mark key_mark;
  size_t depth = 0;
  while (depth < parts.size() && cur.IsMap()) {
    bool found = false;
    for (auto it = cur.begin(); it != cur.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == parts[depth]) {
        key_mark = it->first.Mark();
        parent.reset(cur);
        YAML::Node child = it->second;
        cur.reset(child);
        found = true;
        break;
      }
    }
    if (!found) break;
    ++depth;
  }
  std::string text = yaml_text;

  if (depth == parts.size()) {
    const bool flow_parent = parent.Style() == YAML::EmitterStyle::Flow;
    const size_t key_pos = static_cast<size_t>(key_mark.pos);
    const size_t key_end = token_end(text, key_pos, flow_parent, true);
    size_t colon = key_end;
    while (colon < text.size() && text[colon] == ' ') ++colon;
    if (colon >= text.size() || text[colon] != ':') return reemit(root, parts, value, raw_yaml);
    size_t value_pos = colon + 1;
    while (value_pos < text.size() && text[value_pos] == ' ') ++value_pos;
    const bool value_on_key_line = value_pos < text.size() && text[value_pos] != '\n' &&
                                   text[value_pos] != '#' && text[value_pos] != '\r';
    const bool block_scalar =
        value_on_key_line && (text[value_pos] == '>' || text[value_pos] == '|');
    if (block_scalar) return reemit(root, parts, value, raw_yaml);

    if (value.empty()) {
      // Remove the key's lines when it starts its line in a block map.
      const size_t start = line_start(text, key_pos);
      if (flow_parent || indent_of(text, start) != key_pos - start)
        return reemit(root, parts, value, raw_yaml);
      size_t end = block_end(text, start, key_pos - start);
      if (value_on_key_line && (text[value_pos] == '[' || text[value_pos] == '{' ||
                                text[value_pos] == '"' || text[value_pos] == '\''))
        end = std::max(end, line_end(text, token_end(text, value_pos, false)));
      text.erase(start, end - start);
      return text;
    }

    if (value_on_key_line) {
      const size_t end = token_end(text, value_pos, flow_parent);
      if (cur.IsScalar()) {
        const char first = text[value_pos];
        // A plain scalar that goes on over the next lines is not all on this line.
        if (first != '"' && first != '\'' &&
            text.substr(value_pos, end - value_pos) != cur.Scalar())
          return reemit(root, parts, value, raw_yaml);
      } else if (!cur.IsNull() && cur.Style() != YAML::EmitterStyle::Flow) {
        return reemit(root, parts, value, raw_yaml);
      }
      text.replace(value_pos, end - value_pos, token);
      return text;
    }
    if (flow_parent) return reemit(root, parts, value, raw_yaml);
    // Nothing on the key's line: a null, or a block collection below it, which the new value
    // replaces.
    const size_t start = line_start(text, key_pos);
    const size_t end =
        cur.IsNull() ? line_end(text, key_pos) : block_end(text, start, key_pos - start);
    std::string line = text.substr(start, key_end - start) + ": " + token;
    const size_t comment = text.find('#', colon);
    if (comment != std::string::npos && comment < line_end(text, key_pos))
      line += "  " + text.substr(comment, line_end(text, key_pos) - comment - 1);
    text.replace(start, end - start, line + "\n");
    return text;
  }

  if (value.empty()) return text;  // nothing to remove
  // Insert the missing keys under the deepest existing block map.
  if (!(cur.IsMap() || cur.IsNull()) || (cur.IsMap() && cur.Style() == YAML::EmitterStyle::Flow))
    return reemit(root, parts, value, raw_yaml);
  size_t insert_at = 0;
  size_t indent = 0;
  if (depth == 0) {
    insert_at = text.size();
    if (!text.empty() && text.back() != '\n') {
      text += '\n';
      insert_at = text.size();
    }
    if (cur.IsMap() && cur.size() > 0)
      indent = static_cast<size_t>(cur.begin()->first.Mark().column);
  } else {
    const size_t key_pos = static_cast<size_t>(key_mark.pos);
    const size_t start = line_start(text, key_pos);
    if (indent_of(text, start) != key_pos - start) return reemit(root, parts, value, raw_yaml);
    if (cur.IsNull()) {
      // "key:" alone on its line (or with a comment): the new block goes under it.
      const size_t key_end = token_end(text, key_pos, false, true);
      size_t after = key_end;
      while (after < text.size() && (text[after] == ' ' || text[after] == ':')) ++after;
      if (after < text.size() && text[after] != '\n' && text[after] != '#')
        return reemit(root, parts, value, raw_yaml);  // "key: null" or "key: ~"
      indent = key_pos - start + 2;
    } else {
      indent = static_cast<size_t>(cur.begin()->first.Mark().column);
    }
    insert_at = block_end(text, start, key_pos - start);
    if (insert_at == text.size() && !text.empty() && text.back() != '\n') {
      text += '\n';
      insert_at = text.size();
    }
  }
  std::string block;
  for (size_t j = depth; j < parts.size(); ++j) {
    block += std::string(indent + 2 * (j - depth), ' ') + parts[j] + ":";
    block += j + 1 == parts.size() ? " " + token + "\n" : "\n";
  }
  text.insert(insert_at, block);
  return text;
}

}  // namespace dtsim::gui
