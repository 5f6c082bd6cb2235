// Binds ModelWeights views to an arena through the parameter table's names.
#include "model/weights.h"

#include <string>

namespace nanogpt {

namespace {

template <typename T>
ModelViews<T> bind(const ParamTable& table, int n_layer, T* arena, WeightLayout layout) {
  auto maybe = [&](const std::string& name) -> T* {
    const ParamSpec* s = table.find(name);
    if (!s) return nullptr;
    if (layout == WeightLayout::kWhole) return arena + s->offset;
    return s->fp32_read_offset >= 0 ? arena + s->fp32_read_offset : nullptr;
  };
  auto at = [&](const std::string& name) {
    table.at(name);  // throws naming a missing one
    return maybe(name);
  };
  ModelViews<T> w;
  w.wte = at("wte.weight");
  w.wpe = maybe("wpe.weight");
  w.skipw = maybe("skip_weights");
  w.h.resize(n_layer);
  for (int l = 0; l < n_layer; ++l) {
    const std::string p = "h." + std::to_string(l) + ".";
    BlockViews<T>& b = w.h[l];
    b.ln1w = at(p + "ln_1.weight");
    b.ln1b = maybe(p + "ln_1.bias");
    b.qkvw = at(p + "attn.c_attn.weight");
    b.qkvb = maybe(p + "attn.c_attn.bias");
    b.attprojw = at(p + "attn.c_proj.weight");
    b.attprojb = maybe(p + "attn.c_proj.bias");
    b.attn_gain = maybe(p + "attn.gain");
    b.ln2w = at(p + "ln_2.weight");
    b.ln2b = maybe(p + "ln_2.bias");
    b.fcw = at(p + "mlp.c_fc.weight");
    b.fcb = maybe(p + "mlp.c_fc.bias");
    b.fcprojw = at(p + "mlp.c_proj.weight");
    b.fcprojb = maybe(p + "mlp.c_proj.bias");
  }
  w.lnfw = at("ln_f.weight");
  w.lnfb = maybe("ln_f.bias");
  w.head = table.find("lm_head.weight") ? maybe("lm_head.weight") : w.wte;
  return w;
}

}  // namespace

ModelWeights bind_weights(const ParamTable& table, int n_layer, float* arena, WeightLayout layout) {
  return bind(table, n_layer, arena, layout);
}

LowpModelWeights bind_lowp_weights(const ParamTable& table, int n_layer, uint16_t* arena) {
  return bind(table, n_layer, arena, WeightLayout::kWhole);
}

}  // namespace nanogpt
