// Output files that are written whole or not at all, and never over an input.
//
// Contract:
// - The constructor checks the path before any work is done, so a bad path costs nothing: it
//   refuses (InputError, naming the flag) a path that is one of the inputs, a file this process
//   has read (core/base/input_file.h's files_read(): a profile or background scenario the
//   scenario names), or another output (also through a symbolic link), an existing path that is not
//   a regular file (a FIFO, a device, a directory), and a directory that a file cannot be created
//   in, with the operating system's reason ("Permission denied").
// - commit() checks files_read() again before writing (inputs read after the constructor), and
//   refuses with the same InputError, the target untouched.
// - The content goes to a temporary file beside the target (".NAME.dtsim-XXXXXX"), which
//   commit() flushes to disk and renames over the target in one step (rename(2) is atomic
//   within a file system). Until then the target keeps its previous content: a failure found
//   late, an engine error, a kill of the simulation process or of dtsim itself leaves it intact.
// - A symbolic link as the target is followed: the file it points to is replaced, the link stays.
// - The temporary is removed when the OutputFile is destroyed uncommitted, and on SIGINT, SIGTERM
//   and SIGHUP (a handler unlinks it, then lets the signal end the process as before). Only
//   SIGKILL, which no process can handle, can leave a temporary behind; the target is intact.
// - Not thread-safe: one front end's outputs, created and committed on one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtsim::driver {

// For outputs that are appended to or written in place rather than through an OutputFile (a
// sweep's rows, a screenshot): throws InputError naming `flag` when `path` is a file this process
// has read as input (files_read()), or exists and is not a regular file (opening a FIFO would
// block, a device would swallow the rows).
void refuse_unsafe_output(const std::string& path, const std::string& flag);

class OutputFile {
 public:
  // `flag` names the option in messages ("--output"); `inputs` are the files this run reads and
  // `others` the outputs already claimed, none of which this path may be.
  OutputFile(const std::string& path, const std::string& flag,
             const std::vector<std::string>& inputs, const std::vector<const OutputFile*>& others);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Writes `content` and renames it over the target; throws RuntimeError (the target unchanged)
  // when the disk refuses, with the operating system's reason.
  void commit(std::string_view content);

  const std::string& path() const { return path_; }      // as the user gave it
  const std::string& target() const { return target_; }  // the file that will be replaced

 private:
  std::string path_, flag_, target_, temporary_;
  int fd_ = -1;
};

}  // namespace dtsim::driver
