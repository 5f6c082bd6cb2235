// DocumentReader: opening each input file, JSONL line splitting and parsing, whole-file reads for
// Brown tag stripping, and the input-offset bookkeeping for progress.
#include "data/document_reader.h"

#include <nlohmann/json.hpp>
#include <system_error>

#include "core/byte_size.h"
#include "core/check.h"
#include "data/brown.h"
#include "data/documents.h"

namespace nanogpt {

namespace fs = std::filesystem;

bool is_jsonl_path(const fs::path& path) {
  const std::string name = path.filename().string();
  return name.ends_with(".jsonl") || name.ends_with(".jsonl.gz");
}

DocumentReader::DocumentReader(std::vector<fs::path> files, DocumentReaderOptions options)
    : files_(std::move(files)), options_(std::move(options)) {
  for (const auto& f : files_) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    if (!ec) total_bytes_ += static_cast<int64_t>(size);
    if (is_gzip_file(f)) any_gzip_ = true;
  }
}

DocumentReader::~DocumentReader() = default;

int64_t DocumentReader::input_offset() const {
  return done_bytes_ + (stream_ ? stream_->file_offset() : 0);
}

void DocumentReader::close_file() {
  if (!stream_) return;
  std::error_code ec;
  const auto size = fs::file_size(stream_->path(), ec);
  done_bytes_ += ec ? stream_->file_offset() : static_cast<int64_t>(size);
  stream_.reset();
}

void DocumentReader::open_next_file() {
  const fs::path& path = files_[next_file_++];
  stream_ = std::make_unique<InputStream>(path);
  file_doc_given_ = false;
  if (options_.strip_pos_tags) {
    kind_ = Kind::kWhole;
  } else if (is_jsonl_path(path)) {
    kind_ = Kind::kJsonl;
    raw_.clear();
    raw_pos_ = 0;
    raw_eof_ = false;
    line_no_ = 0;
  } else {
    kind_ = Kind::kText;
  }
}

std::string DocumentReader::read_whole_file() {
  std::string bytes;
  while (stream_->read(bytes, options_.chunk_bytes) > 0) {
    CHECK(bytes.size() <= options_.max_whole_bytes,
          "input file '{}' is larger than {}, the most that is read whole (strip_pos_tags reads "
          "each file whole){}",
          stream_->path(), format_byte_size(static_cast<int64_t>(options_.max_whole_bytes)),
          options_.limit_hint);
  }
  return bytes;
}

bool DocumentReader::next_jsonl_document() {
  const std::string& name = stream_->path();
  while (true) {
    size_t eol = raw_.find('\n', raw_pos_);
    while (eol == std::string::npos && !raw_eof_) {
      raw_.erase(0, raw_pos_);
      raw_pos_ = 0;
      CHECK(raw_.size() <= options_.max_whole_bytes,
            "{}:{}: this JSONL line is longer than {}, the most that is read whole (each line is "
            "one document){}",
            name, line_no_ + 1, format_byte_size(static_cast<int64_t>(options_.max_whole_bytes)),
            options_.limit_hint);
      const size_t searched = raw_.size();
      if (stream_->read(raw_, options_.chunk_bytes) == 0) {
        raw_eof_ = true;
        break;
      }
      eol = raw_.find('\n', searched);
    }
    if (raw_pos_ >= raw_.size() && eol == std::string::npos) return false;
    if (eol == std::string::npos) eol = raw_.size();
    std::string_view line(raw_.data() + raw_pos_, eol - raw_pos_);
    raw_pos_ = eol + 1;
    ++line_no_;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("{}:{}: not valid JSON ({}); a .jsonl file holds one JSON object per line", name,
           line_no_, e.what());
    }
    CHECK(j.is_object() && j.contains("text") && j["text"].is_string(),
          "{}:{}: expected a JSON object with a string field \"text\", found {}", name, line_no_,
          j.dump().substr(0, 80));
    doc_ = std::move(j["text"].get_ref<std::string&>());
    if (options_.strip_pos_tags) doc_ = strip_brown_tags(doc_);
    origin_ = fmt::format("{}:{}", name, line_no_);
    return true;
  }
}

bool DocumentReader::next_document() {
  doc_.clear();
  doc_pos_ = 0;
  doc_streams_ = false;
  while (true) {
    if (!stream_) {
      if (next_file_ == files_.size()) return false;
      open_next_file();
    }
    if (kind_ == Kind::kJsonl) {
      if (next_jsonl_document()) return true;
      close_file();
      continue;
    }
    if (file_doc_given_) {  // a text file is one document
      close_file();
      continue;
    }
    file_doc_given_ = true;
    origin_ = stream_->path();
    if (kind_ == Kind::kWhole) {
      std::string bytes = read_whole_file();
      CHECK(!looks_binary(bytes),
            "input file '{}' looks binary (has a NUL byte in its first 8 KiB); give text, .jsonl "
            "or a directory",
            origin_);
      doc_ = strip_brown_tags(bytes);
      return true;
    }
    // Text: the head is read now to tell binary from text, the rest streams on demand.
    while (doc_.size() < kBinaryProbeBytes &&
           stream_->read(doc_, std::max(options_.chunk_bytes, kBinaryProbeBytes)) > 0) {
    }
    CHECK(!looks_binary(doc_),
          "input file '{}' looks binary (has a NUL byte in its first 8 KiB); give text, .jsonl "
          "or a directory",
          origin_);
    doc_streams_ = true;
    return true;
  }
}

size_t DocumentReader::read(std::string& out, size_t max_bytes) {
  if (doc_pos_ < doc_.size()) {
    const size_t n = std::min(max_bytes, doc_.size() - doc_pos_);
    out.append(doc_, doc_pos_, n);
    doc_pos_ += n;
    if (doc_pos_ == doc_.size()) {
      doc_.clear();
      doc_pos_ = 0;
    }
    return n;
  }
  if (!doc_streams_ || max_bytes == 0) return 0;
  const size_t n = stream_->read(out, max_bytes);
  if (n == 0) doc_streams_ = false;
  return n;
}

}  // namespace nanogpt
