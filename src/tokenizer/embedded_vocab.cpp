// The bytes of GPT-2's encoder.json and vocab.bpe, included with the assembler's .incbin from the
// directory CMake passes as NANOGPT_GPT2_VOCAB_DIR (CMake also makes this file depend on both, so a
// changed vocabulary rebuilds it). A NUL after each file keeps the symbols' sizes unambiguous.
#include "tokenizer/embedded_vocab.h"

#ifndef NANOGPT_GPT2_VOCAB_DIR
#error "NANOGPT_GPT2_VOCAB_DIR must name the directory with encoder.json and vocab.bpe"
#endif

#define NANOGPT_INCBIN(symbol, file)               \
  __asm__(                                         \
      ".section .rodata\n"                         \
      ".global " #symbol                           \
      "_begin\n"                                   \
      ".balign 16\n" #symbol                       \
      "_begin:\n"                                  \
      ".incbin \"" NANOGPT_GPT2_VOCAB_DIR "/" file \
      "\"\n"                                       \
      ".global " #symbol "_end\n" #symbol          \
      "_end:\n"                                    \
      ".byte 0\n"                                  \
      ".previous\n");                              \
  extern "C" const char symbol##_begin[];          \
  extern "C" const char symbol##_end[];

NANOGPT_INCBIN(nanogpt_gpt2_encoder_json, "encoder.json")
NANOGPT_INCBIN(nanogpt_gpt2_vocab_bpe, "vocab.bpe")

namespace nanogpt {

std::string_view embedded_encoder_json() {
  return {nanogpt_gpt2_encoder_json_begin,
          static_cast<size_t>(nanogpt_gpt2_encoder_json_end - nanogpt_gpt2_encoder_json_begin)};
}

std::string_view embedded_vocab_bpe() {
  return {nanogpt_gpt2_vocab_bpe_begin,
          static_cast<size_t>(nanogpt_gpt2_vocab_bpe_end - nanogpt_gpt2_vocab_bpe_begin)};
}

}  // namespace nanogpt
