// nanoGPT's ckpt.pt read into our model and optimizer layout, and written from them
// (see nanogpt_checkpoint.h).
#include "io/nanogpt_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "core/check.h"
#include "io/torch_checkpoint.h"
#include "io/torch_pickle_writer.h"
#include "model/architecture.h"

namespace nanogpt {
namespace {

const std::string kTransformer = "transformer.";

// The shape of a parameter in nanoGPT: ours, except wte's rows (the true vocab, not padded).
std::vector<int64_t> nanogpt_shape(const ParamSpec& s, const ModelConfig& model) {
  std::vector<int64_t> shape = s.shape;
  if (s.name == "wte.weight") shape[0] = model.vocab_size;
  return shape;
}

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// nanoGPT's optimizer order: parameters with weight decay (2+ dims), then those without, each
// in named_parameters order (our table's order; lm_head is wte, so it is not among them).
std::vector<const ParamSpec*> adamw_order(const ParamTable& table) {
  std::vector<const ParamSpec*> order;
  for (bool decay : {true, false}) {
    for (const auto& s : table.specs()) {
      if (s.decay == decay) order.push_back(&s);
    }
  }
  return order;
}

int64_t count_decay(const ParamTable& table) {
  int64_t n = 0;
  for (const auto& s : table.specs()) n += s.decay ? 1 : 0;
  return n;
}

// Copies the tensor into arena slot `s` (rows beyond the tensor's stay as they are: zero).
void read_into(const TorchCheckpoint& ck, const TorchTensorRef& t, const ParamSpec& s,
               const ModelConfig& model, float* arena, const std::string& what) {
  const std::vector<int64_t> want = nanogpt_shape(s, model);
  CHECK(t.shape == want, "{}: {} has shape {}, expected {} for this model_args", ck.path(), what,
        shape_text(t.shape), shape_text(want));
  ck.read_f32(t, arena + s.offset);
}

int64_t model_arg_int(const PickleValue& args, const char* key, const std::string& path) {
  const PickleValue& v = args.at(key);
  CHECK(v.kind() == PickleValue::Kind::kInt,
        "{}: model_args['{}'] is {}, expected an int (nanoGPT's GPTConfig)", path, key,
        v.describe());
  return v.as_int();
}

nlohmann::json scalar_json(const PickleValue& v) {
  switch (v.kind()) {
    case PickleValue::Kind::kBool:
      return v.as_bool();
    case PickleValue::Kind::kInt:
      return v.as_int();
    case PickleValue::Kind::kFloat:
      return v.as_float();
    case PickleValue::Kind::kString:
      return v.as_string();
    default:
      return nullptr;
  }
}

double scalar_or_tensor(const TorchCheckpoint& ck, const PickleValue& v, const char* key) {
  if (v.is_tensor()) {
    CHECK(v.tensor().numel() == 1, "{}: {} is a tensor of {} elements, expected one value",
          ck.path(), key, v.tensor().numel());
    if (v.tensor().dtype == TorchDtype::kInt64) {
      return static_cast<double>(ck.read_i64(v.tensor())[0]);
    }
    return ck.read_f32(v.tensor())[0];
  }
  CHECK(v.kind() == PickleValue::Kind::kInt || v.kind() == PickleValue::Kind::kFloat,
        "{}: {} is {}, expected a number", ck.path(), key, v.describe());
  return v.as_float();
}

void read_adamw(const TorchCheckpoint& ck, const PickleValue& opt, const ParamTable& table,
                const ModelConfig& model, NanoGptCheckpoint& out) {
  const std::string& path = ck.path();
  CHECK(opt.is_dict(), "{}: optimizer is {}, expected AdamW's state_dict (a dict)", path,
        opt.describe());
  const PickleValue& groups = opt.at("param_groups");
  const PickleValue& state = opt.at("state");
  CHECK(state.is_dict(), "{}: optimizer['state'] is {}, expected a dict", path, state.describe());
  const std::vector<const ParamSpec*> order = adamw_order(table);
  const int64_t n_decay = count_decay(table);
  const int64_t n_plain = static_cast<int64_t>(order.size()) - n_decay;
  const auto& g = groups.items();
  auto group_size = [&](size_t i) {
    return static_cast<int64_t>(g[i]->at("params").items().size());
  };
  CHECK(g.size() == 2 && group_size(0) == n_decay && group_size(1) == n_plain,
        "{}: optimizer['param_groups'] has {} groups of {} parameters; nanoGPT's AdamW for this "
        "model_args has 2 groups, {} with weight decay then {} without (was it saved by another "
        "program, or with another model?)",
        path, g.size(),
        g.size() >= 2 ? fmt::format("{} and {}", group_size(0), group_size(1)) : std::string("?"),
        n_decay, n_plain);
  NanoGptAdamW a;
  const PickleValue& g0 = *g[0];
  a.lr = g0.at("lr").as_float();
  a.weight_decay = g0.at("weight_decay").as_float();
  const auto& betas = g0.at("betas").items();
  CHECK(betas.size() == 2, "{}: param_groups[0]['betas'] has {} values, expected 2", path,
        betas.size());
  a.beta1 = betas[0]->as_float();
  a.beta2 = betas[1]->as_float();
  a.eps = g0.at("eps").as_float();
  if (const PickleValue* ams = g0.find("amsgrad")) {
    CHECK(ams->is_none() || !ams->as_bool(),
          "{}: the AdamW state was saved with amsgrad=True; nanogpt's AdamW has no amsgrad", path);
  }
  a.exp_avg = Buffer<float>(static_cast<size_t>(table.total_numel()));
  a.exp_avg_sq = Buffer<float>(static_cast<size_t>(table.total_numel()));
  size_t k = 0;
  int64_t with_state = 0;
  std::optional<double> step;
  for (size_t gi = 0; gi < 2; ++gi) {
    for (const auto& id_value : g[gi]->at("params").items()) {
      const ParamSpec& s = *order[k++];
      const std::string name = kTransformer + s.name;
      const PickleValue* st = state.find(id_value->as_int());
      if (st == nullptr) continue;
      ++with_state;
      read_into(ck, st->at("exp_avg").tensor(), s, model, a.exp_avg.data(),
                fmt::format("optimizer state {} exp_avg ({})", id_value->as_int(), name));
      read_into(ck, st->at("exp_avg_sq").tensor(), s, model, a.exp_avg_sq.data(),
                fmt::format("optimizer state {} exp_avg_sq ({})", id_value->as_int(), name));
      const double this_step = scalar_or_tensor(ck, st->at("step"), "an optimizer state's step");
      CHECK(!step || *step == this_step,
            "{}: optimizer state steps differ ({} and {} for {}); nanoGPT steps every parameter "
            "together",
            path, *step, this_step, name);
      step = this_step;
    }
  }
  CHECK(with_state == 0 || with_state == static_cast<int64_t>(order.size()),
        "{}: the optimizer has state for {} of {} parameters; expected all or none", path,
        with_state, order.size());
  a.has_moments = with_state > 0;
  a.step = step ? static_cast<int64_t>(*step) : 0;
  CHECK(a.step >= 0 && static_cast<double>(a.step) == (step ? *step : 0.0),
        "{}: optimizer step {} is not a whole non-negative count", path, step.value_or(0));
  out.adamw = std::move(a);
}

}  // namespace

bool is_torch_checkpoint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4] = {0, 0, 0, 0};
  in.read(head, 4);
  if (in.gcount() >= 1 && static_cast<uint8_t>(head[0]) == 0x80) return true;  // legacy pickle
  return in.gcount() == 4 && std::memcmp(head, "PK\3\4", 4) == 0;
}

namespace {

// Bytes of all tensor storages in the archive: no arena sized from model_args may need more than
// these can fill (a hostile model_args must not make us allocate beyond the file's size).
uint64_t storage_bytes_in(const TorchCheckpoint& ck) {
  uint64_t n = 0;
  for (const auto& [name, entry] : ck.archive().entries()) {
    if (name.rfind("data/", 0) == 0) n += entry.size;
  }
  return n;
}

NanoGptCheckpoint read_checkpoint(const TorchCheckpoint& ck, bool with_optimizer) {
  const std::string& path = ck.path();
  const PickleValue& root = ck.root();
  CHECK(root.is_dict(),
        "{}: the saved object is {}, expected nanoGPT's checkpoint dict (model, optimizer, "
        "model_args, iter_num, best_val_loss, config)",
        path, root.describe());
  NanoGptCheckpoint out;
  out.path = path;

  const PickleValue& args = root.at("model_args");
  CHECK(args.is_dict(), "{}: model_args is {}, expected a dict", path, args.describe());
  ModelConfig& m = out.model;
  m.n_layer = static_cast<int>(model_arg_int(args, "n_layer", path));
  m.n_head = static_cast<int>(model_arg_int(args, "n_head", path));
  m.n_embd = static_cast<int>(model_arg_int(args, "n_embd", path));
  m.block_size = static_cast<int>(model_arg_int(args, "block_size", path));
  m.vocab_size = static_cast<int>(model_arg_int(args, "vocab_size", path));
  CHECK(model_arg_int(args, "n_layer", path) == m.n_layer &&
            model_arg_int(args, "n_embd", path) == m.n_embd &&
            model_arg_int(args, "block_size", path) == m.block_size &&
            model_arg_int(args, "vocab_size", path) == m.vocab_size &&
            model_arg_int(args, "n_head", path) == m.n_head,
        "{}: model_args holds a value beyond any model's range", path);
  m.bias = args.at("bias").as_bool();
  if (const PickleValue* d = args.find("dropout")) m.dropout = d->as_float();
  m.gelu = "exact";  // nanoGPT's MLP: nn.GELU()
  try {
    m.validate();
  } catch (const Error& e) {
    fail("{}: model_args does not describe a model we can build: {}", path, e.what());
  }
  const ParamTable table(m);
  // Every parameter is stored in 2 bytes at least (bfloat16 / float16).
  const uint64_t stored = storage_bytes_in(ck);
  const auto needed = [&](int arenas) {
    return static_cast<uint64_t>(table.num_params_for_mfu()) * 2 * static_cast<uint64_t>(arenas);
  };
  CHECK(needed(1) <= stored,
        "{}: model_args describe a model of {} parameters, but the file's tensors hold only {} "
        "bytes; is model_args right for this state_dict?",
        path, table.num_params_for_mfu(), stored);
  out.params = Buffer<float>(static_cast<size_t>(table.total_numel()));

  // The state_dict: names mapped onto our table.
  const PickleValue& model = root.at("model");
  CHECK(model.is_dict(), "{}: model is {}, expected a state_dict", path, model.describe());
  std::map<std::string, const TorchTensorRef*> by_name;
  std::set<std::string> prefixes, ignored;
  for (const auto& [k, v] : model.dict_items()) {
    CHECK(k->kind() == PickleValue::Kind::kString && v->is_tensor(),
          "{}: model holds {} -> {}; a state_dict maps names to tensors", path, k->describe(),
          v->describe());
    std::string name = k->as_string();
    for (const char* prefix : {"_orig_mod.", "module."}) {
      if (name.rfind(prefix, 0) == 0) {
        name = name.substr(std::strlen(prefix));
        prefixes.insert(prefix);
      }
    }
    const auto ends_with = [&](const std::string& tail) {
      return name.size() >= tail.size() &&
             name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends_with(".attn.bias") || ends_with(".attn.masked_bias")) {
      ignored.insert(name);
      continue;
    }
    CHECK(by_name.emplace(name, &v->tensor()).second, "{}: model has '{}' twice", path, name);
  }
  for (const auto& s : table.specs()) {
    const std::string name = kTransformer + s.name;
    auto it = by_name.find(name);
    CHECK(it != by_name.end(),
          "{}: model has no '{}' (model_args say n_layer {}, bias {}); is this nanoGPT's "
          "checkpoint?",
          path, name, m.n_layer, m.bias ? "True" : "False");
    read_into(ck, *it->second, s, m, out.params.data(), "model['" + name + "']");
    by_name.erase(it);
  }
  // lm_head.weight: nanoGPT ties it to wte (the same storage); an untied head is refused.
  if (auto it = by_name.find("lm_head.weight"); it != by_name.end()) {
    const TorchTensorRef& head = *it->second;
    const ParamSpec& wte = table.at("wte.weight");
    CHECK(head.shape == nanogpt_shape(wte, m),
          "{}: lm_head.weight has shape {}, expected {} (tied to wte)", path,
          shape_text(head.shape), shape_text(nanogpt_shape(wte, m)));
    bool tied = false;
    for (const auto& [k, v] : model.dict_items()) {
      const std::string& n = k->as_string();
      if (n.size() >= 22 && n.compare(n.size() - 22, 22, "transformer.wte.weight") == 0) {
        const TorchTensorRef& w = v->tensor();
        tied = w.storage_key == head.storage_key && w.storage_offset == head.storage_offset &&
               w.stride == head.stride;
      }
    }
    if (!tied) {
      const std::vector<float> values = ck.read_f32(head);
      tied = std::equal(values.begin(), values.end(), out.params.data() + wte.offset);
    }
    CHECK(tied,
          "{}: lm_head.weight differs from transformer.wte.weight; nanoGPT ties them, and an "
          "untied head from a ckpt.pt is not supported",
          path);
    by_name.erase(it);
  }
  if (!by_name.empty()) {
    std::vector<std::string> names;
    for (const auto& [n, t] : by_name) names.push_back(n);
    fail("{}: model has tensors nanoGPT's GPT (n_layer {}, bias {}) does not: {}", path, m.n_layer,
         m.bias ? "True" : "False", fmt::join(names, ", "));
  }
  for (const auto& p : prefixes) out.notes.push_back(fmt::format("'{}' name prefixes removed", p));
  if (!ignored.empty()) {
    out.notes.push_back(fmt::format("{} causal-mask buffers (attn.bias) ignored", ignored.size()));
  }

  if (const PickleValue* it = root.find("iter_num")) {
    out.iter_num = static_cast<int64_t>(scalar_or_tensor(ck, *it, "iter_num"));
    CHECK(out.iter_num >= 0, "{}: iter_num is {}, expected >= 0", path, out.iter_num);
  }
  if (const PickleValue* b = root.find("best_val_loss")) {
    out.best_val_loss = scalar_or_tensor(ck, *b, "best_val_loss");
  }
  if (const PickleValue* c = root.find("config"); c != nullptr && c->is_dict()) {
    for (const auto& [k, v] : c->dict_items()) {
      if (k->kind() != PickleValue::Kind::kString) continue;
      nlohmann::json j = scalar_json(*v);
      if (!j.is_null()) out.config[k->as_string()] = std::move(j);
    }
  }
  if (with_optimizer) {
    if (const PickleValue* opt = root.find("optimizer"); opt != nullptr && !opt->is_none()) {
      // Moments need their own storages (two more copies of the parameters) when there are any.
      const PickleValue* state = opt->is_dict() ? opt->find("state") : nullptr;
      const bool has_state = state != nullptr && state->is_dict() && !state->dict_items().empty();
      CHECK(!has_state || needed(3) <= stored,
            "{}: the optimizer's state cannot hold AdamW's two moments of {} parameters in the "
            "file's {} bytes of tensors",
            path, table.num_params_for_mfu(), stored);
      read_adamw(ck, *opt, table, m, out);
    }
  }
  return out;
}

}  // namespace

NanoGptCheckpoint nanogpt_checkpoint_from(const TorchCheckpoint& ck, bool with_optimizer) {
  try {
    return read_checkpoint(ck, with_optimizer);
  } catch (const Error& e) {
    // The value tree's own errors ("no key 'n_head' in a dict ...") do not know the file.
    const std::string what = e.what();
    if (what.find(ck.path()) != std::string::npos) throw;
    fail("{}: {}", ck.path(), what);
  }
}

NanoGptCheckpoint read_nanogpt_checkpoint(const std::string& path, bool with_optimizer) {
  const TorchCheckpoint ck(path);
  return nanogpt_checkpoint_from(ck, with_optimizer);
}

std::vector<std::string> beyond_nanogpt(const ModelConfig& model) {
  std::vector<std::string> out = Architecture::of(model).beyond_gpt2();
  if (model.activation != "relu2" && model.gelu != "exact") {
    out.push_back(
        fmt::format("gelu = '{}' (nanoGPT's MLP uses exact GELU: train with "
                    "--gelu=exact)",
                    model.gelu));
  }
  return out;
}

uint64_t write_nanogpt_checkpoint(const std::string& path, const NanoGptCheckpointOut& out,
                                  TorchZipWriterOptions options) {
  CHECK(out.model && out.table && out.params, "write_nanogpt_checkpoint: nothing to write");
  const ModelConfig& m = *out.model;
  const std::vector<std::string> extra = beyond_nanogpt(m);
  CHECK(extra.empty(),
        "cannot write this model as nanoGPT's ckpt.pt ('{}'): it has {}, which nanoGPT's GPT "
        "(GPT-2 with exact GELU) cannot express",
        path, fmt::join(extra, ", "));
  CHECK((out.exp_avg == nullptr) == (out.exp_avg_sq == nullptr),
        "write_nanogpt_checkpoint: exp_avg and exp_avg_sq go together");
  const ParamTable& table = *out.table;

  // Storages, in the order they are written: key -> bytes.
  std::vector<std::pair<std::string, std::span<const uint8_t>>> storages;
  std::vector<float> steps;  // one float per parameter with state (torch keeps a step each)
  auto add_storage = [&](const float* data, int64_t numel) {
    TorchTensorRef t;
    t.storage_key = std::to_string(storages.size());
    t.location = "cpu";
    t.dtype = TorchDtype::kFloat32;
    t.storage_numel = numel;
    storages.emplace_back(t.storage_key,
                          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data),
                                                   static_cast<size_t>(numel) * sizeof(float)));
    return t;
  };
  auto view = [](TorchTensorRef t, const std::vector<int64_t>& shape) {
    t.shape = shape;
    t.stride.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) t.stride[d - 1] = t.stride[d] * shape[d];
    return PickleOut::tensor(std::move(t));
  };

  PickleOut state_dict = PickleOut::dict({}, /*ordered=*/true);
  std::optional<TorchTensorRef> wte_storage;
  for (const auto& s : table.specs()) {
    const std::vector<int64_t> shape = nanogpt_shape(s, m);
    TorchTensorRef t = add_storage(out.params + s.offset, numel_of(shape));
    if (s.name == "wte.weight") wte_storage = t;
    state_dict.set(PickleOut::string(kTransformer + s.name), view(t, shape));
  }
  state_dict.set(PickleOut::string("lm_head.weight"),
                 view(*wte_storage, nanogpt_shape(table.at("wte.weight"), m)));

  // AdamW: nanoGPT's two groups, ids counted across them; state only when there are moments.
  const std::vector<const ParamSpec*> order = adamw_order(table);
  const int64_t n_decay = count_decay(table);
  PickleOut state = PickleOut::dict({});
  steps.assign(order.size(), static_cast<float>(out.adam_step));
  std::vector<PickleOut> ids[2];
  for (size_t i = 0; i < order.size(); ++i) {
    const ParamSpec& s = *order[i];
    ids[static_cast<int64_t>(i) < n_decay ? 0 : 1].push_back(
        PickleOut::integer(static_cast<int64_t>(i)));
    if (out.exp_avg == nullptr) continue;
    const std::vector<int64_t> shape = nanogpt_shape(s, m);
    const int64_t n = numel_of(shape);
    PickleOut st = PickleOut::dict({});
    st.set(PickleOut::string("step"), view(add_storage(&steps[i], 1), {}));
    st.set(PickleOut::string("exp_avg"), view(add_storage(out.exp_avg + s.offset, n), shape));
    st.set(PickleOut::string("exp_avg_sq"), view(add_storage(out.exp_avg_sq + s.offset, n), shape));
    state.set(PickleOut::integer(static_cast<int64_t>(i)), std::move(st));
  }
  std::vector<PickleOut> groups;
  for (int gi = 0; gi < 2; ++gi) {
    PickleOut g = PickleOut::dict({});
    g.set(PickleOut::string("lr"), PickleOut::real(out.learning_rate));
    g.set(PickleOut::string("betas"),
          PickleOut::tuple({PickleOut::real(out.beta1), PickleOut::real(out.beta2)}));
    g.set(PickleOut::string("eps"), PickleOut::real(out.eps));
    g.set(PickleOut::string("weight_decay"), PickleOut::real(gi == 0 ? out.weight_decay : 0.0));
    g.set(PickleOut::string("amsgrad"), PickleOut::boolean(false));
    g.set(PickleOut::string("foreach"), PickleOut::none());
    g.set(PickleOut::string("maximize"), PickleOut::boolean(false));
    g.set(PickleOut::string("capturable"), PickleOut::boolean(false));
    g.set(PickleOut::string("differentiable"), PickleOut::boolean(false));
    g.set(PickleOut::string("fused"), PickleOut::none());
    g.set(PickleOut::string("params"), PickleOut::list(std::move(ids[gi])));
    groups.push_back(std::move(g));
  }
  PickleOut optimizer = PickleOut::dict({});
  optimizer.set(PickleOut::string("state"), std::move(state));
  optimizer.set(PickleOut::string("param_groups"), PickleOut::list(std::move(groups)));

  PickleOut model_args = PickleOut::dict({});
  model_args.set(PickleOut::string("n_layer"), PickleOut::integer(m.n_layer));
  model_args.set(PickleOut::string("n_head"), PickleOut::integer(m.n_head));
  model_args.set(PickleOut::string("n_embd"), PickleOut::integer(m.n_embd));
  model_args.set(PickleOut::string("block_size"), PickleOut::integer(m.block_size));
  model_args.set(PickleOut::string("bias"), PickleOut::boolean(m.bias));
  model_args.set(PickleOut::string("vocab_size"), PickleOut::integer(m.vocab_size));
  model_args.set(PickleOut::string("dropout"), PickleOut::real(m.dropout));

  PickleOut config = PickleOut::dict({});
  CHECK(out.config.is_object(), "write_nanogpt_checkpoint: config must be a JSON object");
  for (auto it = out.config.begin(); it != out.config.end(); ++it) {
    const nlohmann::json& v = it.value();
    PickleOut value = PickleOut::none();
    if (v.is_boolean()) {
      value = PickleOut::boolean(v.get<bool>());
    } else if (v.is_number_integer()) {
      value = PickleOut::integer(v.get<int64_t>());
    } else if (v.is_number()) {
      value = PickleOut::real(v.get<double>());
    } else if (v.is_string()) {
      value = PickleOut::string(v.get<std::string>());
    } else if (!v.is_null()) {
      continue;  // nanoGPT's config holds scalars only
    }
    config.set(PickleOut::string(it.key()), std::move(value));
  }

  PickleOut root = PickleOut::dict({});
  root.set(PickleOut::string("model"), std::move(state_dict));
  root.set(PickleOut::string("optimizer"), std::move(optimizer));
  root.set(PickleOut::string("model_args"), std::move(model_args));
  root.set(PickleOut::string("iter_num"), PickleOut::integer(out.iter_num));
  root.set(PickleOut::string("best_val_loss"), PickleOut::real(out.best_val_loss));
  root.set(PickleOut::string("config"), std::move(config));

  const std::string pickle = write_torch_pickle(root);
  auto bytes_of = [](const std::string& s) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  const std::string byteorder = "little", version = "3\n";
  TorchZipWriter zip(path, "archive", options);
  zip.add("data.pkl", bytes_of(pickle));
  zip.add("byteorder", bytes_of(byteorder));
  for (const auto& [key, data] : storages) zip.add("data/" + key, data);
  zip.add("version", bytes_of(version));
  return zip.commit();
}

}  // namespace nanogpt
