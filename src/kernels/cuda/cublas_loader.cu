// cuBLAS and cuBLASLt loaded on first use, not at program start: linking them puts ~220 MB of
// relocated library pages into every process and costs ~0.7 s at start-up, CPU-only runs included.
// So the binary does not link them; this file defines the cuBLAS / cuBLASLt entry points the GPU
// ops call (the exact declarations of cublas_api.h and cublasLt.h), each forwarding to the real one
// found with dlopen/dlsym the first time it is called (libcublas.so.<major>, libcublasLt.so.<major>
// of the toolkit built against, from the loader's search path: LD_LIBRARY_PATH, ldconfig).
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "kernels/cuda/cuda_util.cuh"

namespace nanogpt::cuda {
namespace {

enum class CublasLib { kLt, kBlas };

// The address of `name` in the library, loading the library on the first call. The handles are
// the process's one load of each library (never closed), kept in function-local statics.
void* lazy_symbol(CublasLib lib, const char* name) {
  static std::mutex mutex;
  static void* handles[2] = {nullptr, nullptr};
  const std::lock_guard<std::mutex> lock(mutex);
  const int i = lib == CublasLib::kLt ? 0 : 1;
  if (handles[i] == nullptr) {
    const std::string soname = std::string(lib == CublasLib::kLt ? "libcublasLt.so." : "libcublas.so.") +
                               std::to_string(CUBLAS_VER_MAJOR);
    handles[i] = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handles[i] == nullptr) {
      const char* why = dlerror();
      fail("cannot load {} ({}), which --device=cuda needs: install CUDA {}'s cuBLAS (README "
           "'NVIDIA GPUs') or add its folder (e.g. /usr/local/cuda/lib64) to LD_LIBRARY_PATH",
           soname, why ? why : "not found", CUBLAS_VER_MAJOR);
    }
  }
  void* f = dlsym(handles[i], name);
  CHECK(f != nullptr, "{} has no symbol {}: a cuBLAS older than the CUDA {} this was built with?",
        lib == CublasLib::kLt ? "libcublasLt" : "libcublas", name, CUBLAS_VER_MAJOR);
  return f;
}

}  // namespace
}  // namespace nanogpt::cuda

// One forwarding definition per entry point: RET name PARAMS { return real ARGS; }.
#define NANOGPT_LAZY_CUBLAS(lib, ret, name, params, args)                                        \
  ret CUBLASWINAPI name params {                                                               \
    static const auto real = reinterpret_cast<ret(*) params>(                                  \
        nanogpt::cuda::lazy_symbol(nanogpt::cuda::CublasLib::lib, #name));                     \
    return real args;                                                                          \
  }

NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtCreate, (cublasLtHandle_t* h), (h))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtDestroy, (cublasLtHandle_t h), (h))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmul,
                    (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                     const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                     cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                     cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                     const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspace_bytes,
                     cudaStream_t stream),
                    (h, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                     workspace_bytes, stream))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulAlgoGetHeuristic,
                    (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t Adesc,
                     cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc,
                     cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t pref, int requested,
                     cublasLtMatmulHeuristicResult_t results[], int* returned),
                    (h, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulDescCreate,
                    (cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                     cudaDataType_t scale),
                    (desc, compute, scale))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc),
                    (desc))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulDescSetAttribute,
                    (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                     const void* buf, size_t bytes),
                    (desc, attr, buf, bytes))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulPreferenceCreate,
                    (cublasLtMatmulPreference_t* pref), (pref))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulPreferenceDestroy,
                    (cublasLtMatmulPreference_t pref), (pref))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
                    (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                     const void* buf, size_t bytes),
                    (pref, attr, buf, bytes))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatrixLayoutCreate,
                    (cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                     uint64_t cols, int64_t ld),
                    (layout, type, rows, cols, ld))
NANOGPT_LAZY_CUBLAS(kLt, cublasStatus_t, cublasLtMatrixLayoutDestroy,
                    (cublasLtMatrixLayout_t layout), (layout))
NANOGPT_LAZY_CUBLAS(kBlas, cublasStatus_t, cublasCreate_v2, (cublasHandle_t* h), (h))
NANOGPT_LAZY_CUBLAS(kBlas, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t h), (h))
NANOGPT_LAZY_CUBLAS(kBlas, cublasStatus_t, cublasSetWorkspace_v2,
                    (cublasHandle_t h, void* workspace, size_t bytes), (h, workspace, bytes))
NANOGPT_LAZY_CUBLAS(kBlas, cublasStatus_t, cublasSetMathMode, (cublasHandle_t h, cublasMath_t mode),
                    (h, mode))
NANOGPT_LAZY_CUBLAS(kBlas, const char*, cublasGetStatusString, (cublasStatus_t status), (status))
NANOGPT_LAZY_CUBLAS(kBlas, cublasStatus_t, cublasGemmStridedBatchedEx,
                    (cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int m,
                     int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
                     long long int strideA, const void* B, cudaDataType Btype, int ldb,
                     long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                     long long int strideC, int batchCount, cublasComputeType_t computeType,
                     cublasGemmAlgo_t algo),
                    (h, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                     strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo))
