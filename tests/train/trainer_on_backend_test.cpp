// The one trainer on a backend whose memory is not the host's: an OffHostCpuBackend (the CPU's
// kernels behind memory that the trainer must treat as a device's) takes every device path of the
// training run -- the model's arenas, the optimizer state and the weight average in the backend's
// memory, the optimizer passes through its ops, checkpoints through host copies -- and must train,
// evaluate, save and resume exactly as the host run does: the same losses, the same checkpoint
// bytes, for each optimizer and dtype, plain and modern architecture.
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
#include "core/rng.h"
#include "data/token_writer.h"
#include "train/trainer.h"

namespace nanogpt {
namespace {

namespace fs = std::filesystem;

// A character-level corpus of 65 symbols with some structure (a repeated phrase with noise).
fs::path make_dataset(const fs::path& root) {
  const fs::path dir = root / "data";
  fs::create_directories(dir);
  Rng rng(3);
  auto tokens = [&](int n) {
    std::vector<uint16_t> t(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      t[static_cast<size_t>(i)] = rng.uniform_int(5) == 0 ? static_cast<uint16_t>(rng.uniform_int(65))
                                                         : static_cast<uint16_t>((i * 7) % 23);
    }
    return t;
  };
  write_nanogpt_tokens((dir / "train.bin").string(), tokens(20000));
  write_nanogpt_tokens((dir / "val.bin").string(), tokens(4000));
  std::ofstream(dir / "meta.json") << R"({"vocab_size": 65})";
  return dir;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Case {
  std::string name;
  std::string optimizer;
  std::string dtype;
  bool modern = false;
  double ema = 0;
};

TrainConfig config_of(const Case& c, const fs::path& data, const fs::path& out, int64_t iters) {
  TrainConfig t;
  t.data_dir = data.string();
  t.out_dir = out.string();
  t.model.n_layer = 2;
  t.model.n_head = 2;
  t.model.n_embd = 32;
  t.model.block_size = 16;
  t.model.dropout = 0.1;
  if (c.modern) {
    t.model.norm = "rmsnorm";
    t.model.position = "rotary";
    t.model.qk_norm = true;
    t.model.activation = "relu2";
    t.model.tie_embeddings = false;
    t.model.logit_softcap = 15.0;
    t.model.unet_skips = true;
    t.model.attn_gain = 0.5;
  }
  t.batch_size = 4;
  t.gradient_accumulation_steps = 2;
  t.max_iters = iters;
  t.optim.lr_decay_iters = 12;
  t.optim.warmup_iters = 2;
  t.eval_interval = 4;
  t.eval_iters = 2;
  t.log_interval = 100;
  t.optim.optimizer = c.optimizer;
  t.optim.learning_rate = 1e-2;
  if (c.optimizer == "sgd") {
    t.optim.momentum = 0.9;
    t.optim.learning_rate = 0.3;  // SGD moves far less a step than AdamW at the same rate
  }
  t.optim.grad_clip = 0.5;
  t.dtype = c.dtype;
  t.ema_decay = c.ema;
  t.seed = 7;
  t.kernel_choice = "native";  // forced: both runs take the same ways (auto times them)
  return t;
}

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
                      Case{"sgd_f16", "sgd", "float16"}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(TrainerOnBackendRefusals, DataParallelismAndZeroOneNameTheDevice) {
  const fs::path root = fs::temp_directory_path() /
                        ("nanogpt_trainer_on_backend_refusal_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path data = make_dataset(root);
  TrainConfig t = config_of(Case{"x", "adamw", "float32"}, data, root / "out", 2);
  t.zero_stage = 1;
  testing::OffHostCpuBackend device;
  TrainOptions o;
  o.quiet = true;
  o.device = &device;
  try {
    run_training(t, o);
    ADD_FAILURE() << "zero_stage=1 ran on a device backend";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("device 'cpu-off-host'"), std::string::npos) << m;
    EXPECT_NE(m.find("zero_stage=1"), std::string::npos) << m;
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace nanogpt
