// The whole-split loss: windows covering every target token once, batched, sharded over ranks.
#include "train/full_eval.h"

#include <algorithm>

#include "core/check.h"

namespace nanogpt {

namespace {

// Fills (rows, t) inputs and targets from `rows` consecutive windows of length t starting at
// token `first` of `file` (window j starts at first + j * t).
void fill_windows(const TokenSpan& file, int64_t first, int rows, int t,
                  std::vector<int32_t>* inputs, std::vector<int32_t>* targets) {
  inputs->resize(static_cast<size_t>(rows) * t);
  targets->resize(static_cast<size_t>(rows) * t);
  for (int r = 0; r < rows; ++r) {
    const uint16_t* src = file.tokens + first + static_cast<int64_t>(r) * t;
    for (int i = 0; i < t; ++i) {
      (*inputs)[static_cast<size_t>(r) * t + i] = src[i];
      (*targets)[static_cast<size_t>(r) * t + i] = src[i + 1];
    }
  }
}

}  // namespace

FullEvalResult full_split_loss(GPT& model, Backend& ctx, const std::vector<TokenSpan>& files,
                               int block_size, int batch_size, Communicator& comm) {
  CHECK(block_size >= 1 && batch_size >= 1,
        "full_split_loss: block_size {} and batch_size {} must be >= 1", block_size, batch_size);
  std::vector<int32_t> inputs, targets;
  double sums[2] = {0, 0};  // sum of loss x targets, targets (this rank's share)
  int64_t batch_index = 0;
  auto run_batch = [&](const TokenSpan& file, int64_t first, int rows, int t) {
    const bool mine = batch_index++ % comm.size() == comm.rank();
    if (!mine) return;
    fill_windows(file, first, rows, t, &inputs, &targets);
    const double mean = model.forward(ctx, inputs.data(), targets.data(), rows, t,
                                      /*training=*/false);
    const double count = static_cast<double>(rows) * t;
    sums[0] += mean * count;
    sums[1] += count;
  };
  const int64_t T = block_size;
  for (const TokenSpan& file : files) {
    if (file.size < 2) continue;  // no target in it
    const int64_t full_windows = (file.size - 1) / T;
    for (int64_t k = 0; k < full_windows; k += batch_size) {
      const int rows = static_cast<int>(std::min<int64_t>(batch_size, full_windows - k));
      run_batch(file, k * T, rows, block_size);
    }
    const int64_t tail = (file.size - 1) - full_windows * T;
    if (tail > 0) run_batch(file, full_windows * T, 1, static_cast<int>(tail));
  }
  comm.all_reduce_sum(sums, 2);
  FullEvalResult result;
  result.target_tokens = static_cast<int64_t>(sums[1]);
  result.mean_loss = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
  return result;
}

}  // namespace nanogpt
