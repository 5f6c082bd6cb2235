// The float32 products one optimizer step of a run multiplies (kernels/kernel_planner.h's
// ProductShape), from its parameter table: the planner times the ways of the small ones at these
// shapes (issue 30).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_planner.h"
#include "model/params.h"
#include "train/train_config.h"

namespace nanogpt {

// Per micro-batch of `rows` = B * T rows, accumulation micro-steps per step: each block's four
// linear layers (N, in, out) forward + backward, and the head (classifier chunks of at most the
// rows the model uses, C, padded vocab). With optimizer 'muon': Newton-Schulz's three forward
// products per iteration, muon_ns_steps iterations, on each hidden matrix Muon runs on all threads
// (the ones it gives a thread each run the chosen way too, timed here no differently from the
// others, but they are not in the list: a thread alone on them would be timed on all threads).
std::vector<ProductShape> step_products(const TrainConfig& config, const ParamTable& table,
                                        int64_t rows, int64_t micro_steps);

}  // namespace nanogpt
