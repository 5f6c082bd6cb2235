// DocumentReader: the documents of prepare's input files in order, read as streams so no file is
// ever held whole. A text file is one document, read in chunks; a .jsonl (or .jsonl.gz) file holds
// one document per non-empty line (the string field "text"; a line is read whole, up to a limit);
// gzip is decompressed on the fly (InputStream). With strip_pos_tags each file (the Brown corpus's
// small files) is read whole, up to the same limit, and its word/tag tokens become words.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/input_stream.h"

namespace nanogpt {

struct DocumentReaderOptions {
  bool strip_pos_tags = false;
  size_t chunk_bytes = size_t{1} << 20;      // read size of text files and JSONL
  size_t max_whole_bytes = size_t{1} << 30;  // longest JSONL line / Brown file read whole
  std::string limit_hint;  // appended to the error when a line or file passes max_whole_bytes
};

class DocumentReader {
 public:
  DocumentReader(std::vector<std::filesystem::path> files, DocumentReaderOptions options);
  ~DocumentReader();
  DocumentReader(const DocumentReader&) = delete;
  DocumentReader& operator=(const DocumentReader&) = delete;

  // Moves to the next document (skipping the rest of the current one); false when none is left.
  // Throws nanogpt::Error naming the file (and line) for unreadable, binary or malformed input.
  bool next_document();
  // "path" or, for JSONL, "path:line" (1-based) of the current document.
  const std::string& origin() const { return origin_; }
  // Appends up to max_bytes of the current document's text to out; returns how many, 0 at its end.
  size_t read(std::string& out, size_t max_bytes);

  // Bytes of the input files consumed so far (compressed bytes for gzip) and their total size:
  // progress that needs no decompressed size up front.
  int64_t input_offset() const;
  int64_t input_total() const { return total_bytes_; }
  bool any_gzip() const { return any_gzip_; }

 private:
  enum class Kind { kText, kJsonl, kWhole };
  void open_next_file();
  void close_file();
  bool next_jsonl_document();
  std::string read_whole_file();

  std::vector<std::filesystem::path> files_;
  DocumentReaderOptions options_;
  size_t next_file_ = 0;
  std::unique_ptr<InputStream> stream_;  // the open file, if any
  Kind kind_ = Kind::kText;
  bool file_doc_given_ = false;  // text / whole file: its one document has been started
  std::string origin_;
  std::string doc_;     // the current document's text read ahead (all of it for JSONL / whole)
  size_t doc_pos_ = 0;  // bytes of doc_ already handed out
  bool doc_streams_ = false;  // the rest of the document comes from stream_ (text files)
  std::string raw_;           // JSONL bytes read but not yet split into lines
  size_t raw_pos_ = 0;
  bool raw_eof_ = false;
  int64_t line_no_ = 0;
  int64_t done_bytes_ = 0;  // sizes of the files already closed
  int64_t total_bytes_ = 0;
  bool any_gzip_ = false;
};

// True for the names of JSONL inputs: *.jsonl and *.jsonl.gz.
bool is_jsonl_path(const std::filesystem::path& path);

}  // namespace nanogpt
