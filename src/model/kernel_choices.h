// KernelChoices: which implementation of an op family the model runs, for a run's speed and memory
// only (every choice computes the same function; tests hold them to the same references). Set from
// the `attention`, `fused`, `fused_mlp`, `activation_checkpointing` and `recompute` training keys
// (train/train_config.h says what each one selects).
#pragma once

namespace nanogpt {

struct KernelChoices {
  // true: nanoGPT's non-flash attention, the (B, NH, T, T) probabilities materialized and kept for
  // the backward (O(T^2) memory); false: the flash-style kernel (no T x T matrix).
  bool naive_attention = false;
  // true: each residual add runs in one pass with the LayerNorm it feeds, and the classifier runs in
  // row chunks fused with its backward. false: the unfused paths (residual_forward then
  // layernorm_forward; the classifier over all rows at once, the (B*T, Vp) logits materialized).
  bool fused = true;
  // true: activation checkpointing by block. The forward keeps each block's output (the residual
  // stream, N x C floats per layer) and nothing else per layer; the backward runs each block's
  // forward again, from its kept input, just before that block's backward. About a third more
  // compute for an activation memory that no longer grows with 10 C per row per layer.
  bool checkpoint_blocks = false;
  // With fused: the MLP's GELU in the epilogue of the fc matmul and its derivative in the epilogue
  // of the backward matmul producing d(gelu), row block by row block (ops_lowp.h
  // matmul_gelu_forward / gelu_matmul_backward). Off by default: its many short parallel regions
  // made it slower on a shared 2-core machine (docs/benchmarks.md).
  bool fused_mlp = false;
  // What the backward computes again instead of keeping (llm.c's -r): 2 = each block's LayerNorm
  // outputs and its GELU output (the least memory), 1 = the GELU output only (the LayerNorm outputs
  // kept per block: 2 C values per row per layer more), 0 = neither (4 C more: the fastest). The
  // kept tensors are the ones the recomputation would give, so the gradients are the same bit for
  // bit. Without checkpoint_blocks only (which recomputes whole blocks). The fused MLP epilogue
  // (fused_mlp) recomputes its GELU whatever this says.
  int recompute = 2;
};

}  // namespace nanogpt
