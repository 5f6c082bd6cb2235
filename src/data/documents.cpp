// Expanding prepare's inputs into files and reading documents (text, JSONL, Brown-tagged).
#include "data/documents.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "data/brown.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(), "cannot open input file '{}' for reading", path.string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(!in.bad(), "error reading input file '{}'", path.string());
  return bytes;
}

std::string head_bytes(const fs::path& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(n, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(n));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
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
  return bytes.substr(0, 8192).find('\0') != std::string_view::npos;
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
          looks_binary(head_bytes(it->path(), 8192))) {
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

void read_documents(const fs::path& file, bool strip_pos_tags, std::vector<Document>& out) {
  std::string bytes = read_file_bytes(file);
  const std::string name = file.string();
  if (file.extension() != ".jsonl") {
    CHECK(!looks_binary(bytes),
          "input file '{}' looks binary (has a NUL byte in its first 8 KiB); give text, .jsonl "
          "or a directory",
          name);
    out.push_back({name, strip_pos_tags ? strip_brown_tags(bytes) : std::move(bytes)});
    return;
  }
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < bytes.size()) {
    size_t eol = bytes.find('\n', pos);
    if (eol == std::string::npos) eol = bytes.size();
    std::string_view line(bytes.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      fail("{}:{}: not valid JSON ({}); a .jsonl file holds one JSON object per line", name,
           line_no, e.what());
    }
    CHECK(j.is_object() && j.contains("text") && j["text"].is_string(),
          "{}:{}: expected a JSON object with a string field \"text\", found {}", name, line_no,
          j.dump().substr(0, 80));
    std::string text = j["text"].get<std::string>();
    out.push_back({fmt::format("{}:{}", name, line_no),
                   strip_pos_tags ? strip_brown_tags(text) : std::move(text)});
  }
}

}  // namespace nanogpt
