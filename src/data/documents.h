// Input documents for `prepare`: expands the comma-separated `input` list (text files, JSONL
// files, directories walked recursively in sorted order) and reads each document's text.
// One text file = one document; one JSONL line = one document (its "text" field).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace nanogpt {

struct Document {
  std::string origin;  // "path" or "path:line" (for JSONL), for messages
  std::string text;
};

struct InputFiles {
  std::vector<std::filesystem::path> files;    // in reading order
  std::vector<std::filesystem::path> skipped;  // found in directories but not read (see below)
};

// Splits `inputs` at commas (surrounding spaces trimmed) and expands each entry: a file is taken
// as is; a directory contributes every regular file below it, recursively, sorted by path (byte
// order of each path component), except hidden entries (name starting with '.'), and -- when
// `brown_only` -- anything that is not a Brown corpus text file (README, CONTENTS, ...). Files
// found in directories whose first 8 KiB contain a NUL byte are treated as binary and skipped. A
// missing entry is an error.
InputFiles expand_inputs(const std::string& inputs, bool brown_only);

// Reads the documents of one file: a `.jsonl` file gives one document per non-empty line (the
// string field "text"; errors name file:line), any other file one document (its bytes; an
// explicitly named binary file is an error). strip_pos_tags applies strip_brown_tags to each.
void read_documents(const std::filesystem::path& file, bool strip_pos_tags,
                    std::vector<Document>& out);

// True if the first 8 KiB of `bytes` hold a NUL byte (how we tell binary from text).
bool looks_binary(std::string_view bytes);

}  // namespace nanogpt
