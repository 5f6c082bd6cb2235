// The fully connected layer on the GPU (ops_cuda.h: matmul_forward, matmul_backward): every matmul
// goes through cuBLASLt (tensor cores: TF32 for float32 when the context allows it, bfloat16 with
// float32 accumulation), the bias of the forward through cuBLASLt's BIAS epilogue, and the bias
// gradient through a deterministic two-pass column-sum kernel of this file (no atomics; 16-byte
// loads where the rows allow). The MLP's activation (tanh GELU, bfloat16) can ride in the products'
// epilogues: GELU_AUX(_BIAS) in the forward, DGELU in the backward (matmul_gelu_forward /
// matmul_gelu_backward; they fall back to elementwise.cu's kernels where cuBLASLt has none).
//
// Layout: cuBLASLt is column-major. A row-major (R, K) tensor is, in the same memory, the
// column-major (K, R) matrix with leading dimension K, i.e. its transpose. So
//   forward   out (N,OC) = inp (N,C) W^T     <=>  out^T (OC,N)  = op_T(W_cm (C,OC)) inp_cm (C,N)
//   dinp      dinp (N,C) = dout (N,OC) W     <=>  dinp^T (C,N)  = W_cm (C,OC) dout_cm (OC,N)
//   dweight   dW (OC,C) += dout^T inp        <=>  dW^T (C,OC)  += inp_cm (C,N) op_T(dout_cm (OC,N))
// where X_cm is the row-major tensor X read column-major (X^T).
#include "kernels/cuda/cuda_util.cuh"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <string>

#include <cstdint>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/vec.cuh"

namespace nanogpt::cuda {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kBF16: return CUDA_R_16BF;
    case DType::kF16: return CUDA_R_16F;
    default: fail("matmul on the GPU takes float32, bfloat16 or float16 tensors, not {}",
                  dtype_name(t));
  }
}

// RAII owners of the cuBLASLt descriptors of one call (destroyed also when a check throws).
struct LtMatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  LtMatmulDesc(cublasComputeType_t compute) {
    NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, compute, CUDA_R_32F));
  }
  ~LtMatmulDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
  LtMatmulDesc(const LtMatmulDesc&) = delete;
  LtMatmulDesc& operator=(const LtMatmulDesc&) = delete;
};
struct LtLayout {
  cublasLtMatrixLayout_t l = nullptr;
  // A column-major rows x cols matrix with leading dimension ld.
  LtLayout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    NANOGPT_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                                    static_cast<uint64_t>(cols), ld));
  }
  ~LtLayout() {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  LtLayout(const LtLayout&) = delete;
  LtLayout& operator=(const LtLayout&) = delete;
};
struct LtPreference {
  cublasLtMatmulPreference_t p = nullptr;
  LtPreference() { NANOGPT_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p)); }
  ~LtPreference() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
  LtPreference(const LtPreference&) = delete;
  LtPreference& operator=(const LtPreference&) = delete;
};

// The largest power of two (<= 256) dividing the address: cuBLASLt's heuristic assumes 256-byte
// aligned buffers unless told otherwise, and pointers into packed tensors may be less aligned.
uint32_t alignment_of(const void* p) {
  uint64_t a = reinterpret_cast<uint64_t>(p);
  uint32_t align = 256;
  while (align > 1 && (a % align) != 0) align /= 2;
  return align;
}

// One column-major GEMM D = alpha op(A) op(B) + beta C with C == D (m x n, ld ldd), op(A) m x k,
// op(B) k x n; A stored (transa ? k x m : m x k) with ld lda, B stored (transb ? n x k : k x n).
// bias (nullable): length m, added to every column (epilogue BIAS), of type bias_type.
struct Gemm {
  bool transa = false, transb = false;
  int64_t m = 0, n = 0, k = 0;
  const void* A = nullptr;
  cudaDataType_t a_type = CUDA_R_32F;
  int64_t lda = 0;
  const void* B = nullptr;
  cudaDataType_t b_type = CUDA_R_32F;
  int64_t ldb = 0;
  void* D = nullptr;
  cudaDataType_t d_type = CUDA_R_32F;
  int64_t ldd = 0;
  float beta = 0.0f;
  const void* bias = nullptr;
  cudaDataType_t bias_type = CUDA_R_32F;
  // The GELU epilogues: kGeluAux, D = GELU(product + bias) with the GELU input written to aux;
  // kDGelu, D = product * GELU'(aux). aux is m x n column-major with leading dimension aux_ld, of
  // D's type. These run only where cuBLASLt has an algorithm (run_gemm returns false otherwise,
  // running nothing).
  enum class Gelu { kNone, kGeluAux, kDGelu } gelu = Gelu::kNone;
  void* aux = nullptr;
  int64_t aux_ld = 0;
};

// Runs g; returns whether the bias was applied: a bias pointer or type that no algorithm of the
// BIAS epilogue takes (too little aligned, say) runs the product without it, and the caller adds it.
// With a GELU epilogue: returns whether it ran (with the bias, if any); false: nothing ran.
bool run_gemm(CudaContext& ctx, const Gemm& g, const char* what) {
  // float32 inputs: TF32 tensor cores when allowed; bfloat16 inputs: float32 accumulation.
  const cublasComputeType_t compute = (g.a_type == CUDA_R_32F && ctx.allow_tf32())
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  LtLayout a(g.a_type, g.transa ? g.k : g.m, g.transa ? g.m : g.k, g.lda);
  LtLayout b(g.b_type, g.transb ? g.n : g.k, g.transb ? g.k : g.n, g.ldb);
  LtLayout d(g.d_type, g.m, g.n, g.ldd);

  LtPreference pref;
  const uint64_t ws = ctx.lt_workspace_bytes();
  NANOGPT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const uint32_t align_a = alignment_of(g.A), align_b = alignment_of(g.B),
                 align_d = alignment_of(g.D);
  NANOGPT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
  NANOGPT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
  NANOGPT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d, sizeof(align_d)));
  NANOGPT_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d, sizeof(align_d)));

  auto lt = static_cast<cublasLtHandle_t>(ctx.cublaslt());
  const cublasOperation_t opa = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const bool gelu = g.gelu != Gemm::Gelu::kNone;
  const uint32_t align_aux = gelu ? alignment_of(g.aux) : 0;
  // First with the bias epilogue (when there is a bias), then, if no algorithm takes it, without.
  // A GELU epilogue gets one attempt (with its bias, if any).
  for (int attempt = g.bias || gelu ? 0 : 1; attempt < 2; ++attempt) {
    const bool with_bias = attempt == 0 && g.bias != nullptr;
    LtMatmulDesc desc(compute);
    NANOGPT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
    NANOGPT_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
    if (gelu) {
      const cublasLtEpilogue_t epi =
          g.gelu == Gemm::Gelu::kDGelu
              ? CUBLASLT_EPILOGUE_DGELU
              : (with_bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX);
      NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                          &epi, sizeof(epi)));
      const void* aux = g.aux;
      NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &aux, sizeof(aux)));
      const int64_t aux_ld = g.aux_ld;
      NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof(aux_ld)));
    } else if (with_bias) {
      const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
      NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                          &epi, sizeof(epi)));
    }
    if (with_bias) {
      const void* bias = g.bias;
      NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
      const int32_t bias_type = static_cast<int32_t>(g.bias_type);
      NANOGPT_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
          desc.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)));
    }
    // The algorithm for this shape, types, alignments and epilogue: cached in the context.
    static_assert(sizeof(cublasLtMatmulAlgo_t) == 8 * sizeof(uint64_t), "cuBLASLt algo size");
    const std::string key = fmt::format(
        "{}{} {} {} {} {} {} {} {}/{}/{} {}/{}/{} {} {} {} gelu {} {} {}", int(g.transa),
        int(g.transb), g.m, g.n, g.k, g.lda, g.ldb, g.ldd, int(g.a_type), int(g.b_type),
        int(g.d_type), align_a, align_b, align_d, int(compute), int(with_bias), int(g.bias_type),
        int(g.gelu), g.aux_ld, align_aux);
    auto& cache = ctx.matmul_algos();
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    if (auto it = cache.find(key); it != cache.end()) {
      found = static_cast<int>(it->second[8]);
      std::memcpy(&heuristic.algo, it->second.data(), sizeof(heuristic.algo));
    } else {
      st = cublasLtMatmulAlgoGetHeuristic(lt, desc.d, a.l, b.l, d.l, d.l, pref.p, 1, &heuristic,
                                          &found);
      if (st == CUBLAS_STATUS_SUCCESS || with_bias || gelu) {
        std::array<uint64_t, 9> entry{};
        std::memcpy(entry.data(), &heuristic.algo, sizeof(heuristic.algo));
        entry[8] = st == CUBLAS_STATUS_SUCCESS && found > 0 ? 1 : 0;
        cache[key] = entry;
      }
    }
    if (gelu && (st != CUBLAS_STATUS_SUCCESS || found == 0)) return false;  // caller falls back
    if (with_bias && (st != CUBLAS_STATUS_SUCCESS || found == 0)) continue;  // bias added apart
    NANOGPT_CUBLAS_CHECK(st);
    if (found == 0) {
      fail("cuBLASLt has no algorithm for {} (m {} n {} k {}, transa {}, transb {}, A/B/D types "
           "{}/{}/{}, alignments {}/{}/{})",
           what, g.m, g.n, g.k, g.transa, g.transb, static_cast<int>(g.a_type),
           static_cast<int>(g.b_type), static_cast<int>(g.d_type), align_a, align_b, align_d);
    }
    const float alpha = 1.0f, beta = g.beta;
    NANOGPT_CUBLAS_CHECK(cublasLtMatmul(lt, desc.d, &alpha, g.A, a.l, g.B, b.l, &beta, g.D, d.l,
                                        g.D, d.l, &heuristic.algo, ctx.lt_workspace(), ws,
                                        /*stream=*/0));
    return gelu || with_bias;
  }
  return false;  // unreachable: attempt 1 returns or throws
}

// out (N, OC) += bias (OC): the bias of a forward whose bias pointer the epilogue cannot take.
template <typename T>
__global__ void add_bias_kernel(T* out, const T* bias, int64_t N, int OC) {
  const int64_t total = N * OC;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = from_f32<T>(to_f32(out[i]) + to_f32(bias[i % OC]));
  }
}

// Column sums of dout (N, OC), pass 1: block (32, 8) sums the 32 columns starting at
// blockIdx.x * 32 over rows [blockIdx.y * rows_per_chunk, +rows_per_chunk) into
// partial[blockIdx.y * OC + o]. A fixed order everywhere: deterministic.
constexpr int kSumCols = 32, kSumRows = 8;
template <typename T>
__global__ void column_sum_partial_kernel(float* partial, const T* dout, int64_t N, int OC,
                                          int64_t rows_per_chunk) {
  __shared__ float sums[kSumRows][kSumCols + 1];
  const int o = blockIdx.x * kSumCols + threadIdx.x;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < N ? begin + rows_per_chunk : N;
  float s = 0.0f;
  if (o < OC) {
    for (int64_t n = begin + threadIdx.y; n < end; n += kSumRows) {
      s += to_f32(dout[n * OC + o]);
    }
  }
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && o < OC) {
    float total = 0.0f;
    for (int r = 0; r < kSumRows; ++r) total += sums[r][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * OC + o] = total;
  }
}

// Pass 1 with 16-byte loads (OC a multiple of 8, dout 16-byte aligned): thread (x, y) of block
// (32, 8) owns the 8 columns o = (blockIdx.x * 32 + x) * 8 .. +7 and sums rows begin + y, + 8, ...
// of its chunk, then the block adds the 8 row lanes in order: for every column the same additions
// in the same order as the kernel above, so the same bits.
template <typename T>
__global__ void column_sum_partial_vec_kernel(float* partial, const T* dout, int64_t N, int OC,
                                              int64_t rows_per_chunk) {
  __shared__ float sums[kSumRows][kSumCols * 8 + 4];  // +4: rows start in different banks
  const int o = (blockIdx.x * kSumCols + threadIdx.x) * 8;
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < N ? begin + rows_per_chunk : N;
  float s[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  if (o < OC) {
    for (int64_t n = begin + threadIdx.y; n < end; n += kSumRows) {
      float v[8];
      load8(dout + n * OC + o, v);
#pragma unroll
      for (int k = 0; k < 8; ++k) s[k] += v[k];
    }
  }
#pragma unroll
  for (int k = 0; k < 8; ++k) sums[threadIdx.y][threadIdx.x * 8 + k] = s[k];
  __syncthreads();
  // 256 threads, 256 columns: thread t totals column blockIdx.x * 256 + t over the row lanes.
  const int t = threadIdx.y * kSumCols + threadIdx.x;
  const int col = blockIdx.x * kSumCols * 8 + t;
  if (col < OC) {
    float total = 0.0f;
    for (int r = 0; r < kSumRows; ++r) total += sums[r][t];
    partial[static_cast<int64_t>(blockIdx.y) * OC + col] = total;
  }
}

// Pass 2: dbias[o] += sum over the chunks of partial[chunk * OC + o], in chunk order.
__global__ void column_sum_finish_kernel(float* dbias, const float* partial, int chunks, int OC) {
  const int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= OC) return;
  float s = 0.0f;
  for (int c = 0; c < chunks; ++c) s += partial[static_cast<int64_t>(c) * OC + o];
  dbias[o] += s;
}

}  // namespace

namespace {

// The forward's product: out^T (OC, N) = op_T(W_cm (C, OC)) inp_cm (C, N), no bias or epilogue.
Gemm forward_gemm(TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                  int OC) {
  Gemm g;
  g.transa = true;  // A = weight, stored (C, OC) column-major: op_T gives (OC, C)
  g.transb = false;
  g.m = OC;
  g.n = N;
  g.k = C;
  g.A = weight.data;
  g.a_type = cuda_type(inp.dtype);
  g.lda = C;
  g.B = inp.data;  // stored (C, N) column-major
  g.b_type = cuda_type(inp.dtype);
  g.ldb = C;
  g.D = out.data;  // (OC, N) column-major = out (N, OC) row-major
  g.d_type = cuda_type(out.dtype);
  g.ldd = OC;
  return g;
}

// Whether the GELU epilogues may run: the tanh GELU (cuBLASLt's), bfloat16 storage (its rounding
// hides the epilogue's own GELU arithmetic), widths cuBLASLt's aux matrix takes (multiples of 8).
bool gelu_epilogue_applies(bool fuse, MlpActivation kind, DType dtype, int width) {
  return fuse && kind == MlpActivation::kTanh && dtype == DType::kBF16 && width % 8 == 0;
}

}  // namespace

void matmul_forward(CudaContext& ctx, TypedPtr out, ConstTypedPtr inp, ConstTypedPtr weight,
                    ConstTypedPtr bias, int64_t N, int C, int OC, bool accumulate) {
  CHECK(inp.dtype == weight.dtype,
        "matmul_forward on the GPU: inp ({}) and weight ({}) must be of one dtype",
        dtype_name(inp.dtype), dtype_name(weight.dtype));
  CHECK(out.dtype == DType::kF32 || out.dtype == inp.dtype,
        "matmul_forward on the GPU: out must be float32 or the inputs' dtype ({}), not {}",
        dtype_name(inp.dtype), dtype_name(out.dtype));
  CHECK(!bias || bias.dtype == out.dtype,
        "matmul_forward on the GPU: bias ({}) must be of out's dtype ({})", dtype_name(bias.dtype),
        dtype_name(out.dtype));
  const cudaDataType_t out_type = cuda_type(out.dtype);
  (void)cuda_type(inp.dtype);  // refuses other dtypes
  CHECK(C > 0, "matmul_forward on the GPU: C must be positive (N {}, C {}, OC {})", N, C, OC);
  if (N == 0 || OC == 0) return;
  const bool use_bias = bias && !accumulate;
  // The epilogue reads the bias with vector loads: a less aligned bias gets a separate kernel.
  const bool try_epilogue_bias = use_bias && alignment_of(bias.data) >= 16;
  Gemm g = forward_gemm(out, inp, weight, N, C, OC);
  g.beta = accumulate ? 1.0f : 0.0f;
  if (try_epilogue_bias) {
    g.bias = bias.data;
    g.bias_type = out_type;
  }
  const bool bias_applied = run_gemm(ctx, g, "matmul_forward");
  if (use_bias && !bias_applied) {
    dispatch_dtype(out.dtype, "matmul_forward", [&](auto tag) {
      using T = decltype(tag);
      add_bias_kernel<T><<<grid_for(N * OC, 256), 256>>>(
          static_cast<T*>(out.data), static_cast<const T*>(bias.data), N, OC);
      NANOGPT_CUDA_CHECK_LAUNCH();
    });
  }
}

void matmul_gelu_forward(CudaContext& ctx, TypedPtr act, TypedPtr pre, ConstTypedPtr inp,
                         ConstTypedPtr weight, ConstTypedPtr bias, int64_t N, int C, int OC,
                         MlpActivation kind, bool fuse) {
  CHECK(act.dtype == pre.dtype && pre.dtype == inp.dtype,
        "matmul_gelu_forward on the GPU: act ({}), pre ({}) and inp ({}) must be of one dtype",
        dtype_name(act.dtype), dtype_name(pre.dtype), dtype_name(inp.dtype));
  if (N > 0 && OC > 0 && gelu_epilogue_applies(fuse, kind, inp.dtype, OC) &&
      (!bias || alignment_of(bias.data) >= 16)) {
    CHECK(inp.dtype == weight.dtype && (!bias || bias.dtype == act.dtype),
          "matmul_gelu_forward on the GPU: weight ({}) and bias must be of inp's dtype ({})",
          dtype_name(weight.dtype), dtype_name(inp.dtype));
    Gemm g = forward_gemm(act, inp, weight, N, C, OC);
    if (bias) {
      g.bias = bias.data;
      g.bias_type = cuda_type(act.dtype);
    }
    g.gelu = Gemm::Gelu::kGeluAux;
    g.aux = pre.data;
    g.aux_ld = OC;
    if (run_gemm(ctx, g, "matmul_gelu_forward")) return;
  }
  matmul_forward(ctx, pre, inp, weight, bias, N, C, OC);
  gelu_forward(act, pre, N * OC, kind);
}

namespace {

// matmul_backward, and with gelu_pre given, dinp multiplied by GELU'(gelu_pre) (N, C): in the
// product's DGELU epilogue where fuse allows and cuBLASLt has one, else by gelu_backward after it.
void backward(CudaContext& ctx, TypedPtr dinp, float* dweight, float* dbias, ConstTypedPtr dout,
              ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C, int OC,
              ConstTypedPtr gelu_pre, MlpActivation kind, bool fuse) {
  CHECK(dout.dtype == inp.dtype && inp.dtype == weight.dtype,
        "matmul_backward on the GPU: dout ({}), inp ({}) and weight ({}) must be of one dtype",
        dtype_name(dout.dtype), dtype_name(inp.dtype), dtype_name(weight.dtype));
  CHECK(!dinp || dinp.dtype == dout.dtype,
        "matmul_backward on the GPU: dinp ({}) must be of dout's dtype ({})",
        dtype_name(dinp.dtype), dtype_name(dout.dtype));
  const cudaDataType_t in_type = cuda_type(dout.dtype);
  if (N == 0 || C == 0 || OC == 0) return;

  if (dinp) {  // dinp^T (C, N) = W_cm (C, OC) @ dout_cm (OC, N), overwritten
    Gemm g;
    g.transa = false;
    g.transb = false;
    g.m = C;
    g.n = N;
    g.k = OC;
    g.A = weight.data;  // stored (C, OC) column-major
    g.a_type = in_type;
    g.lda = C;
    g.B = dout.data;  // stored (OC, N) column-major
    g.b_type = in_type;
    g.ldb = OC;
    g.D = dinp.data;  // (C, N) column-major = dinp (N, C) row-major
    g.d_type = in_type;
    g.ldd = C;
    g.beta = 0.0f;
    bool gelu_done = false;
    if (gelu_pre && gelu_epilogue_applies(fuse, kind, dinp.dtype, C)) {
      g.gelu = Gemm::Gelu::kDGelu;
      g.aux = const_cast<void*>(gelu_pre.data);  // read only (DGELU's input)
      g.aux_ld = C;
      gelu_done = run_gemm(ctx, g, "matmul_backward (dinp, DGELU)");
      g.gelu = Gemm::Gelu::kNone;
      g.aux = nullptr;
      g.aux_ld = 0;
    }
    if (!gelu_done) {
      run_gemm(ctx, g, "matmul_backward (dinp)");
      if (gelu_pre) gelu_backward(dinp, gelu_pre, dinp, N * C, kind);
    }
  }
  if (dweight) {  // dW^T (C, OC) += inp_cm (C, N) @ op_T(dout_cm (OC, N)), float32
    Gemm g;
    g.transa = false;
    g.transb = true;
    g.m = C;
    g.n = OC;
    g.k = N;
    g.A = inp.data;  // stored (C, N) column-major
    g.a_type = in_type;
    g.lda = C;
    g.B = dout.data;  // stored (OC, N) column-major; op_T gives (N, OC)
    g.b_type = in_type;
    g.ldb = OC;
    g.D = dweight;  // (C, OC) column-major = dweight (OC, C) row-major
    g.d_type = CUDA_R_32F;
    g.ldd = C;
    g.beta = 1.0f;
    run_gemm(ctx, g, "matmul_backward (dweight)");
  }
  if (dbias) {
    // Chunks of at least 128 rows, at most 1024 chunks (partials of 1024 * OC floats at most).
    int64_t rows_per_chunk = 128;
    if ((N + rows_per_chunk - 1) / rows_per_chunk > 1024) {
      rows_per_chunk = (N + 1023) / 1024;
    }
    const int chunks = static_cast<int>((N + rows_per_chunk - 1) / rows_per_chunk);
    float* partial = static_cast<float*>(ctx.scratch(static_cast<size_t>(chunks) * OC * 4));
    const dim3 block(kSumCols, kSumRows);
    const bool vec = OC % 8 == 0 && alignment_of(dout.data) >= 16;
    dispatch_dtype(dout.dtype, "matmul_backward", [&](auto tag) {
      using T = decltype(tag);
      if (vec) {
        const dim3 grid((OC / 8 + kSumCols - 1) / kSumCols, chunks);
        column_sum_partial_vec_kernel<T>
            <<<grid, block>>>(partial, static_cast<const T*>(dout.data), N, OC, rows_per_chunk);
      } else {
        const dim3 grid((OC + kSumCols - 1) / kSumCols, chunks);
        column_sum_partial_kernel<T>
            <<<grid, block>>>(partial, static_cast<const T*>(dout.data), N, OC, rows_per_chunk);
      }
      NANOGPT_CUDA_CHECK_LAUNCH();
    });
    column_sum_finish_kernel<<<(OC + 255) / 256, 256>>>(dbias, partial, chunks, OC);
    NANOGPT_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void matmul_backward(CudaContext& ctx, TypedPtr dinp, float* dweight, float* dbias,
                     ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N, int C,
                     int OC) {
  backward(ctx, dinp, dweight, dbias, dout, inp, weight, N, C, OC, {}, MlpActivation::kTanh, false);
}

void matmul_gelu_backward(CudaContext& ctx, TypedPtr dinp, float* dweight, float* dbias,
                          ConstTypedPtr dout, ConstTypedPtr inp, ConstTypedPtr weight, int64_t N,
                          int C, int OC, ConstTypedPtr pre, MlpActivation kind, bool fuse) {
  CHECK(dinp && pre && pre.dtype == dinp.dtype,
        "matmul_gelu_backward on the GPU: dinp and pre needed, of one dtype");
  backward(ctx, dinp, dweight, dbias, dout, inp, weight, N, C, OC, pre, kind, fuse);
}

}  // namespace nanogpt::cuda
