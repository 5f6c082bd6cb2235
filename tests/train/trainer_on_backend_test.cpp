// The one trainer on a backend whose memory is not the host's: an OffHostCpuBackend (the CPU's
// kernels behind memory that the trainer must treat as a device's) takes every device path of the
// training run -- the model's arenas, the optimizer state and the weight average in the backend's
// memory, the optimizer passes through its ops, checkpoints through host copies -- and must train,
// evaluate, save and resume exactly as the host run does: the same losses, the same checkpoint
// bytes, for each optimizer and dtype, plain and modern architecture, and with ZeRO-1 on one rank
// (its shard buffers and sharded master weights in the backend's memory).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "backends/off_host_cpu_backend.h"
#include "core/check.h"
#include "train/device_profile_peaks.h"
#include "train/nanogpt_run.h"
#include "train/tiny_training.h"
#include "train/trainer.h"

namespace nanogpt {
namespace {

namespace fs = std::filesystem;
using Case = testing::TinyRunCase;
using testing::config_of;
using testing::make_dataset;
using testing::read_file;

class TrainerOnBackend : public ::testing::TestWithParam<Case> {};

TEST_P(TrainerOnBackend, TrainsSavesAndResumesAsTheHostRunBitForBit) {
  const Case& c = GetParam();
  const fs::path root = fs::temp_directory_path() /
                        ("nanogpt_trainer_on_backend_" + c.name + "_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path data = make_dataset(root);
  TrainOptions quiet;
  quiet.quiet = true;

  // 8 iterations, then a resume to 12, on the host and on the off-host backend.
  TrainResult host[2], off[2];
  testing::OffHostCpuBackend device;
  for (int part = 0; part < 2; ++part) {
    const int64_t iters = part == 0 ? 8 : 12;
    TrainConfig h = config_of(c, data, root / "host", iters);
    TrainConfig d = config_of(c, data, root / "device", iters);
    if (part == 1) h.init_from = d.init_from = "resume";
    host[part] = run_training(h, quiet);
    TrainOptions on_device = quiet;
    on_device.device = &device;
    off[part] = run_training(d, on_device);
    EXPECT_EQ(off[part].iter_num, iters);
    EXPECT_EQ(off[part].last_train_loss, host[part].last_train_loss) << "part " << part;
    EXPECT_EQ(off[part].last_val_loss, host[part].last_val_loss) << "part " << part;
    EXPECT_EQ(off[part].best_val_loss, host[part].best_val_loss) << "part " << part;
    for (const char* f : {"model.safetensors", "optimizer.safetensors"}) {
      const std::string a = read_file(root / "host" / "ckpt" / f);
      const std::string b = read_file(root / "device" / "ckpt" / f);
      EXPECT_FALSE(a.empty()) << f;
      EXPECT_TRUE(a == b) << f << " differs after part " << part;
    }
  }
  EXPECT_LT(host[1].last_val_loss, 4.0);  // it trains (ln 65 = 4.17 at the start)
  // The device paths ran: token ids, the loaded checkpoint went up; losses, checkpoints came down.
  EXPECT_GT(device.uploads, 10);
  EXPECT_GT(device.downloads, 10);
  fs::remove_all(root);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrainerOnBackend,
    ::testing::Values(Case{"adamw_f32", "adamw", "float32"},
                      Case{"adamw_bf16_modern_ema", "adamw", "bfloat16", true, 0.9},
                      Case{"muon_bf16_modern", "muon", "bfloat16", true},
                      Case{"muon_f32_ema", "muon", "float32", false, 0.8},
                      Case{"sgd_f16", "sgd", "float16"},
                      Case{"adamw_f32_zero1", "adamw", "float32", false, 0, 1},
                      Case{"muon_bf16_zero1_sharded_masters", "muon", "bfloat16", true, 0, 1}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// nanoGPT's ckpt.pt onto a device backend: its weights and AdamW moments are uploaded, and the run
// goes on exactly as the host's from the same file.
TEST(TrainerOnBackendNanoGpt, ContinuesACkptPtAsTheHostRunDoes) {
  const fs::path root = fs::temp_directory_path() /
                        ("nanogpt_trainer_on_backend_ckpt_pt_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path data = make_dataset(root);
  TrainOptions quiet;
  quiet.quiet = true;
  auto config = [&](const char* out, int64_t iters) {
    TrainConfig t = config_of(Case{"x", "adamw", "float32"}, data, root / out, iters);
    t.model.gelu = "exact";  // nanoGPT's MLP
    return t;
  };
  run_training(config("a", 4), quiet);
  const std::string pt = (root / "a.pt").string();
  export_nanogpt_checkpoint("resume", (root / "a").string(), pt);
  TrainConfig h = config("host", 8);
  TrainConfig d = config("device", 8);
  h.init_from = d.init_from = pt;
  const TrainResult host = run_training(h, quiet);
  testing::OffHostCpuBackend device;
  TrainOptions on_device = quiet;
  on_device.device = &device;
  const TrainResult off = run_training(d, on_device);
  EXPECT_GT(host.steps_run, 0);
  EXPECT_EQ(off.steps_run, host.steps_run);  // from the ckpt.pt's iter_num on
  EXPECT_EQ(off.last_train_loss, host.last_train_loss);
  EXPECT_EQ(off.last_val_loss, host.last_val_loss);
  for (const char* f : {"model.safetensors", "optimizer.safetensors"}) {
    const std::string a = read_file(root / "host" / "ckpt" / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_TRUE(a == read_file(root / "device" / "ckpt" / f)) << f << " differs";
  }
  fs::remove_all(root);
}

// --profile=True on a device backend: the ops are charged as on the host (kernels/op_costs.h), and
// the table is read against the device's peak and its copy bandwidth measured through the seam.
TEST(TrainerOnBackendProfile, TimesTheOpsAgainstTheDevicesPeakAndBandwidth) {
  const fs::path root = fs::temp_directory_path() /
                        ("nanogpt_trainer_on_backend_profile_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path data = make_dataset(root);
  TrainConfig t = config_of(Case{"x", "adamw", "bfloat16"}, data, root / "out", 3);
  t.profile = true;
  testing::OffHostCpuBackend device;
  TrainOptions o;
  o.device = &device;
  o.device_peak_flops = 1e12;
  ::testing::internal::CaptureStdout();
  run_training(t, o);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("profile on cpu-off-host (its bfloat16 peak of 1 TFLOP/s"), std::string::npos)
      << out;
  for (const char* row : {"matmul", "attention", "norm", "classifier"}) {  // the class rows
    EXPECT_NE(out.find("\n" + std::string(row) + " "), std::string::npos) << row << "\n" << out;
  }
  const DeviceProfilePeaks peaks = measure_device_profile_peaks(device, 2e12);
  EXPECT_GT(peaks.bytes_per_s, 1e8);
  EXPECT_DOUBLE_EQ(peaks.compute.matmul(), 2e12);
  EXPECT_DOUBLE_EQ(peaks.compute.for_op_class(OpClass::kAttention), 2e12);
  fs::remove_all(root);
}

}  // namespace
}  // namespace nanogpt
