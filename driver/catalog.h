// `dtsim catalog ... --json`: the built-in GPUs, fabrics, networks, model presets, engines and
// scenario keys as JSON, for scripts and the GUI.
//
// Contract:
// - Every quantity's key names its unit: `memory_bytes`, `memory_bandwidth_Bps`,
//   `peak_flops_per_s: {bf16: ...}`, `latency_s`; values are in those base units. Fractions
//   (efficiencies) and counts carry no unit. Each hardware entry keeps its `source`.
// - One field table per hardware kind renders an entry and pairs each JSON key with the scenario
//   key an inline spec writes it under (`memory_bytes` -> `memory`). inline_spec_yaml() reads the
//   same table, so a catalog entry turned into an inline spec loads back to the same figures
//   (tests/app/catalog_test.cc checks every entry).
// - scenario_keys_json() is the schema tree: each key's path, type, doc, default, choices and
//   bounds.
// Thread safety: pure functions over static catalogs; engines are read from the registry.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/hardware/catalog.h"

namespace dtsim::driver {

// One object per entry, in catalog order.
nlohmann::json gpu_catalog_json();
nlohmann::json fabric_catalog_json();
nlohmann::json network_catalog_json();
// {gpus, fabrics, networks}.
nlohmann::json hardware_catalog_json();
// Each preset's resolved architecture (the fields of the scenario's `model` keys) and its
// parameter count.
nlohmann::json model_catalog_json();
// The registered engines: name and description.
nlohmann::json engine_catalog_json();
// The scenario schema: {"keys": [node, ...]}, each node with `children` when it has any.
nlohmann::json scenario_keys_json();

// One entry as the arrays above hold it.
nlohmann::json to_json(const GpuSpec& gpu);
nlohmann::json to_json(const IntraNodeFabricSpec& fabric);
nlohmann::json to_json(const NetworkSpec& network);

// The hardware a catalog entry describes, and the scenario key its inline spec goes under:
// cluster.gpu, cluster.intra_node, cluster.network.
enum class HardwareKind { kGpu, kFabric, kNetwork };

// The JSON keys of `kind` that an inline spec can set (the rest, such as `source`, are the
// catalog's own).
std::vector<std::string> inline_fields(HardwareKind kind);

// A catalog entry (as to_json prints it) as an inline YAML flow map under the scenario key for
// `kind`, with units on every quantity: {name: "H100-SXM", memory: 85899345920B, ...}. A network
// is written as overrides without a preset (an inline network has no name of its own).
std::string inline_spec_yaml(HardwareKind kind, const nlohmann::json& entry);

// `dtsim catalog engines`: one line per registered engine.
std::string render_engine_catalog();

}  // namespace dtsim::driver
