#include "core/base/error.h"

#include "core/base/text.h"

namespace dtsim {
namespace {
std::string summarize(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) {
    if (!out.empty()) out += '\n';
    out += d.render();
  }
  return out;
}
}  // namespace

std::string Diagnostic::render() const {
  std::string out = "error: ";
  if (location.known()) {
    out += location.file;
    if (location.line > 0) {
      out += ':' + std::to_string(location.line);
      if (location.column > 0) out += ':' + std::to_string(location.column);
    }
    out += ": ";
  }
  if (!key_path.empty()) out += key_path + ": ";
  out += message;
  // Messages echo what users typed: never a terminal escape sequence or a megabyte of it.
  return printable(out);
}

InputError::InputError(std::vector<Diagnostic> diagnostics)
    : Error(summarize(diagnostics)), diagnostics_(std::move(diagnostics)) {}

InputError::InputError(Diagnostic diagnostic)
    : InputError(std::vector<Diagnostic>{std::move(diagnostic)}) {}

void DiagnosticSink::throw_if_any() const {
  if (!diagnostics_.empty()) throw InputError(diagnostics_);
}

}  // namespace dtsim
