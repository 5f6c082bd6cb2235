// out_dir/results.csv of a sweep: one row per finished (or failed) run, appended as runs finish,
// so an interrupted sweep keeps every row it wrote. Plain RFC 4180 CSV with a header line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nanogpt {

// The columns, in order.
const std::vector<std::string>& results_columns();

// One row: column name -> text ("" = empty cell). Columns not in results_columns() are an error.
using ResultRow = std::map<std::string, std::string>;

// Rows of an existing results.csv (empty if there is none). Throws nanogpt::Error naming the file
// and line for a malformed file or a header other than results_columns().
std::vector<ResultRow> read_results_csv(const std::string& path);

// Appends a row (writing the header first if the file is new) and flushes it to disk.
void append_results_row(const std::string& path, const ResultRow& row);

// CSV quoting of one cell.
std::string csv_cell(const std::string& text);
// Splits one CSV record (no embedded newlines: our writer never puts them in cells).
std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace nanogpt
