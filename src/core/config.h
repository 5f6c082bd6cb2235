// Generic operations on config structs that declare their keys once in
// `template <typename V> void visit(V&& v)` as `v("key", field, "help")`: listing keys for --help,
// applying parsed values with type checks and "did you mean" suggestions, and JSON save/load.
// Field types: bool, int, int64_t, double, std::string.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/config_parse.h"

namespace nanogpt {

struct KeyInfo {
  std::string name;
  std::string type;  // bool, int, float, str
  std::string default_repr;
  std::string help;
};

namespace config_detail {

template <typename T>
std::string type_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) return "int";
  if constexpr (std::is_same_v<T, double>) return "float";
  if constexpr (std::is_same_v<T, std::string>) return "str";
}

template <typename T>
ConfigValue to_value(const T& field) {
  if constexpr (std::is_same_v<T, bool>) return field;
  if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
    return static_cast<int64_t>(field);
  }
  if constexpr (std::is_same_v<T, double>) return field;
  if constexpr (std::is_same_v<T, std::string>) return field;
}

// Assigns `value` to `field` if the types fit (int -> float widens; a number given for a string
// becomes its text). Returns false if they do not.
template <typename T>
bool assign(T& field, const ConfigValue& value) {
  if constexpr (std::is_same_v<T, bool>) {
    if (auto* b = std::get_if<bool>(&value)) {
      field = *b;
      return true;
    }
    if (auto* s = std::get_if<std::string>(&value)) {
      if (*s == "true" || *s == "True") return field = true, true;
      if (*s == "false" || *s == "False") return field = false, true;
    }
    return false;
  } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
    if (auto* i = std::get_if<int64_t>(&value)) {
      if constexpr (std::is_same_v<T, int>) {
        if (*i < INT32_MIN || *i > INT32_MAX) return false;
      }
      field = static_cast<T>(*i);
      return true;
    }
    return false;
  } else if constexpr (std::is_same_v<T, double>) {
    if (auto* d = std::get_if<double>(&value)) return field = *d, true;
    if (auto* i = std::get_if<int64_t>(&value)) return field = static_cast<double>(*i), true;
    return false;
  } else {
    if (auto* s = std::get_if<std::string>(&value)) return field = *s, true;
    if (std::holds_alternative<bool>(value)) return false;
    std::string repr = config_value_repr(value);
    field = repr;
    return true;
  }
}

}  // namespace config_detail

// Every key of a config type with its default, in declaration order.
template <typename Config>
std::vector<KeyInfo> describe_keys() {
  Config defaults;
  std::vector<KeyInfo> keys;
  defaults.visit([&](const char* name, auto& field, const char* help) {
    using T = std::decay_t<decltype(field)>;
    keys.push_back({name, config_detail::type_name<T>(),
                    config_value_repr(config_detail::to_value(field)), help});
  });
  return keys;
}

// "did you mean" text: the up-to-three closest key names.
std::string closest_keys(const std::string& key, const std::vector<KeyInfo>& keys);

// The --help text: one line per key with type, default and meaning.
std::string format_keys_help(const std::vector<KeyInfo>& keys);

// Applies one assignment; errors name the origin, the key, the expected type and the fix.
template <typename Config>
void apply_assignment(Config& config, const ConfigAssignment& a) {
  bool found = false;
  config.visit([&](const char* name, auto& field, const char*) {
    if (found || a.key != name) return;
    found = true;
    using T = std::decay_t<decltype(field)>;
    CHECK(config_detail::assign(field, a.value),
          "{}: key '{}' expects {} but got {} {} (e.g. --{}={})", a.origin, a.key,
          config_detail::type_name<T>(), config_value_type(a.value), config_value_repr(a.value),
          a.key, config_value_repr(config_detail::to_value(field)));
  });
  CHECK(found, "{}: unknown key '{}'. Did you mean {}? (`nanogpt help <command>` lists every key)",
        a.origin, a.key, closest_keys(a.key, describe_keys<Config>()));
}

template <typename Config>
void apply_assignments(Config& config, const std::vector<ConfigAssignment>& assignments) {
  for (const auto& a : assignments) apply_assignment(config, a);
}

// All keys and their current values, for printing and saving.
template <typename Config>
nlohmann::ordered_json config_to_json(Config& config) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  config.visit([&](const char* name, auto& field, const char*) { j[name] = field; });
  return j;
}

// Reads keys saved by config_to_json; keys missing from `j` keep their values, unknown keys in
// `j` are errors (naming `origin`).
template <typename Config>
void config_from_json(Config& config, const nlohmann::json& j, const std::string& origin) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    ConfigValue value;
    if (it->is_boolean()) {
      value = it->get<bool>();
    } else if (it->is_number_integer()) {
      CHECK(!it->is_number_unsigned() || it->get<uint64_t>() <= INT64_MAX,
            "{}: key '{}' = {} does not fit in a 64-bit integer", origin, it.key(), it->dump());
      value = it->get<int64_t>();
    } else if (it->is_number()) {
      value = it->get<double>();
    } else if (it->is_string()) {
      value = it->get<std::string>();
    } else {
      fail("{}: key '{}' has a value of unsupported JSON type", origin, it.key());
    }
    apply_assignment(config, ConfigAssignment{it.key(), value, origin});
  }
}

// Lines "key = value" (Python syntax, so the output is itself a valid config file).
template <typename Config>
std::string format_config(Config& config) {
  std::string out;
  config.visit([&](const char* name, auto& field, const char*) {
    out += std::string(name) + " = " + config_value_repr(config_detail::to_value(field)) + "\n";
  });
  return out;
}

}  // namespace nanogpt
