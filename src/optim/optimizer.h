// Optimizer: the interface the trainer steps (AdamW, SGD), with its state exposed as named arenas
// in the parameter layout for checkpointing, and the factory from OptimConfig.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "kernels/dtype.h"
#include "model/params.h"
#include "optim/optim_config.h"

namespace nanogpt {

class Backend;
class CpuBackend;

// The backend an optimizer computes through and keeps its state in: the one it was given, or, given
// none, a CpuBackend of its own (the host).
class OptimizerBackend {
 public:
  explicit OptimizerBackend(Backend* given);
  ~OptimizerBackend();
  OptimizerBackend(OptimizerBackend&&) noexcept;
  OptimizerBackend(const OptimizerBackend&) = delete;
  OptimizerBackend& operator=(const OptimizerBackend&) = delete;
  Backend& get() const { return *backend_; }

 private:
  std::unique_ptr<CpuBackend> owned_;
  Backend* backend_;
};

// A view of one state arena: table.total_numel() floats, tensor k at specs()[k].offset.
struct OptimizerStateTensor {
  std::string name;  // "m", "v" (AdamW) or "momentum" (SGD)
  float* data = nullptr;
  int64_t numel = 0;
};

// What the fused optimizer step (fused=True) does besides the update, in the same pass.
struct FusedStepExtras {
  float grad_unscale = 1.0f;  // the gradient used is (g * grad_unscale) * grad_clip: float
  float grad_clip = 1.0f;     // products in the order GradScaler::unscale and clip_grad_norm apply
                              // them (1 changes nothing)
  TypedPtr params_lowp;       // nullable: (total_numel) receives round(params) after the update,
                              // the 16-bit weight copy (GPT::params_lowp_for_update)
  bool zero_grads = false;    // grads = 0 once used (what the next step's backward needs)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // The backend it computes through and keeps its state in.
  Backend& backend() const { return backend_.get(); }
  // One update of every tensor of the table. params, grads: arenas of table.total_numel() floats.
  virtual void step(float* params, const float* grads, double lr) = 0;
  // The same update on the gradients as `extras` transforms them, then the 16-bit copy and the
  // zeroing: bit-identical to scaling grads in place, step(), cpu::convert of the params and
  // zeroing grads, one pass each (which this default does; AdamW does all of it in one pass).
  virtual void step_fused(float* params, float* grads, double lr, const FusedStepExtras& extras);
  virtual std::string name() const = 0;
  // Floats in the params / grads arenas it steps (its table's total_numel()).
  virtual int64_t numel() const = 0;
  // Views of the state arenas (valid while the optimizer lives); fill them to restore a checkpoint.
  virtual std::vector<OptimizerStateTensor> state_tensors() = 0;
  // Floating-point operations of one step() beyond the element passes (Muon's Newton-Schulz
  // matmuls on this rank), for --profile's optimizer row; 0 for element-wise optimizers.
  virtual double flops_per_step() const { return 0; }
  // Number of step() calls so far (AdamW's bias correction uses it); restore with set_steps.
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }

 protected:
  explicit Optimizer(Backend* backend) : backend_(backend) {}
  int64_t steps_ = 0;

 private:
  OptimizerBackend backend_;
};

// How data-parallel ranks share work that every rank would otherwise repeat (Muon's
// orthogonalizations). A callback rather than the Communicator: optim/ sits below distributed/.
struct RankSharing {
  int rank = 0, world = 1;
  // Every rank calls it together with the same n and root: data (n floats) becomes root's.
  std::function<void(float* data, int64_t n, int root)> broadcast;
  // Every rank calls it together: data is world blocks of counts[r] floats, each rank's own block
  // goes to every rank (Communicator::all_gather). Needed with an ArenaShard only.
  std::function<void(float* data, const std::vector<int64_t>& counts)> all_gather;
};

// ZeRO-1 (distributed/zero1.h): the optimizer keeps state for, and steps, arena elements
// [begin, end) of its table only; the params and grads it is given start at element begin.
// counts: every rank's shard size (the shards tile the arena in rank order).
struct ArenaShard {
  int64_t begin = 0, end = -1;  // end < 0: no shard, the whole arena
  std::vector<int64_t> counts;
  bool enabled() const { return end >= 0; }
};

// What an optimizer may take from the run besides its config and table. Every optimizer computes
// through the run's Backend (kernels/optimizer_ops.h), which also holds its state (the device's
// memory: params and grads given to step() are in it too); Muon's Newton-Schulz matmuls go through
// the backend's matmuls, in the run's 16-bit matmul dtype. Passing them at construction keeps
// Optimizer::step's signature (and AdamW's, SGD's, Zero1's calls) as it is. All optional: without
// a backend the optimizer makes a CpuBackend of its own; float32; one rank.
struct OptimizerRuntime {
  Backend* backend = nullptr;     // outlives the optimizer; null: the optimizer owns a CpuBackend
  DType matmul_dtype = DType::kF32;  // kBF16: Newton-Schulz in bfloat16 (bfloat16 runs)
  RankSharing sharing;               // data parallelism: ranks split the matrices
  ArenaShard shard;                  // ZeRO-1: this rank's shard of the arena
  int threads = 0;                   // OpenMP threads of the step (0: omp_get_max_threads())
};

// State tensors (each table.total_numel() floats) the optimizer of `config` keeps: AdamW 2 (m, v),
// SGD 1 with momentum, 0 without, Muon 2 (AdamW's m and v arenas: m holds Muon's momentum buffer
// in the slots of the hidden matrices, whose v slots stay zero; optim/muon.h). The optimizers
// allocate exactly this many; the estimator uses it.
int optimizer_state_tensor_count(const OptimConfig& config);

// AdamW, SGD or Muon per config.optimizer (validated). State buffers are zeroed and sized for
// `table`, or for runtime.shard's part of it (AdamW and SGD then step table.slice(shard); Muon
// keeps the whole table to see whole matrices).
std::unique_ptr<Optimizer> make_optimizer(const OptimConfig& config, const ParamTable& table,
                                          MemoryTracker* tracker = nullptr,
                                          const OptimizerRuntime& runtime = {});

}  // namespace nanogpt
