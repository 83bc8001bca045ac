// Runs the bad-input corpus (tests/bad_input; its README.md describes the format) against the
// dtsim binary. Each case runs dtsim as a child process, as a user would, so that a crash, a
// sanitizer report or a hang shows up as what it is rather than taking the test runner down.
//
// For every case: dtsim exits normally (not by a signal) with code 2, prints no sanitizer
// report, prints no results on stdout, and one `error:` line on stderr carries every
// expectation of the case (key path, file and line, extra text).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/scratch_dir.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = DTSIM_BAD_INPUT_DIR;
const fs::path kBaseScenario = kCorpus / "valid" / "base.yaml";

// Generous, so that sanitizer builds on a loaded machine pass; a hang still fails. The slowest
// case, flag_chunk_beyond_limit (a 4096-GPU Program built before chunk fidelity refuses it), took
// 105 s alone in the AddressSanitizer Debug build on a 2-core machine, and over 120 s beside
// another test.
constexpr auto kTimeout = std::chrono::seconds(300);

// The acceptance criterion asks for at least this many cases.
constexpr size_t kMinimumCases = 30;

struct Case {
  std::string name;               // the test name
  std::string source;             // where the case is defined, for failure messages
  std::vector<std::string> args;  // dtsim's arguments (argv[1...])
  std::string command = "simulate";
  // What one `error:` line must hold: `location` (the file, and ":LINE:" when given), then,
  // after it, every string of `expected`. Searching after the location keeps a case file's own
  // name from satisfying its expectations. Flag cases have no location.
  std::string location;
  std::vector<std::string> expected;
  // A malformed case definition: the test fails with this rather than passing vacuously.
  std::string problem;
};

struct Outcome {
  bool exited = false;  // false: killed by a signal (or by the timeout)
  int exit_code = -1;
  int signal = 0;
  bool timed_out = false;
  std::string out, err;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// gtest names allow letters, digits and underscores only.
std::string test_name(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// Reads the `# directive: value` comment lines at the top of a scenario case (or of its
// .expect sidecar, for files that cannot hold comments) and turns them into a Case.
Case scenario_case(const fs::path& file) {
  Case c;
  const std::string file_name = file.filename().string();
  c.name = test_name(file.extension() == ".yaml" ? file.stem().string() : file_name);
  fs::path header = file;
  header += ".expect";
  if (!fs::exists(header)) header = file;
  c.source = header.string();

  std::optional<std::string> key, line, where;
  std::vector<std::string> texts, extra_args;
  for (const auto& raw : lines_of(read_file(header))) {
    if (raw.rfind('#', 0) != 0) break;  // the header ends at the first non-comment line
    const std::string body = trim(raw.substr(1));
    const auto colon = body.find(':');
    const std::string directive = colon == std::string::npos ? "" : body.substr(0, colon);
    const std::string value = colon == std::string::npos ? "" : trim(body.substr(colon + 1));
    if (directive == "expect-key") {
      key = value;
    } else if (directive == "expect-line") {
      if (value.empty() || !std::all_of(value.begin(), value.end(),
                                        [](unsigned char ch) { return std::isdigit(ch); }))
        c.problem = "expect-line needs a line number, found '" + value + "'";
      line = value;
    } else if (directive == "expect-file") {
      where = value;
    } else if (directive == "expect-text") {
      texts.push_back(value);
    } else if (directive == "command") {
      c.command = value;
    } else if (directive == "args") {
      extra_args = split_words(value);
    } else if (directive.rfind("expect", 0) == 0) {
      // A misspelt directive would silently weaken the case.
      c.problem = "unknown directive '" + directive + "'";
    }
  }
  if (!key && texts.empty())
    c.problem = "a case needs expect-key or expect-text (see tests/bad_input/README.md)";

  // The location that must be named: the file as dtsim was given it, then "LINE:" (a column
  // or the message follows); a whole-file error has no line.
  const std::string location = where.value_or(file.string());
  c.location = line ? location + ":" + *line + ":" : location + ":";
  // Rendered as "LOCATION: key.path: message"; the space keeps "cluster.gpu" from matching
  // "cluster.gpu.base".
  if (key) c.expected.push_back(" " + *key + ": ");
  for (auto& t : texts) c.expected.push_back(t);

  c.args = {c.command, file.string()};
  c.args.insert(c.args.end(), extra_args.begin(), extra_args.end());
  return c;
}

// flags.txt: "NAME | ARGS | EXPECTED" per line.
std::vector<Case> flag_cases(const fs::path& file) {
  std::vector<Case> cases;
  int number = 0;
  for (const auto& raw : lines_of(read_file(file))) {
    ++number;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    Case c;
    c.source = file.string() + ":" + std::to_string(number);
    const auto bar1 = line.find('|');
    const auto bar2 = bar1 == std::string::npos ? bar1 : line.find('|', bar1 + 1);
    if (bar2 == std::string::npos) {
      c.name = "flags_line_" + std::to_string(number);
      c.problem = "expected NAME | ARGS | EXPECTED";
      cases.push_back(c);
      continue;
    }
    c.name = "flag_" + test_name(trim(line.substr(0, bar1)));
    std::string args = line.substr(bar1 + 1, bar2 - bar1 - 1);
    args = replace_all(args, "{base}", kBaseScenario.string());
    args = replace_all(args, "{corpus}", kCorpus.string());
    c.args = split_words(args);
    c.command = c.args.empty() ? "" : c.args[0];
    const std::string expected = trim(line.substr(bar2 + 1));
    if (expected.empty()) c.problem = "the expected text is empty";
    c.expected.push_back(expected);
    cases.push_back(c);
  }
  return cases;
}

std::vector<Case> all_cases() {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kCorpus, ec)) {
    const auto ext = entry.path().extension();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".bin")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (const auto& f : files) cases.push_back(scenario_case(f));
  for (auto& c : flag_cases(kCorpus / "flags.txt")) cases.push_back(std::move(c));
  return cases;
}

// Runs dtsim with `args`, stdin from /dev/null, stdout and stderr into files of a scratch folder
// of the run (which "{scratch}" in an argument names, for the outputs a case asks for), and no
// shell in between (so no quoting surprises).
Outcome run_dtsim(const std::vector<std::string>& args) {
  Outcome o;
  const dtsim::testing::ScratchDir dir("bad-input");
  const std::string out_path = dir.file("stdout"), err_path = dir.file("stderr");

  std::vector<std::string> argv_storage = {DTSIM_BINARY};
  for (const auto& a : args)
    argv_storage.push_back(replace_all(a, "{scratch}", dir.path().string()));
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    o.err = std::string("posix_spawn failed: ") + std::strerror(rc);
    return o;
  }

  // Poll rather than block, so that a hang becomes a failure instead of a stuck test run.
  const auto deadline = std::chrono::steady_clock::now() + kTimeout;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      o.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.exited = !o.timed_out && WIFEXITED(status);
  if (o.exited) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
  o.out = read_file(out_path);
  o.err = read_file(err_path);
  return o;
}

std::string command_line(const std::vector<std::string>& args) {
  std::string s = "dtsim";
  for (const auto& a : args) s += " " + a;
  return s;
}

// Everything a failure needs to be diagnosed from the log alone, including a sanitizer report.
std::string describe(const Case& c, const Outcome& o) {
  constexpr size_t kMax = 8000;
  auto clip = [](const std::string& s) {
    return s.size() > kMax ? s.substr(0, kMax) + "\n[... clipped]" : s;
  };
  std::string status = o.timed_out ? "killed after the timeout"
                       : o.exited  ? "exit code " + std::to_string(o.exit_code)
                                   : "killed by signal " + std::to_string(o.signal) + " (" +
                                        strsignal(o.signal) + ")";
  std::string expected = c.location.empty() ? "" : "\n  location '" + c.location + "', then";
  for (const auto& e : c.expected) expected += "\n  '" + e + "'";
  return "case: " + c.source + "\nrun: " + command_line(c.args) + "\nstatus: " + status +
         "\nexpected on one error: line:" + expected + "\n--- stderr ---\n" + clip(o.err) +
         "--- stdout ---\n" + clip(o.out);
}

// Names the case in gtest's output instead of dumping its bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.source;
}

class BadInputTest : public ::testing::TestWithParam<Case> {};

TEST_P(BadInputTest, ExitsTwoWithALocatedError) {
  const Case& c = GetParam();
  ASSERT_TRUE(c.problem.empty()) << c.source << ": malformed case: " << c.problem;
  const Outcome o = run_dtsim(c.args);
  const std::string why = describe(c, o);

  ASSERT_FALSE(o.timed_out) << why;
  ASSERT_TRUE(o.exited) << "dtsim crashed\n" << why;
  // UBSan built with recovery keeps going and may still exit 2; its report is still a bug.
  for (const char* report : {"runtime error:", "AddressSanitizer", "LeakSanitizer"})
    EXPECT_EQ(o.err.find(report), std::string::npos) << "sanitizer report\n" << why;
  EXPECT_EQ(o.exit_code, 2) << why;

  // Results go to stdout, so bad input must leave it empty. validate prints its checks as it
  // goes and fails at the memory check; it must not reach its verdict.
  if (c.command == "validate")
    EXPECT_EQ(o.out.find("can run"), std::string::npos) << "validate printed a verdict\n" << why;
  else
    EXPECT_TRUE(o.out.empty()) << "bad input printed to stdout\n" << why;

  bool found = false;
  for (const auto& line : lines_of(o.err)) {
    if (line.rfind("error:", 0) != 0) continue;
    const auto at = line.find(c.location);
    if (at == std::string::npos) continue;
    const std::string rest = line.substr(at + c.location.size());
    found = found || std::all_of(c.expected.begin(), c.expected.end(), [&](const std::string& e) {
              return rest.find(e) != std::string::npos;
            });
  }
  EXPECT_TRUE(found) << "no error: line carries every expectation\n" << why;
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInputTest, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

// Every case is the base scenario with one thing broken; were the base itself invalid, the
// cases could fail for the wrong reason and still pass.
TEST(BadInputCorpus, BaseScenarioIsValid) {
  Case c;
  c.source = kBaseScenario.string();
  c.args = {"validate", kBaseScenario.string()};
  const Outcome o = run_dtsim(c.args);
  EXPECT_TRUE(o.exited && o.exit_code == 0) << describe(c, o);
}

TEST(BadInputCorpus, HasEnoughDistinctCases) {
  const auto cases = all_cases();
  EXPECT_GE(cases.size(), kMinimumCases);
  std::vector<std::string> names;
  for (const auto& c : cases) names.push_back(c.name);
  std::sort(names.begin(), names.end());
  // gtest would reject duplicate names only at run time, and confusingly.
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
}

}  // namespace
