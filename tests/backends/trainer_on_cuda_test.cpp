// The one trainer on the GPU (TrainOptions::device = a CudaBackend) against the same run on the
// CPU: ten steps with evaluations, a checkpoint and a resume, for AdamW, Muon and SGD, in float32
// and bfloat16, plain and modern architecture, with the weight average; the losses must agree
// within the dtype's tolerance (the GPU sums in other orders: not bit for bit). Skipped, saying
// why, where the build has no CUDA backend or the machine no usable GPU; scripts/gpu_check.sh runs
// it on a lent one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/check.h"
#include "kernels/backend.h"
#include "train/tiny_training.h"
#include "train/trainer.h"
#if NANOGPT_TEST_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace nanogpt {
namespace {

namespace fs = std::filesystem;
using Case = testing::TinyRunCase;

class TrainerOnCuda : public ::testing::TestWithParam<Case> {};

TEST_P(TrainerOnCuda, TrainsAndResumesAsTheCpuRunWithinTolerance) {
#if NANOGPT_TEST_CUDA
  std::string why;
  if (!cuda::device_available(&why)) GTEST_SKIP() << "cuda: no usable GPU here: " << why;
  const Case& c = GetParam();
  const fs::path root = fs::temp_directory_path() /
                        ("nanogpt_trainer_on_cuda_" + c.name + "_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path data = testing::make_dataset(root);
  TrainOptions quiet;
  quiet.quiet = true;
  CudaBackend gpu(/*allow_tf32=*/false);
  const double rtol = c.dtype == "float32" ? 2e-3 : 3e-2;  // (float16: the loss scaler's too)
  for (int part = 0; part < 2; ++part) {
    const int64_t iters = part == 0 ? 8 : 12;
    TrainConfig h = testing::config_of(c, data, root / "cpu", iters);
    TrainConfig d = testing::config_of(c, data, root / "gpu", iters);
    for (TrainConfig* t : {&h, &d}) {
      t->model.n_embd = 128;  // heads of 64: the GPU's flash attention
      t->model.dropout = 0;   // (the GPU's dropout masks are the CPU's, but keep the test plain)
      if (c.dtype == "float32") t->attention = "naive";  // the GPU's flash is bfloat16 only
      if (part == 1) t->init_from = "resume";
    }
    const TrainResult want = run_training(h, quiet);
    TrainOptions on_gpu = quiet;
    on_gpu.device = &gpu;
    TrainResult got;
    try {
      got = run_training(d, on_gpu);
    } catch (const UnsupportedOp& e) {
      ADD_FAILURE() << "cuda: " << c.name << " refused: " << e.what();
      break;
    }
    EXPECT_EQ(got.iter_num, iters);
    EXPECT_NEAR(got.last_train_loss, want.last_train_loss, rtol * want.last_train_loss)
        << c.name << " part " << part;
    EXPECT_NEAR(got.last_val_loss, want.last_val_loss, rtol * want.last_val_loss)
        << c.name << " part " << part;
  }
  fs::remove_all(root);
#else
  GTEST_SKIP() << "cuda: this build has no CUDA backend (built without nvcc, or "
                  "-DNANOGPT_CUDA=OFF)";
#endif
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrainerOnCuda,
    ::testing::Values(Case{"adamw_f32", "adamw", "float32"},
                      Case{"adamw_bf16_modern_ema", "adamw", "bfloat16", true, 0.9},
                      Case{"muon_bf16_modern", "muon", "bfloat16", true},
                      Case{"adamw_f16_scaler", "adamw", "float16"},
                      Case{"sgd_f32_ema", "sgd", "float32", false, 0.8},
                      Case{"muon_bf16_zero1_sharded_masters", "muon", "bfloat16", true, 0, 1}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace nanogpt
