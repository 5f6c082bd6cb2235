// SyntheticText: splitmix64 streams, words from hashed vocabulary ids, sentence and paragraph
// shapes; write_synthetic_corpus: text or JSONL files of an exact size.
#include "data/synthetic_text.h"

#include <cmath>
#include <cstdio>

#include "core/check.h"

namespace nanogpt {

namespace {

constexpr double kLogVocab = 15.249237972318797;  // ln(4194304): ranks 1 .. 4M
// Letters by rough English frequency: 64 entries, one drawn per 6 bits of a hash.
constexpr char kLetters[] = "eeeeeeetttttaaaaaooooiiiinnnnsssshhhrrrdddllcuummwfgypbvkjxqzeta";
// Word lengths 1..12, likelier around 3-5 (16 entries, 4 bits).
constexpr int kLengths[] = {1, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 6, 6, 7, 8, 10};

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Letters of a word from a hash stream (h is advanced); a capital first letter if asked.
void append_letters(std::string& out, uint64_t h, bool capital) {
  int len = kLengths[h & 15];
  h >>= 4;
  if ((h & 7) == 0) len += 3;  // some longer words
  h >>= 3;
  int bits = 57;
  for (int i = 0; i < len; ++i) {
    if (bits < 6) {
      h = mix(h);
      bits = 64;
    }
    char c = kLetters[h & 63];
    h >>= 6;
    bits -= 6;
    if (i == 0 && capital) c = static_cast<char>(c - 'a' + 'A');
    out += c;
  }
}

}  // namespace

SyntheticText::SyntheticText(uint64_t seed) : seed_(mix(seed)), state_(seed) {}

uint64_t SyntheticText::next() {
  state_ += 0x9E3779B97F4A7C15ull;
  return mix(state_);
}

void SyntheticText::append_word(std::string& out, bool capital) {
  const uint64_t r = next();
  const unsigned kind = r % 100;
  if (kind < 3) {  // a number
    out += std::to_string((r >> 8) % (kind == 0 ? 10000 : 100));
  } else if (kind < 6) {  // a fresh random word, never seen before in all likelihood
    append_letters(out, next(), capital);
  } else {  // a vocabulary word, rank ~ Zipf
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    const auto rank = static_cast<uint64_t>(std::exp(u * kLogVocab));
    append_letters(out, mix(rank ^ seed_), capital);
  }
}

void SyntheticText::append_sentence(std::string& out) {
  const uint64_t r = next();
  const int words = 6 + static_cast<int>(r % 20);
  for (int w = 0; w < words; ++w) {
    if (w > 0) out += ' ';
    append_word(out, w == 0);
    if (w + 1 < words && (next() % 100) < 7) out += ',';
  }
  const unsigned end = (r >> 16) % 20;
  out += end == 0 ? '?' : end == 1 ? '!' : '.';
  if (--sentences_left_in_paragraph_ <= 0) {
    out += "\n\n";
    sentences_left_in_paragraph_ = 2 + static_cast<int>((r >> 24) % 8);
  } else {
    out += ((r >> 32) % 8 == 0) ? '\n' : ' ';
  }
}

void SyntheticText::append(std::string& out, size_t bytes) {
  const size_t target = out.size() + bytes;
  while (out.size() < target) append_sentence(out);
}

void write_synthetic_corpus(const std::string& path, int64_t bytes, uint64_t seed, bool jsonl) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  CHECK(f != nullptr, "cannot create '{}'", path);
  SyntheticText text(seed);
  uint64_t doc_sizes = mix(seed + 1);
  std::string chunk;
  std::string doc;
  int64_t written = 0;
  bool ok = true;
  while (ok && written < bytes) {
    chunk.clear();
    if (jsonl) {
      while (chunk.size() < (1u << 20)) {
        doc.clear();
        doc_sizes = mix(doc_sizes);
        text.append(doc, 1000 + doc_sizes % 29000);
        chunk += "{\"text\": \"";
        for (char c : doc) {
          if (c == '\n') {
            chunk += "\\n";
          } else {
            chunk += c;
          }
        }
        chunk += "\"}\n";
      }
    } else {
      text.append(chunk, 1u << 20);
    }
    // The last chunk is cut to the exact size (JSONL: at a line end, so the file stays valid).
    size_t n = chunk.size();
    if (written + static_cast<int64_t>(n) > bytes) {
      n = static_cast<size_t>(bytes - written);
      if (jsonl) {
        const size_t eol = chunk.rfind('\n', n == 0 ? 0 : n - 1);
        n = eol == std::string::npos ? 0 : eol + 1;
        if (n == 0) break;
      }
    }
    ok = std::fwrite(chunk.data(), 1, n, f) == n;
    written += static_cast<int64_t>(n);
  }
  ok = (std::fclose(f) == 0) && ok;
  CHECK(ok, "writing '{}' failed (is the disk full?)", path);
}

}  // namespace nanogpt
