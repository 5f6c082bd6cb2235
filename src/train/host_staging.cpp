// HostStaging (train/host_staging.h): downloads and uploads through the backend's memory space.
#include "train/host_staging.h"

#include "kernels/backend.h"

namespace nanogpt {

float* HostStaging::stage(float* arena, int64_t numel, bool download) {
  if (arena == nullptr || backend_.host_addressable()) return arena;
  Staged s{arena, Buffer<float>(static_cast<size_t>(numel)), !download};
  if (download) backend_.download(s.copy.data(), arena, static_cast<size_t>(numel) * sizeof(float));
  float* host = s.copy.data();
  staged_.push_back(std::move(s));
  return host;
}

void HostStaging::upload_all() {
  for (Staged& s : staged_) {
    if (s.upload) backend_.upload(s.arena, s.copy.data(), s.copy.size() * sizeof(float));
  }
}

}  // namespace nanogpt
