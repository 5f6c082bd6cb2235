// Binds ModelWeights views to an arena through the parameter table's names.
#include "model/weights.h"

#include <string>

namespace nanogpt {

ModelWeights bind_weights(const ParamTable& table, int n_layer, float* arena) {
  auto at = [&](const std::string& name) { return arena + table.at(name).offset; };
  auto maybe = [&](const std::string& name) -> float* {
    const ParamSpec* s = table.find(name);
    return s ? arena + s->offset : nullptr;
  };
  ModelWeights w;
  w.wte = at("wte.weight");
  w.wpe = at("wpe.weight");
  w.h.resize(n_layer);
  for (int l = 0; l < n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    BlockWeights& b = w.h[l];
    b.ln1w = at(p + "ln_1.weight");
    b.ln1b = maybe(p + "ln_1.bias");
    b.qkvw = at(p + "attn.c_attn.weight");
    b.qkvb = maybe(p + "attn.c_attn.bias");
    b.attprojw = at(p + "attn.c_proj.weight");
    b.attprojb = maybe(p + "attn.c_proj.bias");
    b.ln2w = at(p + "ln_2.weight");
    b.ln2b = maybe(p + "ln_2.bias");
    b.fcw = at(p + "mlp.c_fc.weight");
    b.fcb = maybe(p + "mlp.c_fc.bias");
    b.fcprojw = at(p + "mlp.c_proj.weight");
    b.fcprojb = maybe(p + "mlp.c_proj.bias");
  }
  w.lnfw = at("ln_f.weight");
  w.lnfb = maybe("ln_f.bias");
  return w;
}

}  // namespace nanogpt
