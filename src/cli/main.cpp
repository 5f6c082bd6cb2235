// nanogpt: the one binary. `nanogpt <command> [config files...] [--key=value ...]`; dispatches to
// the subcommands in this folder and turns nanogpt::Error into a clear message and exit code 1.
#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <string>

#include "cli/commands.h"
#include "core/build_info.h"
#include "core/check.h"
#include "core/cpu_info.h"
#include "core/cpu_target.h"
#include "core/isa_required.h"
#include "kernels/backend_info.h"
#if NANOGPT_WITH_CUDA
#include "kernels/cuda/cuda_context.h"
#endif

namespace nanogpt::cli {
namespace {

struct Command {
  std::function<int(const Args&)> run;
  std::function<std::string()> help;
  const char* summary;
};

const std::map<std::string, Command>& commands() {
  static const std::map<std::string, Command> table = {
      {"prepare", {prepare_command, prepare_help, "tokenize a corpus once into token files"}},
      {"train", {train_command, train_help, "train (or resume, or finetune) a GPT"}},
      {"sample", {sample_command, sample_help, "generate text from a checkpoint"}},
      {"export",
       {export_command, export_help, "write a checkpoint as llm.c, Hugging Face or nanoGPT files"}},
      {"estimate",
       {estimate_command, estimate_help, "parameters, FLOPs and peak memory of a config"}},
      {"sweep", {sweep_command, sweep_help, "run a grid of trainings into results.csv"}},
      {"report", {report_command, report_help, "report.md + report.html of a sweep or a run"}},
      {"autotune", {autotune_command, autotune_help, "fastest micro-batch x accumulation split"}},
  };
  return table;
}

// --version's CUDA line: whether the CUDA backend is compiled in (for which GPU architectures)
// and the GPU it finds, or why it finds none.
std::string cuda_line() {
#if NANOGPT_WITH_CUDA
  std::string archs = NANOGPT_CUDA_ARCHS;  // CMake's list, comma-separated: "80,86,89,90"
  std::string list;
  for (size_t at = 0; at <= archs.size();) {
    const size_t end = std::min(archs.find(',', at), archs.size());
    const std::string a = archs.substr(at, end - at);
    if (!a.empty()) list += (list.empty() ? "sm_" : " sm_") + a.substr(0, a.find('-'));
    at = end + 1;
  }
  std::string why;
  if (cuda::device_available(&why)) {
    return fmt::format("backend compiled in ({}); GPU: {}", list, cuda::device_description());
  }
  return fmt::format("backend compiled in ({}); no usable GPU: {}", list, why);
#else
  return "not compiled in (built without nvcc, or -DNANOGPT_CUDA=OFF): --device=cuda is "
         "unavailable; build where a CUDA toolkit is (docs/guide/gpu.md)";
#endif
}

// `nanogpt --version`: what this binary is and what it runs on.
void print_version() {
  const BuildInfo build = build_info();
  const BackendInfo backend = backend_info();
  std::string text = fmt::format("nanogpt {} (git {})\n", build.version, build.git_commit);
  text += fmt::format("build:         {}, {}, -march={}\n", build.build_type, build.compiler,
                      build.target);
  text += fmt::format("compiled for:  {}\n", build.compiled_isa);
  text += fmt::format("this CPU:      {}\n", cpu_model_name());
  text += fmt::format("CPU offers:    {}\n", cpu_isa_offered());
  text += fmt::format("CPU target:    {}\n", CpuTarget::from_environment().describe());
  text += fmt::format("oneDNN:        {}, kernels for {}\n", backend.onednn_version,
                      backend.onednn_isa);
  text += fmt::format("threads:       {} (OpenMP; OMP_NUM_THREADS changes it)\n",
                      omp_get_max_threads());
  text += fmt::format("CUDA:          {}\n", cuda_line());
  std::fputs(text.c_str(), stdout);
}

void print_usage() {
  std::string text =
      "nanogpt: train GPT models on CPUs and NVIDIA GPUs (nanoGPT / llm.c compatible)\n\n"
      "usage: nanogpt <command> [config files...] [--key=value ...]\n"
      "       nanogpt help <command>      every key of a command: type, default, meaning\n"
      "       nanogpt --version           build, instruction sets, oneDNN, threads\n\n"
      "commands:\n";
  for (const auto& [name, cmd] : commands()) text += fmt::format("  {:<9} {}\n", name, cmd.summary);
  text +=
      "\nConfig files are nanoGPT-style Python assignments (see config/); --key=value overrides\n"
      "apply left to right after them. Example:\n"
      "  nanogpt prepare --tokenizer=char --input=../shared/data/tinyshakespeare.txt "
      "--out_dir=data/shakespeare_char\n"
      "  nanogpt train config/train_shakespeare_char_cpu.py\n"
      "  nanogpt sample --out_dir=out-shakespeare-char-cpu\n";
  std::fputs(text.c_str(), stdout);
}

int run(int argc, char** argv) {
  Args args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    print_usage();
    return args.empty() ? 2 : 0;
  }
  // NANOGPT_CPU_TARGET caps our kernels and oneDNN's for the whole process (a bad name stops here).
  apply_cpu_target(CpuTarget::from_environment());
  if (args[0] == "--version" || args[0] == "version") {
    print_version();
    return 0;
  }
  std::string name = args[0];
  Args rest(args.begin() + 1, args.end());
  if (name == "help") {
    if (rest.empty()) {
      print_usage();
      return 0;
    }
    name = rest[0];
    auto it = commands().find(name);
    CHECK(it != commands().end(), "unknown command '{}' (try: nanogpt --help)", name);
    std::fputs(it->second.help().c_str(), stdout);
    return 0;
  }
  auto it = commands().find(name);
  CHECK(it != commands().end(),
        "unknown command '{}'. Commands: prepare, train, sample, export, estimate, sweep, "
        "report, autotune (nanogpt --help)",
        name);
  if (wants_help(rest)) {
    std::fputs(it->second.help().c_str(), stdout);
    return 0;
  }
  return it->second.run(rest);
}

}  // namespace
}  // namespace nanogpt::cli

int main(int argc, char** argv) {
  try {
    return nanogpt::cli::run(argc, argv);
  } catch (const nanogpt::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
