// Fuzzes the config reader (core/config_parse, core/config.h): the input is a config file's text
// (`key = <Python literal expression>` lines) and, line by line, `--key=value` overrides. Both are
// applied to real config structs (TrainConfig with its nested model/optimizer keys, PrepareConfig,
// SampleConfig) so the type conversions run, then validated, printed and round-tripped via JSON.
#include <string>
#include <vector>

#include "core/config.h"
#include "core/config_parse.h"
#include "data/prepare_config.h"
#include "fuzz_util.h"
#include "sample/sample_config.h"
#include "train/train_config.h"

namespace nanogpt::fuzz {
namespace {

// A printed value parses back to itself (format_config promises a valid config file).
void check_repr_round_trip(const ConfigValue& value) {
  const std::string repr = config_value_repr(value);
  ConfigValue back;
  const bool ok = accepts([&] { back = eval_python_literal(repr, "repr"); });
  FUZZ_ASSERT(ok, "config_value_repr gave '%s', which does not parse", repr.c_str());
  if (const auto* d = std::get_if<double>(&value); d && *d != *d) return;  // nan != nan
  FUZZ_ASSERT(back == value, "'%s' parses to a different value", repr.c_str());
}

template <typename Config>
void apply_all(const std::vector<ConfigAssignment>& assignments) {
  Config config;
  for (const auto& a : assignments) accepts([&] { apply_assignment(config, a); });
  accepts([&] { config.validate(); });
  // Printing, JSON (as state.json saves it) and reading it back give the same config.
  const std::string text = format_config(config);
  const std::string json_text = config_to_json(config).dump();
  Config again;
  config_from_json(again, nlohmann::json::parse(json_text), "json");
  FUZZ_ASSERT(format_config(again) == text, "JSON round trip changed the config:\n%s\nvs\n%s",
              text.c_str(), format_config(again).c_str());
  // And the printed file parses back to the same config.
  Config reparsed;
  apply_assignments(reparsed, parse_config_text(text, "printed"));
  FUZZ_ASSERT(format_config(reparsed) == text, "printed config reads back differently");
  std::vector<KeyInfo> keys = describe_keys<Config>();
  (void)closest_keys(assignments.empty() ? "" : assignments.front().key, keys);
}

}  // namespace
}  // namespace nanogpt::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  const std::string_view text = as_text(data, size);
  std::vector<ConfigAssignment> assignments;
  accepts([&] { assignments = parse_config_text(text, "fuzz.py"); });
  // Every line again as a command-line override.
  for (size_t begin = 0; begin <= text.size();) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    const std::string arg = "--" + std::string(text.substr(begin, end - begin));
    accepts([&] { assignments.push_back(parse_override(arg)); });
    begin = end + 1;
  }
  for (const auto& a : assignments) check_repr_round_trip(a.value);
  apply_all<TrainConfig>(assignments);
  apply_all<PrepareConfig>(assignments);
  apply_all<SampleConfig>(assignments);
  return 0;
}
