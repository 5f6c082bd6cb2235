// Expanding prepare's inputs into files (directories sorted, hidden and binary files skipped).
#include "data/documents.h"

#include <algorithm>

#include "core/check.h"
#include "data/brown.h"
#include "data/input_stream.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

// The first n bytes of a file, decompressed if it is gzip; empty if it cannot be read.
std::string head_bytes(const fs::path& path, size_t n) {
  try {
    InputStream in(path);
    std::string bytes;
    while (bytes.size() < n && in.read(bytes, n - bytes.size()) > 0) {
    }
    return bytes;
  } catch (const Error&) {
    return {};  // (a file we cannot read fails later with its own message when it is read)
  }
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

bool hidden(const fs::path& p) {
  std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

}  // namespace

bool looks_binary(std::string_view bytes) {
  return bytes.substr(0, kBinaryProbeBytes).find('\0') != std::string_view::npos;
}

InputFiles expand_inputs(const std::string& inputs, bool brown_only) {
  InputFiles result;
  size_t pos = 0;
  while (pos <= inputs.size()) {
    size_t comma = inputs.find(',', pos);
    if (comma == std::string::npos) comma = inputs.size();
    std::string entry = trim(inputs.substr(pos, comma - pos));
    pos = comma + 1;
    if (entry.empty()) continue;
    fs::path p(entry);
    std::error_code ec;
    auto status = fs::status(p, ec);
    CHECK(fs::exists(status),
          "input '{}' does not exist (input is a comma-separated list of text files, .jsonl "
          "files and directories)",
          entry);
    if (!fs::is_directory(status)) {
      result.files.push_back(p);
      continue;
    }
    std::vector<fs::path> found;
    auto it = fs::recursive_directory_iterator(p, fs::directory_options::follow_directory_symlink);
    for (auto end = fs::recursive_directory_iterator(); it != end; ++it) {
      if (hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        result.skipped.push_back(it->path());
        continue;
      }
      if (!it->is_regular_file()) continue;
      if ((brown_only && !is_brown_text_file(it->path())) ||
          looks_binary(head_bytes(it->path(), kBinaryProbeBytes))) {
        result.skipped.push_back(it->path());
        continue;
      }
      found.push_back(it->path());
    }
    std::sort(found.begin(), found.end());
    result.files.insert(result.files.end(), found.begin(), found.end());
  }
  CHECK(!result.files.empty(), "input '{}' names no readable text files{}", inputs,
        result.skipped.empty() ? "" : fmt::format(" ({} skipped)", result.skipped.size()));
  return result;
}

}  // namespace nanogpt
