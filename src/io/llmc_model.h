// llm.c's model file (train_gpt2.c / .cu): a 256 x int32 header {20240326, version 3 = fp32 or
// 5 = bf16, maxT, V, L, NH, C, Vp}, then 16 tensors stacked over layers, Linear weights (out, in):
// wte (Vp,C), wpe (maxT,C), ln1w (L,C), ln1b (L,C), qkvw (L,3C,C), qkvb (L,3C), attprojw (L,C,C),
// attprojb (L,C), ln2w, ln2b (L,C), fcw (L,4C,C), fcb (L,4C), fcprojw (L,C,4C), fcprojb (L,C),
// lnfw (C), lnfb (C).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "io/file_util.h"
#include "io/hf_gpt2.h"

namespace nanogpt {

// Writes version 3 (fp32), or version 5 (bf16, round-to-nearest-even; what llm.c's CUDA trainer
// loads) when bf16 is true. wte rows >= vocab_size are written as zeros (llm.c's convention; they
// never affect the model). Biases (and LayerNorm biases) are written as zeros when config.bias is
// false. Throws naming the path on I/O errors.
FileDigest export_llmc_model(const std::string& path, const ModelConfig& config,
                             const ParamTable& table, const float* params, bool bf16 = false);

// Reads version 3 (fp32) or 5 (bf16 -> float). gelu is tanh (llm.c's). bias: nullopt = true unless
// every bias tensor in the file is exactly zero (what export_llmc_model writes for bias=False).
// The file's padded vocab may differ from ours (rows beyond V are dropped / zero-filled).
// Throws naming the path on a bad magic/version, truncated file or inconsistent header.
LoadedModel load_llmc_model(const std::string& path, std::optional<bool> bias = std::nullopt);
// The same from the file's bytes; `name` stands for the path in errors.
LoadedModel parse_llmc_model(std::string_view bytes, const std::string& name,
                             std::optional<bool> bias = std::nullopt);

}  // namespace nanogpt
