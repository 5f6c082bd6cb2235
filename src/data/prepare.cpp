// run_prepare: reading documents, parallel encoding in ordered pieces, split, writing outputs.
#include "data/prepare.h"

#include <omp.h>

#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/timer.h"
#include "data/documents.h"
#include "data/progress.h"
#include "data/token_writer.h"
#include "tokenizer/char_tokenizer.h"
#include "tokenizer/gpt2_tokenizer.h"
#include "tokenizer/pretokenizer.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

constexpr size_t kPieceBytes = size_t{1} << 20;  // unit of parallel work

// A byte range of one document's text, encoded independently of the others.
struct Piece {
  size_t doc;
  size_t begin;
  size_t end;
};

// Encodes every piece on `threads` threads (dynamic order, results stored by piece index, so the
// output does not depend on the thread count). encode(thread_state, text, out) appends ids.
template <typename MakeState, typename Encode>
std::vector<std::vector<TokenId>> encode_pieces(const std::vector<Document>& docs,
                                                const std::vector<Piece>& pieces, int threads,
                                                Progress& progress, MakeState&& make_state,
                                                Encode&& encode) {
  std::vector<std::vector<TokenId>> ids(pieces.size());
  std::exception_ptr error;
  std::mutex error_mutex;
  const int64_t n = static_cast<int64_t>(pieces.size());
#pragma omp parallel num_threads(threads)
  {
    auto state = make_state();
#pragma omp for schedule(dynamic, 1)
    for (int64_t i = 0; i < n; ++i) {
      try {
        const Piece& p = pieces[i];
        std::string_view text(docs[p.doc].text.data() + p.begin, p.end - p.begin);
        encode(state, text, ids[i]);
        progress.add(static_cast<int64_t>(p.end - p.begin));
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
  return ids;
}

// char: the whole corpus as one document; pieces cut at UTF-8 character starts.
std::vector<uint16_t> encode_char(std::vector<Document>& docs, int threads, Progress& progress,
                                  int& vocab_size, const fs::path& meta_path) {
  std::string corpus;
  size_t total = 0;
  for (const auto& d : docs) total += d.text.size() + 1;
  corpus.reserve(total);
  for (size_t i = 0; i < docs.size(); ++i) {
    corpus += docs[i].text;
    if (i + 1 < docs.size() && !corpus.empty() && corpus.back() != '\n') corpus += '\n';
    std::string().swap(docs[i].text);
  }
  CharTokenizer tok = CharTokenizer::build(corpus);
  vocab_size = tok.vocab_size();
  CHECK(vocab_size <= 65536,
        "the corpus has {} distinct characters; token files hold uint16 ids (at most 65536) -- "
        "use tokenizer='gpt2'",
        vocab_size);
  std::vector<Document> whole(1);
  whole[0].text = std::move(corpus);
  const std::string& text = whole[0].text;
  std::vector<Piece> pieces;
  for (size_t b = 0; b < text.size();) {
    size_t e = std::min(text.size(), b + kPieceBytes);
    while (e < text.size() && (static_cast<unsigned char>(text[e]) & 0xC0) == 0x80) ++e;
    pieces.push_back({0, b, e});
    b = e;
  }
  auto ids = encode_pieces(
      whole, pieces, threads, progress, [] { return 0; },
      [&](int&, std::string_view t, std::vector<TokenId>& out) { out = tok.encode(t); });
  std::vector<uint16_t> tokens;
  tokens.reserve(text.size());
  for (const auto& v : ids) {
    for (TokenId id : v) tokens.push_back(static_cast<uint16_t>(id));
  }
  tok.save_meta(meta_path);
  return tokens;
}

std::vector<uint16_t> encode_gpt2(const std::vector<Document>& docs, const PrepareConfig& config,
                                  int threads, Progress& progress, const fs::path& meta_path) {
  Gpt2Tokenizer tok(config.vocab_dir);
  std::vector<Piece> pieces;
  std::vector<size_t> first_piece(docs.size() + 1);
  for (size_t d = 0; d < docs.size(); ++d) {
    first_piece[d] = pieces.size();
    const std::string& text = docs[d].text;
    const int parts = static_cast<int>(text.size() / kPieceBytes + 1);
    std::vector<size_t> cuts =
        parts > 1 ? split_points(text, parts) : std::vector<size_t>{0, text.size()};
    for (size_t k = 0; k + 1 < cuts.size(); ++k) pieces.push_back({d, cuts[k], cuts[k + 1]});
  }
  first_piece[docs.size()] = pieces.size();
  auto ids = encode_pieces(
      docs, pieces, threads, progress, [&] { return Gpt2Tokenizer::Session(tok); },
      [](Gpt2Tokenizer::Session& s, std::string_view t, std::vector<TokenId>& out) {
        s.encode(t, out);
      });
  const bool eot_first = config.format == "llmc";
  const auto eot = static_cast<uint16_t>(Gpt2Tokenizer::kEot);
  size_t total = docs.size();
  for (const auto& v : ids) total += v.size();
  std::vector<uint16_t> tokens;
  tokens.reserve(total);
  for (size_t d = 0; d < docs.size(); ++d) {
    if (eot_first) tokens.push_back(eot);
    for (size_t p = first_piece[d]; p < first_piece[d + 1]; ++p) {
      for (TokenId id : ids[p]) tokens.push_back(static_cast<uint16_t>(id));
    }
    if (!eot_first) tokens.push_back(eot);
  }
  write_gpt2_meta(meta_path, config.vocab_dir);
  return tokens;
}

// Adds the dataset facts to the meta.json the tokenizer wrote (its readers ignore extra keys).
void annotate_meta(const fs::path& meta_path, const PrepareReport& r) {
  nlohmann::ordered_json meta;
  {
    std::ifstream in(meta_path, std::ios::binary);
    meta = nlohmann::ordered_json::parse(in);
  }
  meta["format"] = r.format;
  meta["train_tokens"] = r.train_tokens;
  meta["val_tokens"] = r.val_tokens;
  meta["documents"] = r.documents;
  std::ofstream out(meta_path, std::ios::binary);
  out << meta.dump(1) << '\n';
  CHECK(out.good(), "error writing '{}' (disk full?)", meta_path.string());
}

}  // namespace

std::string PrepareReport::summary() const {
  std::string s = fmt::format(
      "prepared {} document(s) from {} file(s), {:.1f} MB of text, tokenizer {} (vocab {}), "
      "format {}, {} thread(s), {:.2f} s ({:.1f} MB/s)\n",
      documents, files, input_bytes / 1e6, tokenizer, vocab_size, format, threads, seconds,
      seconds > 0 ? input_bytes / 1e6 / seconds : 0.0);
  s += fmt::format("  {}: {} tokens\n", train_path, train_tokens);
  if (!val_path.empty()) {
    s += fmt::format("  {}: {} tokens\n", val_path, val_tokens);
  } else {
    s += "  (no val.bin: val_fraction gave 0 tokens)\n";
  }
  s += fmt::format("  {}\n", meta_path);
  if (!skipped.empty()) s += fmt::format("  skipped {} non-text file(s)\n", skipped.size());
  return s;
}

PrepareReport run_prepare(const PrepareConfig& config) {
  config.validate();
  Timer timer;
  PrepareReport report;
  report.tokenizer = config.tokenizer;
  report.format = config.format;
  report.threads = config.threads > 0 ? config.threads : omp_get_max_threads();

  InputFiles inputs = expand_inputs(config.input, config.strip_pos_tags);
  for (const auto& p : inputs.skipped) report.skipped.push_back(p.string());
  std::vector<Document> docs;
  for (const auto& f : inputs.files) read_documents(f, config.strip_pos_tags, docs);
  report.files = static_cast<int64_t>(inputs.files.size());
  report.documents = static_cast<int64_t>(docs.size());
  for (const auto& d : docs) report.input_bytes += static_cast<int64_t>(d.text.size());

  const fs::path out_dir(config.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  CHECK(fs::is_directory(out_dir), "out_dir '{}' cannot be created: {}", config.out_dir,
        ec.message());
  const fs::path meta_path = out_dir / "meta.json";

  Progress progress("prepare", report.input_bytes,
                    config.progress && Progress::stderr_is_terminal());
  std::vector<uint16_t> tokens;
  if (config.tokenizer == "char") {
    tokens = encode_char(docs, report.threads, progress, report.vocab_size, meta_path);
  } else {
    tokens = encode_gpt2(docs, config, report.threads, progress, meta_path);
    report.vocab_size = Gpt2Tokenizer::kVocabSize;
  }
  progress.finish();

  const auto n = static_cast<int64_t>(tokens.size());
  const auto n_train = static_cast<int64_t>(static_cast<double>(n) * (1.0 - config.val_fraction));
  const TokenFormat format = parse_token_format(config.format);
  report.train_tokens = n_train;
  report.val_tokens = n - n_train;
  report.train_path = (out_dir / "train.bin").string();
  write_token_file(report.train_path, {tokens.data(), static_cast<size_t>(n_train)}, format);
  const std::string val_path = (out_dir / "val.bin").string();
  if (report.val_tokens > 0) {
    report.val_path = val_path;
    write_token_file(val_path, {tokens.data() + n_train, static_cast<size_t>(n - n_train)}, format);
  } else {
    fs::remove(val_path, ec);  // a stale val.bin from an earlier run would not match
  }
  report.meta_path = meta_path.string();
  annotate_meta(meta_path, report);
  report.seconds = timer.seconds();
  return report;
}

}  // namespace nanogpt
