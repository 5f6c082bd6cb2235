// A small recursive-descent evaluator for the Python literal expressions nanoGPT config files use,
// and the readers for config files and --key=value overrides.
#include "core/config_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/check.h"

namespace nanogpt {

std::string config_value_type(const ConfigValue& value) {
  switch (value.index()) {
    case 0:
      return "bool";
    case 1:
      return "int";
    case 2:
      return "float";
    default:
      return "str";
  }
}

std::string config_value_repr(const ConfigValue& value) {
  if (auto* b = std::get_if<bool>(&value)) return *b ? "True" : "False";
  if (auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&value)) {
    std::string s = fmt::format("{}", *d);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  return "'" + std::get<std::string>(value) + "'";
}

namespace {

class LiteralParser {
 public:
  LiteralParser(std::string_view text, const std::string& origin,
                const std::map<std::string, ConfigValue>& names)
      : s_(text), origin_(origin), names_(names) {}

  ConfigValue parse() {
    ConfigValue v = expr();
    skip_space();
    if (pos_ != s_.size()) error("unexpected '{}'", s_.substr(pos_));
    return v;
  }

 private:
  template <typename... Args>
  [[noreturn]] void error(fmt::format_string<Args...> format, Args&&... args) {
    fail(
        "{}: cannot read value '{}': {} (expected a Python literal: a number such as 12 or 6e-4, "
        "True/False, a quoted 'string', or arithmetic of those such as 5 * 8)",
        origin_, s_, fmt::format(format, std::forward<Args>(args)...));
  }

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(std::string_view token) {
    skip_space();
    if (s_.substr(pos_, token.size()) == token) {
      pos_ += token.size();
      return true;
    }
    return false;
  }
  bool peek(std::string_view token) {
    skip_space();
    return s_.substr(pos_, token.size()) == token;
  }

  static bool is_number(const ConfigValue& v) {
    return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
  }
  static double as_double(const ConfigValue& v) {
    if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    return std::get<double>(v);
  }

  ConfigValue arith(const ConfigValue& a, const ConfigValue& b, const std::string& op) {
    if (op == "+" && std::holds_alternative<std::string>(a) &&
        std::holds_alternative<std::string>(b)) {
      return std::get<std::string>(a) + std::get<std::string>(b);
    }
    if (!is_number(a) || !is_number(b)) {
      error("operator {} needs numbers, got {} and {}", op, config_value_type(a),
            config_value_type(b));
    }
    bool ints = std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b);
    if (ints) {
      int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
      if (op == "+") return x + y;
      if (op == "-") return x - y;
      if (op == "*") return x * y;
      if (op == "//" || op == "%") {
        if (y == 0) error("division by zero");
        int64_t q = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --q;  // Python floors
        return op == "//" ? q : x - q * y;
      }
      if (op == "**" && y >= 0) {
        int64_t r = 1;
        for (int64_t k = 0; k < y; ++k) r *= x;
        return r;
      }
    }
    double x = as_double(a), y = as_double(b);
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "/") {
      if (y == 0) error("division by zero");
      return x / y;
    }
    if (op == "//") {
      if (y == 0) error("division by zero");
      return std::floor(x / y);
    }
    if (op == "%") {
      if (y == 0) error("division by zero");
      return x - std::floor(x / y) * y;
    }
    return std::pow(x, y);  // "**"
  }

  ConfigValue expr() {
    ConfigValue v = term();
    for (;;) {
      if (eat("+")) {
        v = arith(v, term(), "+");
      } else if (eat("-")) {
        v = arith(v, term(), "-");
      } else {
        return v;
      }
    }
  }
  ConfigValue term() {
    ConfigValue v = unary();
    for (;;) {
      if (peek("**")) return v;
      if (eat("*")) {
        v = arith(v, unary(), "*");
      } else if (eat("//")) {
        v = arith(v, unary(), "//");
      } else if (eat("/")) {
        v = arith(v, unary(), "/");
      } else if (eat("%")) {
        v = arith(v, unary(), "%");
      } else {
        return v;
      }
    }
  }
  ConfigValue unary() {
    if (eat("-")) {
      ConfigValue v = unary();
      if (auto* i = std::get_if<int64_t>(&v)) return -*i;
      if (auto* d = std::get_if<double>(&v)) return -*d;
      error("unary minus needs a number");
    }
    if (eat("+")) return unary();
    ConfigValue base = atom();
    if (eat("**")) return arith(base, unary(), "**");
    return base;
  }
  ConfigValue atom() {
    skip_space();
    if (pos_ >= s_.size()) error("value missing");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      ConfigValue v = expr();
      if (!eat(")")) error("missing ')'");
      return v;
    }
    if (c == '\'' || c == '"') return string_literal(c);
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < s_.size() &&
             (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
        ++pos_;
      }
      std::string name(s_.substr(start, pos_ - start));
      if (name == "True") return true;
      if (name == "False") return false;
      auto it = names_.find(name);
      if (it != names_.end()) return it->second;
      error("unknown name '{}' (strings need quotes: '{}')", name, name);
    }
    error("unexpected '{}'", s_.substr(pos_));
  }
  ConfigValue string_literal(char quote) {
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      char c = s_[pos_++];
      if (c == '\\' && pos_ < s_.size()) {
        char e = s_[pos_++];
        switch (e) {
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          case '\\':
          case '\'':
          case '"':
            out += e;
            break;
          default:
            out += '\\';
            out += e;
        }
      } else {
        out += c;
      }
    }
    if (pos_ >= s_.size()) error("unterminated string");
    ++pos_;
    return out;
  }
  ConfigValue number() {
    size_t start = pos_;
    if (s_.substr(pos_, 2) == "0x" || s_.substr(pos_, 2) == "0X") {
      pos_ += 2;
      while (pos_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      return static_cast<int64_t>(
          std::stoll(std::string(s_.substr(start, pos_ - start)), nullptr, 16));
    }
    bool is_float = false;
    auto digits = [&] {
      while (pos_ < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
        ++pos_;
    };
    digits();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      digits();
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      size_t exp_start = pos_;
      digits();
      if (pos_ == exp_start) error("bad exponent");
    }
    std::string text(s_.substr(start, pos_ - start));
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    if (text == ".") error("bad number");
    if (is_float) return std::stod(text);
    try {
      return static_cast<int64_t>(std::stoll(text));
    } catch (const std::out_of_range&) {
      error("integer {} out of range", text);
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  const std::string& origin_;
  const std::map<std::string, ConfigValue>& names_;
};

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// Removes a trailing # comment that is not inside a string.
std::string strip_comment(const std::string& line) {
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

ConfigValue eval_python_literal(std::string_view expr, const std::string& origin,
                                const std::map<std::string, ConfigValue>& names) {
  return LiteralParser(expr, origin, names).parse();
}

std::vector<ConfigAssignment> parse_config_file(const std::string& path) {
  std::ifstream in(path);
  CHECK(in.good(),
        "config file '{}' not found or not readable (give a path to a file such as "
        "config/train_shakespeare_char.py)",
        path);
  std::vector<ConfigAssignment> out;
  std::map<std::string, ConfigValue> names;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string text = trim(strip_comment(line));
    if (text.empty()) continue;
    std::string origin = fmt::format("{}:{}", path, line_no);
    size_t eq = text.find('=');
    std::string key = eq == std::string::npos ? "" : trim(text.substr(0, eq));
    CHECK(eq != std::string::npos && is_identifier(key) && text.substr(eq, 2) != "==",
          "{}: cannot parse line '{}': expected `key = value` (a Python assignment of a literal)",
          origin, trim(line));
    ConfigValue value = eval_python_literal(trim(text.substr(eq + 1)), origin, names);
    names[key] = value;
    out.push_back({key, value, origin});
  }
  return out;
}

ConfigAssignment parse_override(std::string_view arg) {
  std::string origin(arg);
  CHECK(arg.substr(0, 2) == "--", "argument '{}': expected --key=value", arg);
  size_t eq = arg.find('=');
  CHECK(eq != std::string_view::npos,
        "argument '{}': expected --key=value (for a boolean write --{}=True)", arg, arg.substr(2));
  std::string key(arg.substr(2, eq - 2));
  CHECK(is_identifier(key), "argument '{}': '{}' is not a valid key name", arg, key);
  std::string raw(arg.substr(eq + 1));
  ConfigValue value;
  try {
    value = eval_python_literal(raw, origin);
  } catch (const Error&) {
    value = raw;  // a bare word such as --init_from=resume
  }
  return {key, value, origin};
}

std::vector<ConfigAssignment> parse_command_line(const std::vector<std::string>& args) {
  std::vector<ConfigAssignment> out;
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) == 0) {
      out.push_back(parse_override(arg));
    } else {
      CHECK(arg.find('=') == std::string::npos, "argument '{}': overrides need two dashes: --{}",
            arg, arg);
      auto file = parse_config_file(arg);
      out.insert(out.end(), file.begin(), file.end());
    }
  }
  return out;
}

int edit_distance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace nanogpt
