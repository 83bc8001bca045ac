// Reading a scenario file's bytes with the checks every front end applies (a regular file, at
// most kMaxScenarioBytes, UTF-8 text checked by the loader), for a front end that shows the text
// before loading it: the GUI's editor. Problems are an InputError naming the file.
#pragma once

#include <string>

namespace dtsim {

std::string read_scenario_file(const std::string& path);

}  // namespace dtsim
