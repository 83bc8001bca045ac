// Scratch folders for tests.
//
// The rule: a test writes only into a scratch folder of its own, and removes it when it ends.
// Never a fixed name in the system temp folder, nor a file in the source or build tree (nor
// "/tmp/..." spelt out: TMPDIR may name another folder). So ctest leaves nothing behind in the
// temp folder, and two ctest runs at once (two clones) never write the same file. The ctests
// temp_snapshot and temp_leftovers (tests/support/temp_leftovers.py) check the first part.
// Python tests follow the same rule with
//   tempfile.TemporaryDirectory(prefix=f"dtsim-test-NAME-{os.getpid()}-")
// and run dtsim with that folder as its working directory when it writes relative paths.
//
// A folder is <temp>/dtsim-test-<name>-<pid>-XXXXXX, where <temp> is
// std::filesystem::temp_directory_path() (TMPDIR when set) and <pid> the creating process: the
// leftover check skips the folders of processes that still run (another ctest run's tests).
#pragma once

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace dtsim::testing {

// A unique folder: the constructor creates it (mkdtemp), the destructor removes it with all it
// holds. Only the process that created it removes it, so that a forked child that exits
// normally does not remove its parent's folder.
class ScratchDir {
 public:
  // `name` (letters, digits, '-' and '_') says which test the folder belongs to.
  explicit ScratchDir(const std::string& name) : owner_(::getpid()) {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           ("dtsim-test-" + name + "-" + std::to_string(owner_) + "-XXXXXX"))
                              .string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      const int err = errno;
      throw std::system_error(err, std::generic_category(), "mkdtemp " + pattern);
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    if (::getpid() != owner_) return;
    std::error_code ec;  // never throws; a folder that cannot be removed is for the check to report
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The path of `name` in the folder (nothing is created).
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  pid_t owner_;
  std::filesystem::path path_;
};

// The scratch folder of this process, created on first use and removed when the process exits
// normally. gtest_discover_tests runs each test in its own process, so under ctest it is the
// test's own; a test that needs a fresh folder (or runs several times in one process) makes a
// ScratchDir of its own instead.
inline const ScratchDir& scratch_dir() {
  static const ScratchDir dir([] {
    // The program's name (/proc/self/comm) tells whose folder it is.
    std::ifstream comm("/proc/self/comm");
    std::string name;
    std::getline(comm, name);
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    return name.empty() ? std::string("process") : name;
  }());
  return dir;
}

}  // namespace dtsim::testing
