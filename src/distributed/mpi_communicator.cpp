// MpiCommunicator: MPI_COMM_WORLD with non-blocking collectives and deadline-bounded waits.
#include "distributed/mpi_communicator.h"

#include <time.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "core/check.h"
#include "core/timer.h"

namespace nanogpt {

namespace {

// MPI counts are int: larger arrays go in chunks of this many elements.
constexpr int64_t kMaxChunk = int64_t{1} << 30;

int as_int_count(int64_t n, const char* what) {
  CHECK(n >= 0 && n <= INT_MAX, "{}: {} elements do not fit an MPI count (at most {})", what, n,
        INT_MAX);
  return static_cast<int>(n);
}

}  // namespace

MpiCommunicator::MpiCommunicator(double timeout_s) : timeout_s_(timeout_s) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
  MPI_Comm_size(local, &local_size_);
  MPI_Comm_free(&local);
}

MpiCommunicator::~MpiCommunicator() {
  if (aborted_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiCommunicator::check(int rc, const char* what) const {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("rank {} of {}: MPI error in {}: {} (a peer rank has probably died or the network between "
       "the hosts failed)",
       rank_, size_, what, std::string(text, static_cast<size_t>(len)));
}

void MpiCommunicator::wait(std::vector<MPI_Request>& requests, const char* what) {
  if (requests.empty()) return;
  Timer waited;
  int64_t polls = 0;
  for (;;) {
    int done = 0;
    check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                      MPI_STATUSES_IGNORE),
          what);
    if (done) break;
    if (waited.seconds() > timeout_s_) {
      fail("rank {} of {}: waited {:.0f} s for the other ranks in {} and gave up: a peer rank has "
           "died or hangs, or the network between the hosts is down (comm_timeout = {} s; raise "
           "it if rank 0's evaluations or checkpoints take longer than that)",
           rank_, size_, waited.seconds(), what, timeout_s_);
    }
    // Spin briefly (a collective usually finishes within microseconds of the last peer), then
    // sleep between polls so a rank waiting on rank 0's evaluation leaves the core to it.
    if (++polls > 2000) {
      timespec pause{0, 50'000};
      nanosleep(&pause, nullptr);
    }
  }
  requests.clear();
}

void MpiCommunicator::all_reduce(void* data, int64_t n, MPI_Datatype type, MPI_Op op,
                                 const char* what) {
  int elem = 0;
  MPI_Type_size(type, &elem);
  std::vector<MPI_Request> reqs;
  for (int64_t off = 0; off < n; off += kMaxChunk) {
    const int count = static_cast<int>(std::min(kMaxChunk, n - off));
    reqs.emplace_back();
    check(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + off * elem, count, type, op,
                         MPI_COMM_WORLD, &reqs.back()),
          what);
  }
  wait(reqs, what);
}

void MpiCommunicator::all_reduce_sum(float* data, int64_t n) {
  all_reduce(data, n, MPI_FLOAT, MPI_SUM, "all-reduce");
}
void MpiCommunicator::all_reduce_sum(double* data, int64_t n) {
  all_reduce(data, n, MPI_DOUBLE, MPI_SUM, "all-reduce");
}
void MpiCommunicator::all_reduce_max(double* data, int64_t n) {
  all_reduce(data, n, MPI_DOUBLE, MPI_MAX, "all-reduce (max)");
}

void MpiCommunicator::start_all_reduce_sum(float* data, int64_t n) {
  for (int64_t off = 0; off < n; off += kMaxChunk) {
    const int count = static_cast<int>(std::min(kMaxChunk, n - off));
    pending_.emplace_back();
    check(MPI_Iallreduce(MPI_IN_PLACE, data + off, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                         &pending_.back()),
          "gradient all-reduce");
  }
}

void MpiCommunicator::progress() {
  if (pending_.empty()) return;
  int done = 0;
  check(MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done,
                    MPI_STATUSES_IGNORE),
        "gradient all-reduce");
  if (done) pending_.clear();
}

double MpiCommunicator::wait_all() {
  Timer t;
  wait(pending_, "gradient all-reduce");
  return t.seconds();
}

void MpiCommunicator::reduce_scatter_sum(const float* in, float* out,
                                         const std::vector<int64_t>& counts) {
  CHECK(static_cast<int>(counts.size()) == size_, "reduce_scatter_sum: {} counts for {} ranks",
        counts.size(), size_);
  std::vector<int> c(counts.size());
  for (size_t r = 0; r < counts.size(); ++r) c[r] = as_int_count(counts[r], "reduce-scatter");
  std::vector<MPI_Request> reqs(1);
  check(MPI_Ireduce_scatter(in, out, c.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &reqs[0]),
        "reduce-scatter");
  wait(reqs, "reduce-scatter");
}

void MpiCommunicator::all_gather(float* data, const std::vector<int64_t>& counts) {
  all_gather(data, counts, MPI_FLOAT);
}

void MpiCommunicator::all_gather(uint16_t* data, const std::vector<int64_t>& counts) {
  all_gather(data, counts, MPI_UINT16_T);
}

void MpiCommunicator::all_gather(void* data, const std::vector<int64_t>& counts,
                                 MPI_Datatype type) {
  CHECK(static_cast<int>(counts.size()) == size_, "all_gather: {} counts for {} ranks",
        counts.size(), size_);
  std::vector<int> c(counts.size()), displs(counts.size());
  int64_t off = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    c[r] = as_int_count(counts[r], "all-gather");
    displs[r] = as_int_count(off, "all-gather");
    off += counts[r];
  }
  std::vector<MPI_Request> reqs(1);
  check(MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, c.data(), displs.data(), type,
                        MPI_COMM_WORLD, &reqs[0]),
        "all-gather");
  wait(reqs, "all-gather");
}

void MpiCommunicator::broadcast(void* data, int64_t bytes, int root) {
  std::vector<MPI_Request> reqs;
  for (int64_t off = 0; off < bytes; off += kMaxChunk) {
    const int count = static_cast<int>(std::min(kMaxChunk, bytes - off));
    reqs.emplace_back();
    check(MPI_Ibcast(static_cast<char*>(data) + off, count, MPI_BYTE, root, MPI_COMM_WORLD,
                     &reqs.back()),
          "broadcast");
  }
  wait(reqs, "broadcast");
}

void MpiCommunicator::barrier() {
  std::vector<MPI_Request> reqs(1);
  check(MPI_Ibarrier(MPI_COMM_WORLD, &reqs[0]), "barrier");
  wait(reqs, "barrier");
}

void MpiCommunicator::abort_job(int exit_code) {
  aborted_ = true;
  // MPI_Abort asks the launcher to end every rank; when the launcher is unreachable (the network
  // to its host is down) it may never return, so this rank ends itself a little later regardless.
  std::thread([exit_code] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    std::_Exit(exit_code);
  }).detach();
  MPI_Abort(MPI_COMM_WORLD, exit_code);
}

std::string MpiCommunicator::describe() const {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<size_t>(len));
  if (auto comma = v.find(','); comma != std::string::npos) v.resize(comma);
  return fmt::format("MPI ({}), {} ranks, {} on this host", v, size_, local_size_);
}

}  // namespace nanogpt
