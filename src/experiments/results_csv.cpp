// Reading and appending results.csv.
#include "experiments/results_csv.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"

namespace nanogpt {

const std::vector<std::string>& results_columns() {
  static const std::vector<std::string> columns = {
      "name",        "model",          "optim",          "seed",          "status",
      "params",      "iters",          "tokens",         "wall_s",        "ms_per_iter",
      "tokens_per_s", "mfu",           "peak_tracked_bytes", "peak_rss_bytes", "train_loss",
      "val_loss",    "target_loss",    "target_iter",    "target_s",      "error"};
  return columns;
}

std::string csv_cell(const std::string& text) {
  std::string clean;
  for (char c : text) clean += (c == '\n' || c == '\r') ? ' ' : c;
  if (clean.find_first_of(",\"") == std::string::npos) return clean;
  std::string out = "\"";
  for (char c : clean) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

std::vector<ResultRow> read_results_csv(const std::string& path) {
  std::vector<ResultRow> rows;
  std::ifstream in(path);
  if (!in.good()) return rows;
  std::string line;
  int64_t line_no = 0;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    std::vector<std::string> cells = split_csv_line(line);
    if (header.empty()) {
      header = cells;
      CHECK(header == results_columns(),
            "{}: the header is not this version's results columns; move the file away (or use "
            "another out_dir) to start a new sweep",
            path);
      continue;
    }
    if (cells.size() != header.size()) {
      // A row torn by a crash mid-write is the last line: skip it (the run is redone).
      continue;
    }
    ResultRow row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

void append_results_row(const std::string& path, const ResultRow& row) {
  for (const auto& [key, value] : row) {
    bool known = false;
    for (const auto& c : results_columns()) known |= c == key;
    CHECK(known, "internal: results.csv has no column '{}'", key);
  }
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::string text;
  if (fresh) {
    for (size_t i = 0; i < results_columns().size(); ++i) {
      text += (i ? "," : "") + results_columns()[i];
    }
    text += "\n";
  }
  for (size_t i = 0; i < results_columns().size(); ++i) {
    auto it = row.find(results_columns()[i]);
    text += (i ? "," : "") + csv_cell(it == row.end() ? "" : it->second);
  }
  text += "\n";
  // One write() of the whole row, then fsync: a crash leaves the row whole or absent.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  CHECK(fd >= 0, "cannot open '{}' to append a result (is the directory writable?)", path);
  const ssize_t n = ::write(fd, text.data(), text.size());
  ::fsync(fd);
  ::close(fd);
  CHECK(n == static_cast<ssize_t>(text.size()), "short write appending to '{}'", path);
}

}  // namespace nanogpt
