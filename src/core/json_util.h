// Strict reading of JSON files we parse (manifest.json, state.json, config.json, meta.json):
// parsing with errors that name the file, and typed access to keys that rejects the wrong JSON
// type or an out-of-range integer with a nanogpt::Error naming the file, the key and the value
// (nlohmann's own get<T>() throws its own exceptions, or silently truncates / converts floats).
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "core/check.h"

namespace nanogpt {

// Parses `text`; throws nanogpt::Error naming `origin` when it is not valid JSON.
nlohmann::json parse_json(std::string_view text, const std::string& origin);

// The value of `key` in object `j`; throws naming origin and key when j is not an object or lacks
// it.
const nlohmann::json& json_at(const nlohmann::json& j, const std::string& key,
                              const std::string& origin);

// `value` (found at origin/key) as an integer of type T: it must be a JSON integer (not a float,
// bool or string) in [min, max].
template <typename T>
T json_integer_value(const nlohmann::json& value, const std::string& key, const std::string& origin,
                     T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max()) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  auto in_range = [&](auto v) {
    return std::cmp_greater_equal(v, min) && std::cmp_less_equal(v, max);
  };
  if (value.is_number_unsigned() && in_range(value.get<uint64_t>())) {
    return static_cast<T>(value.get<uint64_t>());
  }
  if (value.is_number_integer() && !value.is_number_unsigned() && in_range(value.get<int64_t>())) {
    return static_cast<T>(value.get<int64_t>());
  }
  fail("{}: '{}' must be an integer in {}..{}, found {}", origin, key, min, max, value.dump());
}

// json_integer_value of j[key] (which must exist).
template <typename T>
T json_integer(const nlohmann::json& j, const std::string& key, const std::string& origin,
               T min = std::numeric_limits<T>::min(), T max = std::numeric_limits<T>::max()) {
  return json_integer_value<T>(json_at(j, key, origin), key, origin, min, max);
}

// j[key] as a number (integer or float; not a bool or string).
double json_number(const nlohmann::json& j, const std::string& key, const std::string& origin);
// j[key] as a string.
std::string json_string(const nlohmann::json& j, const std::string& key, const std::string& origin);

}  // namespace nanogpt
