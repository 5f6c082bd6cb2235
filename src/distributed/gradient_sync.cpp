// GradientSync: bucketed, overlapped gradient all-reduce.
#include "distributed/gradient_sync.h"

#include "core/check.h"

namespace nanogpt {

GradientSync::GradientSync(Communicator& comm, float* grads, int64_t numel, int64_t bucket_elems)
    : comm_(comm),
      grads_(grads),
      numel_(numel),
      bucket_elems_(bucket_elems),
      ready_begin_(numel),
      pending_begin_(numel) {
  CHECK(bucket_elems >= 1, "GradientSync: bucket of {} elements (expected >= 1)", bucket_elems);
}

void GradientSync::start(int64_t begin, int64_t end) {
  if (end <= begin) return;
  comm_.start_all_reduce_sum(grads_ + begin, end - begin);
  ++buckets_;
}

void GradientSync::on_ready(int64_t begin, int64_t end) {
  CHECK(end == ready_begin_ && begin <= end && begin >= 0,
        "GradientSync: gradient range [{}, {}) arrived but [{}, {}) was expected to be next",
        begin, end, begin, ready_begin_);
  ready_begin_ = begin;
  if (pending_begin_ - ready_begin_ >= bucket_elems_) {
    start(ready_begin_, pending_begin_);
    pending_begin_ = ready_begin_;
  }
  comm_.progress();
}

double GradientSync::finish() {
  CHECK(ready_begin_ == 0,
        "GradientSync: the backward reported gradients down to element {} only, not the whole "
        "arena of {}",
        ready_begin_, numel_);
  start(0, pending_begin_);
  const double waited = comm_.wait_all();
  ready_begin_ = pending_begin_ = numel_;
  return waited;
}

}  // namespace nanogpt
