// parse_json and the typed key accessors of json_util.h.
#include "core/json_util.h"

namespace nanogpt {

nlohmann::json parse_json(std::string_view text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail("'{}' is not valid JSON ({})", origin, e.what());
  }
}

const nlohmann::json& json_at(const nlohmann::json& j, const std::string& key,
                              const std::string& origin) {
  CHECK(j.is_object(), "{}: expected a JSON object with key '{}', found {}", origin, key,
        j.type_name());
  const auto it = j.find(key);
  CHECK(it != j.end(), "{}: missing key '{}'", origin, key);
  return *it;
}

double json_number(const nlohmann::json& j, const std::string& key, const std::string& origin) {
  const nlohmann::json& v = json_at(j, key, origin);
  CHECK(v.is_number(), "{}: '{}' must be a number, found {}", origin, key, v.dump());
  return v.get<double>();
}

std::string json_string(const nlohmann::json& j, const std::string& key,
                        const std::string& origin) {
  const nlohmann::json& v = json_at(j, key, origin);
  CHECK(v.is_string(), "{}: '{}' must be a string, found {}", origin, key, v.dump());
  return v.get<std::string>();
}

}  // namespace nanogpt
