// A validated value of a scenario key and where it came from: what the loader keeps of every key
// (Scenario::entries), for reports and for diagnostics that point at the file's line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/base/error.h"
#include "core/base/units.h"

namespace dtsim {

struct SchemaNode;  // core/scenario/schema.h: the key's declaration

// A validated scalar. kCountOrAuto and kNumberOrAuto store "auto" as the string; kFreeform stores
// the YAML text ("" when empty or null); kNameOrMap given as a name stores the name; kMoney
// stores its text (parse_money reads it).
using Value = std::variant<bool, int64_t, double, std::string, Bytes, BytesPerSecond, Seconds,
                           FlopsPerSecond, Watts, std::vector<int64_t>>;

struct Entry {
  Value value;
  SourceLocation where;
  const SchemaNode* schema = nullptr;
};

// Dotted path ("cluster.network.latency") to value.
using EntryMap = std::map<std::string, Entry>;

}  // namespace dtsim
