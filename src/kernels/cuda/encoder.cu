// Token + position embedding of the CUDA backend (ops_cuda.h): the forward gather, and the
// deterministic backward: dwpe[t] sums its B rows in batch order (one thread per (t, c)); dwte
// groups the positions by token with a stable radix sort (CUB, ordering positions ascending within
// a token), then each token's run of positions is summed in that order by one thread per channel
// and added to its dwte row once. No float atomics; the same bits on every run.
#include "kernels/cuda/cuda_util.cuh"

#include <cub/device/device_radix_sort.cuh>

#include "kernels/cuda/ops_cuda.h"

namespace nanogpt::cuda {

namespace {

constexpr int kThreads = 256;

__global__ void encoder_forward_kernel(float* out, const int* inp, const float* wte,
                                       const float* wpe, int T, int C, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t bt = i / C;
    const int c = static_cast<int>(i - bt * C);
    const int t = static_cast<int>(bt % T);
    float e = wte[int64_t{inp[bt]} * C + c];
    if (wpe) e += wpe[int64_t{t} * C + c];
    out[i] = e;
  }
}

// dwpe[t, c] += sum over b (in order) of dout[b, t, c].
__global__ void wpe_backward_kernel(float* dwpe, const float* dout, int B, int T, int C) {
  const int64_t TC = int64_t{T} * C;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < TC;
       i += int64_t{gridDim.x} * blockDim.x) {
    float acc = 0.0f;
    for (int b = 0; b < B; ++b) acc += dout[b * TC + i];
    dwpe[i] += acc;
  }
}

__global__ void iota_kernel(int* v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v[i] = i;
}

// Block (j, y): if sorted entry j starts a run of equal tokens, the block finds the run's end, then
// its threads (channels y * blockDim + tid) sum dout over the run's positions (ascending) and add
// the sum to the token's dwte row. Other blocks return at once.
__global__ void wte_backward_kernel(float* dwte, const float* dout, const int* tokens,
                                    const int* positions, int BT, int C) {
  __shared__ int run_end;
  const int j = blockIdx.x;
  const int token = tokens[j];
  if (j > 0 && tokens[j - 1] == token) return;  // uniform over the block
  if (threadIdx.x == 0) run_end = BT;
  __syncthreads();
  for (int64_t base = int64_t{j} + 1; base < BT; base += blockDim.x) {
    const int64_t k = base + threadIdx.x;
    if (k < BT && tokens[k] != token) atomicMin(&run_end, static_cast<int>(k));
    __syncthreads();
    const bool found = run_end < base + blockDim.x;  // the same for every thread
    __syncthreads();  // everyone read run_end before the next round may lower it
    if (found) break;
  }
  const int end = run_end;
  const int c = blockIdx.y * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float acc = 0.0f;
#pragma unroll 4
  for (int k = j; k < end; ++k) acc += dout[int64_t{positions[k]} * C + c];
  dwte[int64_t{token} * C + c] += acc;
}

size_t align_up(size_t n) { return (n + 255) / 256 * 256; }

}  // namespace

void encoder_forward(float* out, const int* inp, const float* wte, const float* wpe, int B, int T,
                     int C) {
  const int64_t total = int64_t{B} * T * C;
  if (total <= 0) return;
  encoder_forward_kernel<<<grid_for(total, kThreads), kThreads>>>(out, inp, wte, wpe, T, C, total);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

void encoder_backward(CudaContext& ctx, float* dwte, float* dwpe, const float* dout, const int* inp,
                      int B, int T, int C) {
  const int64_t BT64 = int64_t{B} * T;
  if (BT64 <= 0 || C <= 0) return;
  CHECK(BT64 < (int64_t{1} << 31), "encoder_backward on the GPU: B*T = {} is too large", BT64);
  const int BT = static_cast<int>(BT64);
  if (dwpe) {
    const int64_t TC = int64_t{T} * C;
    wpe_backward_kernel<<<grid_for(TC, kThreads), kThreads>>>(dwpe, dout, B, T, C);
    NANOGPT_CUDA_CHECK_LAUNCH();
  }
  // Scratch: positions in, tokens and positions sorted, CUB's temporary storage.
  size_t sort_bytes = 0;
  NANOGPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const int*>(nullptr), static_cast<int*>(nullptr),
      static_cast<const int*>(nullptr), static_cast<int*>(nullptr), BT, 0,
      static_cast<int>(sizeof(int) * 8), cudaStream_t{0}));
  const size_t ints = align_up(size_t(BT) * sizeof(int));
  char* base = static_cast<char*>(ctx.scratch(3 * ints + align_up(sort_bytes)));
  int* positions_in = reinterpret_cast<int*>(base);
  int* tokens_sorted = reinterpret_cast<int*>(base + ints);
  int* positions_sorted = reinterpret_cast<int*>(base + 2 * ints);
  void* sort_temp = base + 3 * ints;
  iota_kernel<<<grid_for(BT, kThreads), kThreads>>>(positions_in, BT);
  NANOGPT_CUDA_CHECK_LAUNCH();
  NANOGPT_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      sort_temp, sort_bytes, inp, tokens_sorted, static_cast<const int*>(positions_in),
      positions_sorted, BT, 0, static_cast<int>(sizeof(int) * 8), cudaStream_t{0}));
  constexpr int kChannels = 128;
  const dim3 grid(static_cast<unsigned>(BT), static_cast<unsigned>((C + kChannels - 1) / kChannels));
  wte_backward_kernel<<<grid, kChannels>>>(dwte, dout, tokens_sorted, positions_sorted, BT, C);
  NANOGPT_CUDA_CHECK_LAUNCH();
}

}  // namespace nanogpt::cuda
