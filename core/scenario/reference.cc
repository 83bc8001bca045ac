#include "core/scenario/reference.h"

#include "core/scenario/scenario.h"

namespace dtsim {
namespace {

std::string escape(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

void rows(const SchemaNode& node, const std::string& prefix, std::string& out) {
  for (const auto& c : node.children) {
    const std::string path = prefix.empty() ? c.key : prefix + "." + c.key;
    if (c.type == ValueType::kMap) {
      out += "| `" + path + "` | section | " + escape(c.doc) + " | |\n";
    } else {
      std::string type = describe(c);
      out += "| `" + path + "` | " + escape(type) + " | " + escape(c.doc);
      if (c.unsupported) out += " (some values not supported yet)";
      if (!c.aliases.empty()) {
        out += ". Also spelt";
        for (size_t i = 0; i < c.aliases.size(); ++i)
          out += std::string(i ? "," : "") + " `" + c.aliases[i] + "`";
      }
      out += " | " + escape(c.default_text.empty() ? "-" : "`" + c.default_text + "`") + " |\n";
    }
    if (!c.children.empty()) rows(c, path, out);
  }
}

}  // namespace

std::string render_scenario_reference_markdown() {
  std::string out =
      "# Scenario reference\n\n"
      "Generated from the parser's schema by `dtsim catalog keys --markdown`; a test fails if "
      "this file differs, so it is always the truth. Sizes, rates and times need units: sizes "
      "take B, KB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024); bandwidths take "
      "bits (`400Gbps`, `400Gb/s`) or bytes (`50GBps`, `50GB/s`) per second; times take ns, us, "
      "ms, s, min, h or d; compute rates take FLOPS with an SI prefix (`312TFLOPS`); powers take "
      "W, kW or MW; prices take an amount and a currency code (`2.49USD`). Any key can "
      "be overridden from the command line with `--set key.path=value`.\n\n"
      "| Key | Type | Meaning | Default |\n|---|---|---|---|\n";
  rows(scenario_schema(), "", out);
  return out;
}

}  // namespace dtsim
