// `nanogpt export`: write a checkpoint's (or weights file's) model as an llm.c model file, a
// Hugging Face model.safetensors + config.json, or nanoGPT's ckpt.pt (with the optimizer state).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "cli/commands.h"
#include "core/check.h"
#include "core/config.h"
#include "io/hf_gpt2.h"
#include "io/llmc_model.h"
#include "model/architecture.h"
#include "model/params.h"
#include "train/model_source.h"
#include "train/nanogpt_run.h"

namespace nanogpt::cli {
namespace {

struct ExportConfig {
  std::string out_dir = "out";
  std::string init_from = "resume";
  std::string format = "llmc";
  std::string output = "";
  bool ema = true;

  template <typename V>
  void visit(V&& v) {
    v("out_dir", out_dir, "run directory whose checkpoint (out_dir/ckpt) is exported");
    v("init_from", init_from, "'resume' (out_dir's checkpoint) or a weights file to convert");
    v("format", format,
      "'llmc' (llm.c model .bin, fp32), 'hf' (model.safetensors) or 'nanogpt' (nanoGPT's "
      "ckpt.pt: model, AdamW state, iter_num; loadable by its train.py and sample.py)");
    v("output", output,
      "file to write; default out_dir/model.bin (llmc), out_dir/model.safetensors (hf) or "
      "out_dir/ckpt.pt (nanogpt)");
    v("ema", ema,
      "llmc / hf from a checkpoint of a run that kept the weights' moving average (ema_decay): "
      "write the average (True, what its evaluations ran on) or the trained weights (False); "
      "nanogpt's ckpt.pt, a training checkpoint, always holds the trained weights");
  }
};

}  // namespace

std::string export_help() {
  return "usage: nanogpt export [--out_dir=DIR] [--format=llmc|hf|nanogpt] [--output=FILE]\n"
         "Writes the model of a checkpoint (or converts a weights file). Keys:\n" +
         format_keys_help(describe_keys<ExportConfig>());
}

int export_command(const Args& args) {
  ExportConfig config;
  apply_assignments(config, parse_command_line(args));
  CHECK(config.format == "llmc" || config.format == "hf" || config.format == "nanogpt",
        "format = '{}': expected 'llmc', 'hf' or 'nanogpt'", config.format);
  require_checkpoint(config.init_from, config.out_dir, "export");
  if (config.format == "nanogpt") {
    const std::string output = config.output.empty()
                                   ? (std::filesystem::path(config.out_dir) / "ckpt.pt").string()
                                   : config.output;
    fmt::print("{}\n", export_nanogpt_checkpoint(config.init_from, config.out_dir, output));
    return 0;
  }
  ModelSource src =
      load_model_source(config.init_from, config.out_dir,
                        config.ema ? CheckpointWeights::kAverage : CheckpointWeights::kTrained);
  ParamTable table(src.config);
  std::string output = config.output;
  if (output.empty()) {
    output = (std::filesystem::path(config.out_dir) /
              (config.format == "llmc" ? "model.bin" : "model.safetensors"))
                 .string();
  }
  require_gpt2_architecture(src.config,
                            config.format == "llmc" ? "llm.c's model file" : "Hugging Face's GPT-2");
  if (config.format == "llmc") {
    export_llmc_model(output, src.config, table, src.params.data());
  } else {
    write_hf_safetensors(output, src.config, table, src.params.data());
    auto config_path = std::filesystem::path(output).parent_path() / "config.json";
    std::ofstream(config_path) << hf_config_json(src.config).dump(2) << "\n";
  }
  fmt::print("wrote {} ({} format) from {}{}\n", output, config.format, src.origin,
             src.average ? " (the moving average of its weights)" : "");
  return 0;
}

}  // namespace nanogpt::cli
