#include "core/base/input_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "core/base/error.h"
#include "core/base/text.h"
#include "core/base/units.h"

namespace dtsim {
namespace {

// The operating system's reason for the last failed call ("Permission denied").
std::string os_reason() {
  return std::strerror(errno);
}

std::mutex g_read_mutex;
std::vector<std::string> g_read;  // files_read(), in the order first read

void note_read(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(path, ec), ec);
  if (ec) return;
  const std::lock_guard<std::mutex> lock(g_read_mutex);
  for (const auto& r : g_read)
    if (r == p.string()) return;
  g_read.push_back(p.string());
}

}  // namespace

std::vector<std::string> files_read() {
  const std::lock_guard<std::mutex> lock(g_read_mutex);
  return g_read;
}

std::string read_input_file(const std::string& path, const InputFileRules& rules) {
  const SourceLocation whole{path, 0, 0};
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(
        Diagnostic{whole, "", "is a directory, not a " + rules.noun + rules.directory_tip});
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    throw InputError(Diagnostic{whole, "",
                                "is not a regular file (a device, pipe or socket); give the path "
                                "of " +
                                    rules.path_tip});
  const auto too_large = [&] {
    return InputError(Diagnostic{whole, "",
                                 "the file is larger than " +
                                     format_bytes(Bytes(static_cast<double>(rules.max_bytes))) +
                                     "; " + rules.typical_size + " (is this the right file?)"});
  };
  // A regular file's size, known before reading it (the read below bounds one that grows).
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > rules.max_bytes)
    throw too_large();
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError(Diagnostic{whole, "", "cannot open the " + rules.noun + ": " + os_reason()});
  note_read(path);
  // In pieces, so that memory follows the file's size rather than the limit, up to one byte past
  // the limit.
  std::string bytes;
  constexpr std::uintmax_t kPiece = 1u << 20;
  while (in && bytes.size() <= rules.max_bytes) {
    const size_t old = bytes.size();
    const size_t want = static_cast<size_t>(std::min(kPiece, rules.max_bytes + 1 - old));
    bytes.resize(old + want);
    in.read(bytes.data() + old, static_cast<std::streamsize>(want));
    bytes.resize(old + static_cast<size_t>(in.gcount()));
  }
  if (in.bad())
    throw InputError(Diagnostic{whole, "", "cannot read the " + rules.noun + ": " + os_reason()});
  if (bytes.size() > rules.max_bytes) throw too_large();
  return bytes;
}

void check_yaml_text(const std::string& bytes, const std::string& file, const std::string& what,
                     const std::string& save_as) {
  if (bytes.find('\0') != std::string::npos)
    throw InputError(
        Diagnostic{SourceLocation{file, 0, 0}, "", "this is a binary file, not a " + what});
  if (auto bad = first_invalid_utf8(bytes)) {
    const TextPosition at = position_of(bytes, *bad);
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(bytes[*bad]));
    throw InputError(Diagnostic{SourceLocation{file, at.line, at.column}, "",
                                std::string("byte ") + byte + " is not UTF-8 text; save the " +
                                    save_as +
                                    " as UTF-8 (it looks like another encoding, such as "
                                    "Latin-1)"});
  }
}

}  // namespace dtsim
