// GradientSync: averages the gradients of data-parallel ranks, overlapped with the backward pass.
// It receives GPT's grad-ready ranges (ln_f, each block from the last, the embeddings), gathers
// them into buckets of about `bucket_elems` floats and starts each bucket's all-reduce as soon as
// it is full, so the sums of the last blocks travel while the earlier blocks' backward runs.
// finish() starts the rest and waits; what it waits is the step's exposed communication time.
#pragma once

#include <cstdint>

#include "distributed/communicator.h"

namespace nanogpt {

class GradientSync {
 public:
  // grads: the gradient arena (numel floats). bucket_elems >= 1.
  GradientSync(Communicator& comm, float* grads, int64_t numel, int64_t bucket_elems);

  // [begin, end) of the arena is final for this step. Ranges arrive from the end of the arena to
  // its start, each ending where the previous one began (GPT::GradReadyHook's order).
  void on_ready(int64_t begin, int64_t end);
  // Starts the last bucket, waits for every all-reduce; the whole arena then holds the sum over
  // ranks. Returns the seconds spent waiting. Throws if the ranges did not cover the arena.
  double finish();

  int64_t buckets_started() const { return buckets_; }

 private:
  void start(int64_t begin, int64_t end);

  Communicator& comm_;
  float* grads_;
  int64_t numel_, bucket_elems_;
  int64_t ready_begin_;    // ranges [ready_begin_, numel_) are final
  int64_t pending_begin_;  // [ready_begin_, pending_begin_) is final but not yet started
  int64_t buckets_ = 0;
};

}  // namespace nanogpt
