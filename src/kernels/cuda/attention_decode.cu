// attention_decode (ops_cuda.h): one new token's attention over the KV cache while sampling. Two
// kernels: the scaled scores of every cached key (one thread per (head, key)), then per head a
// block that takes the softmax of its scores and the weighted sum of the values (one thread per
// output channel of the head). Float32 arithmetic on float32 or bfloat16 storage.
#include "kernels/cuda/cuda_util.cuh"

#include <cmath>

#include "kernels/cuda/ops_cuda.h"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 256;

// scores[h * t + s] = scale * q_h . k_{s,h} for s < t.
template <typename S>
__global__ void decode_scores_kernel(float* scores, const S* q, const S* kcache, int t, int C,
                                     int HS, float scale) {
  const int h = blockIdx.y;
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= t) return;
  const S* k = kcache + static_cast<int64_t>(s) * C + static_cast<int64_t>(h) * HS;
  const S* qh = q + static_cast<int64_t>(h) * HS;
  float dot = 0.0f;
  for (int i = 0; i < HS; ++i) dot += to_f32(qh[i]) * to_f32(k[i]);
  scores[static_cast<int64_t>(h) * t + s] = dot * scale;
}

// One block per head h: m = max of its scores, the sum of exp(score - m), then out[h*HS + i] =
// sum_s exp(score_s - m) / sum * v[s, h*HS + i] for the threads i < HS (HS <= blockDim.x is not
// needed: threads loop over i).
template <typename S>
__global__ void decode_softmax_values_kernel(S* out, const float* scores, const S* vcache, int t,
                                             int C, int HS) {
  __shared__ float red[kThreads / 32];
  __shared__ float m_sh, inv_sh;
  const int h = blockIdx.x;
  const float* sc = scores + static_cast<int64_t>(h) * t;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  // max
  float m = -INFINITY;
  for (int s = threadIdx.x; s < t; s += blockDim.x) m = fmaxf(m, sc[s]);
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) red[warp] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    float mm = red[0];
    for (int w = 1; w < kThreads / 32; ++w) mm = fmaxf(mm, red[w]);
    m_sh = mm;
  }
  __syncthreads();
  m = m_sh;
  // sum of exponentials
  float l = 0.0f;
  for (int s = threadIdx.x; s < t; s += blockDim.x) l += expf(sc[s] - m);
  for (int o = 16; o > 0; o /= 2) l += __shfl_xor_sync(0xffffffffu, l, o);
  __syncthreads();  // red is read above by thread 0 only before the barrier; reuse it now
  if (lane == 0) red[warp] = l;
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) total += red[w];
    inv_sh = 1.0f / total;
  }
  __syncthreads();
  const float inv = inv_sh;
  for (int i = threadIdx.x; i < HS; i += blockDim.x) {
    const S* v = vcache + static_cast<int64_t>(h) * HS + i;
    float acc = 0.0f;
    for (int s = 0; s < t; ++s) acc += expf(sc[s] - m) * to_f32(v[static_cast<int64_t>(s) * C]);
    out[static_cast<int64_t>(h) * HS + i] = from_f32<S>(acc * inv);
  }
}

}  // namespace

void attention_decode(CudaContext& ctx, TypedPtr out, ConstTypedPtr q, ConstTypedPtr kcache,
                      ConstTypedPtr vcache, int t, int C, int NH) {
  CHECK(t >= 1 && NH > 0 && C % NH == 0, "attention_decode on the GPU: t {}, C {}, NH {}", t, C,
        NH);
  CHECK(out.dtype == q.dtype && kcache.dtype == q.dtype && vcache.dtype == q.dtype,
        "attention_decode on the GPU: out, q and the caches must be of one dtype");
  const int HS = C / NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  auto* scores = static_cast<float*>(ctx.scratch(sizeof(float) * static_cast<size_t>(NH) * t));
  dispatch_dtype(q.dtype, "attention_decode", [&](auto tag) {
    using S = decltype(tag);
    const dim3 grid((t + kThreads - 1) / kThreads, NH);
    decode_scores_kernel<S><<<grid, kThreads>>>(scores, static_cast<const S*>(q.data),
                                                 static_cast<const S*>(kcache.data), t, C, HS,
                                                 scale);
    NANOGPT_CUDA_CHECK_LAUNCH();
    decode_softmax_values_kernel<S><<<NH, kThreads>>>(
        static_cast<S*>(out.data), scores, static_cast<const S*>(vcache.data), t, C, HS);
    NANOGPT_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace nanogpt::cuda
