// A torch.save checkpoint (nanoGPT's out/ckpt.pt) opened for reading: the zip archive
// (io/torch_zip.h) plus its unpickled data.pkl (io/torch_pickle.h), with every tensor checked
// against its storage entry `data/<key>` at open. nanoGPT's ckpt.pt root is a dict: `model`
// (state_dict name -> tensor, names possibly '_orig_mod.'-prefixed, lm_head.weight sharing wte's
// storage), `optimizer` (AdamW state_dict), `model_args`, `iter_num`, `best_val_loss` (a 0-dim
// tensor or a float), `config`. This file only reads; mapping names onto our model is the caller's.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/torch_pickle.h"
#include "io/torch_zip.h"

namespace nanogpt {

class TorchCheckpoint {
 public:
  // Maps the file, reads the archive, unpickles data.pkl (CRC-checked) and validates every tensor
  // (storage entry present with exactly storage numel x dtype bytes, view inside it, storages
  // shared by several tensors agreeing on dtype and size). Throws nanogpt::Error naming the file.
  explicit TorchCheckpoint(const std::string& path);
  // The same over a file's bytes held by the caller (they must outlive the checkpoint).
  TorchCheckpoint(std::string_view bytes, const std::string& name);

  const std::string& path() const { return archive_.path(); }
  const TorchZipArchive& archive() const { return archive_; }
  const PickleValue& root() const { return *root_; }
  // The archive's `version` entry, trimmed ("3" for current PyTorch); empty when absent.
  const std::string& format_version() const { return version_; }

  // The raw little-endian bytes of t's whole storage (inside the mapping).
  std::span<const uint8_t> storage_bytes(const TorchTensorRef& t) const;
  // Copies t (numel() elements, row-major over its shape, following its strides) into out as
  // float, converting bfloat16 / float16. Throws naming the file and storage for int64 tensors or
  // a view that does not fit its storage entry.
  void read_f32(const TorchTensorRef& t, float* out) const;
  std::vector<float> read_f32(const TorchTensorRef& t) const;
  // The same for int64 tensors (throws for the float dtypes).
  std::vector<int64_t> read_i64(const TorchTensorRef& t) const;

 private:
  void validate();

  TorchZipArchive archive_;
  PickleValuePtr root_;
  std::string version_;
};

// Opens `path` (see TorchCheckpoint's constructor).
TorchCheckpoint read_torch_checkpoint(const std::string& path);

}  // namespace nanogpt
