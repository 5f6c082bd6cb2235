// tcp_rendezvous (rendezvous.h): rank 0 accepts world_size - 1 connections, each announcing
// {magic, rank, world size, run id}; once all have arrived it answers each with {0, blob}, or with
// {1, message} when one was wrong, so that every rank fails with the same reason. POSIX sockets;
// every wait is a poll() bounded by the timeout.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <thread>

#include "core/check.h"
#include "core/timer.h"
#include "distributed/rendezvous.h"

namespace nanogpt {

namespace {

constexpr uint32_t kMagic = 0x5652474e;  // "NGRV"
constexpr uint32_t kMaxMessage = 1 << 20;

// An owned socket: closed when it goes out of scope.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Milliseconds left until `deadline_s` on `clock` (at least 0).
int ms_left(const Timer& clock, double deadline_s) {
  return std::max(0, static_cast<int>((deadline_s - clock.seconds()) * 1e3));
}

// Waits until fd is readable (POLLIN) or writable; false on timeout.
bool wait_fd(int fd, short events, const Timer& clock, double deadline_s) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, ms_left(clock, deadline_s));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

// All of `n` bytes, or false (peer closed, error, deadline).
bool read_exact(int fd, void* out, size_t n, const Timer& clock, double deadline_s) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, clock, deadline_s)) return false;
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got <= 0) {
      if (got < 0 && errno == EINTR) continue;
      return false;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t put = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    off += static_cast<size_t>(put);
  }
  return true;
}

void put_u32(std::string& out, uint32_t v) {
  v = htonl(v);
  out.append(reinterpret_cast<const char*>(&v), 4);
}

bool read_u32(int fd, uint32_t& v, const Timer& clock, double deadline_s) {
  if (!read_exact(fd, &v, 4, clock, deadline_s)) return false;
  v = ntohl(v);
  return true;
}

bool read_string(int fd, std::string& s, const Timer& clock, double deadline_s) {
  uint32_t n = 0;
  if (!read_u32(fd, n, clock, deadline_s) || n > kMaxMessage) return false;
  s.resize(n);
  return read_exact(fd, s.data(), n, clock, deadline_s);
}

std::string reply(uint32_t status, const std::string& payload) {
  std::string out;
  put_u32(out, status);
  put_u32(out, static_cast<uint32_t>(payload.size()));
  return out + payload;
}

Socket listen_on(int port, const RendezvousSpec& spec) {
  Socket s(::socket(AF_INET, SOCK_STREAM, 0));
  CHECK(s.fd() >= 0, "rendezvous: socket(): {}", std::strerror(errno));
  int one = 1;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  CHECK(::bind(s.fd(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::listen(s.fd(), std::max(16, spec.world_size)) == 0,
        "rendezvous: rank 0 cannot listen on port {}: {}; fix: choose a free port (MASTER_PORT "
        "or the rendezvous address), or end the process that holds it",
        port, std::strerror(errno));
  return s;
}

struct Peer {
  Socket socket;
  int rank = -1;
};

Blob rank0_tcp(const TcpAddress& address, const RendezvousSpec& spec, const Blob& blob) {
  Socket listener = listen_on(address.port, spec);
  Timer clock;
  std::map<int, Peer> peers;  // by rank
  auto fail_all = [&](const std::string& message) {
    for (auto& [r, p] : peers) write_all(p.socket.fd(), reply(1, message));
    throw Error(message);
  };
  while (static_cast<int>(peers.size()) < spec.world_size - 1) {
    if (!wait_fd(listener.fd(), POLLIN, clock, spec.timeout_s)) {
      std::string names, seen;
      for (int r = 1; r < spec.world_size; ++r) {
        std::string& list = peers.count(r) ? seen : names;
        list += (list.empty() ? "" : ", ") + std::to_string(r);
      }
      fail_all(fmt::format(
          "rendezvous on port {} (run '{}'): rank 0 waited {:.0f} s and rank{} {} never arrived "
          "(arrived: {}); fix: check that those ranks started and can reach {}:{}, or raise the "
          "timeout",
          address.port, spec.run_id, clock.seconds(),
          spec.world_size - 1 - peers.size() == 1 ? "" : "s", names,
          seen.empty() ? "none" : seen, address.host, address.port));
    }
    Socket c(::accept(listener.fd(), nullptr, nullptr));
    if (c.fd() < 0) continue;
    // A connection has a few seconds (within the deadline) to say who it is.
    const double hello_deadline = std::min(spec.timeout_s, clock.seconds() + 10);
    uint32_t magic = 0, rank = 0, world = 0;
    std::string run_id;
    if (!read_u32(c.fd(), magic, clock, hello_deadline) || magic != kMagic ||
        !read_u32(c.fd(), rank, clock, hello_deadline) ||
        !read_u32(c.fd(), world, clock, hello_deadline) ||
        !read_string(c.fd(), run_id, clock, hello_deadline)) {
      continue;  // not one of ours (a port scanner, a half-open connection): ignore it
    }
    if (run_id != spec.run_id) {  // a rank of another run: turn it away, keep waiting
      write_all(c.fd(), reply(1, fmt::format("rendezvous on port {}: this is run '{}', not '{}'",
                                             address.port, spec.run_id, run_id)));
      continue;
    }
    const int r = static_cast<int>(rank);
    std::string wrong;
    if (static_cast<int>(world) != spec.world_size) {
      wrong = fmt::format(
          "rendezvous on port {}: rank {} has world size {} but rank 0 has {}; fix: start every "
          "rank with the same world size",
          address.port, r, world, spec.world_size);
    } else if (r <= 0 || r >= spec.world_size) {
      wrong = fmt::format(
          "rendezvous on port {}: a peer says it is rank {}, outside 1..{}; fix: give each "
          "process its own rank below the world size {}",
          address.port, r, spec.world_size - 1, spec.world_size);
    } else if (peers.count(r)) {
      wrong = fmt::format(
          "rendezvous on port {}: rank {} arrived twice: two processes were given the same "
          "rank; fix: give each process its own rank",
          address.port, r);
    }
    if (!wrong.empty()) {
      write_all(c.fd(), reply(1, wrong));
      fail_all(wrong);
    }
    int one = 1;
    ::setsockopt(c.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    peers[r] = Peer{std::move(c), r};
  }
  const std::string ok = reply(0, std::string(blob.begin(), blob.end()));
  for (auto& [r, p] : peers) write_all(p.socket.fd(), ok);
  return blob;
}

// Connects to host:port, retrying while rank 0 is not listening yet; an invalid socket on timeout.
Socket connect_to(const TcpAddress& address, const RendezvousSpec& spec, const Timer& clock) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  const int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found);
  CHECK(rc == 0,
        "rendezvous: rank {} cannot resolve rank 0's host '{}': {}; fix: set MASTER_ADDR (or the "
        "rendezvous address) to rank 0's host name or IP address",
        spec.rank, address.host, ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  while (clock.seconds() < spec.timeout_s) {
    for (addrinfo* a = list.get(); a; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (s.fd() >= 0 && ::connect(s.fd(), a->ai_addr, a->ai_addrlen) == 0) return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Socket();
}

Blob peer_tcp(const TcpAddress& address, const RendezvousSpec& spec) {
  Timer clock;
  Socket s = connect_to(address, spec, clock);
  CHECK(s.fd() >= 0,
        "rendezvous: rank {} could not connect to rank 0 at {}:{} within {:.0f} s; fix: check "
        "that rank 0 started, that MASTER_ADDR/MASTER_PORT (or the rendezvous address) name its "
        "host and a port it can listen on, and that no firewall is in between",
        spec.rank, address.host, address.port, spec.timeout_s);
  std::string hello;
  put_u32(hello, kMagic);
  put_u32(hello, static_cast<uint32_t>(spec.rank));
  put_u32(hello, static_cast<uint32_t>(spec.world_size));
  put_u32(hello, static_cast<uint32_t>(spec.run_id.size()));
  hello += spec.run_id;
  CHECK(write_all(s.fd(), hello), "rendezvous: rank {} lost the connection to rank 0 at {}:{}",
        spec.rank, address.host, address.port);
  uint32_t status = 0;
  std::string payload;
  const bool got = read_u32(s.fd(), status, clock, spec.timeout_s) &&
                   read_string(s.fd(), payload, clock, spec.timeout_s);
  CHECK(got,
        "rendezvous: rank {} connected to rank 0 at {}:{} but had no answer within {:.0f} s "
        "(rank 0 waits for every rank; some never arrived, or rank 0 failed); fix: see rank 0's "
        "log, or raise the timeout",
        spec.rank, address.host, address.port, spec.timeout_s);
  if (status != 0) {
    fail("rank {}: rank 0 refused the rendezvous: {}", spec.rank, payload);
  }
  return Blob(payload.begin(), payload.end());
}

}  // namespace

Blob tcp_rendezvous(const TcpAddress& address, const RendezvousSpec& spec, const Blob& blob) {
  CHECK(spec.world_size >= 1 && spec.rank >= 0 && spec.rank < spec.world_size,
        "rendezvous: rank {} of a world of {}: expected a rank 0..world_size-1", spec.rank,
        spec.world_size);
  if (spec.world_size == 1) return blob;
  return spec.rank == 0 ? rank0_tcp(address, spec, blob) : peer_tcp(address, spec);
}

}  // namespace nanogpt
