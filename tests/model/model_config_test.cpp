// ModelConfig validation names the offending key.
#include "model/model_config.h"

#include <gtest/gtest.h>

#include "core/check.h"

namespace nanogpt {
namespace {

TEST(ModelConfigValidate, NamesTheKey) {
  ModelConfig m;
  m.vocab_size = 65;
  m.n_embd = 100;
  m.n_head = 3;
  try {
    m.validate();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_embd"), std::string::npos);
  }
}

}  // namespace
}  // namespace nanogpt
