// The TCP control channel of a torchrun-style launch (real/channel.h): a star around rank 0.
//
// - Rendezvous: rank 0 listens on MASTER_PORT (SO_REUSEADDR, so a restarted job can bind the port
//   of one that just ended) and accepts world - 1 connections; every other rank connects to
//   MASTER_ADDR:MASTER_PORT, retrying while rank 0 is not yet listening, and introduces itself.
//   When all have arrived rank 0 sends each a "ready" frame, so that the rendezvous is
//   collective: it succeeds or fails on every rank.
// - Frames: a 16-byte header (magic, kind, payload length) and the payload. Rank 0 announces a
//   failure it sees to every peer in an "abort" frame, so that the other ranks report the same
//   cause (the rank that never connected, the one that fell silent) rather than a bare timeout.
// - Every wait has a deadline (the channel's timeout from the start of the call); sockets are
//   non-blocking and waited on with poll(), so no call blocks past it. No threads.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/base/error.h"
#include "real/channel.h"

namespace dtsim::real {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMagic = 0x4d535444;  // "DTSM"
enum class Kind : uint32_t { kHello = 1, kReady, kAbort, kBroadcast, kGather, kBarrier };

std::string kind_name(Kind k) {
  switch (k) {
    case Kind::kHello:
      return "hello";
    case Kind::kReady:
      return "ready";
    case Kind::kAbort:
      return "abort";
    case Kind::kBroadcast:
      return "broadcast";
    case Kind::kGather:
      return "gather";
    case Kind::kBarrier:
      return "barrier";
  }
  return "unknown";
}

struct Header {
  uint32_t magic = kMagic;
  uint32_t kind = 0;
  uint64_t length = 0;
};
static_assert(sizeof(Header) == 16);

std::string errno_text() {
  return std::strerror(errno);
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

void set_non_blocking(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// Peers are named in every error: "rank 1: ..." from the point of view of `me`.
class TcpChannel final : public Channel {
 public:
  TcpChannel(const LaunchInfo& launch, Seconds timeout)
      : rank_(launch.rank), world_(launch.world), timeout_(timeout), launch_(launch) {
    fds_.assign(static_cast<size_t>(world_), -1);
    if (rank_ == 0)
      serve();
    else
      join();
  }
  ~TcpChannel() override {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "tcp"; }

  std::vector<uint8_t> broadcast(std::vector<uint8_t> from_rank0) override {
    const auto deadline = next_deadline();
    if (rank_ == 0) {
      guarded([&] {
        for (int r = 1; r < world_; ++r) send_frame(r, Kind::kBroadcast, from_rank0, deadline);
      });
      return from_rank0;
    }
    return receive_frame(0, Kind::kBroadcast, deadline + root_grace());
  }

  std::vector<std::vector<uint8_t>> gather(std::vector<uint8_t> mine) override {
    const auto deadline = next_deadline();
    if (rank_ != 0) {
      send_frame(0, Kind::kGather, mine, deadline);
      return {};
    }
    std::vector<std::vector<uint8_t>> all;
    guarded([&] { all = collect(Kind::kGather, std::move(mine), deadline); });
    return all;
  }

  void barrier() override {
    const auto deadline = next_deadline();
    if (rank_ != 0) {
      send_frame(0, Kind::kBarrier, {}, deadline);
      receive_frame(0, Kind::kBarrier, deadline + root_grace());
      return;
    }
    guarded([&] {
      collect(Kind::kBarrier, {}, deadline);
      for (int r = 1; r < world_; ++r) send_frame(r, Kind::kBarrier, {}, deadline);
    });
  }

 private:
  Clock::time_point next_deadline() const {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeout_.value()));
  }
  // A rank waiting for rank 0 waits this much longer than rank 0 waits for the others, so that
  // rank 0's abort frame, naming the rank that is late, arrives before this rank's own timeout
  // (which could only name rank 0).
  Clock::duration root_grace() const {
    const double s = std::clamp(0.2 * timeout_.value(), 1.0, 10.0);
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  }
  std::string who() const { return "rank " + std::to_string(rank_) + " (tcp channel)"; }
  std::string timeout_text() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", timeout_.value());
    return buf;
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw RuntimeError(who() + ": " + message);
  }

  // Rank 0: on any failure, tell every connected peer why before throwing.
  template <class F>
  void guarded(F&& f) {
    try {
      f();
    } catch (const Error& e) {
      const std::string why = e.what();
      for (int r = 1; r < world_; ++r)
        if (fds_[static_cast<size_t>(r)] >= 0) {
          Header h{kMagic, static_cast<uint32_t>(Kind::kAbort), why.size()};
          // Best effort and non-blocking: a peer that cannot take it will time out on its own.
          ::send(fds_[static_cast<size_t>(r)], &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
          ::send(fds_[static_cast<size_t>(r)], why.data(), why.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          // End the stream after the abort frame (FIN), so that it is delivered in order.
          shutdown(fds_[static_cast<size_t>(r)], SHUT_WR);
        }
      linger_for_peers();
      throw;
    }
  }

  // Rank 0, failing: read and drop what peers still send until they close (at most 1 s). A
  // socket closed with unread data sends a reset, which can destroy the abort frame in flight.
  void linger_for_peers() {
    const auto until = Clock::now() + std::chrono::seconds(1);
    std::vector<int> open;
    for (int r = 1; r < world_; ++r)
      if (fds_[static_cast<size_t>(r)] >= 0) open.push_back(fds_[static_cast<size_t>(r)]);
    uint8_t sink[4096];
    while (!open.empty() && Clock::now() < until) {
      std::vector<pollfd> pfds;
      for (int fd : open) pfds.push_back(pollfd{fd, POLLIN, 0});
      if (poll(pfds.data(), pfds.size(), remaining_ms(until)) <= 0) break;
      std::vector<int> still;
      for (size_t i = 0; i < pfds.size(); ++i) {
        if (pfds[i].revents == 0) {
          still.push_back(open[i]);
          continue;
        }
        const ssize_t r = ::recv(open[i], sink, sizeof sink, 0);
        if (r > 0 || (r < 0 && (errno == EAGAIN || errno == EINTR))) still.push_back(open[i]);
      }
      open = std::move(still);
    }
  }

  // A peer whose call to rank 0 failed: rank 0 may have said why before it went (an abort frame
  // already received); report that rather than the broken connection.
  void raise_pending_abort() {
    const int fd = fds_[0];
    Header h;
    if (::recv(fd, &h, sizeof h, MSG_PEEK | MSG_DONTWAIT) != static_cast<ssize_t>(sizeof h) ||
        h.magic != kMagic || static_cast<Kind>(h.kind) != Kind::kAbort || h.length > 65536)
      return;
    std::vector<uint8_t> frame(sizeof h + h.length);
    const ssize_t got = ::recv(fd, frame.data(), frame.size(), MSG_PEEK | MSG_DONTWAIT);
    if (got != static_cast<ssize_t>(frame.size())) return;
    fail("rank 0 ended the job: " + std::string(frame.begin() + sizeof h, frame.end()));
  }

  void write_all(int peer, const void* data, size_t n, Clock::time_point deadline) {
    const int fd = fds_[static_cast<size_t>(peer)];
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w > 0) {
        p += w;
        n -= static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        const std::string why = errno_text();
        if (rank_ != 0) raise_pending_abort();
        fail("sending to rank " + std::to_string(peer) + " failed: " + why +
             " (it may have exited)");
      }
      pollfd pfd{fd, POLLOUT, 0};
      const int ready = poll(&pfd, 1, remaining_ms(deadline));
      if (ready == 0)
        fail("rank " + std::to_string(peer) + " did not take its data within " + timeout_text() +
             " (it may have hung)");
    }
  }

  // Reads what is available into `buf` up to `want` bytes; returns false on a closed connection.
  bool read_some(int peer, std::vector<uint8_t>& buf, size_t want) {
    const int fd = fds_[static_cast<size_t>(peer)];
    const size_t have = buf.size();
    buf.resize(want);
    const ssize_t r = ::recv(fd, buf.data() + have, want - have, 0);
    if (r > 0) {
      buf.resize(have + static_cast<size_t>(r));
      return true;
    }
    buf.resize(have);
    if (r == 0) return false;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      const std::string why = errno_text();
      if (rank_ != 0 && buf.empty()) raise_pending_abort();
      fail("receiving from rank " + std::to_string(peer) + " failed: " + why);
    }
    return true;
  }

  // One peer's frame being read.
  struct Incoming {
    std::vector<uint8_t> header, payload;
    bool done = false;
  };

  // Advances `in` with what the socket has; throws on a closed connection or a bad frame.
  void advance(int peer, Incoming& in, Kind expected) {
    if (in.header.size() < sizeof(Header)) {
      if (!read_some(peer, in.header, sizeof(Header)))
        fail("rank " + std::to_string(peer) + " closed the connection during " +
             kind_name(expected) + " (it may have exited)");
      if (in.header.size() < sizeof(Header)) return;
    }
    Header h;
    std::memcpy(&h, in.header.data(), sizeof h);
    if (h.magic != kMagic)
      fail("rank " + std::to_string(peer) + " sent a frame that is not dtsim's (bad magic)");
    if (h.length > (uint64_t{1} << 34))
      fail("rank " + std::to_string(peer) + " announced a frame of " + std::to_string(h.length) +
           " bytes (more than 16 GiB)");
    if (in.payload.size() < h.length) {
      if (!read_some(peer, in.payload, static_cast<size_t>(h.length)))
        fail("rank " + std::to_string(peer) + " closed the connection during " +
             kind_name(expected) + " (it may have exited)");
      if (in.payload.size() < h.length) return;
    }
    const auto kind = static_cast<Kind>(h.kind);
    if (kind == Kind::kAbort)
      fail("rank " + std::to_string(peer) +
           " ended the job: " + std::string(in.payload.begin(), in.payload.end()));
    if (kind != expected)
      fail("rank " + std::to_string(peer) + " is in " + kind_name(kind) +
           " while this rank is in " + kind_name(expected) + " (the ranks run different calls)");
    in.done = true;
  }

  std::vector<uint8_t> receive_frame(int peer, Kind expected, Clock::time_point deadline) {
    Incoming in;
    while (!in.done) {
      pollfd pfd{fds_[static_cast<size_t>(peer)], POLLIN, 0};
      const int ready = poll(&pfd, 1, remaining_ms(deadline));
      if (ready == 0)
        fail("rank " + std::to_string(peer) + " did not take part in " + kind_name(expected) +
             " within " + timeout_text());
      if (ready < 0 && errno != EINTR) fail("poll failed: " + errno_text());
      if (ready > 0) advance(peer, in, expected);
    }
    return std::move(in.payload);
  }

  // Rank 0: one frame from every peer, read as they come; a timeout names every late rank.
  std::vector<std::vector<uint8_t>> collect(Kind expected, std::vector<uint8_t> mine,
                                            Clock::time_point deadline) {
    std::vector<Incoming> in(static_cast<size_t>(world_));
    in[0].done = true;
    in[0].payload = std::move(mine);
    for (;;) {
      std::vector<pollfd> pfds;
      std::vector<int> peers;
      for (int r = 1; r < world_; ++r)
        if (!in[static_cast<size_t>(r)].done) {
          pfds.push_back(pollfd{fds_[static_cast<size_t>(r)], POLLIN, 0});
          peers.push_back(r);
        }
      if (pfds.empty()) break;
      const int ready = poll(pfds.data(), pfds.size(), remaining_ms(deadline));
      if (ready < 0 && errno != EINTR) fail("poll failed: " + errno_text());
      if (ready == 0) {
        std::string late;
        for (int r : peers) late += (late.empty() ? "" : ", ") + std::to_string(r);
        fail((peers.size() == 1 ? "rank " : "ranks ") + late + " did not take part in " +
             kind_name(expected) + " within " + timeout_text());
      }
      for (size_t i = 0; i < pfds.size(); ++i)
        if (pfds[i].revents != 0) advance(peers[i], in[static_cast<size_t>(peers[i])], expected);
    }
    std::vector<std::vector<uint8_t>> all;
    for (auto& x : in) all.push_back(std::move(x.payload));
    return all;
  }

  void send_frame(int peer, Kind kind, const std::vector<uint8_t>& payload,
                  Clock::time_point deadline) {
    const Header h{kMagic, static_cast<uint32_t>(kind), payload.size()};
    write_all(peer, &h, sizeof h, deadline);
    if (!payload.empty()) write_all(peer, payload.data(), payload.size(), deadline);
  }

  void serve() {
    const auto deadline = next_deadline();
    const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) fail("socket() failed: " + errno_text());
    const int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(launch_.master_port));
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listener, world_) != 0) {
      const std::string why = errno_text();
      close(listener);
      fail("cannot listen on port " + std::to_string(launch_.master_port) +
           " (MASTER_PORT): " + why);
    }
    set_non_blocking(listener);
    int arrived = 1;
    try {
      while (arrived < world_) {
        pollfd pfd{listener, POLLIN, 0};
        const int ready = poll(&pfd, 1, remaining_ms(deadline));
        if (ready == 0) {
          std::string missing;
          int count = 0;
          for (int r = 1; r < world_; ++r)
            if (fds_[static_cast<size_t>(r)] < 0) {
              missing += (missing.empty() ? "" : ", ") + std::to_string(r);
              ++count;
            }
          fail((count == 1 ? "rank " : "ranks ") + missing + " did not connect to port " +
               std::to_string(launch_.master_port) + " within " + timeout_text());
        }
        if (ready < 0) {
          if (errno == EINTR) continue;
          fail("poll failed: " + errno_text());
        }
        const int fd = accept(listener, nullptr, nullptr);
        if (fd < 0) continue;
        set_non_blocking(fd);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        // The hello: rank and world, read with the rendezvous deadline.
        uint32_t hello[4] = {};
        size_t got = 0;
        while (got < sizeof hello) {
          pollfd p{fd, POLLIN, 0};
          if (poll(&p, 1, remaining_ms(deadline)) <= 0) break;
          const ssize_t r =
              ::recv(fd, reinterpret_cast<uint8_t*>(hello) + got, sizeof hello - got, 0);
          if (r <= 0 && !(r < 0 && (errno == EAGAIN || errno == EINTR))) break;
          if (r > 0) got += static_cast<size_t>(r);
        }
        const int r = static_cast<int>(hello[2]);
        if (got < sizeof hello || hello[0] != kMagic ||
            hello[1] != static_cast<uint32_t>(Kind::kHello)) {
          close(fd);  // not one of ours (a port scanner, a stale job): keep waiting
          continue;
        }
        if (static_cast<int>(hello[3]) != world_ || r <= 0 || r >= world_ ||
            fds_[static_cast<size_t>(r)] >= 0) {
          close(fd);
          fail("a process connected as rank " + std::to_string(r) + " of " +
               std::to_string(hello[3]) + ", but this job has " + std::to_string(world_) +
               " ranks" +
               (r > 0 && r < world_ ? " and rank " + std::to_string(r) + " already joined" : ""));
        }
        fds_[static_cast<size_t>(r)] = fd;
        ++arrived;
      }
      close(listener);
    } catch (...) {
      close(listener);
      guarded([] { throw; });
    }
    guarded([&] {
      for (int r = 1; r < world_; ++r) send_frame(r, Kind::kReady, {}, deadline);
    });
  }

  void join() {
    const auto deadline = next_deadline();
    const std::string target = launch_.master_addr + ":" + std::to_string(launch_.master_port);
    std::string last_error = "no attempt";
    int fd = -1;
    while (fd < 0) {
      addrinfo hints{};
      hints.ai_family = AF_UNSPEC;
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* found = nullptr;
      const int rc = getaddrinfo(launch_.master_addr.c_str(),
                                 std::to_string(launch_.master_port).c_str(), &hints, &found);
      if (rc != 0) {
        last_error = std::string("cannot resolve MASTER_ADDR: ") + gai_strerror(rc);
      } else {
        for (addrinfo* a = found; a && fd < 0; a = a->ai_next) {
          const int s = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
          if (s < 0) continue;
          if (connect(s, a->ai_addr, a->ai_addrlen) == 0) {
            fd = s;
          } else {
            last_error = errno_text();
            close(s);
          }
        }
        freeaddrinfo(found);
      }
      if (fd >= 0) break;
      if (Clock::now() >= deadline)
        fail("could not connect to rank 0 at " + target + " within " + timeout_text() + " (" +
             last_error + ")");
      // Rank 0 may not be listening yet: retry.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_non_blocking(fd);
    fds_[0] = fd;
    const uint32_t hello[4] = {kMagic, static_cast<uint32_t>(Kind::kHello),
                               static_cast<uint32_t>(rank_), static_cast<uint32_t>(world_)};
    write_all(0, hello, sizeof hello, deadline);
    receive_frame(0, Kind::kReady, deadline + root_grace());
  }

  int rank_ = 0;
  int world_ = 1;
  Seconds timeout_;
  LaunchInfo launch_;
  std::vector<int> fds_;  // by rank: rank 0 holds one per peer, the others only fds_[0]
};

}  // namespace

std::unique_ptr<Channel> make_tcp_channel(const LaunchInfo& launch, Seconds timeout) {
  if (launch.world < 1 || launch.rank < 0 || launch.rank >= launch.world)
    throw RuntimeError("tcp channel: rank " + std::to_string(launch.rank) + " of " +
                       std::to_string(launch.world) + " is not a valid launch");
  if (launch.world == 1) return std::make_unique<LocalChannel>();
  return std::make_unique<TcpChannel>(launch, timeout);
}

}  // namespace dtsim::real
