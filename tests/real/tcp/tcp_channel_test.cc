// The TCP channel's contract (real/channel.h) across real processes: each test forks one process
// per rank on 127.0.0.1, and each reports back over a pipe what it saw.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "real/channel.h"

namespace dtsim::real {
namespace {

// A port the kernel just handed out, so free at this moment (SO_REUSEADDR covers TIME_WAIT).
int free_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  close(s);
  return ntohs(addr.sin_port);
}

LaunchInfo launch_for(int rank, int world, int port) {
  LaunchInfo l;
  l.rank = rank;
  l.world = world;
  l.local_rank = rank;
  l.local_world = world;
  l.host = "localhost";
  l.launcher = "torchrun";
  l.master_addr = "127.0.0.1";
  l.master_port = port;
  return l;
}

struct Outcome {
  int exit_code = -1;
  std::string text;  // "ok", a failed check, or the error's message
};

// Forks one process per rank in `ranks` running body(rank); returns each one's outcome. The
// body returns "ok" or what went wrong; an exception's message comes back with exit code 1.
std::vector<Outcome> run_ranks(const std::vector<int>& ranks,
                               const std::function<std::string(int)>& body) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int rank : ranks) {
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      std::string text;
      int code = 0;
      try {
        text = body(rank);
      } catch (const std::exception& e) {
        text = e.what();
        code = 1;
      }
      (void)!write(fds[1], text.data(), text.size());
      close(fds[1]);
      _exit(code);
    }
    close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<Outcome> out(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    char buf[4096];
    ssize_t n;
    while ((n = read(pipes[i], buf, sizeof buf)) > 0)
      out[i].text.append(buf, static_cast<size_t>(n));
    close(pipes[i]);
    int status = 0;
    waitpid(pids[i], &status, 0);
    out[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return out;
}

std::vector<uint8_t> bytes_of(const std::string& s) {
  return {s.begin(), s.end()};
}
std::string text_of(const std::vector<uint8_t>& b) {
  return {b.begin(), b.end()};
}

TEST(TcpChannel, BroadcastGatherAndBarrierAcrossThreeProcesses) {
  const int port = free_port();
  const auto outcomes = run_ranks({0, 1, 2}, [&](int rank) -> std::string {
    auto ch = make_tcp_channel(launch_for(rank, 3, port), Seconds(20));
    if (ch->name() != "tcp" || ch->rank() != rank || ch->world() != 3) return "wrong identity";
    // Rank 0's bytes reach everyone, whatever the others pass; 8 MiB exercises partial writes.
    std::string big(8u << 20, 'x');
    big[12345] = 'y';
    const auto got = ch->broadcast(bytes_of(rank == 0 ? big : "ignored"));
    if (text_of(got) != big) return "broadcast: rank " + std::to_string(rank) + " got other bytes";
    // Gather in rank order on rank 0, nothing elsewhere.
    const auto all = ch->gather(bytes_of("from rank " + std::to_string(rank)));
    if (rank == 0) {
      if (all.size() != 3) return "gather: " + std::to_string(all.size()) + " parts";
      for (int r = 0; r < 3; ++r)
        if (text_of(all[static_cast<size_t>(r)]) != "from rank " + std::to_string(r))
          return "gather: part " + std::to_string(r) + " is " +
                 text_of(all[static_cast<size_t>(r)]);
    } else if (!all.empty()) {
      return "gather: a non-root rank received parts";
    }
    // Barrier: rank 2 arrives 400 ms late; nobody may leave before it arrives.
    if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const auto before = std::chrono::steady_clock::now();
    ch->barrier();
    const auto waited = std::chrono::steady_clock::now() - before;
    if (rank != 2 && waited < std::chrono::milliseconds(300))
      return "barrier: rank " + std::to_string(rank) + " left before rank 2 arrived";
    // An empty broadcast and a second round still work.
    if (!ch->broadcast({}).empty()) return "empty broadcast not empty";
    ch->barrier();
    return "ok";
  });
  for (size_t r = 0; r < outcomes.size(); ++r) {
    EXPECT_EQ(outcomes[r].exit_code, 0) << "rank " << r << ": " << outcomes[r].text;
    EXPECT_EQ(outcomes[r].text, "ok") << "rank " << r;
  }
}

TEST(TcpChannel, RankThatNeverConnectsTimesOutNamingIt) {
  const int port = free_port();
  // World of 3, but rank 2 is never started.
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = run_ranks({0, 1}, [&](int rank) -> std::string {
    auto ch = make_tcp_channel(launch_for(rank, 3, port), Seconds(1.5));
    ch->barrier();
    return "the channel came up without rank 2";
  });
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(outcomes.size(), 2u);
  EXPECT_EQ(outcomes[0].exit_code, 1);
  EXPECT_NE(outcomes[0].text.find("rank 2 did not connect"), std::string::npos) << outcomes[0].text;
  // Rank 1 connected, and learns from rank 0 who is missing.
  EXPECT_EQ(outcomes[1].exit_code, 1);
  EXPECT_NE(outcomes[1].text.find("rank 2 did not connect"), std::string::npos) << outcomes[1].text;
  EXPECT_LT(took, std::chrono::seconds(10)) << "the timeout was not applied";
}

TEST(TcpChannel, RankZeroNeverListeningTimesOutNamingIt) {
  const int port = free_port();
  const auto outcomes = run_ranks({1}, [&](int rank) -> std::string {
    auto ch = make_tcp_channel(launch_for(rank, 2, port), Seconds(1));
    return "connected to nobody";
  });
  EXPECT_EQ(outcomes[0].exit_code, 1);
  EXPECT_NE(outcomes[0].text.find("could not connect to rank 0 at 127.0.0.1:"), std::string::npos)
      << outcomes[0].text;
}

TEST(TcpChannel, RankThatExitsMidJobIsNamed) {
  const int port = free_port();
  const auto outcomes = run_ranks({0, 1, 2}, [&](int rank) -> std::string {
    auto ch = make_tcp_channel(launch_for(rank, 3, port), Seconds(5));
    ch->barrier();
    if (rank == 2) _exit(3);  // dies without a word
    ch->gather(bytes_of("x"));
    ch->barrier();
    return "the job went on without rank 2";
  });
  EXPECT_EQ(outcomes[2].exit_code, 3);
  EXPECT_EQ(outcomes[0].exit_code, 1);
  EXPECT_NE(outcomes[0].text.find("rank 2 closed the connection"), std::string::npos)
      << outcomes[0].text;
  EXPECT_EQ(outcomes[1].exit_code, 1);
  EXPECT_NE(outcomes[1].text.find("rank 2"), std::string::npos) << outcomes[1].text;
}

TEST(TcpChannel, SilentRankInGatherTimesOutNamingIt) {
  const int port = free_port();
  const auto outcomes = run_ranks({0, 1, 2}, [&](int rank) -> std::string {
    auto ch = make_tcp_channel(launch_for(rank, 3, port), Seconds(1));
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(3));  // hangs past the timeout
      return "slept";
    }
    ch->gather(bytes_of("x"));
    ch->barrier();
    return "the gather finished without rank 1";
  });
  EXPECT_EQ(outcomes[0].exit_code, 1);
  EXPECT_NE(outcomes[0].text.find("rank 1 did not take part in gather"), std::string::npos)
      << outcomes[0].text;
  EXPECT_EQ(outcomes[2].exit_code, 1);
  EXPECT_NE(outcomes[2].text.find("rank 1"), std::string::npos) << outcomes[2].text;
}

TEST(TcpChannel, OneProcessWorldIsLocal) {
  auto ch = make_tcp_channel(launch_for(0, 1, 1), Seconds(1));
  EXPECT_EQ(ch->name(), "local");
  EXPECT_EQ(text_of(ch->broadcast(bytes_of("a"))), "a");
}

}  // namespace
}  // namespace dtsim::real
