// CharTokenizer: building the vocabulary, encode/decode, meta.json save and validated load.
#include "tokenizer/char_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "tokenizer/utf8.h"

namespace nanogpt {
namespace {

constexpr TokenId kNoId = ~TokenId{0};

// The single code point of s, or nullopt if s is not exactly one valid UTF-8 character.
std::optional<char32_t> single_code_point(std::string_view s) {
  if (s.empty()) return std::nullopt;
  const Utf8Char u = decode_utf8(s, 0);
  if (!u.valid || u.len != s.size()) return std::nullopt;
  return u.cp;
}

}  // namespace

CharTokenizer::CharTokenizer(std::vector<char32_t> chars) : chars_(std::move(chars)) {
  std::fill(std::begin(ascii_), std::end(ascii_), kNoId);
  for (size_t id = 0; id < chars_.size(); ++id) {
    const char32_t cp = chars_[id];
    CHECK(cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF),
          "char vocab: id {} is not a Unicode scalar value (0x{:X})", id,
          static_cast<uint32_t>(cp));
    const bool fresh = cp < 128 ? ascii_[cp] == kNoId : !other_.contains(cp);
    CHECK(fresh, "char vocab: {} appears twice (again at id {})", describe_code_point(cp), id);
    if (cp < 128) {
      ascii_[cp] = static_cast<TokenId>(id);
    } else {
      other_.emplace(cp, static_cast<TokenId>(id));
    }
  }
}

size_t CodePointSet::add(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80) {
      bits_[c / 64] |= uint64_t{1} << (c % 64);
      ++pos;
      continue;
    }
    const Utf8Char u = decode_utf8(text, pos);
    if (!u.valid) return pos;
    bits_[u.cp / 64] |= uint64_t{1} << (u.cp % 64);
    pos += u.len;
  }
  return text.size();
}

void CodePointSet::merge(const CodePointSet& other) {
  for (size_t i = 0; i < bits_.size(); ++i) bits_[i] |= other.bits_[i];
}

size_t CodePointSet::size() const {
  size_t n = 0;
  for (uint64_t w : bits_) n += static_cast<size_t>(__builtin_popcountll(w));
  return n;
}

std::vector<char32_t> CodePointSet::sorted() const {
  std::vector<char32_t> out;
  for (size_t i = 0; i < bits_.size(); ++i) {
    for (uint64_t w = bits_[i]; w != 0; w &= w - 1) {
      out.push_back(static_cast<char32_t>(i * 64 + static_cast<size_t>(__builtin_ctzll(w))));
    }
  }
  return out;
}

CharTokenizer CharTokenizer::build(std::string_view text) {
  CodePointSet set;
  const size_t bad = set.add(text);
  CHECK(bad == text.size(),
        "char tokenizer: invalid UTF-8 byte 0x{:02X} at byte offset {}; the corpus must "
        "be UTF-8 text",
        static_cast<unsigned>(static_cast<unsigned char>(text[bad])), bad);
  return CharTokenizer(set.sorted());
}

std::vector<TokenId> CharTokenizer::encode(std::string_view text) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c < 0x80 && ascii_[c] != kNoId) {
      ids.push_back(ascii_[c]);
      ++pos;
      continue;
    }
    const Utf8Char u = decode_utf8(text, pos);
    CHECK(u.valid, "char tokenizer: invalid UTF-8 byte 0x{:02X} at byte offset {}",
          static_cast<unsigned>(c), pos);
    TokenId id = kNoId;
    if (u.cp >= 128) {
      auto it = other_.find(u.cp);
      if (it != other_.end()) id = it->second;
    }
    CHECK(id != kNoId,
          "char tokenizer: character {} at byte offset {} is not in the vocabulary of {} "
          "characters; encode only text whose characters were in the corpus the vocab was built "
          "from",
          describe_code_point(u.cp), pos, chars_.size());
    ids.push_back(id);
    pos += u.len;
  }
  return ids;
}

std::string CharTokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    CHECK(ids[i] < chars_.size(),
          "char tokenizer decode: id {} at position {} is not below the vocab size {}", ids[i], i,
          chars_.size());
    append_utf8(out, chars_[ids[i]]);
  }
  return out;
}

void CharTokenizer::save_meta(const std::filesystem::path& path) const {
  nlohmann::ordered_json meta;
  meta["vocab_size"] = chars_.size();
  nlohmann::ordered_json itos = nlohmann::ordered_json::object();
  nlohmann::ordered_json stoi = nlohmann::ordered_json::object();
  for (size_t id = 0; id < chars_.size(); ++id) {
    std::string s;
    append_utf8(s, chars_[id]);
    itos[std::to_string(id)] = s;
    stoi[s] = id;
  }
  meta["itos"] = std::move(itos);
  meta["stoi"] = std::move(stoi);
  meta["tokenizer"] = "char";
  std::ofstream out(path, std::ios::binary);
  CHECK(out.good(), "cannot write {}; check that the directory exists and is writable",
        path.string());
  out << meta.dump(1) << '\n';
  CHECK(out.good(), "error writing {} (disk full?)", path.string());
}

CharTokenizer CharTokenizer::load_meta(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(), "cannot open {}: a char dataset needs the meta.json written by prepare", file);
  nlohmann::json meta;
  try {
    meta = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON ({}); re-run prepare to rewrite it", file, e.what());
  }
  CHECK(meta.is_object(), "{}: expected a JSON object with vocab_size, itos and stoi", file);
  if (meta.contains("tokenizer")) {
    CHECK(meta["tokenizer"] == "char", "{}: \"tokenizer\" is {}, expected \"char\"", file,
          meta["tokenizer"].dump());
  }
  for (const char* key : {"vocab_size", "itos", "stoi"}) {
    CHECK(meta.contains(key), "{}: missing key \"{}\" (expected vocab_size, itos, stoi)", file,
          key);
  }
  CHECK(meta["vocab_size"].is_number_unsigned() && meta["vocab_size"].get<uint64_t>() > 0,
        "{}: vocab_size must be a positive integer, found {}", file, meta["vocab_size"].dump());
  const auto n = meta["vocab_size"].get<size_t>();
  const auto& itos = meta["itos"];
  const auto& stoi = meta["stoi"];
  CHECK(itos.is_object() && itos.size() == n,
        "{}: itos must be an object with vocab_size = {} entries, found {}", file, n,
        itos.is_object() ? std::to_string(itos.size()) : itos.type_name());
  CHECK(stoi.is_object() && stoi.size() == n,
        "{}: stoi must be an object with vocab_size = {} entries, found {}", file, n,
        stoi.is_object() ? std::to_string(stoi.size()) : stoi.type_name());
  std::vector<char32_t> chars(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string key = std::to_string(id);
    CHECK(itos.contains(key), "{}: itos has no entry \"{}\" (ids must be 0..{})", file, key, n - 1);
    CHECK(itos[key].is_string(), "{}: itos[\"{}\"] must be a string, found {}", file, key,
          itos[key].dump());
    const std::string s = itos[key].get<std::string>();
    auto cp = single_code_point(s);
    CHECK(cp.has_value(), "{}: itos[\"{}\"] = {} must be exactly one character", file, key,
          itos[key].dump());
    chars[id] = *cp;
    CHECK(stoi.contains(s) && stoi[s].is_number_unsigned() && stoi[s].get<uint64_t>() == id,
          "{}: stoi[{}] should be {} to match itos, found {}", file, itos[key].dump(), id,
          stoi.contains(s) ? stoi[s].dump() : "nothing");
  }
  try {
    return CharTokenizer(std::move(chars));
  } catch (const Error& e) {
    fail("{}: {}", file, e.what());
  }
}

}  // namespace nanogpt
