// A small schema language for YAML configuration, and the validator that checks a YAML tree
// against it.
//
// Contract:
// - A Schema is a tree of SchemaNodes (maps with named children, and typed scalars). The
//   scenario format (core/scenario/scenario_schema.cc) is one such tree; docs/scenario-reference.md
//   is rendered from it, so documentation and parser cannot drift apart.
// - validate() walks a YAML document and reports every problem in one pass (unknown keys with a
//   "did you mean", wrong types, values without units, out-of-range numbers, features that are
//   not supported yet). It returns a flat map from dotted key path to a typed, located value.
// - Values are parsed with the one unit parser in core/base/units.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/base/enum_table.h"
#include "core/base/error.h"
#include "core/base/text.h"  // did_you_mean, for the schema's users
#include "core/base/units.h"
#include "core/config/entry.h"

namespace YAML {
class Node;
}

namespace dtsim {

enum class ValueType {
  kMap,           // a mapping with fixed, named children
  kString,        // free text
  kEnum,          // one of a fixed list of words
  kCount,         // a whole number within [min, max]
  kCountOrAuto,   // a whole number, or the word "auto"
  kNumber,        // a real number within [min, max]
  kNumberOrAuto,  // a real number within [min, max], or the word "auto"
  kBool,          // true or false
  kBytes,         // a size with a byte unit
  kBandwidth,     // bits/s or bytes/s
  kDuration,      // a time with a unit
  kFlopRate,      // FLOP/s
  kPower,         // W, kW, MW
  kMoney,         // an amount and a currency code ("2.49 USD"), kept as its text
  kCountList,     // a list of whole numbers
  kFreeform,      // a list or map kept as YAML text, for features defined by later work
  kNameOrMap,     // a catalog name (choices) or an inline map (children)
};
// The type names `dtsim catalog keys --json` prints.
inline constexpr auto kValueTypeNames =
    make_enum_table<ValueType>({{ValueType::kMap, "map"},
                                {ValueType::kString, "string"},
                                {ValueType::kEnum, "enum"},
                                {ValueType::kCount, "count"},
                                {ValueType::kCountOrAuto, "count-or-auto"},
                                {ValueType::kNumber, "number"},
                                {ValueType::kNumberOrAuto, "number-or-auto"},
                                {ValueType::kBool, "bool"},
                                {ValueType::kBytes, "bytes"},
                                {ValueType::kBandwidth, "bandwidth"},
                                {ValueType::kDuration, "duration"},
                                {ValueType::kFlopRate, "flop-rate"},
                                {ValueType::kPower, "power"},
                                {ValueType::kMoney, "money"},
                                {ValueType::kCountList, "count-list"},
                                {ValueType::kFreeform, "freeform"},
                                {ValueType::kNameOrMap, "name-or-map"}});

struct SchemaNode {
  std::string key;
  ValueType type = ValueType::kString;
  std::string doc;           // one sentence for the reference, with units
  std::string default_text;  // as a user would write it; "" = no default (required or optional)
  std::vector<std::string> choices;                   // kEnum; documented names for kNameOrMap
  std::function<std::vector<std::string>()> catalog;  // extra valid names for kNameOrMap
  double min = 0;                    // inclusive lower bound for numbers and counts (and >0 sizes)
  double max = 1e18;                 // inclusive upper bound, unless max_exclusive
  bool max_exclusive = false;        // a share of a rate in [0, 1): the value must be below max
  bool positive = false;             // sizes, rates and durations must be > 0
  std::vector<SchemaNode> children;  // kMap and kNameOrMap
  // Other spellings users bring from other tools (Megatron-LM's tensor_model_parallel_size for
  // tensor). A file or --set may use either; giving both in one map is an error.
  std::vector<std::string> aliases;
  // Returns a reason when a syntactically valid value asks for a feature that is not built yet.
  std::function<std::optional<std::string>(const Value&)> unsupported;

  // The child named `name` or spelt `name` through an alias; nullptr when none.
  const SchemaNode* child(const std::string& name) const;
  // Every valid word: `choices`, then the names `catalog` supplies now (read at each call, so
  // that names registered at run time, such as engines, are included).
  std::vector<std::string> all_choices() const;
};

// Validates `node` (the document root, or the value of one --set override) against `schema`
// at `path`, adding values to `out` and problems to `sink`. `file` names the source in
// diagnostics; `fixed_location`, when known, replaces YAML marks (for --set overrides).
void validate(const YAML::Node& node, const SchemaNode& schema, const std::string& path,
              const std::string& file, const SourceLocation& fixed_location, EntryMap& out,
              DiagnosticSink& sink);

// The node at a dotted path, or nullptr. Descends through kMap and kNameOrMap children; any
// segment may be an alias.
const SchemaNode* find_schema_node(const SchemaNode& root, const std::string& path);

// The path with every alias replaced by its key ("parallelism.tp" -> "parallelism.tensor"); the
// path unchanged when a segment is unknown.
std::string canonical_path(const SchemaNode& root, const std::string& path);

// A human phrase for what a type expects ("a whole number", "a size such as 80GiB").
std::string describe(const SchemaNode& node);

// The node's default_text as a value of its type, parsed by the same rules as the input
// ("25MiB" is Bytes, "8" a count); nullopt when it is absent or prose that does not parse as the
// type ("from preset" for a bandwidth). Words (strings, enums, catalog names) are returned as
// written, so a text key whose default is prose ("the file name") is not read through this.
std::optional<Value> default_value(const SchemaNode& node);

// Builders for schema trees (core/scenario/scenario_schema.cc, models/model_schema.cc).
namespace schema {
SchemaNode leaf(std::string key, ValueType type, std::string doc, std::string default_text = "");
// A whole number within [min, max].
SchemaNode count(std::string key, std::string doc, std::string default_text, double min,
                 double max);
// One of `choices`; an enum's choices come from its name table (core/base/enum_table.h).
SchemaNode choice(std::string key, std::vector<std::string> choices, std::string doc,
                  std::string default_text);
SchemaNode section(std::string key, std::string doc, std::vector<SchemaNode> children);
// Greater than zero and at most `max`.
SchemaNode positive(SchemaNode node, double max);
// Greater than zero and within [min, max], in base units: the physical range of a rate, size or
// efficiency, so that no figure a user types can make a time infinite or zero.
SchemaNode physical(SchemaNode node, double min, double max);
// At most `max` (zero allowed): latencies and overheads.
SchemaNode at_most(SchemaNode node, double max);
// At least 0 and below `max`: a share that must leave something (a link fraction in [0, 1)).
SchemaNode below(SchemaNode node, double max);
// Other spellings of the node's key (SchemaNode::aliases).
SchemaNode with_aliases(SchemaNode node, std::vector<std::string> aliases);
}  // namespace schema

}  // namespace dtsim
