// Muon (Keller Jordan's published MomentUm Orthogonalized by Newton-schulz) for the hidden
// matrices (ParamSpec::hidden_matrix: the four matmul weights of each block), AdamW for every
// other tensor (embeddings, head, gains, biases), each group with its own learning rate and weight
// decay. Per hidden matrix W (rows, cols) with gradient G, at optimizer step k (0-based):
//   mu_k = muon_momentum, or during the momentum warmup muon_momentum_start + (muon_momentum -
//          muon_momentum_start) * k / muon_momentum_warmup_iters
//   buf = mu_k * buf + G;  D = G + mu_k * buf (Nesterov) or buf
//   O = NewtonSchulz(D, muon_ns_steps) (optim/newton_schulz.h)
//   W *= 1 - lr_muon * muon_weight_decay;  W -= lr_muon * sqrt(max(1, rows / cols)) * O
// with lr_muon = muon_learning_rate * lr / learning_rate (the schedule's factor, lr the rate the
// trainer passes, which is the AdamW group's). State: AdamW's arenas "m" and "v" in the parameter
// layout; Muon's momentum buffer lives in the "m" slots of the hidden matrices (AdamW leaves those
// slots alone), so checkpoints, the estimator and state counts are those of AdamW.
// Data parallel (RankSharing, world W > 1): every rank updates every momentum buffer (the
// gradients are the same on all ranks), hidden matrix i (table order) is orthogonalized and
// updated on rank i % W only, then broadcast from there.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "kernels/context.h"
#include "optim/adamw.h"
#include "optim/newton_schulz.h"
#include "optim/optimizer.h"

namespace nanogpt {

class Muon : public Optimizer {
 public:
  // config: validated, optimizer 'muon' (its AdamW keys and the muon_* keys).
  Muon(const ParamTable& table, const OptimConfig& config, MemoryTracker* tracker = nullptr,
       const OptimizerRuntime& runtime = {});

  void step(float* params, const float* grads, double lr) override;
  std::string name() const override { return "muon"; }
  int64_t numel() const override { return table_.total_numel(); }
  // {"m", "v"}: see the top of this file.
  std::vector<OptimizerStateTensor> state_tensors() override { return adamw_.state_tensors(); }

  // The Muon momentum at optimizer step k (0-based), warmup included.
  double momentum_at(int64_t k) const;

 private:
  ParamTable table_;
  OptimConfig config_;
  RankSharing sharing_;
  AdamW adamw_;                               // the other tensors; owns the state arenas
  std::unique_ptr<KernelContext> owned_ctx_;  // when the runtime gave none
  std::unique_ptr<NewtonSchulz> newton_schulz_;
  std::vector<const ParamSpec*> matrices_;  // the hidden matrices, table order
  Buffer<float> direction_;                 // (largest matrix) the update direction D
  Buffer<float> ortho_;                     // (largest matrix) NewtonSchulz(D)
};

// Bytes Muon allocates besides the two state arenas (its workspaces and Newton-Schulz's, sized by
// the largest hidden matrix of `table`), for matmuls in `matmul_dtype`: what the estimator counts.
int64_t muon_workspace_bytes(const ParamTable& table, DType matmul_dtype);

}  // namespace nanogpt
