// Runs a test's SimGrid part in a child process forked from the test (tests of the platform and
// of maestro's activity list create an s4u::Engine in the process). SimGrid allows one engine
// per process and keeps its configuration after the engine is gone, so an engine created in the
// test process would leave every later simulation of that process unable to configure its own
// ("Cannot change the model after the initialization"). Forking keeps the test process clean, so
// the sim tests pass as one process as well as one process per test under ctest.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <functional>

namespace dtsim::testing {

inline void in_child_process(const std::function<void()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0) << "fork failed";
  if (pid == 0) {
    int code = 0;
    try {
      body();
      code = ::testing::Test::HasFailure() ? 1 : 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "exception in the child process: %s\n", e.what());
      code = 1;
    }
    std::fflush(nullptr);
    ::_exit(code);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the test's SimGrid part failed in its child process (its messages are above)";
}

}  // namespace dtsim::testing
