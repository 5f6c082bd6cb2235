// NcclCommunicator on a GPU: two ranks as forked processes sharing one GPU (NCCL refuses two ranks
// of one communicator on one device of one host, so each rank claims a host of its own with
// NCCL_HOSTID and talks over sockets on loopback: NCCL_P2P_DISABLE, NCCL_SHM_DISABLE), meeting
// through the file rendezvous; every collective's result is checked against the sums by hand, and
// a peer that never comes is a timeout naming the rank. Skips, saying why, in a build without NCCL
// or where no GPU is usable. The parent never touches CUDA (a forked child could not use it then).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/check.h"
#include "distributed/nccl_communicator.h"
#include "distributed/rendezvous.h"

#if NANOGPT_TEST_NCCL
#include <cuda_runtime.h>
#endif

namespace nanogpt {
namespace {

TEST(NcclCommunicator, AUniqueIdOfTheWrongSizeIsRefusedBeforeAnyCudaCall) {
#if !NANOGPT_TEST_NCCL
  GTEST_SKIP() << "built without NCCL (NANOGPT_NCCL: needs the CUDA backend and nccl.h/libnccl)";
#else
  try {
    NcclCommunicator comm(std::vector<uint8_t>(5), NcclOptions{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has 5 bytes, expected 128"), std::string::npos)
        << e.what();
  }
#endif
}

#if NANOGPT_TEST_NCCL

// A forked process's exit code and what it wrote into its pipe.
struct Child {
  int exit_code = -1;
  std::string text;
};

// Forks `n` children, child i runs body(i) and exits 0 when it returns "" (else writes the text and
// exits 1); waits up to timeout_s for all, killing the late ones.
std::vector<Child> fork_children(int n, const std::function<std::string(int)>& body,
                                 double timeout_s) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int i = 0; i < n; ++i) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      std::string text;
      try {
        text = body(i);
      } catch (const std::exception& e) {
        text = std::string("exception: ") + e.what();
      }
      if (!text.empty() && ::write(fds[1], text.data(), text.size()) < 0) text = "?";
      ::_exit(text.empty() ? 0 : 1);
    }
    ::close(fds[1]);
    pids.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<Child> out(static_cast<size_t>(n));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int i = 0; i < n; ++i) {
    int status = 0;
    while (::waitpid(pids[i], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pids[i], SIGKILL);
        ::waitpid(pids[i], &status, 0);
        out[i].text = "killed after the test's timeout; ";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    char buf[4096];
    ssize_t got;
    while ((got = ::read(pipes[i], buf, sizeof(buf))) > 0) out[i].text.append(buf, got);
    ::close(pipes[i]);
    out[i].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return out;
}

// GPUs this machine can use, counted in a child process; `why` says what failed when none.
int usable_gpus(std::string& why) {
  const auto probe = fork_children(
      1,
      [](int) -> std::string {
        int count = 0;
        const cudaError_t rc = cudaGetDeviceCount(&count);
        if (rc != cudaSuccess) return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(rc);
        return count > 0 ? "" : "cudaGetDeviceCount: 0 devices";
      },
      60);
  if (probe.empty() || probe[0].exit_code != 0) {
    why = probe.empty() ? "fork failed" : probe[0].text;
    return 0;
  }
  return 1;
}

// Device memory holding `host`, copied back by `read()`.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : n_(host.size()) {
    CHECK(cudaMalloc(&ptr_, n_ * sizeof(T)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess,
          "cudaMemcpy");
  }
  ~DeviceArray() { cudaFree(ptr_); }
  T* get() { return ptr_; }
  std::vector<T> read() const {
    std::vector<T> host(n_);
    CHECK(cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess,
          "cudaMemcpy");
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

// Appends a line to `errors` when got != want.
template <typename T>
void expect_equal(std::string& errors, const std::string& what, const std::vector<T>& got,
                  const std::vector<T>& want) {
  if (got == want) return;
  std::string g, w;
  for (size_t i = 0; i < std::min<size_t>(got.size(), 8); ++i) g += std::to_string(got[i]) + " ";
  for (size_t i = 0; i < std::min<size_t>(want.size(), 8); ++i) w += std::to_string(want[i]) + " ";
  errors += what + ": got " + g + "... want " + w + "...\n";
}

// Every collective on rank `rank` of 2; returns "" or what differed.
std::string run_collectives(NcclCommunicator& comm, int rank) {
  std::string errors;
  const int other = 1 - rank;
  {  // all-reduce: rank r holds (r + 1) * i, the sum is 3 i
    std::vector<float> x(1000), want(1000);
    for (int i = 0; i < 1000; ++i) x[i] = float((rank + 1) * i), want[i] = float(3 * i);
    DeviceArray<float> d(x);
    comm.all_reduce_sum(d.get(), 1000);
    expect_equal(errors, "all_reduce_sum(float)", d.read(), want);
    DeviceArray<float> a(x);
    comm.start_all_reduce_sum(a.get(), 1000);
    if (comm.wait_all() < 0) errors += "wait_all returned a negative time\n";
    expect_equal(errors, "start_all_reduce_sum + wait_all", a.read(), want);
  }
  {
    DeviceArray<double> d(std::vector<double>{1.0 + rank, 10.0 * rank});
    comm.all_reduce_sum(d.get(), 2);
    expect_equal(errors, "all_reduce_sum(double)", d.read(), std::vector<double>{3.0, 10.0});
    DeviceArray<double> m(std::vector<double>{double(rank), -double(rank)});
    comm.all_reduce_max(m.get(), 2);
    expect_equal(errors, "all_reduce_max", m.read(), std::vector<double>{1.0, 0.0});
  }
  // reduce-scatter, equal blocks and unequal ones: in[i] = 100 rank + i, sum 100 + 2 i.
  for (const std::vector<int64_t>& counts :
       {std::vector<int64_t>{4, 4}, std::vector<int64_t>{3, 5}}) {
    std::vector<float> in(8);
    for (int i = 0; i < 8; ++i) in[i] = float(100 * rank + i);
    const int64_t off = rank == 0 ? 0 : counts[0];
    std::vector<float> want(static_cast<size_t>(counts[rank]));
    for (size_t i = 0; i < want.size(); ++i) want[i] = float(100 + 2 * (off + int64_t(i)));
    DeviceArray<float> din(in), dout(std::vector<float>(want.size(), -1.0f));
    comm.reduce_scatter_sum(din.get(), dout.get(), counts);
    expect_equal(errors, "reduce_scatter_sum " + std::to_string(counts[0]), dout.read(), want);
  }
  // all-gather: each rank fills its own block with 10 (rank + 1) + i, the rest with junk.
  for (const std::vector<int64_t>& counts :
       {std::vector<int64_t>{4, 4}, std::vector<int64_t>{3, 5}}) {
    std::vector<float> data(8, -7.0f), want(8);
    std::vector<uint16_t> half(8, 9999), half_want(8);
    for (int r = 0; r < 2; ++r) {
      const int64_t off = r == 0 ? 0 : counts[0];
      for (int64_t i = 0; i < counts[r]; ++i) {
        want[off + i] = float(10 * (r + 1) + i);
        half_want[off + i] = uint16_t(1000 * (r + 1) + i);
        if (r == rank) data[off + i] = want[off + i], half[off + i] = half_want[off + i];
      }
    }
    DeviceArray<float> d(data);
    comm.all_gather(d.get(), counts);
    expect_equal(errors, "all_gather(float) " + std::to_string(counts[0]), d.read(), want);
    DeviceArray<uint16_t> h(half);
    comm.all_gather(h.get(), counts);
    expect_equal(errors, "all_gather(uint16) " + std::to_string(counts[0]), h.read(), half_want);
  }
  {  // broadcast from rank 1
    DeviceArray<uint16_t> b(std::vector<uint16_t>(5, uint16_t(rank == 1 ? 42 : other)));
    comm.broadcast(b.get(), 10, 1);
    expect_equal(errors, "broadcast", b.read(), std::vector<uint16_t>(5, 42));
  }
  comm.barrier();
  if (comm.describe().find("NCCL 2.") != 0) errors += "describe: " + comm.describe() + "\n";
  return errors;
}

std::string scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("nanogpt_nccl_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(dir);
  return dir.string();
}

// NCCL's settings for two ranks of one process tree on one GPU.
void share_one_gpu(int rank) {
  ::setenv("NCCL_HOSTID", ("nanogpt-test-rank" + std::to_string(rank)).c_str(), 1);
  ::setenv("NCCL_P2P_DISABLE", "1", 1);
  ::setenv("NCCL_SHM_DISABLE", "1", 1);
  ::setenv("NCCL_SOCKET_IFNAME", "lo", 1);
}

#endif  // NANOGPT_TEST_NCCL

TEST(NcclCommunicator, TwoRanksSharingOneGpuAgreeOnEveryCollective) {
#if !NANOGPT_TEST_NCCL
  GTEST_SKIP() << "built without NCCL (NANOGPT_NCCL: needs the CUDA backend and nccl.h/libnccl)";
#else
  std::string why;
  if (usable_gpus(why) == 0) GTEST_SKIP() << "no usable GPU: " << why;
  const std::string dir = scratch("two");
  const auto ranks = fork_children(
      2,
      [&](int rank) {
        share_one_gpu(rank);
        int count = 0;
        cudaGetDeviceCount(&count);
        const LaunchInfo launch{Launcher::kNone, rank, 2, rank, 2};
        const GpuAssignment gpu =
            assign_gpu(launch, count, process_env(), /*allow_sharing=*/true);
        const RendezvousSpec spec{rank, 2, "nccl-test-" + std::to_string(::getppid()), 60};
        const Blob id = file_rendezvous(dir, spec, rank == 0 ? NcclCommunicator::make_unique_id()
                                                             : Blob{});
        NcclCommunicator comm(id, {rank, 2, 2, gpu.device, 60});
        return run_collectives(comm, rank);
      },
      240);
  ASSERT_EQ(ranks.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(ranks[r].exit_code, 0) << "rank " << r << ": " << ranks[r].text;
    EXPECT_EQ(ranks[r].text, "") << "rank " << r;
  }
#endif
}

TEST(NcclCommunicator, APeerThatNeverComesIsATimeoutNamingTheRank) {
#if !NANOGPT_TEST_NCCL
  GTEST_SKIP() << "built without NCCL (NANOGPT_NCCL: needs the CUDA backend and nccl.h/libnccl)";
#else
  std::string why;
  if (usable_gpus(why) == 0) GTEST_SKIP() << "no usable GPU: " << why;
  const auto alone = fork_children(
      1,
      [](int) -> std::string {
        share_one_gpu(0);
        try {
          NcclCommunicator comm(NcclCommunicator::make_unique_id(), {0, 2, 1, 0, 3});
        } catch (const Error& e) {
          const std::string m = e.what();
          if (m.find("rank 0 of 2: waited") != std::string::npos &&
              m.find("communicator init") != std::string::npos) {
            return "";
          }
          return "unexpected error: " + m;
        }
        return "no error although rank 1 never came";
      },
      120);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].exit_code, 0) << alone[0].text;
#endif
}

}  // namespace
}  // namespace nanogpt
