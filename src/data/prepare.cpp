// run_prepare: the passes over the input (char: vocabulary then tokens; gpt2: tokens), the split
// of the token stream at n_train, meta.json, and the commit of the outputs.
#include "data/prepare.h"

#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/byte_size.h"
#include "core/check.h"
#include "core/timer.h"
#include "data/block_encoders.h"
#include "data/documents.h"
#include "data/progress.h"
#include "data/token_split_writer.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

// One pass over every document through the block pipeline; tokens go to `writer` if given.
void run_pass(const InputFiles& inputs, const PrepareConfig& config, const PreparePlan& plan,
              BlockCut cut, const std::string& label, const BlockWork& work,
              TokenSplitWriter* writer, PrepareReport& report) {
  DocumentReaderOptions options;
  options.strip_pos_tags = config.strip_pos_tags;
  options.chunk_bytes = std::clamp<size_t>(plan.block_bytes / 4, 4096, size_t{1} << 20);
  options.max_whole_bytes = plan.max_whole_bytes;
  options.limit_hint =
      fmt::format(" (1/16 of memory_budget = {}); raise --memory_budget", config.memory_budget);
  DocumentReader docs(inputs.files, options);
  BlockReader blocks(docs, cut, plan.block_bytes, config.tokenizer == "char");
  Progress progress(label, docs.input_total(), docs.any_gzip(),
                    config.progress && Progress::stderr_is_terminal());
  int64_t tokens = 0;
  run_block_pipeline(blocks, plan.threads, plan.slots, work,
                     [&](const Block& block, std::span<const uint16_t> ids) {
                       if (writer != nullptr) writer->append(ids);
                       tokens += static_cast<int64_t>(ids.size());
                       progress.update(block.input_offset, tokens);
                     });
  progress.finish();
  report.documents = blocks.documents();
  report.input_bytes = blocks.text_bytes();
}

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0, "cannot open '{}': {}", path, std::strerror(errno));
  const int rc = ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  CHECK(rc == 0, "writing '{}' failed: {} (is the disk full?)", path, std::strerror(err));
}

// Adds the dataset facts to the meta.json the tokenizer wrote (its readers ignore extra keys).
void annotate_meta(const std::string& meta_path, const PrepareReport& r) {
  nlohmann::ordered_json meta;
  {
    std::ifstream in(meta_path, std::ios::binary);
    meta = nlohmann::ordered_json::parse(in);
  }
  meta["format"] = r.format;
  meta["train_tokens"] = r.train_tokens;
  meta["val_tokens"] = r.val_tokens;
  meta["documents"] = r.documents;
  {
    std::ofstream out(meta_path, std::ios::binary | std::ios::trunc);
    out << meta.dump(1) << '\n';
    out.flush();
    CHECK(out.good(), "writing '{}' failed (is the disk full?)", meta_path);
  }
  fsync_file(meta_path);
}

// Final names of one split's files: <split>.bin, or <split>_000000.bin ... when there are several.
std::vector<std::string> output_names(const std::string& split, size_t count) {
  if (count == 1) return {split + ".bin"};
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(fmt::format("{}_{:06d}.bin", split, i));
  return names;
}

}  // namespace

std::string PrepareReport::summary() const {
  std::string s;
  if (!leftovers.empty()) {
    s += fmt::format("started over: removed what an interrupted prepare had left ({})\n",
                     fmt::join(leftovers, ", "));
  }
  s += fmt::format(
      "prepared {} document(s) from {} file(s), {:.1f} MB of text, tokenizer {} (vocab {}), "
      "format {}, {} thread(s), {:.2f} s ({:.1f} MB/s)\n",
      documents, files, input_bytes / 1e6, tokenizer, vocab_size, format, threads, seconds,
      seconds > 0 ? input_bytes / 1e6 / seconds : 0.0);
  if (train_files.size() > 1) {
    s += fmt::format("  {} ... ({} files): {} tokens\n", train_path, train_files.size(),
                     train_tokens);
  } else {
    s += fmt::format("  {}: {} tokens\n", train_path, train_tokens);
  }
  if (val_path.empty()) {
    s += "  (no val.bin: val_fraction gave 0 tokens)\n";
  } else if (val_files.size() > 1) {
    s += fmt::format("  {} ... ({} files): {} tokens\n", val_path, val_files.size(), val_tokens);
  } else {
    s += fmt::format("  {}: {} tokens\n", val_path, val_tokens);
  }
  s += fmt::format("  {}\n", meta_path);
  if (!plan.empty()) s += fmt::format("  {}\n", plan);
  if (!skipped.empty()) s += fmt::format("  skipped {} non-text file(s)\n", skipped.size());
  return s;
}

PrepareReport run_prepare(const PrepareConfig& config, const PrepareOverrides& overrides) {
  config.validate();
  Timer timer;
  PrepareReport report;
  report.tokenizer = config.tokenizer;
  report.format = config.format;
  report.threads = config.threads > 0 ? config.threads : omp_get_max_threads();
  const bool gpt2 = config.tokenizer == "gpt2";
  PreparePlan plan =
      plan_prepare(parse_byte_size(config.memory_budget, "memory_budget"), report.threads, gpt2);
  if (overrides.block_bytes > 0) plan.block_bytes = overrides.block_bytes;
  report.plan = plan.describe();

  const InputFiles inputs = expand_inputs(config.input, config.strip_pos_tags);
  for (const auto& p : inputs.skipped) report.skipped.push_back(p.string());
  report.files = static_cast<int64_t>(inputs.files.size());
  std::unique_ptr<Gpt2Tokenizer> gpt2_tokenizer;
  if (gpt2) gpt2_tokenizer = std::make_unique<Gpt2Tokenizer>(config.vocab_dir);

  PrepareOutput output(config.out_dir, overrides.stage_hook);
  report.leftovers = output.leftovers();
  if (!report.leftovers.empty()) {
    fmt::print(stderr,
               "prepare: out_dir '{}' holds what an interrupted prepare left ({}); starting over\n",
               config.out_dir, fmt::join(report.leftovers, ", "));
  }
  const TokenFormat format = parse_token_format(config.format);
  const int64_t max_file_tokens = format == TokenFormat::kNanogpt
                                      ? std::numeric_limits<int64_t>::max()
                                  : config.shard_tokens > 0 ? config.shard_tokens
                                                            : std::numeric_limits<int32_t>::max();
  TokenSplitWriter writer(output, format, max_file_tokens);
  const std::string meta_partial = output.partial_path("meta.json");

  if (gpt2) {
    Gpt2BlockEncoder encoder(*gpt2_tokenizer, plan, config.format == "llmc");
    run_pass(inputs, config, plan, BlockCut::kPretoken, "prepare", encoder.work(), &writer, report);
    report.vocab_size = Gpt2Tokenizer::kVocabSize;
    write_gpt2_meta(meta_partial, config.vocab_dir);
  } else {
    CharSetCollector collector(plan.threads);
    run_pass(inputs, config, plan, BlockCut::kCharacter, "prepare (1/2: characters)",
             collector.work(), nullptr, report);
    const CharTokenizer tokenizer(collector.merged().sorted());
    report.vocab_size = tokenizer.vocab_size();
    CHECK(report.vocab_size <= 65536,
          "the corpus has {} distinct characters; token files hold uint16 ids (at most 65536) -- "
          "use tokenizer='gpt2'",
          report.vocab_size);
    run_pass(inputs, config, plan, BlockCut::kCharacter, "prepare (2/2: tokens)",
             char_encode_work(tokenizer), &writer, report);
    tokenizer.save_meta(meta_partial);
  }
  output.stage("streamed");

  const int64_t n = writer.tokens();
  const auto n_train = static_cast<int64_t>(static_cast<double>(n) * (1.0 - config.val_fraction));
  const TokenSplitWriter::Split split = writer.split(n_train, plan.copy_buffer_bytes);
  report.train_tokens = n_train;
  report.val_tokens = n - n_train;
  report.meta_path = (output.dir() / "meta.json").string();
  annotate_meta(meta_partial, report);

  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& [files, split_name, paths] :
       {std::tuple{&split.train, "train", &report.train_files},
        std::tuple{&split.val, "val", &report.val_files}}) {
    const std::vector<std::string> names = output_names(split_name, files->size());
    for (size_t i = 0; i < files->size(); ++i) {
      renames.emplace_back((*files)[i].path, names[i]);
      paths->push_back((output.dir() / names[i]).string());
    }
  }
  renames.emplace_back(meta_partial, "meta.json");
  output.commit(renames);
  report.train_path = report.train_files.front();
  if (!report.val_files.empty()) report.val_path = report.val_files.front();
  report.seconds = timer.seconds();
  return report;
}

}  // namespace nanogpt
