// What the compute backend is, for `nanogpt --version` and run logs: the oneDNN version and the
// instruction set its kernels dispatch to on this CPU.
#pragma once

#include <string>

namespace nanogpt {

struct BackendInfo {
  std::string onednn_version;  // e.g. "3.0.0 (commit ...)"
  std::string onednn_isa;      // e.g. "avx512_core_amx" / "avx2": what oneDNN uses here
};

BackendInfo backend_info();

}  // namespace nanogpt
