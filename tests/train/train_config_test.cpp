// Tests of TrainConfig's dtype 'auto': what it resolves to on this CPU, that explicit values stay
// as they are, and that a bad dtype's message names 'auto' among the accepted values; and of the
// recompute key's checks.
#include "train/train_config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/cpu_info.h"

namespace nanogpt {
namespace {

TEST(TrainConfigDtype, AutoResolvesToThisCpusChoiceAndSaysWhy) {
  TrainConfig config;
  config.dtype = "auto";
  config.validate();  // 'auto' is a valid value before it is resolved
  const std::string note = config.resolve_auto_dtype();
  const AutoDtype expected = choose_auto_dtype();
  EXPECT_EQ(config.dtype, expected.dtype);
  EXPECT_EQ(config.dtype, have_bf16_dot_products() ? "bfloat16" : "float32");
  EXPECT_NE(note.find("dtype auto -> " + expected.dtype), std::string::npos) << note;
  EXPECT_NE(note.find(expected.reason), std::string::npos) << note;
  config.validate();
}

TEST(TrainConfigDtype, AutoIsFloat32WhenTheCpuTargetIsCappedBelowBf16) {
  ASSERT_EQ(setenv("NANOGPT_CPU_TARGET", "avx2", 1), 0);
  TrainConfig config;
  config.dtype = "auto";
  const std::string note = config.resolve_auto_dtype();
  const bool bf16 = have_bf16_dot_products();
  unsetenv("NANOGPT_CPU_TARGET");
  EXPECT_FALSE(bf16);
  EXPECT_EQ(config.dtype, "float32") << note;
}

TEST(TrainConfigDtype, ExplicitValuesAreLeftAsTheyAre) {
  for (const char* name : {"float32", "bfloat16", "float16"}) {
    TrainConfig config;
    config.dtype = name;
    EXPECT_EQ(config.resolve_auto_dtype(), "");
    EXPECT_EQ(config.dtype, name);
  }
}

TEST(TrainConfigDtype, AutoWithNaiveAttentionStaysFloat32) {
  TrainConfig config;
  config.dtype = "auto";
  config.attention = "naive";
  config.validate();
  const std::string note = config.resolve_auto_dtype();
  EXPECT_EQ(config.dtype, "float32");
  config.validate();
}

TEST(TrainConfigDtype, UnknownDtypeNamesAuto) {
  TrainConfig config;
  config.dtype = "float8";
  try {
    config.validate();
    FAIL() << "dtype float8 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'auto'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("float8"), std::string::npos) << e.what();
  }
}

// recompute: 0, 1 or 2; below 2 not with activation checkpointing (which recomputes whole blocks);
// each message names the key, the value and a fix.
TEST(TrainConfigRecompute, LevelsAndCheckpointingAreCheckedNamingTheFix) {
  auto message = [](const TrainConfig& c) {
    try {
      c.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  TrainConfig c;
  for (int64_t level : {0, 1, 2}) {
    c.recompute = level;
    EXPECT_EQ(message(c), "") << level;
  }
  c.recompute = 3;
  EXPECT_NE(message(c).find("recompute = 3: expected 0"), std::string::npos) << message(c);
  c.recompute = 0;
  c.activation_checkpointing = true;
  EXPECT_NE(message(c).find("--recompute=2 or --activation_checkpointing=False"),
            std::string::npos)
      << message(c);
  c.recompute = 2;
  EXPECT_EQ(message(c), "");
}

}  // namespace
}  // namespace nanogpt
