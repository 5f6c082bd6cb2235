// AdamW and SGD against PyTorch (fixture) and against plain double-precision loops; weight decay
// only on decay tensors; state save/restore gives a bit-identical continuation; the factory.
#include "optim/optimizer.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>

#include "core/check.h"
#include "kernels/dispatch_test_util.h"
#include "optim/adamw.h"
#include "optim/sgd.h"
#include "optim_fixture.h"

namespace nanogpt {
namespace {

using testing::load_optim_fixture;
using testing::tensor_field;
using testing::tiny_model_config;
using testing::to_arena;

// |a - b| <= atol + rtol*|b| for every element of every tensor.
void expect_close(const ParamTable& table, const std::vector<float>& got,
                  const std::vector<float>& want, double atol, double rtol) {
  for (const auto& s : table.specs()) {
    for (int64_t i = 0; i < s.numel; ++i) {
      const double a = got[s.offset + i], b = want[s.offset + i];
      ASSERT_LE(std::abs(a - b), atol + rtol * std::abs(b)) << s.name << "[" << i << "]";
    }
  }
}

// Runs `opt` over the fixture's grads and learning rates; returns the final params.
std::vector<float> run_fixture(Optimizer& opt, const ParamTable& table, const nlohmann::json& fx) {
  std::vector<float> params = to_arena(table, tensor_field(fx, "init"));
  const auto& lrs = fx.at("lrs");
  for (size_t k = 0; k < lrs.size(); ++k) {
    std::vector<float> grads = to_arena(table, tensor_field(fx, "grads", static_cast<int>(k)));
    opt.step(params.data(), grads.data(), lrs[k].get<double>());
  }
  return params;
}

TEST(AdamW, MatchesTorchAdamW) {
  const ParamTable table(tiny_model_config());
  const auto fx = load_optim_fixture();
  const auto& cfg = fx.at("adamw");
  AdamW opt(table, cfg.at("beta1"), cfg.at("beta2"), cfg.at("weight_decay"), cfg.at("eps"));
  std::vector<float> got = run_fixture(opt, table, fx);
  // float32 in both; a few ulps of lr-sized updates over 6 steps.
  expect_close(table, got, to_arena(table, cfg.at("final")), 2e-6, 1e-5);
  EXPECT_EQ(opt.steps(), 6);
}

// embedding_learning_rate / head_learning_rate: torch.optim.AdamW with the embeddings and the
// untied head in param groups of their own, each at its factor of the scheduled rate.
TEST(AdamW, LearningRatesOfTheirOwnMatchTorchParamGroups) {
  ModelConfig model = tiny_model_config();
  model.tie_embeddings = false;
  const ParamTable table(model);
  ASSERT_NE(table.find("lm_head.weight"), nullptr);
  const auto fx = load_optim_fixture();
  const auto& cfg = fx.at("adamw_group_rates");
  OptimConfig config;
  config.learning_rate = 1e-3;
  config.embedding_learning_rate = 1e-3 * cfg.at("embedding_factor").get<double>();
  config.head_learning_rate = 1e-3 * cfg.at("head_factor").get<double>();
  config.beta1 = 0.9, config.beta2 = 0.95, config.weight_decay = 0.1;
  EXPECT_DOUBLE_EQ(config.lr_factor_of("wte.weight"), 5.0);
  EXPECT_DOUBLE_EQ(config.lr_factor_of("wpe.weight"), 5.0);
  EXPECT_DOUBLE_EQ(config.lr_factor_of("lm_head.weight"), 0.5);
  EXPECT_EQ(config.lr_factor_of("h.0.attn.c_attn.weight"), 1.0);
  auto opt = make_optimizer(config, table);
  auto with_head = [&](nlohmann::json by_name, const nlohmann::json& head) {
    by_name["lm_head.weight"] = head;
    return by_name;
  };
  std::vector<float> params =
      to_arena(table, with_head(tensor_field(fx, "init"), cfg.at("head_init")));
  const auto& lrs = fx.at("lrs");
  for (size_t k = 0; k < lrs.size(); ++k) {
    std::vector<float> grads = to_arena(
        table,
        with_head(tensor_field(fx, "grads", static_cast<int>(k)), cfg.at("head_grads").at(k)));
    opt->step(params.data(), grads.data(), lrs[k].get<double>());
  }
  expect_close(table, params, to_arena(table, cfg.at("final")), 2e-6, 1e-5);
  // and not the plain AdamW's trajectory: the factors moved the embeddings and the head
  AdamW plain(table, 0.9, 0.95, 0.1);
  std::vector<float> same =
      to_arena(table, with_head(tensor_field(fx, "init"), cfg.at("head_init")));
  for (size_t k = 0; k < lrs.size(); ++k) {
    std::vector<float> grads = to_arena(
        table,
        with_head(tensor_field(fx, "grads", static_cast<int>(k)), cfg.at("head_grads").at(k)));
    plain.step(same.data(), grads.data(), lrs[k].get<double>());
  }
  const ParamSpec& wte = table.at("wte.weight");
  EXPECT_GT(std::abs(params[wte.offset] - same[wte.offset]), 1e-4);
  const ParamSpec& ln = table.at("ln_f.weight");
  EXPECT_EQ(params[ln.offset], same[ln.offset]);
}

TEST(Sgd, MatchesTorchSgdWithMomentum) {
  const ParamTable table(tiny_model_config());
  const auto fx = load_optim_fixture();
  const auto& cfg = fx.at("sgd_momentum");
  Sgd opt(table, cfg.at("momentum"), cfg.at("weight_decay"));
  expect_close(table, run_fixture(opt, table, fx), to_arena(table, cfg.at("final")), 2e-6, 1e-5);
}

TEST(Sgd, MatchesTorchPlainSgd) {
  const ParamTable table(tiny_model_config());
  const auto fx = load_optim_fixture();
  const auto& cfg = fx.at("sgd_plain");
  Sgd opt(table, cfg.at("momentum"), cfg.at("weight_decay"));
  EXPECT_TRUE(opt.state_tensors().empty());
  expect_close(table, run_fixture(opt, table, fx), to_arena(table, cfg.at("final")), 2e-6, 1e-5);
}

// A bigger model (tensors longer than a SIMD width and split across threads) with random data.
struct RandomRun {
  ModelConfig cfg;
  std::vector<float> params;
  std::vector<std::vector<float>> grads;
  RandomRun(int steps, uint32_t seed) {
    cfg.n_layer = 2;
    cfg.n_head = 2;
    cfg.n_embd = 24;
    cfg.block_size = 8;
    cfg.vocab_size = 50;
    cfg.bias = true;
    const ParamTable table(cfg);
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    params.assign(table.total_numel(), 0.0f);
    for (float& p : params) p = 0.1f * normal(gen);
    for (int k = 0; k < steps; ++k) {
      std::vector<float> g(table.total_numel());
      for (float& x : g) x = (k + 1) * 0.01f * normal(gen);
      grads.push_back(std::move(g));
    }
  }
};

// AdamW against a double-precision loop of the same update over 5 steps.
void expect_adamw_matches_double_reference() {
  const int steps = 5;
  RandomRun run(steps, 7);
  const ParamTable table(run.cfg);
  const double b1 = 0.9, b2 = 0.99, wd = 0.1, eps = 1e-8;
  std::vector<double> p(run.params.begin(), run.params.end()), m(p.size()), v(p.size());
  std::vector<float> got = run.params;
  AdamW opt(table, b1, b2, wd, eps);
  for (int t = 1; t <= steps; ++t) {
    const double lr = 1e-3 * t;
    opt.step(got.data(), run.grads[t - 1].data(), lr);
    for (const auto& s : table.specs()) {
      for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
        const double g = run.grads[t - 1][i];
        if (s.decay) p[i] -= lr * wd * p[i];
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        const double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
        p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
      }
    }
  }
  std::vector<float> want(p.begin(), p.end());
  expect_close(table, got, want, 1e-6, 1e-5);
}

TEST(AdamW, MatchesDoubleReferenceLoop) { expect_adamw_matches_double_reference(); }

// The update is dispatched per CPU target: the same check on every target this machine runs.
TEST(AdamW, MatchesDoubleReferenceLoopOnEveryTarget) {
  testing::for_each_target([](const std::string&) { expect_adamw_matches_double_reference(); });
}

TEST(Sgd, MatchesDoubleReferenceLoop) {
  const int steps = 5;
  RandomRun run(steps, 11);
  const ParamTable table(run.cfg);
  const double mu = 0.9, wd = 0.01;
  std::vector<double> p(run.params.begin(), run.params.end()), buf(p.size());
  std::vector<float> got = run.params;
  Sgd opt(table, mu, wd);
  for (int t = 1; t <= steps; ++t) {
    const double lr = 0.1 / t;
    opt.step(got.data(), run.grads[t - 1].data(), lr);
    for (const auto& s : table.specs()) {
      for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
        const double d = run.grads[t - 1][i] + (s.decay ? wd * p[i] : 0.0);
        buf[i] = mu * buf[i] + d;
        p[i] -= lr * buf[i];
      }
    }
  }
  std::vector<float> want(p.begin(), p.end());
  expect_close(table, got, want, 1e-6, 1e-5);
}

TEST(AdamW, ResultDoesNotDependOnThreadCount) {
  RandomRun run(3, 9);
  const ParamTable table(run.cfg);
  std::vector<std::vector<float>> results;
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> p = run.params;
    AdamW opt(table, 0.9, 0.95, 0.1);
    for (int k = 0; k < 3; ++k) opt.step(p.data(), run.grads[k].data(), 1e-2);
    results.push_back(std::move(p));
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(AdamW, WeightDecayOnlyOnDecayTensors) {
  RandomRun run(1, 3);
  const ParamTable table(run.cfg);
  std::vector<float> params = run.params;
  std::vector<float> zero_grads(params.size(), 0.0f);
  AdamW opt(table, 0.9, 0.95, 0.5, 1e-8);
  opt.step(params.data(), zero_grads.data(), 0.1);  // zero grads: only the decay moves params
  int decayed = 0, kept = 0;
  for (const auto& s : table.specs()) {
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      if (s.decay) {
        ASSERT_FLOAT_EQ(params[i], run.params[i] * (1.0f - 0.1f * 0.5f)) << s.name;
        ++decayed;
      } else {
        ASSERT_EQ(params[i], run.params[i]) << s.name;
        ++kept;
      }
    }
  }
  EXPECT_GT(decayed, 0);
  EXPECT_GT(kept, 0);
}

// Save state after 3 steps, restore into a fresh optimizer, continue: identical to no interruption.
void check_resume_is_exact(const OptimConfig& config) {
  const int steps = 6;
  RandomRun run(steps, 5);
  const ParamTable table(run.cfg);
  std::vector<float> straight = run.params;
  auto a = make_optimizer(config, table);
  for (int k = 0; k < steps; ++k) a->step(straight.data(), run.grads[k].data(), 1e-3);

  std::vector<float> resumed = run.params;
  auto b = make_optimizer(config, table);
  for (int k = 0; k < 3; ++k) b->step(resumed.data(), run.grads[k].data(), 1e-3);
  std::vector<std::vector<float>> saved;
  for (const auto& t : b->state_tensors()) {
    EXPECT_EQ(t.numel, table.total_numel()) << t.name;
    saved.emplace_back(t.data, t.data + t.numel);
  }
  auto c = make_optimizer(config, table);
  auto views = c->state_tensors();
  ASSERT_EQ(views.size(), saved.size());
  for (size_t i = 0; i < views.size(); ++i)
    std::copy(saved[i].begin(), saved[i].end(), views[i].data);
  c->set_steps(b->steps());
  for (int k = 3; k < steps; ++k) c->step(resumed.data(), run.grads[k].data(), 1e-3);
  EXPECT_EQ(resumed, straight);
}

TEST(Optimizer, AdamWResumeFromStateIsBitExact) {
  OptimConfig config;
  check_resume_is_exact(config);
}

TEST(Optimizer, SgdResumeFromStateIsBitExact) {
  OptimConfig config;
  config.optimizer = "sgd";
  check_resume_is_exact(config);
}

TEST(Optimizer, FactoryAndStateNames) {
  const ParamTable table(tiny_model_config());
  OptimConfig config;
  auto adamw = make_optimizer(config, table);
  EXPECT_EQ(adamw->name(), "adamw");
  auto st = adamw->state_tensors();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "m");
  EXPECT_EQ(st[1].name, "v");
  config.optimizer = "sgd";
  auto sgd = make_optimizer(config, table);
  EXPECT_EQ(sgd->name(), "sgd");
  ASSERT_EQ(sgd->state_tensors().size(), 1u);
  EXPECT_EQ(sgd->state_tensors()[0].name, "momentum");
  config.optimizer = "adam";
  try {
    make_optimizer(config, table);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer = 'adam'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nanogpt
