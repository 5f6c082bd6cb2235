// nanoGPT's ckpt.pt written and read here (io/nanogpt_checkpoint, io/torch_zip_writer,
// io/torch_pickle_writer): a round trip keeps weights, AdamW moments in nanoGPT's two groups, the
// step, iter_num, best_val_loss and config, plain and ZIP64; the pickle has nanoGPT's names and
// order with lm_head sharing wte's storage; models nanoGPT cannot express are refused by name; a
// failed write (file size limit, unwritable place) leaves the file already there intact; misshapen
// files get named errors. The PyTorch side (files torch saved, files torch loads) is
// nanogpt_torch_fixture_test.cpp.
#include "io/nanogpt_checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/file_util.h"
#include "io/torch_checkpoint.h"
#include "io/torch_pickle_writer.h"
#include "io/torch_zip.h"
#include "io_test_util.h"

namespace nanogpt {
namespace {

using testing::expect_error;
using testing::TempDir;

ModelConfig nanogpt_config(bool bias) {
  ModelConfig c = testing::small_config(bias);
  c.gelu = "exact";
  c.dropout = 0.1;
  return c;
}

struct Written {
  ModelConfig config;
  std::vector<float> params, m, v;
};

Written write_sample(const std::string& path, bool bias, bool with_adam,
                     TorchZipWriterOptions options = {}) {
  Written w;
  w.config = nanogpt_config(bias);
  const ParamTable table(w.config);
  w.params = testing::make_params(w.config, table);
  if (with_adam) {
    w.m = testing::make_params(w.config, table, 1.0f);
    w.v = testing::make_params(w.config, table, 2.0f);
  }
  NanoGptCheckpointOut out;
  out.model = &w.config;
  out.table = &table;
  out.params = w.params.data();
  if (with_adam) {
    out.exp_avg = w.m.data();
    out.exp_avg_sq = w.v.data();
    out.adam_step = 7;
  }
  out.learning_rate = 1e-3;
  out.weight_decay = 0.05;
  out.beta2 = 0.99;
  out.iter_num = 42;
  out.best_val_loss = 1.25;
  out.config = {{"dataset", "shakespeare_char"},
                {"learning_rate", 1e-3},
                {"max_iters", 5000},
                {"decay_lr", true}};
  write_nanogpt_checkpoint(path, out, options);
  return w;
}

void expect_round_trip(bool bias, TorchZipWriterOptions options) {
  TempDir dir;
  const Written w = write_sample(dir / "ckpt.pt", bias, true, options);
  ASSERT_TRUE(is_torch_checkpoint_file(dir / "ckpt.pt"));
  const NanoGptCheckpoint ck = read_nanogpt_checkpoint(dir / "ckpt.pt", true);
  EXPECT_EQ(ck.model.n_layer, w.config.n_layer);
  EXPECT_EQ(ck.model.n_head, w.config.n_head);
  EXPECT_EQ(ck.model.n_embd, w.config.n_embd);
  EXPECT_EQ(ck.model.block_size, w.config.block_size);
  EXPECT_EQ(ck.model.vocab_size, w.config.vocab_size);
  EXPECT_EQ(ck.model.bias, bias);
  EXPECT_EQ(ck.model.gelu, "exact");
  EXPECT_DOUBLE_EQ(ck.model.dropout, 0.1);
  EXPECT_EQ(std::vector<float>(ck.params.begin(), ck.params.end()), w.params);
  ASSERT_TRUE(ck.adamw.has_value());
  EXPECT_TRUE(ck.adamw->has_moments);
  EXPECT_EQ(ck.adamw->step, 7);
  EXPECT_DOUBLE_EQ(ck.adamw->lr, 1e-3);
  EXPECT_DOUBLE_EQ(ck.adamw->weight_decay, 0.05);
  EXPECT_DOUBLE_EQ(ck.adamw->beta2, 0.99);
  EXPECT_EQ(std::vector<float>(ck.adamw->exp_avg.begin(), ck.adamw->exp_avg.end()), w.m);
  EXPECT_EQ(std::vector<float>(ck.adamw->exp_avg_sq.begin(), ck.adamw->exp_avg_sq.end()), w.v);
  EXPECT_EQ(ck.iter_num, 42);
  EXPECT_DOUBLE_EQ(ck.best_val_loss, 1.25);
  EXPECT_EQ(ck.config["dataset"], "shakespeare_char");
  EXPECT_EQ(ck.config["max_iters"], 5000);
  EXPECT_EQ(ck.config["decay_lr"], true);
  EXPECT_TRUE(ck.notes.empty());
}

TEST(NanoGptCheckpoint, RoundTripKeepsWeightsMomentsAndRunState) {
  expect_round_trip(true, {});
  expect_round_trip(false, {});
}

TEST(NanoGptCheckpoint, RoundTripThroughZip64Records) {
  expect_round_trip(true, {.force_zip64 = true});
}

TEST(NanoGptCheckpoint, WritesNanoGptsNamesGroupsAndTiedHead) {
  TempDir dir;
  const Written w = write_sample(dir / "ckpt.pt", true, true);
  const TorchCheckpoint ck(dir / "ckpt.pt");
  EXPECT_EQ(ck.format_version(), "3");
  EXPECT_EQ(ck.archive().top_folder(), "archive");
  for (const auto& [name, entry] : ck.archive().entries()) {
    EXPECT_EQ(entry.data_offset % 64, 0u) << name;  // aligned like torch.save's
  }
  const PickleValue& model = ck.root().at("model");
  std::vector<std::string> names;
  for (const auto& [k, v] : model.dict_items()) names.push_back(k->as_string());
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "transformer.wte.weight");
  EXPECT_EQ(names[1], "transformer.wpe.weight");
  EXPECT_EQ(names[2], "transformer.h.0.ln_1.weight");
  EXPECT_EQ(names[3], "transformer.h.0.ln_1.bias");
  EXPECT_EQ(names.back(), "lm_head.weight");
  const TorchTensorRef& wte = model.at("transformer.wte.weight").tensor();
  const TorchTensorRef& head = model.at("lm_head.weight").tensor();
  EXPECT_EQ(head.storage_key, wte.storage_key);
  EXPECT_EQ(wte.shape, (std::vector<int64_t>{70, 16}));  // the true vocab, not the padded 128

  // Two groups: the 2+-dim tensors with weight decay (wte, wpe, 4 per block), then the rest.
  const PickleValue& groups = ck.root().at("optimizer").at("param_groups");
  ASSERT_EQ(groups.items().size(), 2u);
  EXPECT_EQ(groups.items()[0]->at("params").items().size(), 2u + 4 * 2);
  EXPECT_DOUBLE_EQ(groups.items()[0]->at("weight_decay").as_float(), 0.05);
  EXPECT_DOUBLE_EQ(groups.items()[1]->at("weight_decay").as_float(), 0.0);
  EXPECT_EQ(groups.items()[1]->at("params").items().size(), 8u * 2 + 2);
  // State 2 is the first block's c_attn.weight (after wte and wpe).
  const PickleValue& s2 = ck.root().at("optimizer").at("state").find(int64_t{2})->at("exp_avg");
  EXPECT_EQ(s2.tensor().shape, (std::vector<int64_t>{48, 16}));
  const ParamTable table(w.config);
  const std::vector<float> got = ck.read_f32(s2.tensor());
  const int64_t off = table.at("h.0.attn.c_attn.weight").offset;
  EXPECT_EQ(got, std::vector<float>(w.m.begin() + off, w.m.begin() + off + 48 * 16));
  EXPECT_EQ(ck.root().at("model_args").at("vocab_size").as_int(), 70);
  EXPECT_EQ(ck.root().at("iter_num").as_int(), 42);
}

TEST(NanoGptCheckpoint, WithoutMomentsTheOptimizerStateIsEmpty) {
  TempDir dir;
  write_sample(dir / "ckpt.pt", false, false);
  const NanoGptCheckpoint ck = read_nanogpt_checkpoint(dir / "ckpt.pt", true);
  ASSERT_TRUE(ck.adamw.has_value());
  EXPECT_FALSE(ck.adamw->has_moments);
  EXPECT_EQ(ck.adamw->step, 0);
  const NanoGptCheckpoint weights_only = read_nanogpt_checkpoint(dir / "ckpt.pt", false);
  EXPECT_FALSE(weights_only.adamw.has_value());
}

TEST(NanoGptCheckpoint, RefusesModelsNanoGptCannotExpress) {
  TempDir dir;
  for (auto [key, needle] :
       std::vector<std::pair<std::string, std::string>>{{"gelu", "gelu = 'tanh'"},
                                                        {"position", "position = 'rotary'"},
                                                        {"norm", "norm = 'rmsnorm'"},
                                                        {"tie", "tie_embeddings = False"}}) {
    ModelConfig c = nanogpt_config(true);
    if (key == "gelu") c.gelu = "tanh";
    if (key == "position") c.position = "rotary";
    if (key == "norm") c.norm = "rmsnorm";
    if (key == "tie") c.tie_embeddings = false;
    const ParamTable table(c);
    std::vector<float> p(static_cast<size_t>(table.total_numel()), 0.0f);
    NanoGptCheckpointOut out;
    out.model = &c;
    out.table = &table;
    out.params = p.data();
    expect_error([&] { write_nanogpt_checkpoint(dir / "ckpt.pt", out); },
                 {"ckpt.pt", needle, "nanoGPT"});
    EXPECT_FALSE(std::filesystem::exists(dir / "ckpt.pt")) << key;
  }
}

TEST(NanoGptCheckpoint, AFailedWriteKeepsTheFileAlreadyThere) {
  TempDir dir;
  const std::string path = dir / "ckpt.pt";
  write_sample(path, true, true);
  const FileDigest before = digest_file(path);
  // The file size limit of `prlimit --fsize`, in a child: the write fails part way.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_sample(path, false, true);
    } catch (const Error& e) {
      const std::string what = e.what();
      _exit(what.find("ckpt.pt.partial") != std::string::npos ? 3 : 4);
    }
    _exit(5);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << "the child's write should fail with an error naming it";
  const FileDigest after = digest_file(path);
  EXPECT_EQ(after.bytes, before.bytes);
  EXPECT_EQ(after.crc32c, before.crc32c);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  EXPECT_TRUE(read_nanogpt_checkpoint(path, true).model.bias);  // the first file, still loadable

  // A place that cannot be written: named, nothing created.
  expect_error([&] { write_sample(dir / "no/such/dir/ckpt.pt", true, false); },
               {"no/such/dir/ckpt.pt.partial"});
}

// Rewrites `path` with `from` replaced by `to` (same length) in its data.pkl.
void edit_pickle(const std::string& path, const std::string& from, const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  std::string pkl, version, byteorder;
  std::vector<std::pair<std::string, std::string>> storages;
  {
    const TorchZipArchive zip(path);
    for (const auto& [name, entry] : zip.entries()) {
      const auto bytes = zip.read(name);
      std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (name == "data.pkl") {
        pkl = s;
      } else {
        storages.emplace_back(name, s);
      }
    }
  }
  const size_t at = pkl.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  pkl.replace(at, from.size(), to);
  auto span = [](const std::string& s) {
    return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  TorchZipWriter zip(path);
  zip.add("data.pkl", span(pkl));
  for (const auto& [name, bytes] : storages) zip.add(name, span(bytes));
  zip.commit();
}

TEST(NanoGptCheckpoint, MisshapenCheckpointsGetNamedErrors) {
  TempDir dir;
  const std::string path = dir / "ckpt.pt";
  auto fresh = [&] { write_sample(path, true, true); };
  fresh();
  edit_pickle(path, "n_head", "n_hexd");
  expect_error([&] { read_nanogpt_checkpoint(path, false); }, {"ckpt.pt", "n_head"});
  fresh();
  edit_pickle(path, "lm_head.weight", "lm_head.weighs");
  expect_error([&] { read_nanogpt_checkpoint(path, false); },
               {"ckpt.pt", "does not", "lm_head.weighs"});
  fresh();
  edit_pickle(path, "transformer.h.1.ln_2.bias", "transformer.h.1.ln_2.bia_");
  expect_error([&] { read_nanogpt_checkpoint(path, false); },
               {"ckpt.pt", "no 'transformer.h.1.ln_2.bias'"});
  fresh();
  edit_pickle(path, "exp_avg_sq", "exp_avg_sx");
  expect_error([&] { read_nanogpt_checkpoint(path, true); }, {"ckpt.pt", "exp_avg_sq"});
  EXPECT_NO_THROW(read_nanogpt_checkpoint(path, false));  // weights alone are fine
  fresh();
  edit_pickle(path, "amsgrad\x89", "amsgrad\x88");
  expect_error([&] { read_nanogpt_checkpoint(path, true); }, {"ckpt.pt", "amsgrad=True"});

  // model_args far beyond what the file's tensors hold: refused before anything is sized by it.
  fresh();
  edit_pickle(path, std::string("n_layer") + "K\x02", std::string("n_layer") + "K\xff");
  expect_error([&] { read_nanogpt_checkpoint(path, false); },
               {"ckpt.pt", "model_args describe a model of",
                "parameters, but the file's tensors "
                "hold only"});

  // Not a nanoGPT dict at all.
  PickleOut root = PickleOut::list({PickleOut::integer(1)});
  const std::string pkl = write_torch_pickle(root);
  {
    TorchZipWriter zip(path);
    zip.add("data.pkl",
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pkl.data()), pkl.size()));
    zip.commit();
  }
  expect_error([&] { read_nanogpt_checkpoint(path, false); }, {"ckpt.pt", "list", "model_args"});
  // Legacy and foreign files.
  std::ofstream(dir / "legacy.pt", std::ios::binary) << "\x80\x02\x8a\x0a";
  EXPECT_TRUE(is_torch_checkpoint_file(dir / "legacy.pt"));
  expect_error([&] { read_nanogpt_checkpoint(dir / "legacy.pt", false); },
               {"legacy.pt", "legacy", "torch.save"});
  std::ofstream(dir / "model.bin", std::ios::binary) << "not a zip";
  EXPECT_FALSE(is_torch_checkpoint_file(dir / "model.bin"));
  EXPECT_FALSE(is_torch_checkpoint_file(dir / "missing.pt"));
}

TEST(NanoGptCheckpoint, AcceptsCompiledAndDdpPrefixesAndIgnoresMaskBuffers) {
  // A state_dict as torch.compile saves it ("_orig_mod." names) with PyTorch 1.x's attn.bias
  // causal-mask buffers, built here with the pickle writer.
  TempDir dir;
  const ModelConfig c = nanogpt_config(false);
  const ParamTable table(c);
  const std::vector<float> params = testing::make_params(c, table);
  std::vector<std::pair<std::string, std::vector<float>>> data;
  PickleOut model = PickleOut::dict({}, true);
  auto tensor = [&](const std::vector<int64_t>& shape, std::vector<float> values) {
    TorchTensorRef t;
    t.storage_key = std::to_string(data.size());
    t.storage_numel = static_cast<int64_t>(values.size());
    t.shape = shape;
    t.stride.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) t.stride[d - 1] = t.stride[d] * shape[d];
    data.emplace_back(t.storage_key, std::move(values));
    return PickleOut::tensor(t);
  };
  for (const auto& s : table.specs()) {
    std::vector<int64_t> shape = s.shape;
    if (s.name == "wte.weight") shape[0] = c.vocab_size;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    model.set(PickleOut::string("_orig_mod.transformer." + s.name),
              tensor(shape,
                     std::vector<float>(params.begin() + s.offset, params.begin() + s.offset + n)));
    if (s.name.find("attn.c_attn.weight") != std::string::npos) {
      const std::string block = s.name.substr(0, s.name.find("attn."));
      model.set(PickleOut::string("_orig_mod.transformer." + block + "attn.bias"),
                tensor({1, 1, 8, 8}, std::vector<float>(64, 1.0f)));
    }
  }
  PickleOut args = PickleOut::dict({});
  for (auto [k, v] : std::vector<std::pair<const char*, int64_t>>{
           {"n_layer", 2}, {"n_head", 2}, {"n_embd", 16}, {"block_size", 8}, {"vocab_size", 70}}) {
    args.set(PickleOut::string(k), PickleOut::integer(v));
  }
  args.set(PickleOut::string("bias"), PickleOut::boolean(false));
  args.set(PickleOut::string("dropout"), PickleOut::integer(0));  // Python's 0 is an int
  PickleOut root = PickleOut::dict({});
  root.set(PickleOut::string("model"), std::move(model));
  root.set(PickleOut::string("model_args"), std::move(args));
  root.set(PickleOut::string("iter_num"), PickleOut::integer(250));
  root.set(PickleOut::string("best_val_loss"), tensor({}, {1.5f}));  // a 0-dim tensor, as saved
  const std::string pkl = write_torch_pickle(root);
  {
    TorchZipWriter zip(dir / "ckpt.pt", "ckpt");
    zip.add("data.pkl",
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(pkl.data()), pkl.size()));
    for (const auto& [key, values] : data) {
      zip.add("data/" + key,
              std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()),
                                       values.size() * sizeof(float)));
    }
    zip.commit();
  }
  const NanoGptCheckpoint ck = read_nanogpt_checkpoint(dir / "ckpt.pt", true);
  EXPECT_EQ(std::vector<float>(ck.params.begin(), ck.params.end()), params);
  EXPECT_FALSE(ck.adamw.has_value());  // no optimizer entry
  EXPECT_EQ(ck.iter_num, 250);
  EXPECT_DOUBLE_EQ(ck.best_val_loss, 1.5);
  EXPECT_DOUBLE_EQ(ck.model.dropout, 0.0);
  ASSERT_EQ(ck.notes.size(), 2u);
  EXPECT_NE(ck.notes[0].find("'_orig_mod.' name prefixes removed"), std::string::npos);
  EXPECT_NE(ck.notes[1].find("2 causal-mask buffers"), std::string::npos);
}

}  // namespace
}  // namespace nanogpt
