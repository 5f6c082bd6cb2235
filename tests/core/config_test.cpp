// Tests of the config reader: Python literals, config files, overrides, type checks, suggestions,
// JSON round trip, and that every shipped config in config/ parses.
#include "core/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace nanogpt {
namespace {

struct DemoConfig {
  int batch_size = 12;
  int64_t max_iters = 100;
  double learning_rate = 6e-4;
  bool decay_lr = true;
  std::string init_from = "scratch";
  template <typename V>
  void visit(V&& v) {
    v("batch_size", batch_size, "sequences per micro-batch");
    v("max_iters", max_iters, "iterations");
    v("learning_rate", learning_rate, "peak learning rate");
    v("decay_lr", decay_lr, "cosine decay");
    v("init_from", init_from, "scratch or resume");
  }
};

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("nanogpt_cfg_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(ConfigParse, PythonLiterals) {
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("5 * 8", "t")), 40);
  EXPECT_DOUBLE_EQ(std::get<double>(eval_python_literal("6e-4", "t")), 6e-4);
  EXPECT_DOUBLE_EQ(std::get<double>(eval_python_literal("1e-3", "t")), 1e-3);
  EXPECT_DOUBLE_EQ(std::get<double>(eval_python_literal("3 / 2", "t")), 1.5);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("7 // 2", "t")), 3);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("-7 // 2", "t")), -4);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("2 ** 10", "t")), 1024);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("(1 + 2) * 3", "t")), 9);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("600_000", "t")), 600000);
  EXPECT_EQ(std::get<bool>(eval_python_literal("True", "t")), true);
  EXPECT_EQ(std::get<std::string>(eval_python_literal("'out-shakespeare'", "t")),
            "out-shakespeare");
  EXPECT_EQ(std::get<std::string>(eval_python_literal("\"a\" + 'b'", "t")), "ab");
  EXPECT_THROW(eval_python_literal("time.time()", "t"), Error);
  EXPECT_THROW(eval_python_literal("1 +", "t"), Error);
  EXPECT_THROW(eval_python_literal("'open", "t"), Error);
}

TEST(ConfigParse, FileWithCommentsAndNames) {
  std::string path = write_temp("ok.py",
                                "# comment\n\nbatch_size = 4 * 2  # trailing\n"
                                "max_iters = 5000\nlearning_rate = 1e-3\n"
                                "init_from = 'res#ume'\ndecay_lr = False\n"
                                "max_iters = max_iters * 2\n");
  DemoConfig c;
  apply_assignments(c, parse_config_file(path));
  EXPECT_EQ(c.batch_size, 8);
  EXPECT_EQ(c.max_iters, 10000);
  EXPECT_DOUBLE_EQ(c.learning_rate, 1e-3);
  EXPECT_EQ(c.init_from, "res#ume");
  EXPECT_FALSE(c.decay_lr);
}

TEST(ConfigParse, OverridesApplyLeftToRightAfterFiles) {
  std::string path = write_temp("ov.py", "batch_size = 4\n");
  DemoConfig c;
  apply_assignments(c, parse_command_line({path, "--batch_size=6", "--init_from=resume",
                                           "--batch_size=7", "--learning_rate=1"}));
  EXPECT_EQ(c.batch_size, 7);
  EXPECT_EQ(c.init_from, "resume");
  EXPECT_DOUBLE_EQ(c.learning_rate, 1.0);
}

TEST(ConfigParse, WrongTypeNamesKeyAndType) {
  DemoConfig c;
  try {
    apply_assignment(c, parse_override("--batch_size=1.5"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("batch_size"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expects int"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1.5"), std::string::npos) << msg;
  }
  EXPECT_THROW(apply_assignment(c, parse_override("--decay_lr=3")), Error);
}

TEST(ConfigParse, UnknownKeySuggestsClosest) {
  DemoConfig c;
  try {
    apply_assignment(c, parse_override("--batch_sise=3"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("unknown key 'batch_sise'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'batch_size'"), std::string::npos) << msg;
  }
}

TEST(ConfigParse, UnparseableLineNamesFileAndLine) {
  std::string path = write_temp("bad.py", "batch_size = 4\nimport time\n");
  try {
    parse_config_file(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path + ":2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("import time"), std::string::npos) << msg;
  }
}

TEST(ConfigParse, MissingFileAndBadArguments) {
  EXPECT_THROW(parse_config_file("/nonexistent/config.py"), Error);
  EXPECT_THROW(parse_command_line({"--batch_size"}), Error);
  EXPECT_THROW(parse_command_line({"batch_size=3"}), Error);
}

TEST(ConfigParse, JsonRoundTripAndHelp) {
  DemoConfig a;
  a.batch_size = 3;
  a.learning_rate = 0.1 + 0.2;  // not exactly representable: must round-trip bit-exactly
  a.init_from = "resume";
  auto j = config_to_json(a);
  DemoConfig b;
  config_from_json(b, nlohmann::json::parse(j.dump()), "state.json");
  EXPECT_EQ(b.batch_size, 3);
  EXPECT_EQ(b.learning_rate, a.learning_rate);
  EXPECT_EQ(b.init_from, "resume");
  std::string help = format_keys_help(describe_keys<DemoConfig>());
  EXPECT_NE(help.find("--batch_size (int)"), std::string::npos) << help;
  EXPECT_NE(help.find("0.0006"), std::string::npos) << help;
  DemoConfig c;
  apply_assignments(c, parse_config_file(write_temp("fmt.py", format_config(a))));
  EXPECT_EQ(c.learning_rate, a.learning_rate);
}

}  // namespace
}  // namespace nanogpt
