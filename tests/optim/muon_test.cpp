// Muon: against a float64 PyTorch reference of the published algorithm (fixture), Newton-Schulz
// against its double reference and the quintic's band of singular values, bfloat16 matmuls, the
// momentum warmup, the AdamW group left to AdamW, resume from state, memory, and config errors.
#include "optim/muon.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "core/check.h"
#include "emulation.h"
#include "optim/newton_schulz.h"
#include "optim_fixture.h"

namespace nanogpt {
namespace {

using testing::expect_invalid;

nlohmann::json load_muon_fixture() {
  const std::string path =
      std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/optim/muon_fixture.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

ModelConfig fixture_model(const nlohmann::json& fx) {
  const auto& m = fx.at("model");
  ModelConfig c;
  c.n_layer = m.at("n_layer");
  c.n_head = m.at("n_head");
  c.n_embd = m.at("n_embd");
  c.block_size = m.at("block_size");
  c.vocab_size = m.at("vocab_size");
  c.bias = m.at("bias");
  return c;
}

// {name: values} -> arena laid out by table (every tensor of the table must be there).
std::vector<float> arena_of(const ParamTable& table, const nlohmann::json& tensors,
                            const std::string& field, int step = -1) {
  nlohmann::json by_name = nlohmann::json::object();
  for (const auto& t : tensors) {
    by_name[t.at("name").get<std::string>()] = step < 0 ? t.at(field) : t.at(field).at(step);
  }
  return testing::to_arena(table, by_name);
}

OptimConfig muon_config(const nlohmann::json& c) {
  OptimConfig o;
  o.optimizer = "muon";
  o.learning_rate = c.at("learning_rate");
  o.weight_decay = c.at("weight_decay");
  o.beta1 = c.at("beta1");
  o.beta2 = c.at("beta2");
  o.muon_learning_rate = c.at("muon_learning_rate");
  o.muon_momentum = c.at("muon_momentum");
  o.muon_nesterov = c.at("muon_nesterov");
  o.muon_ns_steps = c.at("muon_ns_steps");
  o.muon_weight_decay = c.at("muon_weight_decay");
  o.muon_momentum_warmup_iters = c.at("muon_momentum_warmup_iters");
  o.muon_momentum_start = c.at("muon_momentum_start");
  o.validate();
  return o;
}

// Tolerance against the float64 reference: our float32 Newton-Schulz carries a relative error of
// a few 1e-6 in its result (float32 rounding, grown by the quintic's gain of up to a^5 ~ 500 on
// the smallest singular directions), times lr * scale <= 0.02 * 2 per step, over 10 steps: a few
// 1e-7 absolute on parameters of size ~0.5; AdamW's float32 steps add a few ulps of lr. 1e-5
// relative plus 2e-6 absolute leaves margin over that and is far below one step's change (~1e-2);
// measured: the worst error is 3% of this tolerance (the test records it).
constexpr double kRtol = 1e-5, kAtol = 2e-6;

TEST(Muon, MatchesFloat64TorchReferenceEveryStep) {
  const auto fx = load_muon_fixture();
  const ParamTable table(fixture_model(fx));
  const auto& tensors = fx.at("tensors");
  ASSERT_EQ(tensors.size(), table.specs().size());
  for (const auto& t : tensors) {
    const ParamSpec& s = table.at(t.at("name"));
    EXPECT_EQ(s.hidden_matrix, t.at("hidden_matrix").get<bool>()) << s.name;
    EXPECT_EQ(s.shape, t.at("shape").get<std::vector<int64_t>>()) << s.name;
  }
  const auto& lrs = fx.at("lrs");
  for (const auto& [run_name, run] : fx.at("runs").items()) {
    SCOPED_TRACE(run_name);
    Muon opt(table, muon_config(run.at("config")));
    std::vector<float> params = arena_of(table, tensors, "init");
    double worst = 0;  // the largest error as a fraction of the tolerance
    for (size_t k = 0; k < lrs.size(); ++k) {
      std::vector<float> grads = arena_of(table, tensors, "grads", static_cast<int>(k));
      opt.step(params.data(), grads.data(), lrs[k].get<double>());
      const std::vector<float> want = testing::to_arena(table, run.at("params").at(k));
      for (const auto& s : table.specs()) {
        for (int64_t i = 0; i < s.numel; ++i) {
          const double a = params[s.offset + i], b = want[s.offset + i];
          ASSERT_LE(std::abs(a - b), kAtol + kRtol * std::abs(b))
              << "step " << k << " " << s.name << "[" << i << "]";
          worst = std::max(worst, std::abs(a - b) / (kAtol + kRtol * std::abs(b)));
        }
      }
    }
    EXPECT_EQ(opt.steps(), static_cast<int64_t>(lrs.size()));
    RecordProperty("worst_error_over_tolerance_" + run_name, std::to_string(worst));
  }
}

// Newton-Schulz on odd shapes: the fixture's float64 torch result, our double reference and the
// float32 matmul-op version agree.
TEST(NewtonSchulz, ReferenceAndMatmulOpsMatchTorchOnOddShapes) {
  const auto fx = load_muon_fixture();
  CpuBackend ctx;
  for (const auto& c : fx.at("newton_schulz")) {
    const int64_t rows = c.at("rows"), cols = c.at("cols");
    const int steps = c.at("steps");
    SCOPED_TRACE(::testing::Message() << rows << "x" << cols);
    const auto in = c.at("input").get<std::vector<double>>();
    const auto want = c.at("output").get<std::vector<double>>();
    std::vector<double> ref(in.size());
    newton_schulz_reference(ref.data(), in.data(), rows, cols, steps);
    for (size_t i = 0; i < in.size(); ++i) EXPECT_NEAR(ref[i], want[i], 1e-12) << i;
    std::vector<float> in32(in.begin(), in.end()), got(in.size());
    std::vector<double> ref32(in.size());  // the reference on the float32-rounded input
    newton_schulz_reference(ref32.data(), std::vector<double>(in32.begin(), in32.end()).data(),
                            rows, cols, steps);
    NewtonSchulz ns(ctx, DType::kF32, rows * cols, std::min(rows, cols));
    ns.orthogonalize(got.data(), in32.data(), rows, cols, steps);
    // float32 vs double on entries of size ~0.5: rounding grown by the quintic (see kRtol).
    for (size_t i = 0; i < in.size(); ++i) EXPECT_NEAR(got[i], ref32[i], 2e-5) << i;
  }
}

// Singular values of `x` (rows, cols), by Jacobi rotations on the smaller Gram matrix, in double.
std::vector<double> singular_values(const std::vector<float>& x, int64_t rows, int64_t cols) {
  const bool tr = rows > cols;
  const int64_t r = tr ? cols : rows, c = tr ? rows : cols;
  auto at = [&](int64_t i, int64_t j) { return double(tr ? x[j * cols + i] : x[i * cols + j]); };
  std::vector<double> g(static_cast<size_t>(r * r));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < r; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < c; ++t) acc += at(i, t) * at(j, t);
      g[i * r + j] = acc;
    }
  }
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t p = 0; p < r; ++p) {
      for (int64_t q = p + 1; q < r; ++q) off += g[p * r + q] * g[p * r + q];
    }
    if (off < 1e-24) break;
    for (int64_t p = 0; p < r; ++p) {
      for (int64_t q = p + 1; q < r; ++q) {
        if (std::abs(g[p * r + q]) < 1e-300) continue;
        const double theta = (g[q * r + q] - g[p * r + p]) / (2 * g[p * r + q]);
        const double t =
            (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double cs = 1 / std::sqrt(t * t + 1), sn = t * cs;
        for (int64_t k = 0; k < r; ++k) {  // G <- J^T G J
          const double gkp = g[k * r + p], gkq = g[k * r + q];
          g[k * r + p] = cs * gkp - sn * gkq;
          g[k * r + q] = sn * gkp + cs * gkq;
        }
        for (int64_t k = 0; k < r; ++k) {
          const double gpk = g[p * r + k], gqk = g[q * r + k];
          g[p * r + k] = cs * gpk - sn * gqk;
          g[q * r + k] = sn * gpk + cs * gqk;
        }
      }
    }
  }
  std::vector<double> s;
  for (int64_t i = 0; i < r; ++i) s.push_back(std::sqrt(std::max(0.0, g[i * r + i])));
  return s;
}

std::vector<float> random_matrix(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> m(static_cast<size_t>(rows * cols));
  for (float& x : m) x = normal(gen);
  return m;
}

// Five steps of the quintic bring every singular value of a well-conditioned random matrix (wide
// or tall, aspect 3: its smallest singular value is ~0.07 of the Frobenius norm) into the band
// the published coefficients aim at, about [0.7, 1.2]; in float32 and with bfloat16 matmuls.
TEST(NewtonSchulz, SingularValuesLandInTheQuinticsBand) {
  CpuBackend ctx;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{32, 96}, {96, 32}}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " " << rows << "x" << cols);
      const auto m = random_matrix(rows, cols, 17);
      std::vector<float> o(m.size());
      NewtonSchulz ns(ctx, dtype, rows * cols, 32);
      ns.orthogonalize(o.data(), m.data(), rows, cols, 5);
      for (double s : singular_values(o, rows, cols)) {
        EXPECT_GT(s, 0.65);
        EXPECT_LT(s, 1.25);
      }
    }
  }
}

// bfloat16 matmul inputs (8 significant bits) move the result by about 2^-8 relative per step;
// entries of the result are ~1/sqrt(32): within 0.03 of the float32 result.
TEST(NewtonSchulz, Bfloat16MatmulsStayCloseToFloat32) {
  CpuBackend ctx;
  const int64_t rows = 48, cols = 32;
  const auto m = random_matrix(rows, cols, 5);
  std::vector<float> f32(m.size()), bf16(m.size());
  NewtonSchulz a(ctx, DType::kF32, rows * cols, 32), b(ctx, DType::kBF16, rows * cols, 32);
  EXPECT_EQ(a.dtype(), DType::kF32);
  EXPECT_EQ(b.dtype(), DType::kBF16);
  a.orthogonalize(f32.data(), m.data(), rows, cols, 5);
  b.orthogonalize(bf16.data(), m.data(), rows, cols, 5);
  double max_diff = 0;
  for (size_t i = 0; i < m.size(); ++i)
    max_diff = std::max(max_diff, double(std::abs(f32[i] - bf16[i])));
  EXPECT_LT(max_diff, 0.03);
  EXPECT_GT(max_diff, 0.0) << "the bfloat16 path should round something";
  // float16 has no matmul arithmetic here: Newton-Schulz runs in float32.
  NewtonSchulz c(ctx, DType::kF16, rows * cols, 32);
  EXPECT_EQ(c.dtype(), DType::kF32);
}

TEST(NewtonSchulz, RefusesMatricesLargerThanItsWorkspaces) {
  CpuBackend ctx;
  NewtonSchulz ns(ctx, DType::kF32, 12, 3);
  std::vector<float> m(20), o(20);
  EXPECT_THROW(ns.orthogonalize(o.data(), m.data(), 4, 5, 5), Error);
}

ModelConfig small_model() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = 50;
  c.bias = true;
  return c;
}

TEST(Muon, HiddenMatricesAreTheFourMatmulWeightsOfEachBlock) {
  const ParamTable table(small_model());
  int hidden = 0;
  for (const auto& s : table.specs()) {
    const bool want = s.name.ends_with("attn.c_attn.weight") ||
                      s.name.ends_with("attn.c_proj.weight") ||
                      s.name.ends_with("mlp.c_fc.weight") || s.name.ends_with("mlp.c_proj.weight");
    EXPECT_EQ(s.hidden_matrix, want) << s.name;
    hidden += s.hidden_matrix;
  }
  EXPECT_EQ(hidden, 4 * 2);
}

// --profile's optimizer row: the Newton-Schulz matmul FLOPs, per matrix 5 x (4 r^2 c + 2 r^3).
TEST(Muon, CountsTheNewtonSchulzFlopsOfItsOwnMatrices) {
  const ParamTable table(small_model());  // C = 16, 2 layers
  OptimConfig c;
  c.optimizer = "muon";
  const double C = 16;
  auto per_matrix = [](double r, double cols) { return 5 * (4 * r * r * cols + 2 * r * r * r); };
  // c_attn (3C, C), c_proj (C, C), c_fc (4C, C), mlp.c_proj (C, 4C): r = C each.
  const double layer = per_matrix(C, 3 * C) + per_matrix(C, C) + 2 * per_matrix(C, 4 * C);
  EXPECT_DOUBLE_EQ(make_optimizer(c, table)->flops_per_step(), 2 * layer);
  // Rank 1 of 2 orthogonalizes the odd-numbered matrices: c_proj and mlp.c_proj of each layer.
  OptimizerRuntime rt;
  rt.sharing.rank = 1;
  rt.sharing.world = 2;
  rt.sharing.broadcast = [](float*, int64_t, int) {};
  EXPECT_DOUBLE_EQ(make_optimizer(c, table, nullptr, rt)->flops_per_step(),
                   2 * (per_matrix(C, C) + per_matrix(C, 4 * C)));
  c.optimizer = "adamw";
  EXPECT_EQ(make_optimizer(c, table)->flops_per_step(), 0.0);
}

TEST(Muon, MomentumWarmupIsLinearFromStartToMomentum) {
  const ParamTable table(small_model());
  OptimConfig c;
  c.optimizer = "muon";
  c.muon_momentum = 0.95;
  c.muon_momentum_start = 0.85;
  c.muon_momentum_warmup_iters = 4;
  Muon opt(table, c);
  EXPECT_DOUBLE_EQ(opt.momentum_at(0), 0.85);
  EXPECT_DOUBLE_EQ(opt.momentum_at(2), 0.90);
  EXPECT_DOUBLE_EQ(opt.momentum_at(4), 0.95);
  EXPECT_DOUBLE_EQ(opt.momentum_at(100), 0.95);
  c.muon_momentum_warmup_iters = 0;
  Muon off(table, c);
  EXPECT_DOUBLE_EQ(off.momentum_at(0), 0.95);
}

struct RandomSteps {
  std::vector<float> params;
  std::vector<std::vector<float>> grads;
  RandomSteps(const ParamTable& table, int steps, uint32_t seed) {
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

// Small matrices go whole to one thread each (the threads sharing them out), larger ones run on
// all threads one after another: the values are the one-thread step's, bit for bit (every
// float32 product sums in a fixed order whichever thread runs it). C 256: c_attn (768, 256),
// c_fc and mlp.c_proj (256^2 x 1024 multiply-adds) are large, attn.c_proj (256, 256) small; with
// ranks, each rank takes its own share either way. Under emulation (tests/emulation.h: 42 G
// multiply-adds at C 256 took 100 s under qemu's NEON and over 10 minutes under its SVE on an
// Intel host) C 192, one step of one Newton-Schulz iteration (two of two took 184 s under SVE
// on a host emulating 2.8x faster than the Intel one, the ARM64 check's longest test; one
// iteration still takes every product form, X X^T, A A and B X): c_attn and c_fc are still
// large there, attn.c_proj small, and each product still sums on whichever thread runs it; and
// 1 and 2 threads only (3 threads on the 2 cores took the test to 755 s under SVE on the Intel
// host): the spread over threads and the one-thread order are both still compared.
TEST(Muon, MatricesSpreadOverThreadsGiveTheOneThreadValues) {
  EXPECT_TRUE(newton_schulz_on_one_thread(512, 128));
  EXPECT_TRUE(newton_schulz_on_one_thread(256, 256));
  EXPECT_FALSE(newton_schulz_on_one_thread(1024, 256));
  EXPECT_FALSE(newton_schulz_on_one_thread(1536, 384));
  const bool emulated = testing::running_emulated();
  const int large_c = emulated ? 192 : 256, steps = emulated ? 1 : 3;
  EXPECT_FALSE(newton_schulz_on_one_thread(3 * large_c, large_c));  // c_attn
  EXPECT_FALSE(newton_schulz_on_one_thread(4 * large_c, large_c));  // c_fc, mlp.c_proj
  EXPECT_TRUE(newton_schulz_on_one_thread(large_c, large_c));       // attn.c_proj
  for (const int C : {16, large_c}) {
    ModelConfig m = small_model();
    m.n_embd = C;
    m.n_layer = C == 16 ? 3 : 1;
    const ParamTable table(m);
    RandomSteps run(table, 3, 41);
    OptimConfig c;
    c.optimizer = "muon";
    c.muon_weight_decay = 0.1;
    if (emulated) c.muon_ns_steps = 1;
    for (const int world : {1, 2}) {
      std::vector<std::vector<float>> results;
      const std::vector<int> thread_counts =
          emulated ? std::vector<int>{1, 2} : std::vector<int>{1, 2, 3};
      for (const int threads : thread_counts) {
        OptimizerRuntime rt;
        rt.threads = threads;
        rt.sharing.world = world;
        rt.sharing.rank = world - 1;
        rt.sharing.broadcast = [](float*, int64_t, int) {};
        auto opt = make_optimizer(c, table, nullptr, rt);
        std::vector<float> p = run.params;
        for (int k = 0; k < steps; ++k) opt->step(p.data(), run.grads[k].data(), 1e-3);
        results.push_back(std::move(p));
      }
      EXPECT_EQ(results[0], results[1]) << "C " << C << ", " << world << " ranks";
      if (results.size() > 2) {
        EXPECT_EQ(results[0], results[2]) << "C " << C << ", " << world << " ranks";
      }
      EXPECT_NE(results[0], run.params);
    }
  }
}

// The AdamW group is AdamW: the non-hidden tensors move exactly as under optimizer 'adamw' with
// the same keys; the hidden matrices do not (Muon moves them), and their "v" slots stay zero.
void expect_other_tensors_step_as_adamw(bool own_rates) {
  ModelConfig model = small_model();
  model.tie_embeddings = !own_rates;
  const ParamTable table(model);
  RandomSteps run(table, 3, 21);
  OptimConfig c;
  c.optimizer = "muon";
  c.muon_weight_decay = 0.1;
  if (own_rates) c.embedding_learning_rate = 4e-3, c.head_learning_rate = 2e-4;
  auto muon = make_optimizer(c, table);
  c.optimizer = "adamw";
  auto adamw = make_optimizer(c, table);
  std::vector<float> pm = run.params, pa = run.params;
  for (int k = 0; k < 3; ++k) {
    muon->step(pm.data(), run.grads[k].data(), 1e-3);
    adamw->step(pa.data(), run.grads[k].data(), 1e-3);
  }
  const float* v = muon->state_tensors()[1].data;
  for (const auto& s : table.specs()) {
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      if (s.hidden_matrix) {
        ASSERT_EQ(v[i], 0.0f) << s.name;
      } else {
        ASSERT_EQ(pm[i], pa[i]) << s.name;
      }
    }
    if (s.hidden_matrix) {
      EXPECT_NE(pm[s.offset], run.params[s.offset]) << s.name << " did not move";
    }
  }
}

// The other tensors step exactly as AdamW's, also with learning rates of their own for the
// embeddings and the head (the second pass: their factors reach Muon's AdamW group).
TEST(Muon, OtherTensorsStepExactlyAsAdamW) {
  for (const bool own_rates : {false, true}) {
    SCOPED_TRACE(own_rates ? "embedding and head rates" : "one rate");
    expect_other_tensors_step_as_adamw(own_rates);
  }
}

// State saved after 3 steps and restored into a fresh optimizer continues bit for bit.
TEST(Muon, ResumeFromStateIsBitExact) {
  const ParamTable table(small_model());
  const int steps = 6;
  RandomSteps run(table, steps, 5);
  OptimConfig c;
  c.optimizer = "muon";
  c.muon_momentum_warmup_iters = 4;  // the warmup continues from the restored step count
  c.muon_weight_decay = 0.05;
  std::vector<float> straight = run.params;
  auto a = make_optimizer(c, table);
  for (int k = 0; k < steps; ++k) a->step(straight.data(), run.grads[k].data(), 1e-3);
  std::vector<float> resumed = run.params;
  auto b = make_optimizer(c, table);
  for (int k = 0; k < 3; ++k) b->step(resumed.data(), run.grads[k].data(), 1e-3);
  auto c2 = make_optimizer(c, table);
  auto from = b->state_tensors(), to = c2->state_tensors();
  ASSERT_EQ(from.size(), 2u);
  EXPECT_EQ(from[0].name, "m");
  EXPECT_EQ(from[1].name, "v");
  for (size_t i = 0; i < from.size(); ++i) {
    ASSERT_EQ(from[i].numel, table.total_numel());
    std::copy(from[i].data, from[i].data + from[i].numel, to[i].data);
  }
  c2->set_steps(b->steps());
  for (int k = 3; k < steps; ++k) c2->step(resumed.data(), run.grads[k].data(), 1e-3);
  EXPECT_EQ(resumed, straight);
}

// The sharded path (ZeRO-1) with one rank, whose shard is the whole arena and whose collectives
// are the identity, gives the unsharded step's values bit for bit (the element passes are shared).
TEST(Muon, ShardedPathEqualsTheWholeStep) {
  const ParamTable table(small_model());
  RandomSteps run(table, 4, 33);
  OptimConfig c;
  c.optimizer = "muon";
  c.muon_weight_decay = 0.1;
  c.muon_momentum_warmup_iters = 2;
  OptimizerRuntime sharded;
  sharded.shard = {0, table.total_numel(), {table.total_numel()}};
  int gathers = 0;
  sharded.sharing.all_gather = [&](float*, const std::vector<int64_t>& counts) {
    EXPECT_EQ(counts.size(), 1u);
    ++gathers;
  };
  auto a = make_optimizer(c, table);
  auto b = make_optimizer(c, table, nullptr, sharded);
  EXPECT_EQ(b->numel(), table.total_numel());
  std::vector<float> pa = run.params, pb = run.params;
  for (int k = 0; k < 4; ++k) {
    a->step(pa.data(), run.grads[k].data(), 1e-3);
    b->step(pb.data(), run.grads[k].data(), 1e-3);
  }
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(gathers, 4);
  MemoryTracker tracker;
  auto counted = make_optimizer(c, table, &tracker, sharded);
  const int64_t arena = (table.total_numel() * 4 + 63) / 64 * 64;
  EXPECT_EQ(tracker.current_bytes(), 2 * arena + muon_workspace_bytes(table, DType::kF32, true, 0));
}

TEST(Muon, AShardNeedsAnAllGather) {
  const ParamTable table(small_model());
  OptimConfig c;
  c.optimizer = "muon";
  OptimizerRuntime rt;
  rt.shard = {0, table.total_numel(), {table.total_numel()}};
  try {
    make_optimizer(c, table, nullptr, rt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs an all-gather"), std::string::npos) << e.what();
  }
}

// What Muon allocates is what the estimator counts: 2 state arenas + its workspaces.
TEST(Muon, AllocatesTwoStateArenasAndItsWorkspaces) {
  const ParamTable table(small_model());
  OptimConfig c;
  c.optimizer = "muon";
  EXPECT_EQ(optimizer_state_tensor_count(c), 2);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    MemoryTracker tracker;
    CpuBackend ctx;
    OptimizerRuntime rt;
    rt.backend = &ctx;
    rt.matmul_dtype = dtype;
    auto opt = make_optimizer(c, table, &tracker, rt);
    const int64_t arena = (table.total_numel() * 4 + 63) / 64 * 64;
    EXPECT_EQ(tracker.current_bytes(), 2 * arena + muon_workspace_bytes(table, dtype, false, 0))
        << dtype_name(dtype);
  }
}

TEST(Muon, ConfigErrorsNameTheKey) {
  OptimConfig c;
  c.optimizer = "lion";
  expect_invalid(c, "optimizer = 'lion': expected 'adamw', 'sgd' or 'muon'");
  c = OptimConfig{};
  c.muon_learning_rate = -0.02;
  expect_invalid(c, "muon_learning_rate = -0.02");
  c = OptimConfig{};
  c.muon_learning_rate = std::nan("");
  expect_invalid(c, "muon_learning_rate = nan");
  c = OptimConfig{};
  c.muon_ns_steps = 0;
  expect_invalid(c, "muon_ns_steps = 0: expected 1 to 100");
  c = OptimConfig{};
  c.muon_momentum = 1.0;
  expect_invalid(c, "muon_momentum = 1");
  c = OptimConfig{};
  c.muon_momentum_start = -0.1;
  expect_invalid(c, "muon_momentum_start = -0.1");
  c = OptimConfig{};
  c.muon_weight_decay = -1;
  expect_invalid(c, "muon_weight_decay = -1");
  c = OptimConfig{};
  c.muon_momentum_warmup_iters = -5;
  expect_invalid(c, "muon_momentum_warmup_iters = -5");
  c = OptimConfig{};
  c.optimizer = "muon";
  c.learning_rate = 0;
  expect_invalid(c, "learning_rate = 0 with optimizer = 'muon'");
  c.optimizer = "adamw";
  EXPECT_NO_THROW(c.validate());  // learning_rate 0 stays valid for AdamW
}

TEST(Optimizer, EmbeddingAndHeadRateErrorsNameTheKey) {
  OptimConfig c;
  c.embedding_learning_rate = -1e-3;
  expect_invalid(c, "embedding_learning_rate = -0.001: expected a finite learning rate >= 0");
  c = OptimConfig{};
  c.head_learning_rate = std::nan("");
  expect_invalid(c, "head_learning_rate = nan");
  c = OptimConfig{};
  c.optimizer = "sgd";
  c.head_learning_rate = 1e-2;
  expect_invalid(c, "head_learning_rate = 0.01 with optimizer = 'sgd'");
  c = OptimConfig{};
  c.learning_rate = 0;
  c.embedding_learning_rate = 0.1;
  expect_invalid(c, "embedding_learning_rate = 0.1 with learning_rate = 0");
}

TEST(Muon, RefusesATableWhoseMatricesWereFlattened) {
  const ParamTable table(small_model());
  OptimConfig c;
  c.optimizer = "muon";
  try {
    make_optimizer(c, table.slice(0, table.total_numel() / 2));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("orthogonalizes 2-D matrices only"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace nanogpt
