// plan_gpu_memory (gpu_memory_plan.h): the GPU's training buffers, counted in bytes.
#include "model/gpu_memory_plan.h"

#include "kernels/gpu_flash_rule.h"
#include "model/params.h"

namespace nanogpt {

GpuMemoryPlan plan_gpu_memory(const ModelConfig& config, DType dtype, int B, int T,
                              bool naive_attention) {
  const ParamTable table(config);
  const int64_t P = table.total_numel();
  const int64_t N = int64_t{B} * T, C = config.n_embd, L = config.n_layer, NH = config.n_head;
  const int64_t Vp = config.padded_vocab_size();
  const int64_t e = static_cast<int64_t>(dtype_size(dtype));
  GpuMemoryPlan p;
  p.params = 4 * P + (dtype == DType::kF32 ? 0 : 2 * P);
  p.grads = 4 * P;
  p.optimizer = 8 * P;
  const bool flash =
      !naive_attention && gpu_attention_keeps_statistics(dtype, config.n_embd, config.n_head);
  const int64_t att = flash ? int64_t{B} * NH * T * 4 : int64_t{B} * NH * T * T * e;
  // Per layer: ln1, qkv, atty, ln2 (C + 3C + C + C), fch and its activation (8C) in the act dtype,
  // att (NH T T per sequence; flash: NH T statistics), res2 and res3 in float32, 4 statistics.
  const int64_t per_layer = N * (14 * C) * e + att + N * 2 * C * 4 + N * 16;
  p.activations = L * per_layer + N * C * 4 /*encoded*/ + N * C * e /*lnf*/ + N * 12 + N * 8;
  // float32 logits and their gradient; bfloat16 training without the soft-cap keeps 16-bit logits
  // that their gradient overwrites (a forward without targets, e.g. sampling, then takes float32
  // logits besides).
  const bool lowp_logits = dtype != DType::kF32 && config.logit_softcap <= 0;
  p.classifier = lowp_logits ? N * Vp * e : N * Vp * (4 + e);
  // proj, dres (float32), the gradient temporaries (C, C, 3C, 4C in the act dtype), attention's
  // scratch (q, k, v, y and their gradients, a dropped att and its gradient).
  p.scratch = N * C * 8 + N * 9 * C * e +
              (flash ? N * NH * 4 : 8 * N * C * e + 2 * int64_t{B} * NH * T * T * e);
  p.flash_attention = flash;
  return p;
}

}  // namespace nanogpt
