// OpProfile: where a training step's time goes, per op class (matmul, attention, norm,
// elementwise, classifier, optimizer, data), with the FLOPs and bytes each op moved, so that
// `nanogpt train --profile=True` can print share of step time, GFLOP/s or GB/s and % of peak.
// Filled by the ops seam (kernels/ops_seam.h) and the trainer; printed by table().
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace nanogpt {

struct ComputePeaks;  // kernels/compute_peaks.h

enum class OpClass : int {
  kMatmul,       // the block's linear layers (forward and backward)
  kAttention,    // causal self-attention (forward and backward)
  kNorm,         // LayerNorm
  kElementwise,  // GELU, residual adds, dropout, embedding lookup
  kClassifier,   // the tied head: logits matmul, softmax cross-entropy, its backward
  kOptimizer,    // gradient clipping and the optimizer step
  kData,         // building batches
  kCount,
};

const char* op_class_name(OpClass c);

struct OpStats {
  double seconds = 0;
  double flops = 0;  // useful floating-point operations
  double bytes = 0;  // bytes read + written (the least an op must move)
  int64_t calls = 0;
};

class OpProfile {
 public:
  void add(OpClass c, double seconds, double flops, double bytes) {
    OpStats& s = stats_[static_cast<int>(c)];
    s.seconds += seconds;
    s.flops += flops;
    s.bytes += bytes;
    ++s.calls;
  }
  // add(), and the same figures kept for the op by name too (a string literal: the Backend's
  // method), for the table's per-op rows.
  void add(OpClass c, const char* op, double seconds, double flops, double bytes);
  // Whole steps covered (their wall time), for the share of each class and the untimed rest.
  void add_step(double seconds) {
    step_seconds_ += seconds;
    ++steps_;
  }
  const OpStats& stats(OpClass c) const { return stats_[static_cast<int>(c)]; }
  int64_t steps() const { return steps_; }
  double step_seconds() const { return step_seconds_; }

  // A table, one row per class plus "other" (step time no op accounts for: threads waiting,
  // bookkeeping): ms per step, share of step time, GFLOP/s or GB/s, % of the given peaks.
  // An op is compute-bound when its FLOPs per byte exceed its FLOP peak / peak_bytes_per_s.
  // bf16_peak_flops > 0 (a bfloat16 run on a CPU with bf16 dot products): the FLOP peak of the
  // classes whose products run in bf16 (matmul, attention, classifier); peak_flops for the rest.
  // Each class's % of peak against the unit its products run on (ComputePeaks::for_op_class).
  // Then the ops recorded by name, by class, those of 0.5% of the step or more, the same columns.
  std::string table(const ComputePeaks& peaks, double peak_bytes_per_s) const;

 private:
  struct NamedOp {
    OpClass c;
    std::string op;
    OpStats stats;
  };
  std::array<OpStats, static_cast<int>(OpClass::kCount)> stats_{};
  std::vector<NamedOp> ops_;  // in the order first seen; a few dozen at most
  double step_seconds_ = 0;
  int64_t steps_ = 0;
};

}  // namespace nanogpt
