// One required key of a validation manifest (scenarios/validation/published.yaml,
// scenarios/validation/collectives/measured.yaml): a missing key is an error naming where.
#pragma once

#include <yaml-cpp/yaml.h>

#include <stdexcept>
#include <string>

namespace dtsim::validation {

template <typename T>
T manifest_field(const YAML::Node& node, const std::string& key, const std::string& where) {
  if (!node[key]) throw std::runtime_error(where + ": missing key '" + key + "'");
  return node[key].as<T>();
}

}  // namespace dtsim::validation
