// Reading a sweep file into the grid of runs (see sweep_file.h).
#include "experiments/sweep_file.h"

#include <fmt/format.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "core/check.h"
#include "core/config.h"
#include "train/train_config.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

std::string as_string(const ConfigAssignment& a) {
  CHECK(std::holds_alternative<std::string>(a.value),
        "{}: '{}' expects a string such as '--n_layer=8 --n_embd=128' but got {} {}", a.origin,
        a.key, config_value_type(a.value), config_value_repr(a.value));
  return std::get<std::string>(a.value);
}

// "--n_layer=8 --dropout=0.1" (the dashes may be left out) -> assignments.
std::vector<ConfigAssignment> parse_variation(const ConfigAssignment& a) {
  std::vector<ConfigAssignment> out;
  std::istringstream words(as_string(a));
  std::string word;
  while (words >> word) {
    if (word.rfind("--", 0) != 0) word = "--" + word;
    CHECK(word.find('=') != std::string::npos,
          "{}: '{}' in {} is not key=value (write e.g. '--n_layer=8 --n_embd=128')", a.origin,
          word, a.key);
    ConfigAssignment o = parse_override(word);
    o.origin = fmt::format("{} ({} = '{}')", a.origin, a.key, as_string(a));
    out.push_back(o);
  }
  return out;
}

std::vector<int64_t> parse_seeds(const ConfigAssignment& a) {
  std::vector<int64_t> seeds;
  if (auto* n = std::get_if<int64_t>(&a.value)) {
    CHECK(*n >= 1 && *n <= 1000, "{}: seeds = {}: expected a count in 1..1000 or a list '1,2,3'",
          a.origin, *n);
    for (int64_t i = 0; i < *n; ++i) seeds.push_back(1337 + i);
    return seeds;
  }
  std::string text = as_string(a);
  for (char& c : text) {
    if (c == ',') c = ' ';
  }
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    try {
      size_t used = 0;
      seeds.push_back(std::stoll(word, &used));
      CHECK(used == word.size(), "");
    } catch (const std::exception&) {
      fail("{}: seeds: '{}' is not an integer (expected e.g. seeds = 3 or seeds = '1,2,3')",
           a.origin, word);
    }
  }
  CHECK(!seeds.empty(), "{}: seeds is empty (expected e.g. seeds = 3 or seeds = '1,2,3')",
        a.origin);
  return seeds;
}

// A base config is looked up beside the sweep file first, then in the current directory.
std::string resolve_base(const std::string& file, const std::string& sweep_file) {
  const fs::path beside = fs::path(sweep_file).parent_path() / file;
  if (fs::is_regular_file(beside)) return fs::absolute(beside).lexically_normal().string();
  if (fs::is_regular_file(file)) return fs::absolute(file).lexically_normal().string();
  fail("{}: base config '{}' not found (looked beside the sweep file, {}, and in the current "
       "directory)",
       sweep_file, file, beside.string());
}

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

}  // namespace

std::string override_arg(const ConfigAssignment& a) {
  return "--" + a.key + "=" + config_value_repr(a.value);
}

SweepPlan read_sweep_plan(const std::string& sweep_file,
                          const std::vector<ConfigAssignment>& overrides) {
  SweepPlan plan;
  plan.sweep_file = sweep_file;
  std::vector<ConfigAssignment> all = parse_config_file(sweep_file);
  all.insert(all.end(), overrides.begin(), overrides.end());
  std::string base_text;
  ConfigAssignment seeds{"seeds", int64_t{1}, "default"};
  plan.out_dir = "out-sweep";
  std::set<std::string> model_names, optim_names;
  for (const ConfigAssignment& a : all) {
    if (a.key == "base") {
      base_text = as_string(a);
    } else if (a.key == "out_dir") {
      plan.out_dir = as_string(a);
    } else if (a.key == "seeds") {
      seeds = a;
    } else if (a.key == "target_loss") {
      if (auto* d = std::get_if<double>(&a.value)) {
        plan.target_loss = *d;
      } else if (auto* i = std::get_if<int64_t>(&a.value)) {
        plan.target_loss = static_cast<double>(*i);
      } else {
        fail("{}: target_loss expects a number (0 = none)", a.origin);
      }
    } else if (a.key.rfind("model_", 0) == 0 || a.key.rfind("optim_", 0) == 0) {
      const bool is_model = a.key[0] == 'm';
      SweepVariation v{a.key.substr(6), parse_variation(a)};
      CHECK(valid_name(v.name), "{}: '{}': a variation name needs letters, digits, _ or -",
            a.origin, a.key);
      auto& names = is_model ? model_names : optim_names;
      auto& list = is_model ? plan.models : plan.optims;
      if (names.count(v.name)) {  // a later assignment (e.g. an override) replaces it
        for (auto& old : list) {
          if (old.name == v.name) old = v;
        }
      } else {
        names.insert(v.name);
        list.push_back(v);
      }
    } else {
      CHECK(a.key != "seed", "{}: use seeds = N (or '1,2,3') in a sweep, not seed", a.origin);
      plan.common.push_back(a);
    }
  }
  plan.seeds = parse_seeds(seeds);
  if (plan.models.empty()) plan.models.push_back({"default", {}});
  if (plan.optims.empty()) plan.optims.push_back({"none", {}});
  std::istringstream bases(base_text);
  std::string file;
  while (bases >> file) plan.base_files.push_back(resolve_base(file, sweep_file));
  CHECK(!plan.out_dir.empty(), "{}: out_dir is empty", sweep_file);

  for (const SweepVariation& m : plan.models) {
    for (const SweepVariation& o : plan.optims) {
      for (int64_t seed : plan.seeds) {
        const std::vector<ConfigAssignment>* lists[] = {&plan.common, &m.overrides, &o.overrides};
        SweepRun run;
        run.model = m.name;
        run.optim = o.name;
        run.seed = seed;
        run.name = fmt::format("{}.{}.s{}", m.name, o.name, seed);
        run.run_dir = (fs::path(plan.out_dir) / "runs" / run.name).string();
        // Check every key against train's (names and types) before anything runs.
        TrainConfig probe;
        std::vector<ConfigAssignment> keys;
        for (const auto& f : plan.base_files) {
          auto fa = parse_config_file(f);
          keys.insert(keys.end(), fa.begin(), fa.end());
        }
        for (const auto* list : lists) {
          for (const ConfigAssignment& a : *list) {
            CHECK(a.key != "out_dir" && a.key != "seed" && a.key != "init_from",
                  "{}: '{}' is set by the sweep for each run; remove it", a.origin, a.key);
            keys.push_back(a);
          }
        }
        apply_assignments(probe, keys);
        run.train_args = plan.base_files;
        for (const auto* list : lists) {
          for (const ConfigAssignment& a : *list) run.train_args.push_back(override_arg(a));
        }
        run.train_args.push_back(fmt::format("--seed={}", seed));
        plan.runs.push_back(run);
      }
    }
  }
  return plan;
}

}  // namespace nanogpt
