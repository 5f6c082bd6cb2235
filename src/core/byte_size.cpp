// Parsing and printing of byte sizes with binary suffixes.
#include "core/byte_size.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/check.h"

namespace nanogpt {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

int64_t parse_byte_size(const std::string& text, const std::string& key) {
  const std::string hint = fmt::format(
      "{} = '{}': expected a byte count such as 1073741824, 64M or 1G (K, M, G, T = 1024, "
      "1024^2, 1024^3, 1024^4)",
      key, text);
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
    ++end;
  }
  CHECK(end > 0, "{}", hint);
  const std::string number = text.substr(0, end);
  CHECK(number.find('.') == number.rfind('.') && number != ".", "{}", hint);
  std::string suffix = lower(text.substr(end));
  if (!suffix.empty() && suffix.front() == ' ') suffix.erase(0, 1);
  double scale = 1.0;
  if (!suffix.empty() && suffix != "b") {
    const char unit = suffix[0];
    const std::string rest = suffix.substr(1);
    CHECK(rest.empty() || rest == "b" || rest == "ib", "{}", hint);
    switch (unit) {
      case 'k':
        scale = 1024.0;
        break;
      case 'm':
        scale = 1024.0 * 1024;
        break;
      case 'g':
        scale = 1024.0 * 1024 * 1024;
        break;
      case 't':
        scale = 1024.0 * 1024 * 1024 * 1024;
        break;
      default:
        fail("{}", hint);
    }
  }
  const double value = std::strtod(number.c_str(), nullptr) * scale;
  CHECK(std::isfinite(value) && value < 9.0e18, "{} (too large)", hint);
  return static_cast<int64_t>(std::llround(value));
}

std::string format_byte_size(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int u = 0;
  while (u < 4 && std::fabs(value) >= 1024.0) {
    value /= 1024.0;
    ++u;
  }
  if (u == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", value, units[u]);
}

}  // namespace nanogpt
