#include "driver/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>

#include "core/base/error.h"
#include "core/base/input_file.h"

namespace dtsim::driver {
namespace {

namespace fs = std::filesystem;

// Temporaries the signal handler removes: fixed storage, since a handler may only call
// async-signal-safe functions (unlink, signal, raise) and must not allocate.
constexpr size_t kMaxTemporaries = 8;
constexpr size_t kMaxPathBytes = 4096;
std::array<std::array<char, kMaxPathBytes>, kMaxTemporaries> g_temporaries{};
volatile std::sig_atomic_t g_handlers_installed = 0;

extern "C" void remove_temporaries_and_die(int sig) {
  for (auto& t : g_temporaries)
    if (t[0] != '\0') ::unlink(t.data());
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_handlers() {
  if (g_handlers_installed) return;
  g_handlers_installed = 1;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;  // e.g. nohup: leave an ignored signal ignored
    struct sigaction sa {};
    sa.sa_handler = remove_temporaries_and_die;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

void register_temporary(const std::string& path) {
  if (path.size() >= kMaxPathBytes) return;  // still removed by the destructor
  for (auto& t : g_temporaries)
    if (t[0] == '\0') {
      std::memcpy(t.data(), path.c_str(), path.size() + 1);
      return;
    }
}

void forget_temporary(const std::string& path) {
  for (auto& t : g_temporaries)
    if (path == t.data()) t[0] = '\0';
}

std::string os_reason(int err) {
  return std::strerror(err);
}

// The file a path names once symbolic links are followed; the path itself when it does not
// exist yet (its directory's links followed).
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path) : p;
}

bool same_file(const fs::path& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec) return true;
  return a == resolved(b);
}

// The file this run read that `target` is, if any (core/base/input_file.h: every scenario,
// profile and background scenario read so far).
std::optional<std::string> read_by_this_run(const fs::path& target) {
  for (const auto& in : files_read())
    if (same_file(target, in)) return in;
  return std::nullopt;
}

std::string destroys_input(const std::string& in) {
  return "it is '" + in +
         "', which this run reads; writing there would destroy it. Give another path";
}

}  // namespace

void refuse_unsafe_output(const std::string& path, const std::string& flag) {
  const fs::path target = resolved(path);
  if (const auto in = read_by_this_run(target))
    throw InputError(
        Diagnostic{SourceLocation{}, flag, "cannot write '" + path + "': " + destroys_input(*in)});
  std::error_code ec;
  const auto status = fs::status(target, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status))
    throw InputError(Diagnostic{
        SourceLocation{}, flag,
        "cannot write '" + path + "': " +
            (fs::is_directory(status) ? "it is a directory"
                                      : "it is not a regular file (a pipe, device or socket)")});
}

OutputFile::OutputFile(const std::string& path, const std::string& flag,
                       const std::vector<std::string>& inputs,
                       const std::vector<const OutputFile*>& others)
    : path_(path), flag_(flag) {
  const auto refuse = [&](const std::string& why) {
    throw InputError(Diagnostic{SourceLocation{}, flag, "cannot write '" + path + "': " + why});
  };
  if (path.empty()) refuse("the path is empty");
  const fs::path target = resolved(path);
  for (const auto& in : inputs)
    if (!in.empty() && same_file(target, in))
      refuse("it is the input '" + in + "'; writing there would destroy it. Give another path");
  if (const auto in = read_by_this_run(target)) refuse(destroys_input(*in));
  for (const OutputFile* o : others)
    if (o && same_file(target, o->target()))
      refuse("it is also the " + o->flag_ + " file; give each output its own path");
  std::error_code ec;
  const auto status = fs::status(target, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status))
    refuse(fs::is_directory(status) ? "it is a directory"
                                    : "it is not a regular file (a pipe, device or socket)");
  target_ = target.string();

  std::string tmp =
      (target.parent_path() / ("." + target.filename().string() + ".dtsim-XXXXXX")).string();
  install_handlers();
  fd_ = ::mkstemp(tmp.data());
  if (fd_ < 0) {
    const int err = errno;
    refuse("cannot create a file in '" + target.parent_path().string() + "': " + os_reason(err));
  }
  temporary_ = tmp;
  register_temporary(temporary_);
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) {
    ::unlink(temporary_.c_str());
    forget_temporary(temporary_);
  }
}

void OutputFile::commit(std::string_view content) {
  const auto fail = [&](const std::string& what, int err) {
    throw RuntimeError("writing " + flag_ + " '" + path_ + "' failed (" + what +
                       "): " + os_reason(err) + "; the file was left as it was");
  };
  // Files read after the constructor's check (a profile or background scenario loaded with the
  // scenario's binding) are checked again before the target is touched.
  if (const auto in = read_by_this_run(fs::path(target_)))
    throw InputError(Diagnostic{SourceLocation{}, flag_,
                                "cannot write '" + path_ + "': " + destroys_input(*in)});
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    const ssize_t w = ::write(fd_, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("write", w < 0 ? errno : EIO);
    p += w;
    left -= static_cast<size_t>(w);
  }
  // mkstemp creates the file 0600; give it the target's mode, or what the umask allows a new file.
  struct stat st {};
  mode_t mode;
  if (::stat(target_.c_str(), &st) == 0) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd_, mode) != 0) fail("chmod", errno);
  if (::fsync(fd_) != 0) fail("fsync", errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close", errno);
  }
  fd_ = -1;
  if (::rename(temporary_.c_str(), target_.c_str()) != 0) fail("rename", errno);
  forget_temporary(temporary_);
  temporary_.clear();
}

}  // namespace dtsim::driver
