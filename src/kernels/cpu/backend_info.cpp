// backend_info(): oneDNN's version and the CPU ISA it dispatches to (asked from oneDNN itself);
// apply_cpu_target: the NANOGPT_CPU_TARGET cap given to Highway and (x86) to oneDNN.
#include "kernels/backend_info.h"

#include <fmt/format.h>

#include <dnnl.hpp>

#include "core/cpu_target.h"

namespace nanogpt {
namespace {

#if defined(__x86_64__)
const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

// oneDNN's ISA for one of our levels (the closest it has; its floor is SSE4.1).
dnnl::cpu_isa onednn_isa_for(const CpuTarget& target) {
  const std::string& level = target.chosen();
  if (level == "avx2") return dnnl::cpu_isa::avx2;
  if (level == "avx512") return dnnl::cpu_isa::avx512_core;
  if (level == "avx512_bf16") return dnnl::cpu_isa::avx512_core_bf16;
  if (level == "avx512_spr") return dnnl::cpu_isa::all;
  return dnnl::cpu_isa::sse41;  // baseline, sse4
}
#endif

}  // namespace

void apply_cpu_target(const CpuTarget& target) {
  target.apply();
  if (target.cap().empty()) return;  // uncapped: oneDNN picks its best, as without us
#if defined(__x86_64__)
  try {
    dnnl::set_max_cpu_isa(onednn_isa_for(target));
  } catch (const dnnl::error&) {
    // Already set (an earlier context), or oneDNN already ran: it keeps the cap it has.
  }
#endif
  // Elsewhere (ARM64) oneDNN keeps its own choice: oneDNN 2.x's ISA cap names x86 ISAs only.
}

BackendInfo backend_info() {
  const dnnl_version_t* v = dnnl_version();
  BackendInfo info;
  info.onednn_version =
      fmt::format("{}.{}.{} (commit {}, {} threading)", v->major, v->minor, v->patch, v->hash,
                  v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
#if defined(__x86_64__)
  info.onednn_isa = isa_name(dnnl::get_effective_cpu_isa());
#else
  info.onednn_isa = "its own choice (oneDNN 2.x names x86 ISAs only)";
#endif
  return info;
}

}  // namespace nanogpt
