// Tests of reading a checkpoint's state.json (train/train_state), including the regression tests
// from fuzzing (fuzz/checkpoint_state_fuzz.cpp), and of the trainer's reading of meta.json.
#include "train/train_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "train/trainer.h"

namespace nanogpt {
namespace {

nlohmann::json good_state() {
  LoaderState loader;
  loader.rng = {1, 2, 3, 18446744073709551615ull};
  loader.batches = 12;
  loader.batch_size = 12;
  loader.block_size = 64;
  return {{"state_version", 1},
          {"iter_num", 120},
          {"best_val_loss", 1.47},
          {"optimizer", "adamw"},
          {"optimizer_steps", 120},
          {"train_loader", loader.to_json()},
          {"config", {{"out_dir", "out"}}},
          {"data_dir", "/data/x"}};
}

std::string error_of(const std::string& text) {
  try {
    parse_training_state(text, "ckpt/state.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TrainingState, ReadsWhatTheTrainerWrites) {
  const TrainingState s = parse_training_state(good_state().dump(2), "ckpt/state.json");
  EXPECT_EQ(s.iter_num, 120);
  EXPECT_EQ(s.optimizer_steps, 120);
  EXPECT_EQ(s.optimizer, "adamw");
  EXPECT_DOUBLE_EQ(s.best_val_loss, 1.47);
  EXPECT_EQ(s.train_loader.rng[3], 18446744073709551615ull);
  EXPECT_EQ(s.train_loader.batch_size, 12);
  // Older states: no optimizer name, no best_val_loss.
  nlohmann::json old = good_state();
  old.erase("optimizer");
  old.erase("best_val_loss");
  const TrainingState o = parse_training_state(old.dump(), "s.json");
  EXPECT_EQ(o.optimizer, "");
  EXPECT_EQ(o.best_val_loss, 1e9);
}

// nlohmann's type_error used to escape (value() on an array, get<int>() on a string), and floats
// or huge integers were converted silently (1e300 -> int: undefined behaviour).
TEST(TrainingStateFuzzRegression, MalformedStatesAreNamedErrors) {
  auto with = [](const char* key, const nlohmann::json& v) {
    nlohmann::json j = good_state();
    j[key] = v;
    return j.dump();
  };
  auto expect = [](const std::string& msg, const std::string& needle) {
    EXPECT_NE(msg.find("ckpt/state.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "'" << needle << "' not in: " << msg;
  };
  expect(error_of("[]"), "expected a JSON object");
  expect(error_of("{\"state_version\": 1"), "not valid JSON");
  expect(error_of(with("state_version", "1")), "'state_version' must be an integer");
  expect(error_of(with("state_version", 2)), "newer than this program understands");
  expect(error_of(with("state_version", 0)), "state_version 0 is not valid");
  expect(error_of(with("iter_num", 1.5)), "'iter_num' must be an integer");
  expect(error_of(with("iter_num", -1)), "'iter_num' must be an integer in 0..");
  expect(error_of(with("optimizer_steps", 1e300)), "'optimizer_steps' must be an integer");
  expect(error_of(with("optimizer", 3)), "'optimizer' must be a string");
  expect(error_of(with("best_val_loss", "low")), "'best_val_loss' must be a number");
  expect(error_of(with("train_loader", 5)), "train_loader");
  nlohmann::json no_loader = good_state();
  no_loader.erase("train_loader");
  expect(error_of(no_loader.dump()), "missing iter_num / train_loader / optimizer_steps");
}

// meta.json's vocab_size is read strictly by the trainer too (a string used to throw nlohmann's
// type_error out of run_training).
TEST(TrainerMetaFuzzRegression, NonIntegerVocabSizeIsANamedError) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("nanogpt_train_meta_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "meta.json") << R"({"vocab_size": "65"})";
  TrainConfig c;
  c.data_dir = dir.string();
  c.out_dir = (dir / "out").string();
  TrainOptions options;
  options.quiet = true;
  try {
    run_training(c, options);
    ADD_FAILURE() << "accepted a string vocab_size";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("meta.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'vocab_size' must be an integer"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nanogpt
