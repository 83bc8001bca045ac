// Errors and diagnostics.
//
// Contract (docs/design.md section 6, docs/style.md "Errors"):
// - Bad input (scenario files, --set overrides, flags, infeasible configurations) is reported
//   as one or more Diagnostics, each naming FILE:LINE:COL where a location exists, the key path,
//   what was expected and what was found. The loader collects every problem in a file before
//   throwing one InputError, so users fix them all in one pass. The CLI exits 2 on InputError.
// - Environment and runtime failures derive from Error and exit 1.
// - Programmer errors are assertions; no input may reach them.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace dtsim {

// Where a value came from: a scenario file position (1-based line and column), or a
// command-line override (file is "--set", line is the override's index, column 0).
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;
  bool known() const { return !file.empty(); }
};

struct Diagnostic {
  SourceLocation location;
  std::string key_path;  // e.g. "parallelism.tensor"; empty for whole-file problems
  std::string message;   // "expected ..., found ..." plus a hint where one helps
  // "error: FILE:LINE:COL: key.path: message", with control characters escaped and an
  // overlong echo cut (core/base/text.h printable).
  std::string render() const;
};

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input: exit code 2.
class InputError : public Error {
 public:
  explicit InputError(std::vector<Diagnostic> diagnostics);
  explicit InputError(Diagnostic diagnostic);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
  std::vector<Diagnostic> notes_;
};

// A runtime failure that is not the input's fault (I/O, simulator, device): exit code 1.
class RuntimeError : public Error {
 public:
  using Error::Error;
};

// Collects diagnostics over one pass, then throws them all at once.
class DiagnosticSink {
 public:
  void add(Diagnostic d) { diagnostics_.push_back(std::move(d)); }
  void add(const SourceLocation& loc, std::string key_path, std::string message) {
    diagnostics_.push_back({loc, std::move(key_path), std::move(message)});
  }
  // A remark, not an error: a setting the run accepts but sets aside, or a figure it assumed.
  // Loaders pass notes on to the result (Scenario::notes), where every reader sees them.
  void note(const SourceLocation& loc, std::string key_path, std::string message) {
    notes_.push_back({loc, std::move(key_path), std::move(message)});
  }
  bool empty() const { return diagnostics_.empty(); }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  const std::vector<Diagnostic>& notes() const { return notes_; }
  // Throws InputError holding everything collected, if anything was.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> diagnostics_;
  std::vector<Diagnostic> notes_;
};

}  // namespace dtsim
