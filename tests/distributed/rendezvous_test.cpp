// file_rendezvous and tcp_rendezvous with ranks as threads: every rank gets rank 0's blob (2 and 4
// ranks), and the failures are errors that name the cause: a rank that never arrives (by number),
// a world size that differs (both sizes), a duplicate rank, a stale file of another run.
#include "distributed/rendezvous.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "core/check.h"

namespace nanogpt {
namespace {

// What one rank's call returned or threw.
struct Outcome {
  Blob blob;
  std::string error;
};

using RankCall = std::function<Blob(const RendezvousSpec&, const Blob&)>;

// Runs `specs.size()` ranks as threads; rank 0 (specs with rank 0) offers `blob`.
std::vector<Outcome> run_ranks(const std::vector<RendezvousSpec>& specs, const RankCall& call,
                               const Blob& blob) {
  std::vector<Outcome> out(specs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        out[i].blob = call(specs[i], specs[i].rank == 0 ? blob : Blob{});
      } catch (const Error& e) {
        out[i].error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

std::vector<RendezvousSpec> world(int n, const std::string& run_id, double timeout_s = 20) {
  std::vector<RendezvousSpec> specs;
  for (int r = 0; r < n; ++r) specs.push_back({r, n, run_id, timeout_s});
  return specs;
}

Blob unique_id_like() {
  Blob b(128);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 7 + 3);
  return b;
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

std::string scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("nanogpt_rendezvous_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

// A port nothing listens on now (the kernel's pick for a socket bound to port 0).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

RankCall file_call(const std::string& dir) {
  return [dir](const RendezvousSpec& s, const Blob& b) { return file_rendezvous(dir, s, b); };
}

RankCall tcp_call(int port) {
  return [port](const RendezvousSpec& s, const Blob& b) {
    return tcp_rendezvous({"127.0.0.1", port}, s, b);
  };
}

TEST(FileRendezvous, EveryRankGetsRankZerosBlobAndTheFilesAreRemoved) {
  for (int n : {1, 2, 4}) {
    const std::string dir = scratch("ok" + std::to_string(n));
    const auto out = run_ranks(world(n, "job 7/a"), file_call(dir), unique_id_like());
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(out[r].error, "") << "rank " << r;
      EXPECT_EQ(out[r].blob, unique_id_like()) << "rank " << r << " of " << n;
    }
    if (n > 1) {
      EXPECT_TRUE(std::filesystem::is_empty(dir)) << dir;
    }
  }
}

TEST(FileRendezvous, AMissingRankIsNamedByRankZero) {
  const std::string dir = scratch("missing");
  auto specs = world(4, "run", 1.0);
  specs.erase(specs.begin() + 2);  // rank 2 never starts
  const auto out = run_ranks(specs, file_call(dir), unique_id_like());
  expect_contains(out[0].error, "rank 2 never arrived (3 of 4 ranks did)");
  EXPECT_EQ(out[1].blob, unique_id_like());  // the others had what they needed
}

TEST(FileRendezvous, APeerWithoutRankZeroTimesOut) {
  const std::string dir = scratch("no_rank0");
  const auto out = run_ranks({{1, 2, "run", 0.5}}, file_call(dir), {});
  expect_contains(out[0].error, "rank 1 waited");
  expect_contains(out[0].error, "for rank 0's file");
}

TEST(FileRendezvous, AStaleFileOfAnotherRunIsNotTaken) {
  const std::string dir = scratch("stale");
  // An earlier run ("old") finished its rank 0 but its peers never came: its file stays.
  std::thread old([&] {
    try {
      file_rendezvous(dir, {0, 2, "old", 0.3}, Blob{1, 2, 3});
    } catch (const Error&) {
    }
  });
  old.join();
  ASSERT_TRUE(std::filesystem::exists(dir + "/nanogpt-rendezvous-old.bin"));
  const auto out_old = run_ranks({{1, 2, "new", 0.5}}, file_call(dir), {});
  expect_contains(out_old[0].error, "rank 0's file");
  expect_contains(out_old[0].error, "(run 'new')");
  // A stray file in the new run's place that is not a rendezvous file is refused by name.
  std::ofstream(dir + "/nanogpt-rendezvous-new.bin") << "hello";
  const auto out = run_ranks({{1, 2, "new", 0.5}}, file_call(dir), {});
  expect_contains(out[0].error, "is not a nanogpt rendezvous file");
}

TEST(FileRendezvous, AWorldSizeMismatchNamesBothSizes) {
  const std::string dir = scratch("mismatch");
  const auto out =
      run_ranks({{0, 2, "run", 5}, {1, 3, "run", 5}}, file_call(dir), unique_id_like());
  expect_contains(out[1].error, "rank 1 has world size 3 but rank 0 wrote world size 2");
  expect_contains(out[0].error, "rank 1 has world size 3 but rank 0 has 2");
}

TEST(FileRendezvous, ADuplicateRankIsRefused) {
  const std::string dir = scratch("duplicate");
  const auto out = run_ranks({{0, 3, "run", 1.5}, {1, 3, "run", 1.5}, {1, 3, "run", 1.5}},
                             file_call(dir), unique_id_like());
  const std::string both = out[1].error + out[2].error;
  expect_contains(both, "rank 1 has already arrived");
  expect_contains(out[0].error, "rank 2 never arrived");
}

TEST(FileRendezvous, ARankOutsideTheWorldIsRefused) {
  expect_contains(run_ranks({{2, 2, "run", 1}}, file_call(scratch("range")), {})[0].error,
                  "rank 2 of a world of 2");
}

TEST(TcpRendezvous, EveryRankGetsRankZerosBlob) {
  for (int n : {2, 4}) {
    const auto out = run_ranks(world(n, "tcp"), tcp_call(free_port()), unique_id_like());
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(out[r].error, "") << "rank " << r;
      EXPECT_EQ(out[r].blob, unique_id_like()) << "rank " << r << " of " << n;
    }
  }
}

TEST(TcpRendezvous, PeersThatStartBeforeRankZeroWait) {
  const int port = free_port();
  std::vector<Outcome> out(2);
  std::thread peer([&] { out[1].blob = tcp_rendezvous({"localhost", port}, {1, 2, "r", 20}, {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  out[0].blob = tcp_rendezvous({"localhost", port}, {0, 2, "r", 20}, unique_id_like());
  peer.join();
  EXPECT_EQ(out[1].blob, unique_id_like());
}

TEST(TcpRendezvous, MissingRanksAreNamedAndTheArrivedOnesToldWhy) {
  auto specs = world(4, "tcp", 1.0);
  specs.erase(specs.begin() + 3);
  specs.erase(specs.begin() + 1);  // ranks 1 and 3 never start
  specs[1].timeout_s = 10;         // rank 2 waits longer than rank 0, so it hears why
  const auto out = run_ranks(specs, tcp_call(free_port()), unique_id_like());
  expect_contains(out[0].error, "ranks 1, 3 never arrived (arrived: 2)");
  expect_contains(out[1].error, "rank 0 refused the rendezvous");
  expect_contains(out[1].error, "ranks 1, 3 never arrived");
}

TEST(TcpRendezvous, APeerWithoutRankZeroTimesOut) {
  const auto out = run_ranks({{1, 2, "tcp", 0.5}}, tcp_call(free_port()), {});
  expect_contains(out[0].error, "rank 1 could not connect to rank 0 at 127.0.0.1:");
}

TEST(TcpRendezvous, AWorldSizeMismatchNamesBothSizes) {
  // (rank 2 may come after rank 0 gave up: it then retries its connection until its own 2 s pass)
  const auto out = run_ranks({{0, 3, "tcp", 5}, {1, 2, "tcp", 5}, {2, 3, "tcp", 2}},
                             tcp_call(free_port()), unique_id_like());
  expect_contains(out[0].error, "rank 1 has world size 2 but rank 0 has 3");
  expect_contains(out[1].error, "rank 1 has world size 2 but rank 0 has 3");
}

TEST(TcpRendezvous, ADuplicateRankFailsEveryRank) {
  const auto out = run_ranks({{0, 3, "tcp", 5}, {1, 3, "tcp", 5}, {1, 3, "tcp", 5}},
                             tcp_call(free_port()), unique_id_like());
  for (int i = 0; i < 3; ++i) expect_contains(out[i].error, "rank 1 arrived twice");
}

TEST(TcpRendezvous, APeerOfAnotherRunIsTurnedAwayAndDoesNotCount) {
  const int port = free_port();
  std::vector<Outcome> out(3);
  auto rank = [&](int i, const RendezvousSpec& spec, const Blob& blob) {
    try {
      out[i].blob = tcp_rendezvous({"127.0.0.1", port}, spec, blob);
    } catch (const Error& e) {
      out[i].error = e.what();
    }
  };
  std::thread zero(rank, 0, RendezvousSpec{0, 2, "mine", 10}, unique_id_like());
  rank(1, {1, 2, "theirs", 10}, {});  // turned away before rank 1 of this run arrives
  rank(2, {1, 2, "mine", 10}, {});
  zero.join();
  EXPECT_EQ(out[0].error, "");
  expect_contains(out[1].error, "this is run 'mine', not 'theirs'");
  EXPECT_EQ(out[2].blob, unique_id_like());
}

TEST(RendezvousDefaults, RunIdAndAddressFromTheLauncher) {
  EXPECT_EQ(default_run_id(env_from_map({})), "default");
  EXPECT_EQ(default_run_id(env_from_map({{"SLURM_JOB_ID", "99"}})), "99");
  EXPECT_EQ(default_run_id(env_from_map({{"SLURM_JOB_ID", "99"}, {"SLURM_STEP_ID", "2"}})),
            "99.2");
  EXPECT_EQ(default_run_id(env_from_map({{"SLURM_JOB_ID", "99"}, {"TORCHELASTIC_RUN_ID", "x"}})),
            "x");
  TcpAddress a = tcp_address_from_env(env_from_map({}));
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, 29500);
  a = tcp_address_from_env(env_from_map({{"MASTER_ADDR", "node3"}, {"MASTER_PORT", "1234"}}));
  EXPECT_EQ(a.host, "node3");
  EXPECT_EQ(a.port, 1234);
  a = tcp_address_from_env(env_from_map({{"MASTER_ADDR", "node3"}}), "10.0.0.1:777");
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.port, 777);
  EXPECT_THROW(tcp_address_from_env(env_from_map({{"MASTER_PORT", "http"}})), Error);
  EXPECT_THROW(tcp_address_from_env(env_from_map({{"MASTER_PORT", "70000"}})), Error);
  EXPECT_THROW(tcp_address_from_env(env_from_map({}), "nocolon"), Error);
}

// The `rendezvous` train key: TCP from torchrun's variables by default, an address of its own, or
// a shared directory; anything else is refused naming the value and the forms it takes. Both
// chosen forms hand rank 0's blob to every rank.
TEST(RendezvousKey, ChoosesTcpOrFileAndRefusesAnythingElse) {
  const RendezvousChoice by_env =
      parse_rendezvous("", env_from_map({{"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29511"}}));
  EXPECT_FALSE(by_env.file);
  EXPECT_EQ(by_env.describe(), "TCP node7:29511");
  const RendezvousChoice tcp = parse_rendezvous("tcp:10.0.0.2:4000", env_from_map({}));
  EXPECT_EQ(tcp.describe(), "TCP 10.0.0.2:4000");
  const RendezvousChoice file = parse_rendezvous("file:/shared/rdzv", env_from_map({}));
  EXPECT_TRUE(file.file);
  EXPECT_EQ(file.describe(), "file /shared/rdzv");
  for (const char* bad : {"nccl", "file:", "tcp:nocolon", "tcp:host:0"}) {
    try {
      parse_rendezvous(bad, env_from_map({}));
      ADD_FAILURE() << bad << " was taken";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find(bad) != std::string::npos || m.find("port") != std::string::npos)
          << bad << ": " << m;
    }
  }
  // Through the chosen forms: every rank gets rank 0's blob.
  const std::string dir = scratch("key");
  std::filesystem::create_directories(dir);
  for (const std::string& key : {"file:" + dir, "tcp:127.0.0.1:" + std::to_string(free_port())}) {
    const RendezvousChoice choice = parse_rendezvous(key, env_from_map({}));
    const auto out = run_ranks(
        world(2, "key"),
        [&](const RendezvousSpec& spec, const Blob& blob) {
          return rendezvous(choice, spec, blob);
        },
        unique_id_like());
    ASSERT_EQ(out.size(), 2u) << key;
    for (const Outcome& o : out) {
      EXPECT_EQ(o.error, "") << key;
      EXPECT_EQ(o.blob, unique_id_like()) << key;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nanogpt
