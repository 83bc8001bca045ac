#include "core/scenario/schema.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <set>

namespace dtsim {

std::vector<std::string> SchemaNode::all_choices() const {
  std::vector<std::string> names = choices;
  // A catalog name that is also a fixed choice (an intra-node kind that names a fabric too) is
  // listed once.
  if (catalog)
    for (auto& c : catalog())
      if (std::find(names.begin(), names.end(), c) == names.end()) names.push_back(std::move(c));
  return names;
}

const SchemaNode* SchemaNode::child(const std::string& name) const {
  for (const auto& c : children)
    if (c.key == name) return &c;
  for (const auto& c : children)
    if (std::find(c.aliases.begin(), c.aliases.end(), name) != c.aliases.end()) return &c;
  return nullptr;
}

namespace {

// "300B" -> 3e11: a number with one SI suffix, K 1e3, M 1e6, B or G 1e9, T 1e12 (decimal, as
// token and parameter counts are written); nullopt for anything else.
std::optional<double> with_si_suffix(const std::string& text) {
  static const std::regex pattern(R"(^([0-9]+(\.[0-9]+)?)([KMBGT])$)");
  std::smatch m;
  if (!std::regex_match(text, m, pattern)) return std::nullopt;
  const char unit = m[3].str()[0];
  const double scale = unit == 'K' ? 1e3 : unit == 'M' ? 1e6 : unit == 'T' ? 1e12 : 1e9;  // B or G
  return std::stod(m[1].str()) * scale;
}

// A bound in the unit users type, for messages.
std::string describe_amount(Bytes b) {
  return format_bytes(b);
}
std::string describe_amount(BytesPerSecond r) {
  return dtsim::format_number("%g Gbps", r.value() * 8 / 1e9);
}
std::string describe_amount(Seconds t) {
  return format_duration(t);
}
std::string describe_amount(FlopsPerSecond r) {
  return dtsim::format_number("%g GFLOPS", r.value() / 1e9);
}
std::string describe_amount(Watts p) {
  return dtsim::format_number("%g W", p.value());
}

std::string join(const std::vector<std::string>& words, const std::string& sep) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += sep;
    out += w;
  }
  return out;
}

std::string kind_of(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "nothing";
    case YAML::NodeType::Scalar:
      return "'" + n.Scalar() + "'";
    default:
      return "an undefined value";
  }
}

std::string child_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string format_number(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// What a number out of a key's range crossed, for a message whose description of the key does
// not already state that bound (describe() leaves out bounds of 1e17 and beyond).
std::string beyond_bounds(const SchemaNode& s, double v) {
  const std::string said = describe(s);
  auto unless_said = [&](const std::string& what, double bound) {
    const std::string b = format_number(bound);
    return said.find(b) == std::string::npos ? ", " + what + " " + b : std::string();
  };
  if (!std::isfinite(v)) return ", which is not a finite number";
  if (s.positive && v <= 0) return ", which is not greater than 0";
  if (v < s.min) return unless_said("below the smallest value accepted,", s.min);
  if (v > s.max || (s.max_exclusive && v >= s.max))
    return unless_said("beyond the largest value accepted,", s.max);
  return {};
}

struct Validator {
  const std::string& file;
  const SourceLocation& fixed;
  EntryMap& out;
  DiagnosticSink& sink;

  SourceLocation where(const YAML::Node& n) const {
    if (fixed.known()) return fixed;
    auto m = n.Mark();
    if (m.line < 0) return SourceLocation{file, 0, 0};
    return SourceLocation{file, m.line + 1, m.column + 1};
  }

  void error(const YAML::Node& n, const std::string& path, std::string msg) {
    sink.add(where(n), path, std::move(msg));
  }

  // Returns true and stores the value when `n` is a valid scalar of the node's type.
  void scalar(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    if (s.type == ValueType::kFreeform) {
      std::string text;
      if (!n.IsNull() && !((n.IsSequence() || n.IsMap()) && n.size() == 0)) {
        YAML::Emitter e;
        e.SetMapFormat(YAML::Flow);
        e.SetSeqFormat(YAML::Flow);
        e << n;
        text = e.c_str();
      }
      store(n, s, path, text);
      return;
    }
    if (s.type == ValueType::kCountList) {
      if (!n.IsSequence()) {
        error(n, path, "expected " + describe(s) + ", found " + kind_of(n));
        return;
      }
      std::vector<int64_t> values;
      for (size_t i = 0; i < n.size(); ++i) {
        auto v = count(n[i], s, path + "[" + std::to_string(i) + "]");
        if (!v) return;
        values.push_back(*v);
      }
      store(n, s, path, values);
      return;
    }
    if (!n.IsScalar()) {
      error(n, path, "expected " + describe(s) + ", found " + kind_of(n));
      return;
    }
    const std::string& text = n.Scalar();
    switch (s.type) {
      case ValueType::kString:
        store(n, s, path, text);
        return;
      case ValueType::kEnum:
      case ValueType::kNameOrMap: {
        const std::vector<std::string> names = s.all_choices();
        for (const auto& c : names)
          if (c == text) return store(n, s, path, text);
        // Catalog names are matched case-insensitively, as `dtsim catalog` prints them.
        for (const auto& c : names) {
          if (c.size() == text.size() &&
              std::equal(c.begin(), c.end(), text.begin(),
                         [](char a, char b) { return std::tolower(a) == std::tolower(b); }))
            return store(n, s, path, c);
        }
        std::string msg = "expected one of " + join(names, ", ") + ", found '" + text + "'";
        if (auto dym = did_you_mean(text, names); !dym.empty())
          msg += " (did you mean " + dym + "?)";
        if (s.type == ValueType::kNameOrMap) msg += "; an inline map with its fields also works";
        error(n, path, msg);
        return;
      }
      case ValueType::kCount:
        if (auto v = count(n, s, path)) store(n, s, path, *v);
        return;
      case ValueType::kCountOrAuto:
        if (text == "auto") return store(n, s, path, std::string("auto"));
        if (auto v = count(n, s, path)) store(n, s, path, *v);
        return;
      case ValueType::kNumberOrAuto:
      case ValueType::kNumber: {
        if (s.type == ValueType::kNumberOrAuto && text == "auto")
          return store(n, s, path, std::string("auto"));
        double v = 0;
        try {
          v = n.as<double>();
        } catch (const YAML::Exception&) {
          // Large counts take an SI suffix, as people write them: 300B tokens, 1T, 2.5M.
          const auto si = with_si_suffix(text);
          if (!si) {
            error(n, path,
                  "expected " + describe(s) +
                      " (a plain number, or with an SI suffix: K, M, B "
                      "or G, T), found '" +
                      text + "'");
            return;
          }
          v = *si;
        }
        if (!std::isfinite(v) || v < s.min || v > s.max || (s.max_exclusive && v >= s.max) ||
            (s.positive && v <= 0)) {
          error(n, path, "expected " + describe(s) + ", found " + text + beyond_bounds(s, v));
          return;
        }
        store(n, s, path, v);
        return;
      }
      case ValueType::kBool: {
        if (text == "true" || text == "false") return store(n, s, path, text == "true");
        error(n, path, "expected true or false, found '" + text + "'");
        return;
      }
      case ValueType::kBytes:
        return quantity(n, s, path, parse_bytes(text));
      case ValueType::kBandwidth:
        return quantity(n, s, path, parse_bandwidth(text));
      case ValueType::kDuration:
        return quantity(n, s, path, parse_duration(text));
      case ValueType::kFlopRate:
        return quantity(n, s, path, parse_flop_rate(text));
      case ValueType::kPower:
        return quantity(n, s, path, parse_power(text));
      case ValueType::kMoney: {
        const Parsed<Money> price = parse_money(text);
        if (!price) {
          error(n, path, price.error);
          return;
        }
        store(n, s, path, text);
        return;
      }
      default:
        error(n, path, "internal: unexpected schema type");
        return;
    }
  }

  template <class Q>
  void quantity(const YAML::Node& n, const SchemaNode& s, const std::string& path,
                const Parsed<Q>& p) {
    if (!p) {
      error(n, path, p.error);
      return;
    }
    double v = p.value->value();
    if (s.positive && v <= 0) {
      error(n, path, "expected a value greater than zero, found '" + n.Scalar() + "'");
      return;
    }
    if (v > s.max) {
      error(n, path, "'" + n.Scalar() + "' is implausibly large for this key");
      return;
    }
    if (v < s.min) {
      error(n, path,
            "'" + n.Scalar() + "' is below what any real hardware has: expected at least " +
                describe_amount(Q(s.min)));
      return;
    }
    store(n, s, path, *p.value);
  }

  std::optional<int64_t> count(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    if (!n.IsScalar()) {
      error(n, path, "expected " + describe(s) + ", found " + kind_of(n));
      return std::nullopt;
    }
    const std::string& text = n.Scalar();
    double v = 0;
    try {
      v = n.as<double>();
    } catch (const YAML::Exception&) {
      std::string msg = "expected " + describe(s) + ", found '" + text + "'";
      const bool has_unit =
          !text.empty() && std::isdigit(static_cast<unsigned char>(text[0])) &&
          std::any_of(text.begin(), text.end(), [](char ch) {
            return std::isalpha(static_cast<unsigned char>(ch)) && ch != 'e' && ch != 'E';
          });
      if (has_unit) msg += " (counts take no unit)";
      error(n, path, msg);
      return std::nullopt;
    }
    if (std::isnan(v)) {
      error(n, path, "expected " + describe(s) + ", found " + text + ", which is not a number");
      return std::nullopt;
    }
    if (!std::isfinite(v) || std::fabs(v) > 9e15) {
      error(n, path, "expected " + describe(s) + ", found " + text + ", which is far too large");
      return std::nullopt;
    }
    if (v != std::floor(v)) {
      error(n, path, "expected " + describe(s) + ", found " + text + ", which is not whole");
      return std::nullopt;
    }
    if (v < s.min || v > s.max) {
      error(n, path, "expected " + describe(s) + ", found " + text + beyond_bounds(s, v));
      return std::nullopt;
    }
    return static_cast<int64_t>(v);
  }

  void store(const YAML::Node& n, const SchemaNode& s, const std::string& path, Value v) {
    // An unsupported feature is reported, but its value is kept so that cross-key checks
    // (TP divides the heads, GPU counts) can still report their own problems in the same pass.
    if (s.unsupported)
      if (auto why = s.unsupported(v)) error(n, path, "not supported yet: " + *why);
    out[path] = Entry{std::move(v), where(n), &s};
  }

  void map(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    if (n.IsNull()) return;  // an empty section means "all defaults"
    if (!n.IsMap()) {
      error(n, path,
            "expected a map with keys " + join(child_names(s), ", ") + ", found " + kind_of(n));
      return;
    }
    std::map<std::string, std::string> seen;  // key -> the spelling used
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Node key = it->first;  // by value: it->first is a temporary
      if (!key.IsScalar()) {
        error(key, path, "expected a key name, found " + kind_of(key));
        continue;
      }
      const std::string name = key.Scalar();
      const SchemaNode* c = s.child(name);
      const std::string p = child_path(path, c ? c->key : name);
      if (auto [at, fresh] = seen.emplace(c ? c->key : name, name); !fresh) {
        error(key, p,
              at->second == name ? "duplicate key; each key may appear once"
                                 : "'" + name + "' and '" + at->second +
                                       "' are two spellings of the same key; give one");
        continue;
      }
      if (!c) {
        std::string msg = "unknown key '" + name + "'";
        if (auto dym = did_you_mean(name, child_names(s)); !dym.empty())
          msg += "; did you mean '" + dym + "'?";
        else
          msg += "; valid keys here: " + join(child_names(s), ", ");
        error(key, p, msg);
        continue;
      }
      // A key with nothing after it: yaml-cpp marks the empty value at the next token, often on
      // the following line, so point at the key itself.
      if (it->second.IsNull() && c->type != ValueType::kFreeform && c->type != ValueType::kMap) {
        error(key, p,
              "expected " + describe(*c) + ", found nothing (remove the key to use the default" +
                  (c->default_text.empty() ? std::string() : ", " + c->default_text) + ")");
        continue;
      }
      node(it->second, *c, p);
    }
  }

  void node(const YAML::Node& n, const SchemaNode& s, const std::string& path) {
    if (s.type == ValueType::kMap) return map(n, s, path);
    if (s.type == ValueType::kNameOrMap && n.IsMap()) {
      // Mark the inline form so that readers know to look at the children.
      store(n, s, path, std::string());
      return map(n, s, path);
    }
    if (n.IsNull() && s.type != ValueType::kFreeform) {
      error(n, path,
            "expected " + describe(s) + ", found nothing (remove the key to use the default" +
                (s.default_text.empty() ? std::string() : ", " + s.default_text) + ")");
      return;
    }
    scalar(n, s, path);
  }

  static std::vector<std::string> child_names(const SchemaNode& s) {
    std::vector<std::string> names;
    for (const auto& c : s.children) names.push_back(c.key);
    return names;
  }
};

}  // namespace

void validate(const YAML::Node& node, const SchemaNode& schema, const std::string& path,
              const std::string& file, const SourceLocation& fixed_location, EntryMap& out,
              DiagnosticSink& sink) {
  Validator v{file, fixed_location, out, sink};
  v.node(node, schema, path);
}

namespace {

// The node at a dotted path, each segment a key or an alias; with `canonical`, the path spelt
// with keys. nullptr when a segment is unknown.
const SchemaNode* walk(const SchemaNode& root, const std::string& path, std::string* canonical) {
  const SchemaNode* n = &root;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = path.find('.', start);
    n = n->child(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (!n) return nullptr;
    if (canonical) *canonical += (canonical->empty() ? "" : ".") + n->key;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return n;
}

}  // namespace

const SchemaNode* find_schema_node(const SchemaNode& root, const std::string& path) {
  return walk(root, path, nullptr);
}

std::string canonical_path(const SchemaNode& root, const std::string& path) {
  std::string out;
  return walk(root, path, &out) ? out : path;
}

std::string describe(const SchemaNode& s) {
  auto range = [&](const std::string& what) {
    std::string r = what;
    if (s.max_exclusive)
      r += " of at least " + format_number(s.min) + " and less than " + format_number(s.max);
    else if (s.positive && s.min > 0 && s.max < 1e17)
      r += " from " + format_number(s.min) + " to " + format_number(s.max);
    else if (s.positive && s.max < 1e17)
      r += " greater than 0 and at most " + format_number(s.max);
    else if (s.max < 1e17)
      r += " from " + format_number(s.min) + " to " + format_number(s.max);
    else if (s.min > 0)
      r += " of at least " + format_number(s.min);
    return r;
  };
  switch (s.type) {
    case ValueType::kMap:
      return "a map";
    case ValueType::kString:
      return "text";
    case ValueType::kEnum:
      return "one of " + join(s.all_choices(), ", ");
    case ValueType::kCount:
      return range("a whole number");
    case ValueType::kCountOrAuto:
      return range("'auto' or a whole number");
    case ValueType::kNumber:
      return range("a number");
    case ValueType::kNumberOrAuto:
      return range("'auto' or a number");
    case ValueType::kBool:
      return "true or false";
    case ValueType::kBytes:
      return "a size with a byte unit such as 25MiB or 80GB";
    case ValueType::kBandwidth:
      return "a bandwidth such as 400Gbps or 50GBps";
    case ValueType::kDuration:
      return "a duration such as 2us or 30min";
    case ValueType::kFlopRate:
      return "a compute rate such as 312TFLOPS";
    case ValueType::kPower:
      return "a power such as 700W or 10.2kW";
    case ValueType::kMoney:
      return "an amount and a currency code such as 2.49USD";
    case ValueType::kCountList:
      return "a list of whole numbers such as [12, 12, 8]";
    case ValueType::kFreeform:
      return "a list or map";
    case ValueType::kNameOrMap:
      return "a catalog name" +
             (s.choices.empty() ? std::string() : " (" + join(s.choices, ", ") + ", ...)") +
             " or an inline map";
  }
  return "a value";
}

std::optional<Value> default_value(const SchemaNode& node) {
  const std::string& text = node.default_text;
  if (text.empty()) return std::nullopt;
  switch (node.type) {
    case ValueType::kString:
    case ValueType::kEnum:
    case ValueType::kNameOrMap:
      return Value(text);
    case ValueType::kMap:
    case ValueType::kFreeform:
      return std::nullopt;
    default:
      break;
  }
  YAML::Node parsed;
  try {
    parsed = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
  EntryMap values;
  DiagnosticSink problems;
  Validator v{"<default>", SourceLocation{}, values, problems};
  v.node(parsed, node, node.key);
  if (!problems.empty() || values.size() != 1) return std::nullopt;
  return values.begin()->second.value;
}

namespace schema {

SchemaNode leaf(std::string key, ValueType type, std::string doc, std::string default_text) {
  SchemaNode n;
  n.key = std::move(key);
  n.type = type;
  n.doc = std::move(doc);
  n.default_text = std::move(default_text);
  return n;
}

SchemaNode count(std::string key, std::string doc, std::string default_text, double min,
                 double max) {
  SchemaNode n = leaf(std::move(key), ValueType::kCount, std::move(doc), std::move(default_text));
  n.min = min;
  n.max = max;
  return n;
}

SchemaNode choice(std::string key, std::vector<std::string> choices, std::string doc,
                  std::string default_text) {
  SchemaNode n = leaf(std::move(key), ValueType::kEnum, std::move(doc), std::move(default_text));
  n.choices = std::move(choices);
  return n;
}

SchemaNode section(std::string key, std::string doc, std::vector<SchemaNode> children) {
  SchemaNode n = leaf(std::move(key), ValueType::kMap, std::move(doc));
  n.children = std::move(children);
  return n;
}

SchemaNode with_aliases(SchemaNode node, std::vector<std::string> aliases) {
  node.aliases = std::move(aliases);
  return node;
}

SchemaNode physical(SchemaNode node, double min, double max) {
  node.positive = true;
  node.min = min;
  node.max = max;
  return node;
}

SchemaNode at_most(SchemaNode node, double max) {
  node.max = max;
  return node;
}

SchemaNode below(SchemaNode node, double max) {
  node.max = max;
  node.max_exclusive = true;
  return node;
}

SchemaNode positive(SchemaNode node, double max) {
  node.positive = true;
  node.max = max;
  return node;
}

}  // namespace schema
}  // namespace dtsim
