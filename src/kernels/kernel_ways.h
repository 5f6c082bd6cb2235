// KernelWays: which way each family of products runs in this run, where there is more than one
// (issue 30). Chosen at start-up by measuring each candidate at the run's own shapes
// (kernels/kernel_planner.h) or forced by --kernel_choice; part of the run's numerics, so saved in
// the checkpoint and kept on resume. Held by the CpuBackend and read by the dispatchers.
//   attention_bf16: a bfloat16 run's attention on the native bf16 kernel (vdpbf16ps dot
//   products; P and dS rounded to bf16), on the float32 flash kernel over inputs widened to
//   float32 (FMAs), or with its block products as oneDNN matmuls (cpu/attention_onednn.h: AMX
//   tiles where the CPU has them; P and dS rounded to bf16 as native). Which is faster depends on
//   the CPU: Zen 5 runs vdpbf16ps at twice the FMA rate, Intel's Xeons at half, and their AMX
//   multiplies bf16 at several times either.
//   small_products_f32: a float32 run's products small enough for our tile GEMM
//   (cpu/small_gemm.h: nanoGPT's CPU recipe, its classifier, Muon's Newton-Schulz at that size) on
//   that GEMM ("tiles", with the MLP's GELU in the same parallel region) or on oneDNN's matmul
//   ("onednn", the GELU a pass of its own). Which is faster depends on the CPU and the shapes:
//   the tiles win on AMD Zen 5, oneDNN reached 76% of the FMA peak against the tiles' 64% on an
//   Intel Xeon.
#pragma once

#include <string>
#include <string_view>

namespace nanogpt {

enum class AttentionBf16Way { kNative, kWidened, kOnednn };
inline constexpr AttentionBf16Way kAttentionBf16Ways[] = {
    AttentionBf16Way::kNative, AttentionBf16Way::kWidened, AttentionBf16Way::kOnednn};

enum class SmallProductsWay { kTiles, kOnednn };
inline constexpr SmallProductsWay kSmallProductsWays[] = {SmallProductsWay::kTiles,
                                                          SmallProductsWay::kOnednn};

struct KernelWays {
  AttentionBf16Way attention_bf16 = AttentionBf16Way::kNative;
  SmallProductsWay small_products_f32 = SmallProductsWay::kTiles;
  bool operator==(const KernelWays&) const = default;
};

const char* way_name(AttentionBf16Way way);  // "native" / "widened" / "onednn"
const char* way_name(SmallProductsWay way);  // "tiles" / "onednn"
// False for anything but "native" / "widened" / "onednn".
bool parse_way(std::string_view name, AttentionBf16Way& way);
// False for anything but "tiles" / "onednn".
bool parse_way(std::string_view name, SmallProductsWay& way);
// The small products' way a --kernel_choice forces: oneDNN for "onednn", our tiles for "native"
// and "widened" (we have no bf16 GEMM of our own: "our own kernels" is the tile GEMM).
SmallProductsWay small_products_way_for(AttentionBf16Way forced);

}  // namespace nanogpt
