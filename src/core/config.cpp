// Non-template helpers of config.h: suggestions for unknown keys and the --help key table.
#include "core/config.h"

#include <fmt/format.h>

namespace nanogpt {

std::string closest_keys(const std::string& key, const std::vector<KeyInfo>& keys) {
  std::vector<std::pair<int, std::string>> scored;
  for (const auto& k : keys) {
    int d = edit_distance(key, k.name);
    if (k.name.find(key) != std::string::npos || key.find(k.name) != std::string::npos) d -= 2;
    scored.emplace_back(d, k.name);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) {
    if (i) out += ", ";
    out += "'" + scored[i].second + "'";
  }
  return out.empty() ? "(no keys)" : out;
}

std::string format_keys_help(const std::vector<KeyInfo>& keys) {
  size_t width = 0;
  for (const auto& k : keys) width = std::max(width, k.name.size() + k.type.size() + 3);
  std::string out;
  for (const auto& k : keys) {
    std::string left = fmt::format("{} ({})", k.name, k.type);
    out += fmt::format("  --{:<{}} default {:<12} {}\n", left, width, k.default_repr, k.help);
  }
  return out;
}

}  // namespace nanogpt
