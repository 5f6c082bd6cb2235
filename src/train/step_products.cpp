// The float32 products of one optimizer step (see step_products.h).
#include "train/step_products.h"

#include <algorithm>

#include "model/activations.h"
#include "optim/muon.h"

namespace nanogpt {

std::vector<ProductShape> step_products(const TrainConfig& config, const ParamTable& table,
                                        int64_t rows, int64_t micro_steps) {
  std::vector<ProductShape> out;
  const double steps = static_cast<double>(std::max<int64_t>(micro_steps, 1));
  // The same shape from several layers is one entry counted that many times.
  auto add = [&](int64_t n, int64_t c, int64_t oc, double count, bool backward) {
    for (ProductShape& p : out) {
      if (p.n == n && p.c == c && p.oc == oc && p.backward == backward) {
        p.per_step += count;
        return;
      }
    }
    out.push_back({n, static_cast<int>(c), static_cast<int>(oc), count, backward});
  };
  const ModelConfig& m = config.model;
  const int64_t C = m.n_embd;
  for (const ParamSpec& s : table.specs()) {
    // The blocks' linear layers: the four 2-D weights read through their 16-bit copies.
    if (s.lowp_only && s.shape.size() == 2) add(rows, s.shape[1], s.shape[0], steps, true);
  }
  const int64_t Vp = m.padded_vocab_size();
  const int64_t chunk = classifier_chunk_rows(rows, Vp, DType::kF32);  // the head, per chunk
  add(chunk, C, Vp, steps * static_cast<double>((rows + chunk - 1) / chunk), true);
  if (config.optim.optimizer == "muon") {
    const double iters = static_cast<double>(config.optim.muon_ns_steps);
    for (const ParamSpec& s : table.specs()) {
      if (!s.hidden_matrix || s.shape.size() != 2) continue;
      if (newton_schulz_on_one_thread(s.shape[0], s.shape[1])) continue;
      const int64_t r = std::min(s.shape[0], s.shape[1]), c = std::max(s.shape[0], s.shape[1]);
      add(r, c, r, iters, false);  // A = X X^T
      add(r, r, r, iters, false);  // A A
      add(r, r, c, iters, false);  // B X
    }
  }
  return out;
}

}  // namespace nanogpt
