// GpuGpt: the GPT-2 model on one NVIDIA GPU. The same parameter table (model/params.h) and
// therefore the same checkpoints as the CPU model: the arenas live in device memory, laid out
// alike, and go to and from the host whole. Forward, backward and the AdamW step call the device
// ops of kernels/cuda/ops_cuda.h only; this file holds no CUDA (no kernels, no CUDA headers).
// Precision: float32, or bfloat16 storage (float32 master weights, gradients, optimizer state,
// residual stream and statistics; a bfloat16 copy of the weights for the matmuls), as on the CPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/gpu_op_timer.h"
#include "kernels/dtype.h"
#include "model/architecture.h"
#include "model/gpu_memory_plan.h"
#include "model/model_config.h"
#include "model/params.h"
#include "model/weights.h"

namespace nanogpt {

// Which flash attention kernels run: flash_attention_mma.cu's (mma.sync fragments in registers;
// the default: 2.2x faster on an H200) or flash_attention.cu's (nvcuda::wmma, scores through
// shared memory; the first version, kept as a cross-check).
enum class GpuFlashKernel { kWmma, kMma };

// NANOGPT_GPU_FLASH_KERNEL=mma|wmma in the environment (default mma); throws nanogpt::Error on
// another value.
GpuFlashKernel gpu_flash_kernel_from_env();

// NANOGPT_GPU_GELU_EPILOGUE=1|0 in the environment (default 1): whether the bfloat16 MLP's tanh
// GELU rides in cuBLASLt's matmul epilogues (GELU_AUX_BIAS forward, DGELU backward) instead of
// its own kernels; throws nanogpt::Error on another value.
bool gpu_gelu_epilogue_from_env();

class GpuGpt {
 public:
  // Allocates everything for micro-batches of up to B sequences of T tokens (T <= block_size).
  // naive_attention: the cuBLAS attention even where flash attention runs (attention = 'naive').
  // gelu_epilogue: the tanh GELU of a bfloat16 model in the matmuls' epilogues (elsewhere: no
  // effect).
  GpuGpt(cuda::CudaContext& ctx, const ModelConfig& config, DType dtype, int B, int T,
         bool naive_attention = false, GpuFlashKernel flash_kernel = GpuFlashKernel::kMma,
         bool gelu_epilogue = true);

  // Whether the attention runs flash (no T x T matrix) or naive; for the log.
  bool flash_attention() const { return flash_; }
  GpuFlashKernel flash_kernel() const { return flash_kernel_; }
  // Whether the MLP's GELU runs in the matmul epilogues (bfloat16, tanh GELU, asked for).
  bool gelu_epilogue() const { return gelu_epilogue_; }

  const ModelConfig& config() const { return config_; }
  const ParamTable& table() const { return table_; }
  DType dtype() const { return dtype_; }

  // Whole float32 arenas to / from the host (table().total_numel() floats).
  void upload_params(const float* host);
  void download_params(float* host) const;
  // The gradient arena to the host (tests, and the checks of scripts/gpu_check.sh).
  void download_grads(float* host) const;
  // AdamW's m and v arenas to / from the host (same layout).
  void upload_adam_state(const float* m, const float* v);
  void download_adam_state(float* m, float* v) const;

  // inputs, targets (B, T) host token ids (targets may be null: no loss; -1 = ignored).
  // Returns the mean loss over non-ignored targets. training: dropout on, backward prepared, with
  // the classifier's loss gradient scaled by grad_scale (e.g. 1 / gradient_accumulation_steps).
  float forward(const int* inputs, const int* targets, int B, int T, bool training,
                uint64_t dropout_seed, float grad_scale);
  // Backward of the last training forward: parameter gradients ACCUMULATE into the grads arena.
  void backward();
  void zero_grad();
  // L2 norm of the gradient arena.
  double grad_norm();
  // One AdamW step over every tensor (weight decay on the table's decay tensors only), gradients
  // multiplied by grad_scale (clipping); step counts from 1. Refreshes the 16-bit weights.
  void adamw_step(double lr, double beta1, double beta2, double eps, double weight_decay,
                  float grad_scale, int64_t step);

  // Sampling with a KV cache (model/gpt.h's forward_one): runs `token` at position pos (==
  // cache_length(), < block_size), appends its K and V to the model's cache and writes the next
  // token's logits (Vp floats; the first V meaningful) to the host. No dropout.
  void forward_one(int token, int pos, float* logits_out);
  void clear_cache() { cache_len_ = 0; }
  int cache_length() const { return cache_len_; }

  // Times every op of forward, backward and the AdamW step into `timer` (null: none, the default).
  void set_timer(cuda::GpuOpTimer* timer) { timer_ = timer; }

  // Logits (B, T, Vp) of the last forward without targets, downloaded (first V columns valid).
  std::vector<float> download_logits() const;

 private:
  struct Layer {  // what a block's forward keeps for backward, (N = B*T) rows
    cuda::DeviceBuffer<float> ln1_mean, ln1_rstd, ln2_mean, ln2_rstd;  // (N)
    cuda::DeviceBuffer<float> lse;      // (B, NH, T) flash attention's statistics
    cuda::DeviceBuffer<float> qk_rstd;  // (N, 2 NH) QK-norm's statistics (qk_norm only)
    cuda::DeviceBuffer<uint16_t> ln1_h, qkv_h, att_h, atty_h, ln2_h, fch_h, fchg_h;  // bf16 bits
    cuda::DeviceBuffer<float> ln1_f, qkv_f, att_f, atty_f, ln2_f, fch_f, fchg_f;     // float32
    cuda::DeviceBuffer<float> res2, res3;  // (N, C) residual stream after attention, after MLP
  };
  // An activation buffer of `n` elements in the run's dtype.
  TypedPtr act(cuda::DeviceBuffer<uint16_t>& h, cuda::DeviceBuffer<float>& f) const;
  void alloc_act(cuda::DeviceBuffer<uint16_t>& h, cuda::DeviceBuffer<float>& f, int64_t n,
                 const char* what);
  // The matmul operand of a weight: its float32 view in float32, its 16-bit copy in bfloat16.
  ConstTypedPtr wmat(const float* w32, const uint16_t* w16) const;
  // A float32 bias for a float32 output, or its 16-bit copy for a 16-bit output.
  ConstTypedPtr wbias(const float* b32, const uint16_t* b16, bool out_f32) const;
  uint64_t site_seed(int layer, int site) const;
  // Whether a forward with targets keeps its logits in the 16-bit dtype (in dlogits' buffer):
  // bfloat16 without the logit soft-cap. Otherwise they are float32, in logits_.
  bool lowp_logits() const;
  // logits_ with room for `rows` rows of Vp float32 logits (grown on first use where the
  // classifier keeps 16-bit logits: sampling, a forward without targets).
  float* f32_logits(int64_t rows);
  // QK-norm and rotary embeddings (as the architecture has them) in place on qkv (N, 3C), and
  // their backward on dqkv (qkv: the forward's output), as model/gpt.cpp orders them.
  void qk_forward(TypedPtr qkv, float* rstd, int64_t N, int T, int pos0 = 0);
  void qk_backward(TypedPtr dqkv, ConstTypedPtr qkv, const float* rstd, int64_t N, int T);
  // A timed scope of op class c (FLOPs, bytes moved) when a timer is set.
  cuda::GpuOpScope timed(OpClass c, double flops, double bytes) const {
    return cuda::GpuOpScope(timer_, c, flops, bytes);
  }

  cuda::CudaContext& ctx_;
  ModelConfig config_;
  Architecture arch_;
  ParamTable table_;
  DType dtype_;
  int maxB_, maxT_;
  bool flash_ = false;
  GpuFlashKernel flash_kernel_ = GpuFlashKernel::kMma;
  bool gelu_epilogue_ = false;
  cuda::GpuOpTimer* timer_ = nullptr;
  cuda::DeviceBuffer<float> params_, grads_, m_, v_;
  cuda::DeviceBuffer<uint16_t> params_h_;  // bfloat16 copy (empty in float32)
  ModelWeights w_, g_;
  LowpModelWeights lw_;
  std::vector<Layer> layers_;
  cuda::DeviceBuffer<int> inputs_d_, targets_d_;            // (B, T)
  cuda::DeviceBuffer<float> rotary_cos_, rotary_sin_;       // (block_size, HS/2) rotary only
  cuda::DeviceBuffer<float> encoded_;                       // (N, C)
  cuda::DeviceBuffer<float> lnf_mean_, lnf_rstd_, losses_;  // (N)
  cuda::DeviceBuffer<uint16_t> lnf_h_;                      // (N, C)
  cuda::DeviceBuffer<float> lnf_f_;
  cuda::DeviceBuffer<float> logits_;        // (N, Vp) float32 (see lowp_logits)
  cuda::DeviceBuffer<uint16_t> dlogits_h_;  // (N, Vp)
  cuda::DeviceBuffer<float> dlogits_f_;
  cuda::DeviceBuffer<float> proj_, dres_;                      // (N, C) float32
  cuda::DeviceBuffer<uint16_t> dC_h_, dC2_h_, d3C_h_, d4C_h_;  // gradients in the act dtype
  cuda::DeviceBuffer<float> dC_f_, dC2_f_, d3C_f_, d4C_f_;
  // forward_one's KV cache: per layer (block_size, C) keys and values in the run's dtype.
  std::vector<cuda::DeviceBuffer<uint16_t>> kcache_h_, vcache_h_;
  std::vector<cuda::DeviceBuffer<float>> kcache_f_, vcache_f_;
  int cache_len_ = 0;
  // The last forward.
  int B_ = 0, T_ = 0;
  bool training_ = false, backward_ready_ = false, logits_valid_ = false;
  float dropout_p_ = 0;
  float attn_dropout_p_ = 0;  // on the attention weights (ModelConfig::attention_dropout())
  uint64_t dropout_seed_ = 0;
};

}  // namespace nanogpt
