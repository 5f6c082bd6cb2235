// Brown corpus tag stripping and file filter.
#include "data/brown.h"

namespace nanogpt {

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

}  // namespace

std::string strip_brown_tags(std::string_view text) {
  std::string out;
  out.reserve(text.size() / 2);
  bool pending_break = false;  // blank line(s) seen since the last sentence
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    bool first = true;
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && is_blank(line[i])) ++i;
      size_t end = i;
      while (end < line.size() && !is_blank(line[end])) ++end;
      if (end == i) break;
      std::string_view token = line.substr(i, end - i);
      size_t slash = token.rfind('/');
      if (slash != std::string_view::npos && slash > 0) token = token.substr(0, slash);
      if (first) {
        if (pending_break && !out.empty()) out += '\n';
        pending_break = false;
        first = false;
      } else {
        out += ' ';
      }
      out += token;
      i = end;
    }
    if (first) {
      pending_break = true;  // blank line
    } else {
      out += '\n';
    }
  }
  return out;
}

bool is_brown_text_file(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return name.size() == 4 && name[0] == 'c' && name[1] >= 'a' && name[1] <= 'r' && name[2] >= '0' &&
         name[2] <= '9' && name[3] >= '0' && name[3] <= '9';
}

}  // namespace nanogpt
