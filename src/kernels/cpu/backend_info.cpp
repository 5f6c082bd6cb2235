// backend_info(): oneDNN's version and the CPU ISA it dispatches to (asked from oneDNN itself).
#include "kernels/backend_info.h"

#include <fmt/format.h>

#include <dnnl.hpp>

namespace nanogpt {
namespace {

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

}  // namespace

BackendInfo backend_info() {
  const dnnl_version_t* v = dnnl_version();
  BackendInfo info;
  info.onednn_version =
      fmt::format("{}.{}.{} (commit {}, {} threading)", v->major, v->minor, v->patch, v->hash,
                  v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
  info.onednn_isa = isa_name(dnnl::get_effective_cpu_isa());
  return info;
}

}  // namespace nanogpt
