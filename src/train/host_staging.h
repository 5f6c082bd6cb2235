// HostStaging: host copies of arenas that live in a device's memory, for what reads and writes
// host memory only (the checkpoint files, nanoGPT's ckpt.pt). On a backend whose memory is the
// host's it copies nothing: stage() gives back the arena itself. RAII: the copies live as long as
// the object.
#pragma once

#include <cstdint>
#include <vector>

#include "core/buffer.h"

namespace nanogpt {

class Backend;  // kernels/backend.h

class HostStaging {
 public:
  explicit HostStaging(Backend& backend) : backend_(backend) {}

  // A host pointer standing for `arena` (numel floats in the backend's memory): `arena` itself on
  // the host; else a host copy, downloaded now when `download` is set (to write it out), or left
  // for upload_all() to carry back (to read into it).
  float* stage(float* arena, int64_t numel, bool download);
  // Uploads every copy staged without download to its arena (after it was read into).
  void upload_all();

 private:
  struct Staged {
    float* arena;
    Buffer<float> copy;
    bool upload;
  };
  Backend& backend_;
  std::vector<Staged> staged_;
};

}  // namespace nanogpt
