// Reading nanoGPT-style configuration: `key = value` lines of Python literals in config files, and
// `--key=value` overrides on the command line. Produces typed values with their origin
// ("file:line" or "--key=value") so errors can point at them. Applying values to a config struct
// is config.h's job.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace nanogpt {

// A Python literal's value: True/False, int, float or str.
using ConfigValue = std::variant<bool, int64_t, double, std::string>;

// "bool", "int", "float" or "str".
std::string config_value_type(const ConfigValue& value);
// Python-like rendering: True, 12, 0.0006, 'text'.
std::string config_value_repr(const ConfigValue& value);

struct ConfigAssignment {
  std::string key;
  ConfigValue value;
  std::string origin;  // "config/x.py:12" or "--key=value"
};

// Evaluates a Python expression of literals: numbers (1, 1e-3, 0x10), strings ('a', "b"),
// True/False, + - * / // % ** and parentheses, and names assigned earlier in the same file.
// Throws nanogpt::Error mentioning `origin` on anything else.
ConfigValue eval_python_literal(std::string_view expr, const std::string& origin,
                                const std::map<std::string, ConfigValue>& names = {});

// Reads a config file. Blank lines and # comments are skipped; every other line must be
// `name = expression`. Errors name the file and line and show the text.
std::vector<ConfigAssignment> parse_config_file(const std::string& path);
// The same for a config file's text; `path` names it in errors ("config/x.py:12").
std::vector<ConfigAssignment> parse_config_text(std::string_view text, const std::string& path);

// Parses "--key=value". The value is a Python literal if it parses as one, otherwise the raw
// text as a string (so --init_from=resume works, as in nanoGPT's configurator).
ConfigAssignment parse_override(std::string_view arg);

// Splits a subcommand's arguments into config files and --key=value overrides, in order.
// Throws on an argument that is neither (e.g. "--key" without "=").
std::vector<ConfigAssignment> parse_command_line(const std::vector<std::string>& args);

// Levenshtein distance, for "did you mean" suggestions.
int edit_distance(std::string_view a, std::string_view b);

}  // namespace nanogpt
