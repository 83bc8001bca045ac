// Markdown tables of the hardware catalog, for docs/hardware.md.
//
// Contract:
// - docs/hardware.md is the output of `dtsim catalog hardware --markdown`, i.e. of
//   render_hardware_catalog_markdown(); a test compares the two so the document cannot drift from
//   the catalog in core/hardware/catalog.cc.
// - Output is deterministic: catalog order, fixed number formatting, no dates or locale.
// - Every numeric column header carries its unit (TFLOP/s, GiB, GB/s, Gb/s, us); bandwidths are
//   decimal and per direction, memory capacities binary (GiB), as in core/hardware/catalog.h.
// Thread safety: the functions are pure.
#pragma once

#include <string>

namespace dtsim {

// One "## GPUs" section: peaks and memory, then the efficiency model parameters.
std::string render_gpu_catalog_markdown();
// One "## Intra-node fabrics" section.
std::string render_fabric_catalog_markdown();
// One "## Networks" section.
std::string render_network_catalog_markdown();
// "## Describing rack-scale, AMD and PCIe systems": how a scenario describes a GB200 NVL72 rack,
// an MI355X platform and PCIe boards, what the model approximates, and example commands.
std::string render_system_notes_markdown();
// "# Hardware catalog", an introductory paragraph, then the four sections above.
std::string render_hardware_catalog_markdown();

}  // namespace dtsim
