// full_split_loss (time to target's whole-validation loss) against a plain loop that calls the
// model's loss once per window, on a tiny model: the mean over every target token, files without
// crossing, the tail window, the batch sharding over ranks.
#include "train/full_eval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "distributed/single_process_communicator.h"
#include "kernels/cpu_backend.h"

namespace nanogpt {
namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = 61;
  c.bias = true;
  c.dropout = 0.5;  // must not apply: the evaluation runs in eval mode
  return c;
}

std::vector<uint16_t> random_tokens(int64_t n, int vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint16_t> tokens(n);
  for (auto& t : tokens) t = static_cast<uint16_t>(rng.uniform_int(vocab));
  return tokens;
}

// The straightforward reference: each window through the model alone (B = 1), its mean loss
// times its targets summed, divided by all targets. Windows as documented in full_eval.h.
struct Reference {
  double sum = 0;
  int64_t count = 0;
};
void reference_add(GPT& model, CpuBackend& ctx, const std::vector<uint16_t>& tokens, int T,
                   Reference* ref) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  for (int64_t start = 0; start + 1 < n; start += T) {
    const int t = static_cast<int>(std::min<int64_t>(T, n - 1 - start));
    std::vector<int> x(tokens.begin() + start, tokens.begin() + start + t);
    std::vector<int> y(tokens.begin() + start + 1, tokens.begin() + start + 1 + t);
    ref->sum += static_cast<double>(model.forward(ctx, x.data(), y.data(), 1, t, false)) * t;
    ref->count += t;
  }
}

// Rank `rank` of `size` for one call: what it contributes to the all-reduce is kept in
// `contributed` (the reduction itself is left to the test, which adds the ranks' shares).
class PretendRank final : public Communicator {
 public:
  PretendRank(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_size() const override { return size_; }
  void all_reduce_sum(float*, int64_t) override { fail("PretendRank: float all-reduce unused"); }
  void all_reduce_sum(double* data, int64_t n) override { contributed.assign(data, data + n); }
  void all_reduce_max(double*, int64_t) override {}
  void start_all_reduce_sum(float*, int64_t) override {}
  void progress() override {}
  double wait_all() override { return 0; }
  void reduce_scatter_sum(const float*, float*, const std::vector<int64_t>&) override {}
  void all_gather(float*, const std::vector<int64_t>&) override {}
  void all_gather(uint16_t*, const std::vector<int64_t>&) override {}
  void broadcast(void*, int64_t, int) override {}
  void barrier() override {}
  void abort_job(int) override {}
  std::string describe() const override { return "pretend"; }
  std::vector<double> contributed;

 private:
  int rank_, size_;
};

class FullEvalTest : public ::testing::Test {
 protected:
  FullEvalTest() : model_(tiny_config()) { model_.init_weights(7); }
  GPT model_;
  CpuBackend ctx_;
  SingleProcessCommunicator one_;
};

TEST_F(FullEvalTest, EqualsTheMeanOverEveryWindowComputedOneByOne) {
  const int T = tiny_config().block_size;
  // 7 full windows and a tail of 5 targets: 16 * 7 + 5 + 1 tokens.
  const std::vector<uint16_t> tokens = random_tokens(16 * 7 + 6, 61, 11);
  Reference ref;
  reference_add(model_, ctx_, tokens, T, &ref);
  ASSERT_EQ(ref.count, static_cast<int64_t>(tokens.size()) - 1);
  for (int batch : {1, 3, 7, 8}) {  // 3: a smaller last batch; 8: all windows in one short batch
    const FullEvalResult r =
        full_split_loss(model_, ctx_, {{tokens.data(), static_cast<int64_t>(tokens.size())}}, T,
                        batch, one_);
    EXPECT_EQ(r.target_tokens, ref.count) << "batch " << batch;
    EXPECT_NEAR(r.mean_loss, ref.sum / static_cast<double>(ref.count), 1e-5) << "batch " << batch;
  }
}

TEST_F(FullEvalTest, EveryFileOnItsOwnNoWindowCrossesAFile) {
  const int T = tiny_config().block_size;
  const std::vector<uint16_t> a = random_tokens(16 * 3 + 1, 61, 1);  // no tail
  const std::vector<uint16_t> b = random_tokens(10, 61, 2);          // a tail only
  const std::vector<uint16_t> c = random_tokens(1, 61, 3);           // no target at all
  Reference ref;
  for (const auto* f : {&a, &b, &c}) reference_add(model_, ctx_, *f, T, &ref);
  const FullEvalResult r = full_split_loss(
      model_, ctx_,
      {{a.data(), static_cast<int64_t>(a.size())},
       {b.data(), static_cast<int64_t>(b.size())},
       {c.data(), static_cast<int64_t>(c.size())}},
      T, 2, one_);
  EXPECT_EQ(r.target_tokens, 48 + 9);
  EXPECT_NEAR(r.mean_loss, ref.sum / static_cast<double>(ref.count), 1e-5);
  // A dataset of no targets at all gives 0 over 0 tokens, not a division by zero.
  const FullEvalResult none = full_split_loss(model_, ctx_, {{c.data(), 1}}, T, 2, one_);
  EXPECT_EQ(none.target_tokens, 0);
  EXPECT_EQ(none.mean_loss, 0.0);
}

TEST_F(FullEvalTest, RanksShareTheBatchesAndTheirSumsAddUpToTheWhole) {
  const int T = tiny_config().block_size;
  const std::vector<uint16_t> tokens = random_tokens(16 * 9 + 4, 61, 5);
  const TokenSpan span{tokens.data(), static_cast<int64_t>(tokens.size())};
  const FullEvalResult whole = full_split_loss(model_, ctx_, {span}, T, 2, one_);
  double sum = 0, count = 0;
  for (int rank = 0; rank < 3; ++rank) {
    PretendRank comm(rank, 3);
    full_split_loss(model_, ctx_, {span}, T, 2, comm);
    ASSERT_EQ(comm.contributed.size(), 2u);
    EXPECT_GT(comm.contributed[1], 0) << "rank " << rank << " had no batch";
    EXPECT_LT(comm.contributed[1], static_cast<double>(whole.target_tokens)) << rank;
    sum += comm.contributed[0];
    count += comm.contributed[1];
  }
  EXPECT_EQ(static_cast<int64_t>(count), whole.target_tokens);
  EXPECT_NEAR(sum / count, whole.mean_loss, 1e-5);
}

TEST_F(FullEvalTest, RefusesAZeroBatchOrBlock) {
  const std::vector<uint16_t> tokens = random_tokens(40, 61, 5);
  EXPECT_THROW(full_split_loss(model_, ctx_, {{tokens.data(), 40}}, 16, 0, one_), Error);
  EXPECT_THROW(full_split_loss(model_, ctx_, {{tokens.data(), 40}}, 0, 2, one_), Error);
}

}  // namespace
}  // namespace nanogpt
