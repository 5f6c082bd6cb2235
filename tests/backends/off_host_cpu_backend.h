// OffHostCpuBackend: the CPU's kernels behind memory that the model and the trainer must treat as
// a device's (host_addressable() is false: they must upload, download and stage, as on a GPU),
// counting the transfers. The device paths of GPT and of the trainer run on it here, where no GPU
// is; its results must be the host backend's bit for bit.
#pragma once

#include <cstddef>

#include "kernels/cpu_backend.h"

namespace nanogpt::testing {

class OffHostCpuBackend : public CpuBackend {
 public:
  const char* memory_name() const override { return "cpu-off-host"; }
  bool host_addressable() const override { return false; }
  void upload(void* dst, const void* src, size_t bytes) override {
    ++uploads;
    CpuBackend::upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    ++downloads;
    CpuBackend::download(dst, src, bytes);
  }
  int uploads = 0, downloads = 0;
};

}  // namespace nanogpt::testing
