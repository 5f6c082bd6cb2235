// DataParallel: rank streams, accumulation split, overlapped gradient sum, launch checks.
#include "distributed/data_parallel.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "core/check.h"

namespace nanogpt {

DataParallel::DataParallel(Communicator& comm, int64_t global_accumulation, int64_t bucket_elems,
                           bool all_reduce_gradients)
    : comm_(comm), bucket_elems_(bucket_elems), all_reduce_gradients_(all_reduce_gradients) {
  const int W = comm.size();
  CHECK(global_accumulation % W == 0,
        "gradient_accumulation_steps = {} is not divisible by the number of ranks {} (mpirun -np "
        "{}): each rank runs gradient_accumulation_steps / ranks micro-steps per optimizer step. "
        "Use a multiple of {} (e.g. --gradient_accumulation_steps={}) or a rank count that "
        "divides {}",
        global_accumulation, W, W, W, (global_accumulation / W + 1) * W, global_accumulation);
  local_accum_ = global_accumulation / W;
}

void DataParallel::align(DataLoader& loader) const { loader.skip(comm_.rank()); }

void DataParallel::next_batch(DataLoader& loader, int32_t* inputs, int32_t* targets) const {
  loader.next_batch(inputs, targets);
  loader.skip(comm_.size() - 1);
}

void DataParallel::before_backward(GPT& model, bool last) {
  if (comm_.size() == 1 || !last || !all_reduce_gradients_) return;
  if (!sync_) {
    sync_ = std::make_unique<GradientSync>(comm_, model.grads().data(),
                                           static_cast<int64_t>(model.grads().size()),
                                           bucket_elems_);
  }
  GradientSync* sync = sync_.get();
  model.set_grad_ready_hook([sync](int64_t begin, int64_t end) { sync->on_ready(begin, end); });
}

std::vector<int64_t> DataParallel::gather_per_rank(int64_t value) {
  // A sum of one-hot vectors: exact for byte counts below 2^53.
  std::vector<double> slots(static_cast<size_t>(comm_.size()), 0.0);
  slots[static_cast<size_t>(comm_.rank())] = static_cast<double>(value);
  comm_.all_reduce_sum(slots.data(), static_cast<int64_t>(slots.size()));
  return std::vector<int64_t>(slots.begin(), slots.end());
}

double DataParallel::finish_step(GPT& model, double* loss_sum) {
  if (comm_.size() == 1) return 0;
  double waited = 0;
  if (all_reduce_gradients_) {
    model.set_grad_ready_hook({});
    waited = sync_->finish();
  }
  const auto t0 = std::chrono::steady_clock::now();
  comm_.all_reduce_sum(loss_sum, 1);
  waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return waited;
}

int threads_per_rank(int64_t configured, int local_ranks) {
  if (configured > 0) return static_cast<int>(configured);
  cpu_set_t set;
  CPU_ZERO(&set);
  int allowed = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(set), &set) == 0) allowed = CPU_COUNT(&set);
  const int all = static_cast<int>(std::thread::hardware_concurrency());
  // Bound by the launcher (OpenMPI binds each rank to a core by default): use those cores.
  if (allowed < all || local_ranks <= 1) return std::max(1, allowed);
  return std::max(1, allowed / local_ranks);
}

void check_same_config(Communicator& comm, const nlohmann::json& config) {
  if (comm.size() == 1) return;
  nlohmann::json mine = config;
  mine.erase("threads");
  std::string text = mine.dump();
  int64_t length = static_cast<int64_t>(text.size());
  comm.broadcast(&length, sizeof(length), 0);
  std::string root_text(static_cast<size_t>(length), '\0');
  if (comm.rank() == 0) root_text = text;
  comm.broadcast(root_text.data(), length, 0);
  const nlohmann::json root = nlohmann::json::parse(root_text);
  std::string diffs;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const nlohmann::json value = mine.contains(it.key()) ? mine[it.key()] : nlohmann::json();
    if (value != it.value()) {
      diffs += fmt::format("{}{} = {} (rank 0) vs {} (rank {})", diffs.empty() ? "" : ", ",
                           it.key(), it.value().dump(), value.dump(), comm.rank());
    }
  }
  double differing = diffs.empty() ? -1 : comm.rank();
  comm.all_reduce_max(&differing, 1);
  CHECK(diffs.empty(),
        "rank {} was started with a different configuration than rank 0: {}. Every rank must get "
        "the same config files and --key=value overrides",
        comm.rank(), diffs);
  CHECK(differing < 0,
        "rank {} was started with a different configuration than rank 0 (its message names the "
        "keys). Every rank must get the same config files and --key=value overrides",
        static_cast<int>(differing));
}

}  // namespace nanogpt
