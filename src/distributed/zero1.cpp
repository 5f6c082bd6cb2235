// Zero1: sharded optimizer state, reduce-scatter / all-gather around the update.
#include "distributed/zero1.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"
#include "model/init.h"
#include "optim/grad_clip.h"

namespace nanogpt {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<int64_t> zero1_shard_counts(int64_t numel, int world_size) {
  const int64_t per = ((numel + world_size - 1) / world_size + 15) / 16 * 16;
  std::vector<int64_t> counts;
  int64_t at = 0;
  for (int r = 0; r < world_size; ++r) {
    const int64_t n = std::max<int64_t>(0, std::min(per, numel - at));
    counts.push_back(n);
    at += n;
  }
  return counts;
}

Zero1::Zero1(Communicator& comm, const OptimConfig& config, const ParamTable& table,
             MemoryTracker* tracker, bool shard_masters, OptimizerRuntime runtime)
    : comm_(comm), numel_(table.total_numel()) {
  counts_ = zero1_shard_counts(numel_, comm.size());
  int64_t at = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) {
      begin_ = at;
      end_ = at + counts_[r];
    }
    fp32_counts_.push_back(table.fp32_read_count(at, at + counts_[r]));
    at += counts_[r];
  }
  // The optimizer steps this rank's shard; Muon also shares its orthogonalizations (optim/muon.h).
  runtime.shard = {begin_, end_, counts_};
  runtime.sharing.rank = comm.rank();
  runtime.sharing.world = comm.size();
  Communicator* c = &comm;
  runtime.sharing.broadcast = [c](float* data, int64_t n, int root) {
    c->broadcast(data, n * static_cast<int64_t>(sizeof(float)), root);
  };
  runtime.sharing.all_gather = [c](float* data, const std::vector<int64_t>& counts) {
    c->all_gather(data, counts);
  };
  optimizer_ = make_optimizer(config, table, tracker, runtime);
  const auto n = static_cast<size_t>(end_ - begin_);
  shard_grads_ = Buffer<float>(n, tracker, &ops());
  if (shard_masters) master_ = Buffer<float>(n, tracker, &ops());
}

void Zero1::init_masters(const ParamTable& table, uint64_t seed) {
  CHECK(shards_masters(), "Zero1::init_masters: the master weights are not sharded");
  Buffer<float> host(static_cast<size_t>(end_ - begin_));
  init_weights_range(table, seed, begin_, end_, host.data());
  ops().upload(master_.data(), host.data(), host.size() * sizeof(float));
}

void Zero1::set_masters_from_whole(const float* whole) {
  CHECK(shards_masters(), "Zero1::set_masters_from_whole: the master weights are not sharded");
  ops().upload(master_.data(), whole + begin_, static_cast<size_t>(end_ - begin_) * sizeof(float));
}

void Zero1::publish_weights(GPT& model, Backend& ops, double* comm_seconds) {
  CHECK(shards_masters() && model.master_weights() == MasterWeights::kOutside,
        "Zero1::publish_weights: needs sharded master weights and a model built with "
        "MasterWeights::kOutside");
  model.set_weights_range(ops, master_.data(), begin_, end_);
  const auto t0 = std::chrono::steady_clock::now();
  comm_.all_gather(model.lowp_weights().data(), counts_);
  comm_.all_gather(model.fp32_read_weights().data(), fp32_counts_);
  if (comm_seconds) *comm_seconds += seconds_since(t0);
}

double Zero1::reduce_gradients(const float* grads, double* comm_seconds) {
  const auto t0 = std::chrono::steady_clock::now();
  if (comm_.size() == 1) {  // the shard is the whole arena (the copy in the backend's memory)
    ops().copy_bytes(shard_grads_.data(), grads, static_cast<size_t>(end_ - begin_) * sizeof(float));
  } else {
    comm_.reduce_scatter_sum(grads, shard_grads_.data(), counts_);
  }
  double sum_sq = ops().frobenius_sum_sq(shard_grads_.data(), end_ - begin_);
  comm_.all_reduce_sum(&sum_sq, 1);
  *comm_seconds += seconds_since(t0);
  return std::sqrt(sum_sq);
}

void Zero1::clip_shard(double norm, double max_norm) {
  // clip_grad_norm's rule, with the norm of all shards.
  if (max_norm > 0 && std::isfinite(norm)) {
    const double scale = max_norm / (norm + 1e-6);
    if (scale < 1.0) {
      const TensorSpan shard[] = {{0, end_ - begin_}};
      ops().scale_tensors(shard_grads_.data(), shard, static_cast<float>(scale));
    }
  }
}

void Zero1::step(float* params, double lr, double norm, double max_norm, double* comm_seconds) {
  clip_shard(norm, max_norm);
  optimizer_->step(params + begin_, shard_grads_.data(), lr);
  const auto t0 = std::chrono::steady_clock::now();
  comm_.all_gather(params, counts_);
  *comm_seconds += seconds_since(t0);
}

void Zero1::step(GPT& model, Backend& ops, double lr, double norm, double max_norm,
                 double* comm_seconds) {
  if (!shards_masters()) {
    step(model.params().data(), lr, norm, max_norm, comm_seconds);
    return;
  }
  clip_shard(norm, max_norm);
  optimizer_->step(master_.data(), shard_grads_.data(), lr);
  publish_weights(model, ops, comm_seconds);
}

void Zero1::gather_to_root(const float* shard, float* whole) {
  Buffer<float> block;
  int64_t at = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    // Rank r's shard goes to everyone (broadcast is in the interface); rank 0 keeps it.
    block = Buffer<float>(static_cast<size_t>(counts_[r]));
    if (r == comm_.rank()) {
      ops().download(block.data(), shard, static_cast<size_t>(counts_[r]) * sizeof(float));
    }
    comm_.broadcast(block.data(), counts_[r] * static_cast<int64_t>(sizeof(float)), r);
    if (comm_.rank() == 0) std::copy(block.data(), block.data() + counts_[r], whole + at);
    at += counts_[r];
  }
}

void Zero1::gather_state(std::vector<std::pair<std::string, Buffer<float>>>* whole) {
  whole->clear();
  for (const auto& t : optimizer_->state_tensors()) {
    float* out = nullptr;
    if (comm_.rank() == 0) {
      whole->emplace_back(t.name, Buffer<float>(static_cast<size_t>(numel_)));
      out = whole->back().second.data();
    }
    gather_to_root(t.data, out);
  }
}

void Zero1::gather_masters(Buffer<float>* whole) {
  CHECK(shards_masters(), "Zero1::gather_masters: the master weights are not sharded");
  *whole = Buffer<float>();
  if (comm_.rank() == 0) *whole = Buffer<float>(static_cast<size_t>(numel_));
  gather_to_root(master_.data(), whole->data());
}

}  // namespace nanogpt
