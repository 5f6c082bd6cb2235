// Helpers shared by the optimizer tests: the tiny model's parameter table and loading the PyTorch
// fixture (tests/fixtures/optim/optim_fixture.json, made by make_optim_fixture.py) into arenas;
// and the check that an optimizer config is refused with a message naming what is wrong.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/check.h"
#include "model/params.h"
#include "optim/optim_config.h"

namespace nanogpt::testing {

inline ModelConfig tiny_model_config() {
  ModelConfig c;
  c.n_layer = 1;
  c.n_head = 1;
  c.n_embd = 2;
  c.block_size = 2;
  c.vocab_size = 3;
  c.bias = true;
  return c;
}

inline nlohmann::json load_optim_fixture() {
  const std::string path =
      std::string(NANOGPT_SOURCE_DIR) + "/tests/fixtures/optim/optim_fixture.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(in);
}

// Copies per-tensor values (fixture[name] -> list of floats) into an arena laid out by `table`.
inline std::vector<float> to_arena(const ParamTable& table, const nlohmann::json& by_name) {
  std::vector<float> arena(static_cast<size_t>(table.total_numel()), 0.0f);
  for (const auto& s : table.specs()) {
    const auto& values = by_name.at(s.name);
    if (static_cast<int64_t>(values.size()) != s.numel) throw std::runtime_error("size " + s.name);
    for (int64_t i = 0; i < s.numel; ++i) arena[s.offset + i] = values[i].get<float>();
  }
  return arena;
}

// fixture["tensors"] as {name: field} maps, field = "init" or grads of step k.
inline nlohmann::json tensor_field(const nlohmann::json& fixture, const std::string& field,
                                   int step = -1) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& t : fixture.at("tensors")) {
    out[t.at("name").get<std::string>()] = step < 0 ? t.at(field) : t.at(field).at(step);
  }
  return out;
}

// c.validate() throws an Error whose message contains needle.
inline void expect_invalid(const OptimConfig& c, const std::string& needle) {
  try {
    c.validate();
    FAIL() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace nanogpt::testing
