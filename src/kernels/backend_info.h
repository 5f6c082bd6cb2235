// What the compute backend is, for `nanogpt --version` and run logs: the oneDNN version and the
// instruction set its kernels dispatch to on this CPU; and how a CPU target cap reaches oneDNN.
#pragma once

#include <string>

namespace nanogpt {

struct BackendInfo {
  std::string onednn_version;  // e.g. "3.0.0 (commit ...)"
  std::string onednn_isa;      // e.g. "avx512_core_amx" / "avx2": what oneDNN uses here
};

BackendInfo backend_info();

class CpuTarget;
// Applies the CPU target to everything that dispatches at run time: Highway's choice for our
// kernels (CpuTarget::apply) and oneDNN's ISA (dnnl::set_max_cpu_isa, the same level: avx2 caps
// its matmuls at avx2). oneDNN takes its cap once, before its first primitive: later calls leave
// it as it is. Called by main() for every command and by each CpuBackend.
void apply_cpu_target(const CpuTarget& target);

}  // namespace nanogpt
