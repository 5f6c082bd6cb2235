// nanoGPT's ckpt.pt against PyTorch (fixtures by tests/fixtures/nanogpt/make_fixtures.sh, with
// Debian's torch and nanoGPT's own model.py): a checkpoint torch saved after 3 AdamW steps is read
// here with its moments in the right parameters (nanoGPT's two groups) and gives torch's logits
// within 1e-5 (float64 reference); one as torch.compile names it ("_orig_mod.", bias False, with
// PyTorch 1.x's mask buffers) too. The other way: a checkpoint written here reads back to the
// same logits, and with NANOGPT_NANOGPT_EXPORT_DIR set it is kept there with our logits for
// `make_fixtures.sh check`, which loads it in torch as train.py resumes and compares.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "io/nanogpt_checkpoint.h"
#include "io/safetensors.h"
#include "kernels/cpu_backend.h"
#include "model/fixture.h"
#include "model/gpt.h"

namespace nanogpt {
namespace {

constexpr double kLogitsAbsTol = 1e-5;

std::string fixture(const std::string& file) {
  return std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/nanogpt/" + file;
}

// Our float32 logits (B, T, V) of `inputs` (B, T) for a model with these weights.
std::vector<float> our_logits(const ModelConfig& config, const float* params,
                              const std::vector<int>& inputs, int B, int T) {
  GPT model(config);
  std::copy(params, params + model.table().total_numel(), model.params().begin());
  CpuBackend ctx;
  model.forward(ctx, inputs.data(), nullptr, B, T, false);
  const int V = config.vocab_size, Vp = config.padded_vocab_size();
  std::vector<float> out(static_cast<size_t>(B) * T * V);
  for (int64_t r = 0; r < int64_t{B} * T; ++r) {
    std::copy(model.logits() + r * Vp, model.logits() + r * Vp + V, out.begin() + r * V);
  }
  return out;
}

class NanoGptTorchFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(NanoGptTorchFixture, ATorchSavedCheckpointGivesTorchsLogitsAndMoments) {
  const std::string variant = GetParam();
  const NanoGptCheckpoint ck = read_nanogpt_checkpoint(fixture("nanogpt_" + variant + ".pt"), true);
  const testing::TorchFixture expected(fixture("expected_" + variant + ".safetensors"));
  EXPECT_EQ(ck.model.n_layer, 2);
  EXPECT_EQ(ck.model.n_embd, 32);
  EXPECT_EQ(ck.model.vocab_size, 65);
  EXPECT_EQ(ck.model.bias, variant == "bias");
  EXPECT_EQ(ck.iter_num, 3);
  EXPECT_DOUBLE_EQ(ck.best_val_loss, 2.5);
  EXPECT_EQ(ck.config.value("dataset", ""), "shakespeare_char");
  EXPECT_EQ(ck.config.value("beta2", 0.0), 0.99);
  if (variant == "nobias_compiled") {
    ASSERT_FALSE(ck.notes.empty());
    EXPECT_NE(ck.notes[0].find("_orig_mod."), std::string::npos);
  }
  // PyTorch 1.x keeps nanoGPT's causal-mask buffers in the state_dict; 2.x does not.
  ASSERT_TRUE(ck.adamw.has_value());
  EXPECT_TRUE(ck.adamw->has_moments);
  EXPECT_EQ(ck.adamw->step, 3);
  EXPECT_DOUBLE_EQ(ck.adamw->weight_decay, 0.1);
  EXPECT_DOUBLE_EQ(ck.adamw->beta2, 0.95);

  // Every parameter's exp_avg landed in its own slot (the groups' order mapped right).
  const ParamTable table(ck.model);
  for (const auto& s : table.specs()) {
    const std::vector<float> want = expected.f32("exp_avg/" + s.name);
    const std::vector<float> got(
        ck.adamw->exp_avg.begin() + s.offset,
        ck.adamw->exp_avg.begin() + s.offset + static_cast<int64_t>(want.size()));
    EXPECT_EQ(got, want) << s.name;
  }

  const std::vector<int> inputs = expected.i32("inputs");
  const std::vector<double> ref = expected.f64("logits");
  const int B = 3, T = 16;
  const std::vector<float> ours = our_logits(ck.model, ck.params.data(), inputs, B, T);
  ASSERT_EQ(ours.size(), ref.size());
  double err = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    err = std::max(err, std::fabs(ours[i] - ref[i]));
    scale = std::max(scale, std::fabs(ref[i]));
  }
  EXPECT_LE(err, kLogitsAbsTol) << "max |logits| " << scale;
  RecordProperty("logits_abs_err", fmt::format("{:.3g}", err));
}

INSTANTIATE_TEST_SUITE_P(Variants, NanoGptTorchFixture,
                         ::testing::Values("bias", "nobias_compiled"));

TEST(NanoGptTorchFixture, WritesACheckpointForTorch) {
  const char* keep = std::getenv("NANOGPT_NANOGPT_EXPORT_DIR");
  const std::string dir = keep ? std::string(keep)
                               : (std::filesystem::temp_directory_path() /
                                  ("nanogpt_export_" + std::to_string(::getpid())))
                                     .string();
  std::filesystem::create_directories(dir);
  for (bool bias : {true, false}) {
    ModelConfig c;
    c.n_layer = 2;
    c.n_head = 4;
    c.n_embd = 32;
    c.block_size = 16;
    c.vocab_size = 67;
    c.bias = bias;
    c.gelu = "exact";
    GPT model(c);
    model.init_weights(bias ? 11 : 12);
    // Non-trivial gains and biases, as after training.
    for (const auto& s : model.table().specs()) {
      if (s.shape.size() == 1) {
        for (int64_t i = 0; i < s.numel; ++i) {
          model.params()[s.offset + i] += 0.05f * static_cast<float>(std::sin(1.0 + i));
        }
      }
    }
    const ParamTable& table = model.table();
    std::vector<float> m(static_cast<size_t>(table.total_numel()), 0.0f), v = m;
    for (const auto& s : table.specs()) {
      const int64_t n = s.name == "wte.weight" ? int64_t{c.vocab_size} * c.n_embd : s.numel;
      for (int64_t i = 0; i < n; ++i) {
        m[s.offset + i] = 1e-3f * static_cast<float>(std::cos(0.1 * i));
        v[s.offset + i] = 1e-6f * (1.0f + static_cast<float>(i % 7));
      }
    }
    NanoGptCheckpointOut out;
    out.model = &c;
    out.table = &table;
    out.params = model.params().data();
    out.exp_avg = m.data();
    out.exp_avg_sq = v.data();
    out.adam_step = 20;
    out.iter_num = 20;
    out.best_val_loss = 3.0;
    out.config = {{"dataset", "shakespeare_char"}};
    const std::string name = dir + "/ours_" + (bias ? "bias" : "nobias");
    write_nanogpt_checkpoint(name + ".pt", out);

    const int B = 2, T = 16;
    std::vector<int> inputs(B * T);
    for (int i = 0; i < B * T; ++i) inputs[i] = (i * 7 + 3) % c.vocab_size;
    const std::vector<float> ours = our_logits(c, model.params().data(), inputs, B, T);
    // Read back: the same model, so bit-identical logits.
    const NanoGptCheckpoint back = read_nanogpt_checkpoint(name + ".pt", true);
    EXPECT_EQ(our_logits(back.model, back.params.data(), inputs, B, T), ours);
    EXPECT_EQ(back.adamw->step, 20);

    SafeTensorsWriter w;
    const std::vector<float> inputs_f(inputs.begin(), inputs.end());
    w.add("inputs", {B, T}, inputs_f.data());
    w.add("logits", {B, T, c.vocab_size}, ours.data());
    w.write(name + ".safetensors");
  }
  if (!keep) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nanogpt
