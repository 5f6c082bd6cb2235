// Causal multi-head attention on the GPU (ops_cuda.h: attention_scratch_bytes, attention_forward,
// attention_backward), nanoGPT's naive (non-flash) path on the tensor cores: the (B,NH,T,T)
// probabilities are materialized and kept for the backward. This file owns the permute kernels
// between qkv (B,T,3,NH,HS) and per-head (B,NH,T,HS) tensors, the causal softmax (forward, fused
// with the dropout of the probabilities) and its backward (fused with the dropout backward); the
// batched products go through cublasGemmStridedBatchedEx (float32 accumulation; TF32 for float32
// tensors when the context allows it).
//
// Per head (batch index z = b*NH + h), row-major:
//   forward   preatt (T,T) = q k^T; att = causal_softmax(preatt * scale); y = drop(att) v
//   backward  dv = drop(att)^T dy; ddrop = dy v^T; datt = ddrop * mask;
//             dpre = att * (datt - rowsum(datt * att)) * scale (0 above the diagonal);
//             dq = dpre k; dk = dpre^T q
// cuBLAS is column-major: a row-major (R, K) matrix is the column-major (K, R) matrix X^T with
// leading dimension K, so each row-major product P = X Y is computed as P^T = Y^T X^T.
#include "kernels/cuda/cuda_util.cuh"
#include "kernels/ops_lowp.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/ops_cuda.h"
#include "kernels/cuda/reduce.cuh"

namespace nanogpt::cuda {

namespace {

// Bytes of n elements of `dtype`, rounded up to 256 (every scratch region stays 256-byte aligned).
size_t region_bytes(int64_t n, DType dtype) {
  const size_t b = static_cast<size_t>(n) * dtype_size(dtype);
  return (b + 255) / 256 * 256;
}

// qkv (B,T,3C) -> q, k, v (B,NH,T,HS) each; one thread per element of q (and of k and v).
template <typename T>
__global__ void permute_qkv_kernel(T* q, T* k, T* v, const T* qkv, int B, int T_, int NH, int HS) {
  const int64_t C = static_cast<int64_t>(NH) * HS;
  const int64_t total = static_cast<int64_t>(B) * NH * T_ * HS;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // idx = ((b*NH + h)*T + t)*HS + i
    const int64_t i = idx % HS;
    const int64_t t = (idx / HS) % T_;
    const int64_t h = (idx / (static_cast<int64_t>(HS) * T_)) % NH;
    const int64_t b = idx / (static_cast<int64_t>(HS) * T_ * NH);
    const int64_t src = (b * T_ + t) * 3 * C + h * HS + i;
    q[idx] = qkv[src];
    k[idx] = qkv[src + C];
    v[idx] = qkv[src + 2 * C];
  }
}

// x (B,T,C) -> xp (B,NH,T,HS) (dout into per-head layout); one thread per element of xp.
template <typename T>
__global__ void permute_heads_kernel(T* xp, const T* x, int B, int T_, int NH, int HS) {
  const int64_t C = static_cast<int64_t>(NH) * HS;
  const int64_t total = static_cast<int64_t>(B) * NH * T_ * HS;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = idx % HS;
    const int64_t t = (idx / HS) % T_;
    const int64_t h = (idx / (static_cast<int64_t>(HS) * T_)) % NH;
    const int64_t b = idx / (static_cast<int64_t>(HS) * T_ * NH);
    xp[idx] = x[(b * T_ + t) * C + h * HS + i];
  }
}

// y (B,NH,T,HS) -> out (B,T,C); one thread per element of out.
template <typename T>
__global__ void unpermute_heads_kernel(T* out, const T* y, int B, int T_, int NH, int HS) {
  const int64_t C = static_cast<int64_t>(NH) * HS;
  const int64_t total = static_cast<int64_t>(B) * T_ * C;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // idx = (b*T + t)*C + h*HS + i
    const int64_t c = idx % C;
    const int64_t bt = idx / C;
    const int64_t t = bt % T_, b = bt / T_;
    const int64_t h = c / HS, i = c % HS;
    out[idx] = y[((b * NH + h) * T_ + t) * HS + i];
  }
}

// dq, dk, dv (B,NH,T,HS) -> dqkv (B,T,3C) (overwrite); one thread per element of dqkv.
template <typename T>
__global__ void unpermute_qkv_kernel(T* dqkv, const T* dq, const T* dk, const T* dv, int B,
                                     int T_, int NH, int HS) {
  const int64_t C = static_cast<int64_t>(NH) * HS;
  const int64_t total = static_cast<int64_t>(B) * T_ * 3 * C;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    // idx = (b*T + t)*3C + part*C + h*HS + i
    const int64_t col = idx % (3 * C);
    const int64_t bt = idx / (3 * C);
    const int64_t t = bt % T_, b = bt / T_;
    const int64_t part = col / C, c = col % C;
    const int64_t h = c / HS, i = c % HS;
    const int64_t src = ((b * NH + h) * T_ + t) * HS + i;
    const T* from = part == 0 ? dq : (part == 1 ? dk : dv);
    dqkv[idx] = from[src];
  }
}

constexpr int kRowsPerBlock = 8;  // one warp per row, 8 warps per block

// Causal softmax, one warp per row r = (b*NH + h)*T + t of att (B*NH*T rows of T): reads the
// scores preatt (which att may alias: each lane reads its elements before writing them), writes
// att[r, s] = exp(scale * preatt[r, s] - max) / sum for s <= t and 0 for s > t. float32 throughout.
// dropped (nullable): also writes att * dropout_mult(seed, r*T + s, p) there.
template <typename T>
__global__ void softmax_forward_kernel(T* att, T* dropped, const T* preatt, int64_t rows, int T_,
                                       float scale, float p, uint64_t seed, int group,
                                       int64_t per_b) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (r >= rows) return;
  const int t = static_cast<int>(r % T_);
  const T* x = preatt + r * T_;
  // Online max and sum over this lane's elements s = lane, lane + 32, ... <= t.
  float m = -INFINITY, l = 0.0f;
  for (int s = lane; s <= t; s += kWarpSize) {
    const float z = scale * to_f32(x[s]);
    if (z > m) {
      l = l * expf(m - z) + 1.0f;
      m = z;
    } else {
      l += expf(z - m);
    }
  }
  float mx = m;
  for (int o = kWarpSize / 2; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
  // Lanes without elements have l == 0 (and m == -inf: exp(-inf) == 0, no NaN since mx is finite).
  const float sum = warp_sum(l == 0.0f ? 0.0f : l * expf(m - mx));
  const float inv = 1.0f / sum;
  T* y = att + r * T_;
  T* yd = dropped ? dropped + r * T_ : nullptr;
  for (int s = lane; s < T_; s += kWarpSize) {
    const float prob = s <= t ? expf(scale * to_f32(x[s]) - mx) * inv : 0.0f;
    const T stored = from_f32<T>(prob);
    y[s] = stored;
    if (yd) {
      const float kept = s <= t ? to_f32(stored) * attention_dropout_mult(seed, group, per_b, r * T_ + s, p)
                                : 0.0f;
      yd[s] = from_f32<T>(kept);
    }
  }
}

// dropped (n) = att * dropout_mult(seed, i, p): the dropped probabilities of the forward again.
template <typename T>
__global__ void dropout_probs_kernel(T* dropped, const T* att, int64_t n, float p, uint64_t seed,
                                     int group, int64_t per_b) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dropped[i] = from_f32<T>(to_f32(att[i]) * attention_dropout_mult(seed, group, per_b, i, p));
  }
}

// Softmax backward, one warp per row r = (b*NH + h)*T + t. grad holds the gradient of the dropped
// probabilities on entry and dpreatt on exit (in place): with datt = grad * mult (mult the dropout
// multiplier, 1 when p == 0), dpreatt[s] = att[s] * (datt[s] - sum_s' att[s'] datt[s']) * scale
// for s <= t, 0 for s > t. float32 throughout.
template <typename T>
__global__ void softmax_backward_kernel(T* grad, const T* att, int64_t rows, int T_, float scale,
                                        float p, uint64_t seed, int group, int64_t per_b) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarpSize;
  if (r >= rows) return;
  const int t = static_cast<int>(r % T_);
  T* g = grad + r * T_;
  const T* a = att + r * T_;
  float dot = 0.0f;
  for (int s = lane; s <= t; s += kWarpSize) {
    float d = to_f32(g[s]);
    if (p > 0.0f) d *= attention_dropout_mult(seed, group, per_b, r * T_ + s, p);
    dot += to_f32(a[s]) * d;
  }
  dot = warp_sum(dot);
  for (int s = lane; s < T_; s += kWarpSize) {
    float out = 0.0f;
    if (s <= t) {
      float d = to_f32(g[s]);
      if (p > 0.0f) d *= attention_dropout_mult(seed, group, per_b, r * T_ + s, p);
      out = to_f32(a[s]) * (d - dot) * scale;
    }
    g[s] = from_f32<T>(out);
  }
}

// One strided-batched column-major GEMM C_z = op(A_z) op(B_z) (beta 0) over z < batch, of the
// tensors' dtype with float32 accumulation. Shapes as in cublasGemmEx: C m x n (ldc), op(A) m x k,
// op(B) k x n.
struct BatchedGemm {
  bool transa = false, transb = false;
  int m = 0, n = 0, k = 0;
  const void* A = nullptr;
  int lda = 0;
  int64_t stride_a = 0;
  const void* B = nullptr;
  int ldb = 0;
  int64_t stride_b = 0;
  void* C = nullptr;
  int ldc = 0;
  int64_t stride_c = 0;
  int batch = 0;
};

void run_batched_gemm(CudaContext& ctx, DType dtype, const BatchedGemm& g) {
  const cudaDataType_t type = dtype == DType::kF32 ? CUDA_R_32F : CUDA_R_16BF;
  const cublasComputeType_t compute = (dtype == DType::kF32 && ctx.allow_tf32())
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const float alpha = 1.0f, beta = 0.0f;
  NANOGPT_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      static_cast<cublasHandle_t>(ctx.cublas()), g.transa ? CUBLAS_OP_T : CUBLAS_OP_N,
      g.transb ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, &alpha, g.A, type, g.lda, g.stride_a,
      g.B, type, g.ldb, g.stride_b, &beta, g.C, type, g.ldc, g.stride_c, g.batch, compute,
      CUBLAS_GEMM_DEFAULT));
}

void check_shapes(const char* op, int B, int T, int C, int NH) {
  CHECK(B > 0 && T > 0 && C > 0 && NH > 0 && C % NH == 0,
        "{} on the GPU: B {}, T {}, C {}, NH {} (C must be a positive multiple of NH)", op, B, T, C,
        NH);
}

}  // namespace

// Forward: q, k, v (3 regions of B*T*C; y reuses q's) and, with dropout, the dropped
// probabilities (B*NH*T*T). Backward: q, k, v, dy (dq reuses it), dk, dv (6 regions of B*T*C) and
// one region of B*NH*T*T (the dropped probabilities for dv, then the gradient of the
// probabilities). The backward's need covers the forward's.
size_t attention_scratch_bytes(int B, int T, int C, int NH, DType dtype) {
  const int64_t btc = static_cast<int64_t>(B) * T * C;
  const int64_t tt = static_cast<int64_t>(B) * NH * T * T;
  const size_t forward = 3 * region_bytes(btc, dtype) + region_bytes(tt, dtype);
  const size_t backward = 6 * region_bytes(btc, dtype) + region_bytes(tt, dtype);
  return forward > backward ? forward : backward;
}

void attention_forward(CudaContext& ctx, TypedPtr out, TypedPtr att, ConstTypedPtr qkv, int B,
                       int T, int C, int NH, float dropout_p, uint64_t seed) {
  check_shapes("attention_forward", B, T, C, NH);
  CHECK(out.dtype == qkv.dtype && att.dtype == qkv.dtype,
        "attention_forward on the GPU: out ({}), att ({}) and qkv ({}) must be of one dtype",
        dtype_name(out.dtype), dtype_name(att.dtype), dtype_name(qkv.dtype));
  CHECK(dropout_p >= 0.0f && dropout_p < 1.0f,
        "attention_forward on the GPU: dropout {} must be in [0, 1)", dropout_p);
  const DType dtype = qkv.dtype;
  const int HS = C / NH;
  const int64_t btc = static_cast<int64_t>(B) * T * C;
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  // The CPU's dropout masks for this dtype (ops_lowp.h): per group of sequences in 16 bits.
  const int group = dtype == DType::kF32 ? 0 : attention_batch_group(B, NH);
  const int64_t per_b = static_cast<int64_t>(NH) * T * T;
  auto* base = static_cast<std::byte*>(ctx.scratch(attention_scratch_bytes(B, T, C, NH, dtype)));
  const size_t rb = region_bytes(btc, dtype);
  void* q = base;
  void* k = base + rb;
  void* v = base + 2 * rb;
  void* dropped = dropout_p > 0.0f ? base + 3 * rb : nullptr;
  void* y = q;  // q is dead once preatt is computed

  dispatch_dtype(dtype, "attention_forward", [&](auto tag) {
    using S = decltype(tag);
    permute_qkv_kernel<S><<<grid_for(btc, 256), 256>>>(static_cast<S*>(q), static_cast<S*>(k),
                                                        static_cast<S*>(v),
                                                        static_cast<const S*>(qkv.data), B, T, NH,
                                                        HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });

  // preatt (T_t, T_s) = q k^T, into att: preatt^T (T_s, T_t) column-major = op_T(k_cm (HS, T_s))
  // q_cm (HS, T_t).
  BatchedGemm qk;
  qk.transa = true;
  qk.transb = false;
  qk.m = T;
  qk.n = T;
  qk.k = HS;
  qk.A = k;
  qk.lda = HS;
  qk.stride_a = static_cast<int64_t>(T) * HS;
  qk.B = q;
  qk.ldb = HS;
  qk.stride_b = static_cast<int64_t>(T) * HS;
  qk.C = att.data;
  qk.ldc = T;
  qk.stride_c = static_cast<int64_t>(T) * T;
  qk.batch = B * NH;
  run_batched_gemm(ctx, dtype, qk);

  dispatch_dtype(dtype, "attention_forward", [&](auto tag) {
    using S = decltype(tag);
    const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_forward_kernel<S><<<blocks, kRowsPerBlock * kWarpSize>>>(
        static_cast<S*>(att.data), static_cast<S*>(dropped), static_cast<const S*>(att.data), rows,
        T, scale, dropout_p, seed, group, per_b);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });

  // y (T_t, HS) = P (T_t, T_s) v (T_s, HS): y^T (HS, T_t) = v_cm (HS, T_s) P_cm (T_s, T_t).
  BatchedGemm pv;
  pv.transa = false;
  pv.transb = false;
  pv.m = HS;
  pv.n = T;
  pv.k = T;
  pv.A = v;
  pv.lda = HS;
  pv.stride_a = static_cast<int64_t>(T) * HS;
  pv.B = dropped ? dropped : att.data;
  pv.ldb = T;
  pv.stride_b = static_cast<int64_t>(T) * T;
  pv.C = y;
  pv.ldc = HS;
  pv.stride_c = static_cast<int64_t>(T) * HS;
  pv.batch = B * NH;
  run_batched_gemm(ctx, dtype, pv);

  dispatch_dtype(dtype, "attention_forward", [&](auto tag) {
    using S = decltype(tag);
    unpermute_heads_kernel<S><<<grid_for(btc, 256), 256>>>(
        static_cast<S*>(out.data), static_cast<const S*>(y), B, T, NH, HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

void attention_backward(CudaContext& ctx, TypedPtr dqkv, ConstTypedPtr dout, ConstTypedPtr att,
                        ConstTypedPtr qkv, int B, int T, int C, int NH, float dropout_p,
                        uint64_t seed) {
  check_shapes("attention_backward", B, T, C, NH);
  CHECK(dqkv.dtype == qkv.dtype && dout.dtype == qkv.dtype && att.dtype == qkv.dtype,
        "attention_backward on the GPU: dqkv ({}), dout ({}), att ({}) and qkv ({}) must be of "
        "one dtype",
        dtype_name(dqkv.dtype), dtype_name(dout.dtype), dtype_name(att.dtype),
        dtype_name(qkv.dtype));
  CHECK(dropout_p >= 0.0f && dropout_p < 1.0f,
        "attention_backward on the GPU: dropout {} must be in [0, 1)", dropout_p);
  const DType dtype = qkv.dtype;
  const int HS = C / NH;
  const int64_t btc = static_cast<int64_t>(B) * T * C;
  const int64_t rows = static_cast<int64_t>(B) * NH * T;
  const int64_t tt = rows * T;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  // The CPU's dropout masks for this dtype (ops_lowp.h): per group of sequences in 16 bits.
  const int group = dtype == DType::kF32 ? 0 : attention_batch_group(B, NH);
  const int64_t per_b = static_cast<int64_t>(NH) * T * T;
  auto* base = static_cast<std::byte*>(ctx.scratch(attention_scratch_bytes(B, T, C, NH, dtype)));
  const size_t rb = region_bytes(btc, dtype);
  void* q = base;
  void* k = base + rb;
  void* v = base + 2 * rb;
  void* dy = base + 3 * rb;
  void* dk = base + 4 * rb;
  void* dv = base + 5 * rb;
  void* probs = base + 6 * rb;  // the dropped probabilities, then their gradient, then dpreatt
  void* dq = dy;                // dy is dead once dv and the probabilities' gradient are computed
  const int64_t ths = static_cast<int64_t>(T) * HS, ttt = static_cast<int64_t>(T) * T;

  dispatch_dtype(dtype, "attention_backward", [&](auto tag) {
    using S = decltype(tag);
    permute_qkv_kernel<S><<<grid_for(btc, 256), 256>>>(static_cast<S*>(q), static_cast<S*>(k),
                                                        static_cast<S*>(v),
                                                        static_cast<const S*>(qkv.data), B, T, NH,
                                                        HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
    permute_heads_kernel<S><<<grid_for(btc, 256), 256>>>(
        static_cast<S*>(dy), static_cast<const S*>(dout.data), B, T, NH, HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
    if (dropout_p > 0.0f) {
      dropout_probs_kernel<S><<<grid_for(tt, 256), 256>>>(
          static_cast<S*>(probs), static_cast<const S*>(att.data), tt, dropout_p, seed, group, per_b);
      NANOGPT_CUDA_CHECK_LAUNCH();
    }
  });

  // dv (T_s, HS) = P^T dy (P the dropped probabilities (T_t, T_s), dy (T_t, HS)):
  // dv^T (HS, T_s) = dy_cm (HS, T_t) op_T(P_cm (T_s, T_t)).
  BatchedGemm g_dv;
  g_dv.transa = false;
  g_dv.transb = true;
  g_dv.m = HS;
  g_dv.n = T;
  g_dv.k = T;
  g_dv.A = dy;
  g_dv.lda = HS;
  g_dv.stride_a = ths;
  g_dv.B = dropout_p > 0.0f ? static_cast<const void*>(probs) : att.data;
  g_dv.ldb = T;
  g_dv.stride_b = ttt;
  g_dv.C = dv;
  g_dv.ldc = HS;
  g_dv.stride_c = ths;
  g_dv.batch = B * NH;
  run_batched_gemm(ctx, dtype, g_dv);

  // dP (T_t, T_s) = dy v^T: dP^T (T_s, T_t) = op_T(v_cm (HS, T_s)) dy_cm (HS, T_t). Overwrites
  // the dropped probabilities (stream order: after the dv product has read them).
  BatchedGemm g_dp;
  g_dp.transa = true;
  g_dp.transb = false;
  g_dp.m = T;
  g_dp.n = T;
  g_dp.k = HS;
  g_dp.A = v;
  g_dp.lda = HS;
  g_dp.stride_a = ths;
  g_dp.B = dy;
  g_dp.ldb = HS;
  g_dp.stride_b = ths;
  g_dp.C = probs;
  g_dp.ldc = T;
  g_dp.stride_c = ttt;
  g_dp.batch = B * NH;
  run_batched_gemm(ctx, dtype, g_dp);

  dispatch_dtype(dtype, "attention_backward", [&](auto tag) {
    using S = decltype(tag);
    const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
    softmax_backward_kernel<S><<<blocks, kRowsPerBlock * kWarpSize>>>(
        static_cast<S*>(probs), static_cast<const S*>(att.data), rows, T, scale, dropout_p, seed,
        group, per_b);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });

  // dq (T_t, HS) = dpre (T_t, T_s) k (T_s, HS): dq^T (HS, T_t) = k_cm (HS, T_s) dpre_cm (T_s, T_t).
  BatchedGemm g_dq;
  g_dq.transa = false;
  g_dq.transb = false;
  g_dq.m = HS;
  g_dq.n = T;
  g_dq.k = T;
  g_dq.A = k;
  g_dq.lda = HS;
  g_dq.stride_a = ths;
  g_dq.B = probs;
  g_dq.ldb = T;
  g_dq.stride_b = ttt;
  g_dq.C = dq;
  g_dq.ldc = HS;
  g_dq.stride_c = ths;
  g_dq.batch = B * NH;
  run_batched_gemm(ctx, dtype, g_dq);

  // dk (T_s, HS) = dpre^T q: dk^T (HS, T_s) = q_cm (HS, T_t) op_T(dpre_cm (T_s, T_t)).
  BatchedGemm g_dk;
  g_dk.transa = false;
  g_dk.transb = true;
  g_dk.m = HS;
  g_dk.n = T;
  g_dk.k = T;
  g_dk.A = q;
  g_dk.lda = HS;
  g_dk.stride_a = ths;
  g_dk.B = probs;
  g_dk.ldb = T;
  g_dk.stride_b = ttt;
  g_dk.C = dk;
  g_dk.ldc = HS;
  g_dk.stride_c = ths;
  g_dk.batch = B * NH;
  run_batched_gemm(ctx, dtype, g_dk);

  dispatch_dtype(dtype, "attention_backward", [&](auto tag) {
    using S = decltype(tag);
    unpermute_qkv_kernel<S><<<grid_for(3 * btc, 256), 256>>>(
        static_cast<S*>(dqkv.data), static_cast<const S*>(dq), static_cast<const S*>(dk),
        static_cast<const S*>(dv), B, T, NH, HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace nanogpt::cuda
