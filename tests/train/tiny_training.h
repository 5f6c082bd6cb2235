// A tiny training run for the tests that train one model on two backends and compare them
// (tests/train/trainer_on_backend_test.cpp: an off-host CPU backend, bit for bit;
// tests/backends/trainer_on_cuda_test.cpp: the GPU, within tolerance): a 65-symbol corpus with some
// structure, and the configuration of each case (optimizer, dtype, plain or modern architecture,
// weight average).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/token_writer.h"
#include "train/train_config.h"

namespace nanogpt::testing {


// A character-level corpus of 65 symbols with some structure (a repeated phrase with noise).
inline std::filesystem::path make_dataset(const std::filesystem::path& root) {
  const std::filesystem::path dir = root / "data";
  std::filesystem::create_directories(dir);
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

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TinyRunCase {
  std::string name;
  std::string optimizer;
  std::string dtype;
  bool modern = false;
  double ema = 0;
  int zero_stage = 0;  // 1: ZeRO-1 (on one rank: the shard is the whole arena)
};

inline TrainConfig config_of(const TinyRunCase& c, const std::filesystem::path& data,
                             const std::filesystem::path& out, int64_t iters) {
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
  t.zero_stage = c.zero_stage;
  t.seed = 7;
  t.kernel_choice = "native";  // forced: both runs take the same ways (auto times them)
  return t;
}

}  // namespace nanogpt::testing
