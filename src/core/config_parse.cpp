// A small recursive-descent evaluator for the Python literal expressions nanoGPT config files use,
// and the readers for config files and --key=value overrides.
#include "core/config_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
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
  // A Python string literal that eval_python_literal reads back to the same bytes.
  std::string out = "'";
  for (const char c : std::get<std::string>(value)) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "'";
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
      const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
      int64_t r = 0;
      auto overflow = [&]() {  // throws
        error("{} {} {} does not fit in a 64-bit integer (write a float such as {}.0 instead)", x,
              op, y, x);
      };
      const bool add = op == "+", sub = op == "-", mul = op == "*";
      if (add || sub || mul) {
        const bool over = add   ? __builtin_add_overflow(x, y, &r)
                          : sub ? __builtin_sub_overflow(x, y, &r)
                                : __builtin_mul_overflow(x, y, &r);
        if (over) overflow();
        return r;
      }
      if (op == "//" || op == "%") {
        if (y == 0) error("division by zero");
        if (x == INT64_MIN && y == -1) {
          if (op == "%") return int64_t{0};
          overflow();
        }
        int64_t q = x / y, m = x % y;  // Python floors: the remainder takes the sign of y
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;  // no overflow: m and y have opposite signs (x - q * y could overflow)
        }
        return op == "//" ? q : m;
      }
      if (op == "**" && y >= 0) {  // by squaring, so huge exponents of 0, 1, -1 end at once
        int64_t result = 1, base = x;
        for (int64_t e = y;;) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result)) overflow();
          e >>= 1;
          if (e == 0) break;
          if (__builtin_mul_overflow(base, base, &base)) overflow();
        }
        return result;
      }
    }
    const double x = as_double(a), y = as_double(b);
    if ((op == "/" || op == "//" || op == "%") && y == 0) error("division by zero");
    if (op == "**" && x == 0 && y < 0) error("0 cannot be raised to a negative power");
    double r = 0;
    if (op == "+") {
      r = x + y;
    } else if (op == "-") {
      r = x - y;
    } else if (op == "*") {
      r = x * y;
    } else if (op == "/") {
      r = x / y;
    } else if (op == "//") {
      r = std::floor(x / y);
    } else if (op == "%") {
      r = x - std::floor(x / y) * y;
    } else {
      r = std::pow(x, y);  // "**"
    }
    // Like a literal beyond 1e308, a result that overflows (or a negative number to a fractional
    // power) has no place in a config, and inf / nan would not print back as a literal.
    if (!std::isfinite(r)) error("{} {} {} is not a finite number", x, op, y);
    return r;
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
    // Parentheses, unary signs and ** recurse through here: bound the depth (Python's parser stops
    // at 200 nested parentheses) so no input can exhaust the stack.
    if (++depth_ > kMaxDepth) error("expression nested more than {} levels deep", kMaxDepth);
    ConfigValue v = unary_inner();
    --depth_;
    return v;
  }
  ConfigValue unary_inner() {
    if (eat("-")) {
      ConfigValue v = unary();
      if (auto* i = std::get_if<int64_t>(&v)) {
        if (*i == INT64_MIN) error("-({}) does not fit in a 64-bit integer", *i);
        return -*i;
      }
      if (auto* d = std::get_if<double>(&v)) return -*d;
      error("unary minus needs a number");
    }
    if (eat("+")) {
      ConfigValue v = unary();
      if (!is_number(v)) error("unary plus needs a number");
      return v;
    }
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
          case 'r':
            out += '\r';
            break;
          case 'x': {  // \xhh: one byte
            unsigned byte = 0;
            const auto [end, ec] = std::from_chars(
                s_.data() + pos_, s_.data() + std::min(pos_ + 2, s_.size()), byte, 16);
            if (ec != std::errc() || end != s_.data() + pos_ + 2) {
              error("\\x must be followed by two hex digits");
            }
            pos_ += 2;
            out += static_cast<char>(byte);
            break;
          }
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
      const std::string_view hex = s_.substr(start + 2, pos_ - start - 2);
      int64_t v = 0;
      const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), v, 16);
      if (hex.empty() || ec == std::errc::invalid_argument) error("0x needs hex digits");
      if (ec != std::errc() || end != hex.data() + hex.size()) {
        error("integer 0x{} does not fit in 64 bits", hex);
      }
      return v;
    }
    bool is_float = false;
    size_t mantissa_digits = 0;
    auto digits = [&] {
      while (pos_ < s_.size() &&
             (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
        mantissa_digits += s_[pos_] != '_';
        ++pos_;
      }
    };
    digits();
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      digits();
    }
    if (mantissa_digits == 0) error("bad number");
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      size_t exp_start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (pos_ == exp_start) error("bad exponent");
    }
    std::string text(s_.substr(start, pos_ - start));
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    if (is_float) {
      errno = 0;
      char* end = nullptr;
      const double d = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size()) error("bad number");
      if (std::isinf(d)) error("float {} is out of range", text);
      return d;  // underflow gives 0 or a denormal, as in Python
    }
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) error("integer {} does not fit in 64 bits", text);
    if (ec != std::errc() || end != text.data() + text.size()) error("bad number");
    return v;
  }

  static constexpr int kMaxDepth = 100;
  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
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

// Offset of the first byte of s that is not part of valid UTF-8 (no overlong forms, surrogates or
// code points above U+10FFFF), or npos.
size_t invalid_utf8_offset(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len == 0 || i + len > s.size()) return i;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    constexpr uint32_t kMinForLen[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinForLen[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

// Config values end up in JSON (state.json of checkpoints), which holds only UTF-8 text.
void check_utf8(const ConfigAssignment& a) {
  const auto* s = std::get_if<std::string>(&a.value);
  if (!s) return;
  const size_t bad = invalid_utf8_offset(*s);
  CHECK(bad == std::string_view::npos,
        "{}: the value of '{}' is not UTF-8 text (byte 0x{:02X} at offset {}); config values are "
        "saved as JSON in checkpoints, so write the text in UTF-8",
        a.origin, a.key, static_cast<unsigned char>((*s)[bad]), bad);
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
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(),
        "config file '{}' not found or not readable (give a path to a file such as "
        "config/train_shakespeare_char.py)",
        path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_config_text(text.str(), path);
}

std::vector<ConfigAssignment> parse_config_text(std::string_view text, const std::string& path) {
  std::vector<ConfigAssignment> out;
  std::map<std::string, ConfigValue> names;
  int line_no = 0;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string line(text.substr(begin, end - begin));
    begin = end + 1;
    ++line_no;
    std::string stripped = trim(strip_comment(line));
    if (stripped.empty()) continue;
    std::string origin = fmt::format("{}:{}", path, line_no);
    size_t eq = stripped.find('=');
    std::string key = eq == std::string::npos ? "" : trim(stripped.substr(0, eq));
    CHECK(eq != std::string::npos && is_identifier(key) && stripped.substr(eq, 2) != "==",
          "{}: cannot parse line '{}': expected `key = value` (a Python assignment of a literal)",
          origin, trim(line));
    ConfigValue value = eval_python_literal(trim(stripped.substr(eq + 1)), origin, names);
    names[key] = value;
    out.push_back({key, value, origin});
    check_utf8(out.back());
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
  ConfigAssignment a{key, value, origin};
  check_utf8(a);
  return a;
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
