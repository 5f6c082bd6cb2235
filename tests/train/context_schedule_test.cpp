// The sequence-length warmup's schedule: the context per iteration, its log line and the errors
// that name its keys.
#include "train/context_schedule.h"

#include <gtest/gtest.h>

#include "core/check.h"
#include "train/train_config.h"

namespace nanogpt {
namespace {

std::string error_of(const ContextSchedule& s) {
  try {
    s.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ContextSchedule, DoublesAtEqualSharesThenHoldsBlockSize) {
  const ContextSchedule s{256, 200, 64};
  EXPECT_EQ(s.context_at(0), 64);
  EXPECT_EQ(s.context_at(99), 64);
  EXPECT_EQ(s.context_at(100), 128);
  EXPECT_EQ(s.context_at(199), 128);
  EXPECT_EQ(s.context_at(200), 256);
  EXPECT_EQ(s.context_at(100000), 256);
  // three doublings over 10 iterations: stage s from ceil(s * 10 / 3)
  const ContextSchedule t{64, 10, 8};
  const int expected[] = {8, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64};
  for (int i = 0; i <= 10; ++i) EXPECT_EQ(t.context_at(i), expected[i]) << "iter " << i;
  EXPECT_EQ(t.describe(),
            "context 8 -> 64 by doubling over the first 10 iterations (8 until 4, 16 until 7, 32 "
            "until 10)");
}

TEST(ContextSchedule, OffOrStartingAtBlockSizeIsBlockSizeThroughout) {
  const ContextSchedule off{256, 0, 64};
  const ContextSchedule whole{256, 100, 256};
  for (int i : {0, 50, 100, 1000}) {
    EXPECT_EQ(off.context_at(i), 256);
    EXPECT_EQ(whole.context_at(i), 256);
  }
  EXPECT_EQ(off.describe(), "");
  EXPECT_EQ(whole.describe(), "");
  EXPECT_EQ(error_of(off), "no error");
  EXPECT_EQ(error_of(whole), "no error");
}

TEST(ContextSchedule, ErrorsNameTheKeyAndAFix) {
  EXPECT_NE(error_of({256, 100, 48}).find("context_warmup_start = 48 with block_size = 256"),
            std::string::npos);
  EXPECT_NE(error_of({256, 100, 48}).find("--context_warmup_start=64"), std::string::npos);
  EXPECT_NE(error_of({256, 100, 512}).find("context_warmup_start = 512"), std::string::npos);
  EXPECT_NE(error_of({256, -1, 64}).find("context_warmup_iters = -1"), std::string::npos);
  // through TrainConfig's keys
  TrainConfig c;
  c.model.block_size = 96;
  c.context_warmup_iters = 10;
  c.context_warmup_start = 64;
  try {
    c.validate();
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("block_size / context_warmup_start must be a power of two"),
        std::string::npos)
        << e.what();
  }
  c.context_warmup_start = 24;
  EXPECT_NO_THROW(c.validate());
}

}  // namespace
}  // namespace nanogpt
