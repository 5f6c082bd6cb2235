// NCCL loaded on first use, not at program start: linking libnccl (~220 MB) would map it into
// every process, CPU-only runs included, and a machine without it could not start nanogpt at all.
// So nothing links it; this file defines the NCCL entry points nccl_communicator.cpp calls (the
// exact declarations of nccl.h), each forwarding to the real one found with dlopen/dlsym the
// first time it is called (libnccl.so.<major> from the loader's search path: LD_LIBRARY_PATH,
// ldconfig; e.g. PyTorch's nvidia-nccl package's lib folder).
#include <dlfcn.h>
#include <nccl.h>

#include <mutex>
#include <string>

#include "core/check.h"

namespace nanogpt {
namespace {

// The address of `name` in libnccl, loading it on the first call (never closed).
void* nccl_symbol(const char* name) {
  static std::mutex mutex;
  static void* handle = nullptr;
  const std::lock_guard<std::mutex> lock(mutex);
  if (handle == nullptr) {
    const std::string soname = "libnccl.so." + std::to_string(NCCL_MAJOR);
    handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      fail(
          "cannot load {} ({}), which --device=cuda on several GPUs needs: install NCCL "
          "(libnccl2) or add its folder to LD_LIBRARY_PATH (PyTorch's: python3 -c 'import "
          "nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))'/lib)",
          soname, why ? why : "not found");
    }
  }
  void* f = dlsym(handle, name);
  CHECK(f != nullptr, "libnccl has no symbol {}: an NCCL older than the {}.{} this was built with?",
        name, NCCL_MAJOR, NCCL_MINOR);
  return f;
}

}  // namespace
}  // namespace nanogpt

// One forwarding definition per entry point: RET name PARAMS { return real ARGS; }.
#define NANOGPT_LAZY_NCCL(ret, name, params, args)                                         \
  ret name params {                                                                        \
    static const auto real = reinterpret_cast<ret(*) params>(nanogpt::nccl_symbol(#name)); \
    return real args;                                                                      \
  }

NANOGPT_LAZY_NCCL(ncclResult_t, ncclGetVersion, (int* version), (version))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclGetUniqueId, (ncclUniqueId * id), (id))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclCommInitRankConfig,
                  (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config),
                  (comm, nranks, id, rank, config))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclCommFinalize, (ncclComm_t comm), (comm))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclCommDestroy, (ncclComm_t comm), (comm))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclCommAbort, (ncclComm_t comm), (comm))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t* error),
                  (comm, error))
NANOGPT_LAZY_NCCL(const char*, ncclGetErrorString, (ncclResult_t result), (result))
NANOGPT_LAZY_NCCL(const char*, ncclGetLastError, (ncclComm_t comm), (comm))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclGroupStart, (), ())
NANOGPT_LAZY_NCCL(ncclResult_t, ncclGroupEnd, (), ())
NANOGPT_LAZY_NCCL(ncclResult_t, ncclAllReduce,
                  (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream),
                  (send, recv, count, type, op, comm, stream))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclReduceScatter,
                  (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                   ncclComm_t comm, cudaStream_t stream),
                  (send, recv, count, type, op, comm, stream))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclReduce,
                  (const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                   int root, ncclComm_t comm, cudaStream_t stream),
                  (send, recv, count, type, op, root, comm, stream))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclAllGather,
                  (const void* send, void* recv, size_t count, ncclDataType_t type, ncclComm_t comm,
                   cudaStream_t stream),
                  (send, recv, count, type, comm, stream))
NANOGPT_LAZY_NCCL(ncclResult_t, ncclBroadcast,
                  (const void* send, void* recv, size_t count, ncclDataType_t type, int root,
                   ncclComm_t comm, cudaStream_t stream),
                  (send, recv, count, type, root, comm, stream))
