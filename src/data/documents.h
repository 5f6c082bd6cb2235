// Input files for `prepare`: expands the comma-separated `input` list (text files, JSONL files,
// gzip-compressed versions of either, directories walked recursively in sorted order) into the
// files to read (DocumentReader reads their documents) and tells binary files from text.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace nanogpt {

inline constexpr size_t kBinaryProbeBytes = 8192;

struct InputFiles {
  std::vector<std::filesystem::path> files;    // in reading order
  std::vector<std::filesystem::path> skipped;  // found in directories but not read (see below)
};

// Splits `inputs` at commas (surrounding spaces trimmed) and expands each entry: a file is taken
// as is; a directory contributes every regular file below it, recursively, sorted by path (byte
// order of each path component), except hidden entries (name starting with '.'), and -- when
// `brown_only` -- anything that is not a Brown corpus text file (README, CONTENTS, ...). Files
// found in directories whose first 8 KiB (decompressed, for gzip) contain a NUL byte are treated
// as binary and skipped. A missing entry is an error.
InputFiles expand_inputs(const std::string& inputs, bool brown_only);

// True if the first 8 KiB of `bytes` hold a NUL byte (how we tell binary from text).
bool looks_binary(std::string_view bytes);

}  // namespace nanogpt
