// TokenSplitWriter: prepare's token output, written as the tokens come. The stream goes into
// segment files under partial names (a segment = one future output file of at most
// max_file_tokens tokens, with llm.c's 1024-byte header reserved); split(n_train) then cuts it into
// the train files and the val files: the segment holding the cut is truncated at it and its tail
// copied into the first val file through a bounded buffer; llm.c headers get their counts. Write
// errors name the file and ask whether the disk is full; partial files go with the PrepareOutput.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/prepare_output.h"
#include "data/token_file.h"

namespace nanogpt {

class TokenSplitWriter {
 public:
  struct File {
    std::string path;  // a partial file of the PrepareOutput
    int64_t tokens = 0;
  };
  struct Split {
    std::vector<File> train;  // never empty (an empty train file when n_train is 0)
    std::vector<File> val;    // empty when n_train is the whole stream
  };

  // format: kNanogpt (headerless) or kLlmc; max_file_tokens >= 1 (llmc: <= INT32_MAX).
  TokenSplitWriter(PrepareOutput& output, TokenFormat format, int64_t max_file_tokens);
  ~TokenSplitWriter();
  TokenSplitWriter(const TokenSplitWriter&) = delete;
  TokenSplitWriter& operator=(const TokenSplitWriter&) = delete;

  void append(std::span<const uint16_t> tokens);
  int64_t tokens() const { return total_; }

  // Cuts the stream after its first n_train tokens (0 <= n_train <= tokens()), copying with at
  // most buffer_bytes of memory, writes the headers and fsyncs every file.
  Split split(int64_t n_train, size_t buffer_bytes);

 private:
  void open_segment();
  void close_current();
  File new_file(const std::string& name, int& fd);
  int64_t header_bytes() const { return format_ == TokenFormat::kLlmc ? kLlmcHeaderBytes : 0; }

  PrepareOutput& output_;
  TokenFormat format_;
  int64_t max_file_tokens_;
  std::vector<File> segments_;
  int fd_ = -1;  // the last segment, open for appending
  int64_t total_ = 0;
};

}  // namespace nanogpt
