// NcclCommunicator (nccl_communicator.h): a non-blocking NCCL communicator on two streams of its
// own (blocking collectives, and start_all_reduce_sum's overlapped one), each wait a polling loop
// over the operation's event and the communicator's asynchronous error with a deadline.
#include "distributed/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <time.h>

#include <cstring>

#include "core/check.h"
#include "core/timer.h"

namespace nanogpt {

struct NcclCommunicator::Impl {
  NcclOptions opt;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;        // blocking collectives
  cudaStream_t async_stream = nullptr;  // start_all_reduce_sum
  cudaStream_t compute = nullptr;       // the caller's (not owned; nullptr: legacy default)
  cudaEvent_t compute_ready = nullptr, done = nullptr;
  std::vector<cudaEvent_t> pending;     // one per started all-reduce
  float* scratch = nullptr;             // barrier's float
  void* staging = nullptr;              // host buffers' device copies (grown, never shrunk)
  size_t staging_bytes = 0;
  bool aborted = false;

  void check_cuda(cudaError_t rc, const char* what) const {
    CHECK(rc == cudaSuccess, "rank {} of {}: CUDA error in {}: {} ({})", opt.rank, opt.world_size,
          what, cudaGetErrorString(rc), cudaGetErrorName(rc));
  }

  void abort_comm() {
    if (comm && !aborted) ncclCommAbort(comm);
    aborted = true;
  }

  [[noreturn]] void fail_nccl(ncclResult_t rc, const char* what) {
    const std::string last = comm ? ncclGetLastError(comm) : "";
    abort_comm();
    fail("rank {} of {}: NCCL error in {}: {}{}{} (a peer rank has probably died, or its GPU or "
         "the network failed); the communicator was aborted",
         opt.rank, opt.world_size, what, ncclGetErrorString(rc), last.empty() ? "" : ": ", last);
  }

  [[noreturn]] void fail_timeout(double waited, const char* what) {
    abort_comm();
    fail("rank {} of {}: waited {:.0f} s for the other ranks in {} and gave up (NCCL "
         "communicator aborted): a peer rank has died or hangs, or the network between the hosts "
         "is down (comm_timeout = {} s; raise it if rank 0's evaluations or checkpoints take "
         "longer)",
         opt.rank, opt.world_size, waited, what, opt.timeout_s);
  }

  // Sleeps between polls once a short spin has not seen the operation finish.
  static void pause(int64_t& polls) {
    if (++polls > 2000) {
      timespec t{0, 50'000};
      nanosleep(&t, nullptr);
    }
  }

  // The result of an NCCL call on the non-blocking communicator: polls until the call has been
  // taken (ncclInProgress turns into ncclSuccess) or fails.
  void settle(ncclResult_t rc, const char* what) {
    Timer waited;
    int64_t polls = 0;
    while (rc == ncclInProgress) {
      if (waited.seconds() > opt.timeout_s) fail_timeout(waited.seconds(), what);
      pause(polls);
      if (ncclCommGetAsyncError(comm, &rc) != ncclSuccess) break;
    }
    if (rc != ncclSuccess) fail_nccl(rc, what);
  }

  // The watchdog: polls `event` and the communicator's asynchronous error until the event has
  // happened, an error shows, or the deadline passes (then aborts).
  void wait_event(cudaEvent_t event, const char* what) {
    Timer waited;
    int64_t polls = 0;
    for (;;) {
      const cudaError_t q = cudaEventQuery(event);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady) check_cuda(q, what);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm, &async);
      if (async != ncclSuccess && async != ncclInProgress) fail_nccl(async, what);
      if (waited.seconds() > opt.timeout_s) fail_timeout(waited.seconds(), what);
      pause(polls);
    }
  }

  // `s` waits for the work already on the caller's compute stream.
  void after_compute(cudaStream_t s) {
    check_cuda(cudaEventRecord(compute_ready, compute), "cudaEventRecord");
    check_cuda(cudaStreamWaitEvent(s, compute_ready, 0), "cudaStreamWaitEvent");
  }

  // Runs `enqueue` (the NCCL calls of one operation) on the blocking stream and waits for it.
  template <typename F>
  void blocking(const char* what, F&& enqueue) {
    CHECK(!aborted, "rank {}: {} on an aborted NCCL communicator", opt.rank, what);
    check_cuda(cudaSetDevice(opt.device), "cudaSetDevice");
    after_compute(stream);
    settle(enqueue(), what);
    check_cuda(cudaEventRecord(done, stream), "cudaEventRecord");
    wait_event(done, what);
  }

  // The NCCL calls of one operation over blocks of `counts` elements: one collective where every
  // block has the same size (`equal`), else one call per rank (`per_rank(r, offset)`) in a group.
  template <typename Equal, typename PerRank>
  ncclResult_t by_blocks(const std::vector<int64_t>& counts, Equal&& equal, PerRank&& per_rank) {
    CHECK(static_cast<int>(counts.size()) == opt.world_size, "NCCL: {} block counts for {} ranks",
          counts.size(), opt.world_size);
    bool same = true;
    for (int64_t c : counts) same = same && c == counts[0];
    if (same) return equal(static_cast<size_t>(counts[0]));
    ncclResult_t rc = ncclGroupStart();
    if (rc != ncclSuccess) return rc;
    int64_t off = 0;
    for (int r = 0; r < opt.world_size; ++r) {
      rc = per_rank(r, off);
      if (rc != ncclSuccess && rc != ncclInProgress) break;
      off += counts[static_cast<size_t>(r)];
    }
    const ncclResult_t end = ncclGroupEnd();
    return rc != ncclSuccess && rc != ncclInProgress ? rc : end;
  }

  // Whether p is host memory (pageable or pinned) rather than device memory.
  static bool on_host(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // older runtimes: an unregistered host pointer is an error
      return true;
    }
    return a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged;
  }

  // Runs op(device pointer) on `bytes` of `data`: device memory as it is; host memory through the
  // staging buffer (copied in, and back after the operation when copy_back).
  template <typename F>
  void on_device(void* data, size_t bytes, bool copy_back, F&& op) {
    if (bytes == 0 || !on_host(data)) {
      op(data);
      return;
    }
    check_cuda(cudaSetDevice(opt.device), "cudaSetDevice");
    if (staging_bytes < bytes) {
      if (staging) cudaFree(staging);
      staging = nullptr;
      staging_bytes = 0;
      check_cuda(cudaMalloc(&staging, bytes), "cudaMalloc (staging a host buffer)");
      staging_bytes = bytes;
    }
    check_cuda(cudaMemcpy(staging, data, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (to device)");
    op(staging);
    if (copy_back) {
      check_cuda(cudaMemcpy(data, staging, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (to host)");
    }
  }

  void all_reduce(void* data, int64_t n, ncclDataType_t type, ncclRedOp_t op, const char* what,
                  size_t elem) {
    on_device(data, static_cast<size_t>(n) * elem, true, [&](void* d) {
      blocking(what, [&] {
        return ncclAllReduce(d, d, static_cast<size_t>(n), type, op, comm, stream);
      });
    });
  }

  void all_gather(void* data, const std::vector<int64_t>& counts, ncclDataType_t type, int elem) {
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    on_device(data, static_cast<size_t>(total) * elem, true,
              [&](void* d) { all_gather_device(d, counts, type, elem); });
  }

  void all_gather_device(void* data, const std::vector<int64_t>& counts, ncclDataType_t type,
                         int elem) {
    auto* bytes = static_cast<char*>(data);
    blocking("all-gather", [&] {
      return by_blocks(
          counts,
          [&](size_t count) {
            return ncclAllGather(bytes + static_cast<size_t>(opt.rank) * count * elem, bytes,
                                 count, type, comm, stream);
          },
          [&](int r, int64_t off) {
            char* block = bytes + off * elem;
            return ncclBroadcast(block, block, static_cast<size_t>(counts[static_cast<size_t>(r)]),
                                 type, r, comm, stream);
          });
    });
  }
};

size_t NcclCommunicator::unique_id_bytes() { return sizeof(ncclUniqueId); }

std::vector<uint8_t> NcclCommunicator::make_unique_id() {
  ncclUniqueId id;
  const ncclResult_t rc = ncclGetUniqueId(&id);
  CHECK(rc == ncclSuccess, "ncclGetUniqueId: {} (rank 0 could not make the communicator's id)",
        ncclGetErrorString(rc));
  return std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id),
                              reinterpret_cast<uint8_t*>(&id) + sizeof(id));
}

std::string NcclCommunicator::library_version() {
  int v = 0;
  ncclGetVersion(&v);
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

NcclCommunicator::NcclCommunicator(const std::vector<uint8_t>& unique_id,
                                   const NcclOptions& options)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opt = options;
  CHECK(unique_id.size() == sizeof(ncclUniqueId),
        "rank {}: the NCCL unique id has {} bytes, expected {} (the rendezvous handed over "
        "something else)",
        options.rank, unique_id.size(), sizeof(ncclUniqueId));
  m.check_cuda(cudaSetDevice(options.device), "cudaSetDevice");
  m.check_cuda(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  m.check_cuda(cudaStreamCreateWithFlags(&m.async_stream, cudaStreamNonBlocking),
               "cudaStreamCreate");
  m.check_cuda(cudaEventCreateWithFlags(&m.compute_ready, cudaEventDisableTiming),
               "cudaEventCreate");
  m.check_cuda(cudaEventCreateWithFlags(&m.done, cudaEventDisableTiming), "cudaEventCreate");
  m.check_cuda(cudaMalloc(&m.scratch, sizeof(float)), "cudaMalloc");
  ncclUniqueId id;
  std::memcpy(&id, unique_id.data(), sizeof(id));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  m.settle(ncclCommInitRankConfig(&m.comm, options.world_size, id, options.rank, &config),
           "communicator init (ncclCommInitRank: waiting for every rank)");
}

NcclCommunicator::~NcclCommunicator() {
  Impl& m = *impl_;
  if (m.comm && !m.aborted) {
    ncclResult_t rc = ncclCommFinalize(m.comm);
    Timer t;
    while (rc == ncclInProgress && t.seconds() < m.opt.timeout_s) ncclCommGetAsyncError(m.comm, &rc);
    if (rc == ncclSuccess) {
      ncclCommDestroy(m.comm);
    } else {
      ncclCommAbort(m.comm);
    }
  }
  for (cudaEvent_t e : m.pending) cudaEventDestroy(e);
  if (m.done) cudaEventDestroy(m.done);
  if (m.compute_ready) cudaEventDestroy(m.compute_ready);
  if (m.stream) cudaStreamDestroy(m.stream);
  if (m.async_stream) cudaStreamDestroy(m.async_stream);
  if (m.scratch) cudaFree(m.scratch);
  if (m.staging) cudaFree(m.staging);
}

void NcclCommunicator::set_compute_stream(void* cuda_stream) {
  impl_->compute = static_cast<cudaStream_t>(cuda_stream);
}

int NcclCommunicator::rank() const { return impl_->opt.rank; }
int NcclCommunicator::size() const { return impl_->opt.world_size; }
int NcclCommunicator::local_size() const { return impl_->opt.local_world_size; }

void NcclCommunicator::all_reduce_sum(float* data, int64_t n) {
  impl_->all_reduce(data, n, ncclFloat32, ncclSum, "all-reduce", sizeof(float));
}
void NcclCommunicator::all_reduce_sum(double* data, int64_t n) {
  impl_->all_reduce(data, n, ncclFloat64, ncclSum, "all-reduce", sizeof(double));
}
void NcclCommunicator::all_reduce_max(double* data, int64_t n) {
  impl_->all_reduce(data, n, ncclFloat64, ncclMax, "all-reduce (max)", sizeof(double));
}

void NcclCommunicator::start_all_reduce_sum(float* data, int64_t n) {
  Impl& m = *impl_;
  CHECK(!m.aborted, "rank {}: gradient all-reduce on an aborted NCCL communicator", m.opt.rank);
  CHECK(n == 0 || !Impl::on_host(data),
        "rank {}: the NCCL communicator's overlapped all-reduce takes device memory (a GPU's "
        "gradients), not host memory: train with --device=cuda, or use MPI for a CPU run",
        m.opt.rank);
  m.check_cuda(cudaSetDevice(m.opt.device), "cudaSetDevice");
  m.after_compute(m.async_stream);
  m.settle(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat32, ncclSum, m.comm,
                         m.async_stream),
           "gradient all-reduce");
  cudaEvent_t e = nullptr;
  m.check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  m.pending.push_back(e);
  m.check_cuda(cudaEventRecord(e, m.async_stream), "cudaEventRecord");
}

double NcclCommunicator::wait_all() {
  Impl& m = *impl_;
  Timer t;
  for (cudaEvent_t e : m.pending) m.wait_event(e, "gradient all-reduce");
  for (cudaEvent_t e : m.pending) cudaEventDestroy(e);
  m.pending.clear();
  return t.seconds();
}

void NcclCommunicator::reduce_scatter_sum(const float* in, float* out,
                                          const std::vector<int64_t>& counts) {
  Impl& m = *impl_;
  CHECK(!Impl::on_host(in) && !Impl::on_host(out),
        "rank {}: the NCCL communicator's reduce-scatter takes device memory (ZeRO-1's gradient "
        "shards on a GPU), not host memory",
        m.opt.rank);
  m.blocking("reduce-scatter", [&] {
    return m.by_blocks(
        counts,
        [&](size_t count) {
          return ncclReduceScatter(in, out, count, ncclFloat32, ncclSum, m.comm, m.stream);
        },
        [&](int r, int64_t off) {
          // (recvbuff is read on the root only; the own `out` elsewhere, never a null pointer)
          return ncclReduce(in + off, out,
                            static_cast<size_t>(counts[static_cast<size_t>(r)]), ncclFloat32,
                            ncclSum, r, m.comm, m.stream);
        });
  });
}

void NcclCommunicator::all_gather(float* data, const std::vector<int64_t>& counts) {
  impl_->all_gather(data, counts, ncclFloat32, 4);
}
void NcclCommunicator::all_gather(uint16_t* data, const std::vector<int64_t>& counts) {
  impl_->all_gather(data, counts, ncclFloat16, 2);  // any 2-byte type: the bits are copied
}

void NcclCommunicator::broadcast(void* data, int64_t bytes, int root) {
  Impl& m = *impl_;
  m.on_device(data, static_cast<size_t>(bytes), true, [&](void* d) {
    m.blocking("broadcast", [&] {
      return ncclBroadcast(d, d, static_cast<size_t>(bytes), ncclUint8, root, m.comm, m.stream);
    });
  });
}

void NcclCommunicator::barrier() {
  Impl& m = *impl_;
  m.blocking("barrier", [&] {
    return ncclAllReduce(m.scratch, m.scratch, 1, ncclFloat32, ncclSum, m.comm, m.stream);
  });
}

void NcclCommunicator::abort_job(int) { impl_->abort_comm(); }

std::string NcclCommunicator::describe() const {
  return fmt::format("NCCL {}, {} ranks, {} on this host", library_version(), size(),
                     local_size());
}

}  // namespace nanogpt
