// Tests of the config reader: Python literals, config files, overrides, type checks, suggestions,
// JSON round trip, and that every shipped config in config/ parses.
#include "core/config.h"

#include <gtest/gtest.h>

#include <climits>
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

// Regression tests from fuzzing (fuzz/config_fuzz.cpp). Each bad input must be a nanogpt::Error
// naming the value, never undefined behaviour, another exception type, a hang or a stack overflow.
std::string literal_error(const std::string& expr) {
  try {
    eval_python_literal(expr, "fuzz.py:1");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigFuzzRegression, IntegerOverflowIsAnError) {
  for (const char* expr :
       {"9223372036854775807 + 1", "-9223372036854775807 - 2", "3037000500 * 3037000500", "2 ** 64",
        "3 ** 41", "(-9223372036854775807 - 1) // -1", "-(-9223372036854775807 - 1)"}) {
    const std::string msg = literal_error(expr);
    EXPECT_NE(msg.find("does not fit in a 64-bit integer"), std::string::npos)
        << expr << ": " << msg;
    EXPECT_NE(msg.find("fuzz.py:1"), std::string::npos) << msg;
  }
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("2 ** 62", "t")), int64_t{1} << 62);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("-9223372036854775807 - 1", "t")), INT64_MIN);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("(-9223372036854775807 - 1) % -1", "t")), 0);
  // Python's floored // and % near the limits (x - q * y overflowed for these).
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("9223372036854775807 % -2", "t")), -1);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("9223372036854775807 // -2", "t")),
            -4611686018427387904);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("-7 % 3", "t")), 2);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("7 % -3", "t")), -2);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("-7 // 2", "t")), -4);
  // Huge exponents of 0, 1 and -1 finish at once (the old loop ran 10^18 times).
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("1 ** 1000000000000000000", "t")), 1);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("(-1) ** 1000000000000000001", "t")), -1);
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("0 ** 1000000000000000000", "t")), 0);
  EXPECT_NE(literal_error("0 ** -1").find("negative power"), std::string::npos);
}

TEST(ConfigFuzzRegression, BadNumbersAreErrorsNotStdExceptions) {
  EXPECT_NE(literal_error("0xffffffffffffffffff").find("does not fit in 64 bits"),
            std::string::npos);
  EXPECT_NE(literal_error("99999999999999999999").find("does not fit in 64 bits"),
            std::string::npos);
  EXPECT_NE(literal_error("1e999").find("out of range"), std::string::npos);
  // Float results that overflow or are not real: inf / nan would not print back as a literal.
  EXPECT_NE(literal_error("1e308 * 10").find("is not a finite number"), std::string::npos);
  EXPECT_NE(literal_error("(-8.0) ** 0.5").find("is not a finite number"), std::string::npos);
  EXPECT_NE(literal_error("1.0 / 0").find("division by zero"), std::string::npos);
  EXPECT_EQ(std::get<double>(eval_python_literal("2.0 ** -1", "t")), 0.5);
  EXPECT_EQ(std::get<double>(eval_python_literal("-7.5 % 2", "t")), 0.5);
  EXPECT_NE(literal_error("0x").find("hex digits"), std::string::npos);
  EXPECT_NE(literal_error(".e5").find("bad number"), std::string::npos);
  EXPECT_NE(literal_error("._").find("bad number"), std::string::npos);
  EXPECT_EQ(std::get<double>(eval_python_literal("1e-400", "t")), 0.0);  // underflow, as Python
  EXPECT_EQ(std::get<int64_t>(eval_python_literal("0x7fffffffffffffff", "t")), INT64_MAX);
  EXPECT_EQ(std::get<double>(eval_python_literal("1_000.5", "t")), 1000.5);
}

TEST(ConfigFuzzRegression, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_NE(literal_error(deep).find("nested more than"), std::string::npos);
  EXPECT_NE(literal_error(std::string(100000, '-') + "1").find("nested more than"),
            std::string::npos);
  std::string tower = "1";
  for (int i = 0; i < 1000; ++i) tower += " ** 1";
  EXPECT_NE(literal_error(tower).find("nested more than"), std::string::npos);
  EXPECT_EQ(std::get<int64_t>(
                eval_python_literal(std::string(50, '(') + "7" + std::string(50, ')'), "t")),
            7);
}

TEST(ConfigFuzzRegression, PrintedStringsReadBack) {
  // format_config promises a valid config file; SampleConfig's default start is "\n".
  for (const std::string& s :
       {std::string("\n"), std::string("it's"), std::string("a\\b\"c"),
        std::string("tab\there\r\n"), std::string("\x01\x7f"), std::string("caf\xc3\xa9")}) {
    const std::string repr = config_value_repr(s);
    EXPECT_EQ(repr.find('\n'), std::string::npos) << repr;
    EXPECT_EQ(std::get<std::string>(eval_python_literal(repr, "t")), s) << repr;
  }
  DemoConfig a;
  a.init_from = "line1\nline2 'quoted' \\";
  DemoConfig b;
  apply_assignments(b, parse_config_text(format_config(a), "printed"));
  EXPECT_EQ(b.init_from, a.init_from);
}

TEST(ConfigFuzzRegression, NonUtf8StringValuesAreRejected) {
  // Config values are saved as JSON (state.json); nlohmann's dump() throws on invalid UTF-8.
  for (const std::string& text :
       {std::string("init_from = 'ab\xff'\n"), std::string("init_from = 'a' + '\xc3'\n"),
        std::string("init_from = '\xed\xa0\x80'\n"), std::string("init_from = '\xc0\xaf'\n")}) {
    try {
      parse_config_text(text, "bad.py");
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("bad.py:1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("not UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_override("--out_dir=\xff\xfe"), Error);
  EXPECT_EQ(std::get<std::string>(parse_override("--out_dir=caf\xc3\xa9").value), "caf\xc3\xa9");
}

TEST(ConfigFuzzRegression, JsonIntegerBeyondInt64IsAnError) {
  DemoConfig c;
  EXPECT_THROW(config_from_json(c, nlohmann::json::parse(R"({"max_iters": 18446744073709551615})"),
                                "state.json"),
               Error);
  EXPECT_EQ(c.max_iters, 100);
}

}  // namespace
}  // namespace nanogpt
