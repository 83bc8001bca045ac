// Reading a YAML input file (a scenario, a hardware profile) the one way every loader does:
// a regular file, bounded in size, UTF-8 text. Each problem is an InputError naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim {

struct InputFileRules {
  std::string noun;           // "scenario file", "profile"
  std::string directory_tip;  // appended to "is a directory, not a NOUN" (may be empty)
  std::string path_tip;       // "give the path of PATH_TIP" for a device, pipe or socket
  std::string typical_size;   // "a scenario is a few kilobytes of YAML"
  std::uintmax_t max_bytes = 16u << 20;
};

// The file's bytes, at most rules.max_bytes (read one byte past the limit, so that a file that
// grows while read is bounded too).
std::string read_input_file(const std::string& path, const InputFileRules& rules);

// Every file read_input_file() has read in this process, as absolute paths with symbolic links
// followed (thread-safe). Outputs are checked against it (driver/output_file.h), so that a run
// never writes over a file it read: a scenario, a profile, a background scenario.
std::vector<std::string> files_read();

// YAML is UTF-8 text (YAML 1.2, section 5.2): a NUL byte means a binary file, any other
// ill-formed byte a file saved in another encoding, named where it is. `what`: "YAML scenario".
void check_yaml_text(const std::string& bytes, const std::string& file, const std::string& what,
                     const std::string& save_as);

}  // namespace dtsim
