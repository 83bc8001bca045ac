// CountedProgress, as a log (stderr not a terminal) sees it: the start line, one line per item
// with a detail, throttled lines for items without one, and the counts each line states.
#include "driver/progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/scratch_dir.h"

namespace dtsim::driver {
namespace {

// Runs `body` with stderr sent to a file in the test's scratch folder, and returns the lines
// written.
template <class Body>
std::vector<std::string> stderr_lines_of(Body body) {
  std::string path = dtsim::testing::scratch_dir().file("stderr-XXXXXX");
  const int fd = ::mkstemp(path.data());
  EXPECT_GE(fd, 0);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(fd, STDERR_FILENO);
  body();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ::unlink(path.c_str());
  return lines;
}

TEST(CountedProgress, LogsOneLinePerDetailedItemWithCountsAndFailures) {
  const auto lines = stderr_lines_of([] {
    CountedProgress p("sweep", 3, "runs");
    p.advance(1, 0, "tp=1: ok");
    p.message("a note\n");
    p.advance(2, 1, "tp=2: error (bad)");
    p.advance(3, 1, "tp=4: ok");
  });
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "sweep (3 runs)");
  EXPECT_EQ(lines[1].rfind("sweep: 1/3 (", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("runs/s, ETA "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("): tp=1: ok"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2], "a note");
  EXPECT_NE(lines[3].find(", 1 failed: tp=2: error (bad)"), std::string::npos) << lines[3];
  EXPECT_NE(lines[4].find("ETA 0 s"), std::string::npos) << lines[4];
}

TEST(CountedProgress, ThrottlesItemsWithoutDetailButAlwaysReportsTheLast) {
  const auto lines = stderr_lines_of([] {
    CountedProgress p("plan: ranking", 1000, "configurations");
    for (size_t i = 1; i <= 1000; ++i) p.advance(i);
  });
  // The start line and the last item: a tight loop finishes well inside the 5 s throttle.
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "plan: ranking (1000 configurations)");
  EXPECT_EQ(lines[1].rfind("plan: ranking: 1000/1000 (", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find(" so far)"), std::string::npos) << lines[1];
}

TEST(CountedProgress, DurationsReadAsHoursMinutesSeconds) {
  EXPECT_EQ(CountedProgress::duration_text(42.4), "42 s");
  EXPECT_EQ(CountedProgress::duration_text(185), "3 min 5 s");
  EXPECT_EQ(CountedProgress::duration_text(3720), "1 h 2 min 0 s");
  EXPECT_EQ(CountedProgress::duration_text(-1), "0 s");
}

}  // namespace
}  // namespace dtsim::driver
