// Kernel benchmarks at GPT-2 124M shapes (C 768, 12 heads; B 4 with T 64 and 1024): matmul
// GFLOP/s (and % of this machine's fp32 FMA peak, measured by core/cpu_info), each product of the
// W2 / W3' linear layers in float32 and bf16 (BM_MatmulLowp), attention fwd+bwd time,
// W4 attention (B 1, T 1024..8192) in GFLOP/s and % of peak, LayerNorm/GELU/cross-entropy
// bandwidth, the MLP's GELU half fused vs unfused (BM_MlpGelu), the 124M optimizer step
// fused vs unfused (BM_OptimizerStep124M), Muon's Newton-Schulz (BM_NewtonSchulz).
// Run: bench_kernels [--benchmark_filter=...].
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "core/buffer.h"
#include "core/cpu_info.h"
#include "core/float16.h"
#include "core/rng.h"
#include "kernels/compute_peaks.h"
#include "kernels/cpu_backend.h"
#include "kernels/cpu/attention_bf16.h"
#include "kernels/cpu/context_impl.h"
#include "kernels/cpu/small_gemm.h"
#include "kernels/kernel_planner.h"
#include "kernels/ops.h"
#include "kernels/ops_lowp.h"
#include "model/params.h"
#include "optim/adamw.h"
#include "optim/grad_clip.h"
#include "optim/newton_schulz.h"

namespace nanogpt {
namespace {

// The fp32 FMA peak of this machine on all threads, measured once (best probe seen, cached).
double peak_flops() {
  static const double peak = measure_peak_flops(omp_get_max_threads()).flops_per_s;
  return peak;
}

std::vector<float> random_vec(size_t n, uint64_t seed, float stddev = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = stddev * rng.normal();
  return v;
}

void set_flops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak%"] =
      benchmark::Counter(flops / peak_flops() * 100, benchmark::Counter::kIsIterationInvariantRate);
}

// args: N, C, OC
void BM_MatmulForward(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = static_cast<int>(state.range(1)), OC = static_cast<int>(state.range(2));
  CpuBackend ctx;
  auto inp = random_vec(N * C, 1), w = random_vec(size_t(OC) * C, 2, 0.02f), b = random_vec(OC, 3);
  std::vector<float> out(N * OC);
  for (auto _ : state) {
    cpu::matmul_forward(ctx, out.data(), inp.data(), w.data(), b.data(), N, C, OC);
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, 2.0 * N * C * OC);
}

void BM_MatmulBackward(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = static_cast<int>(state.range(1)), OC = static_cast<int>(state.range(2));
  CpuBackend ctx;
  auto inp = random_vec(N * C, 1), w = random_vec(size_t(OC) * C, 2, 0.02f);
  auto dout = random_vec(N * OC, 3);
  std::vector<float> dinp(N * C), dw(size_t(OC) * C), db(OC);
  for (auto _ : state) {
    cpu::matmul_backward(ctx, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(),
                         N, C, OC);
    benchmark::DoNotOptimize(dw.data());
  }
  set_flops(state, 4.0 * N * C * OC);
}

#define MATMUL_SHAPES(N)     \
  Args({N, 768, 2304})       \
      ->Args({N, 768, 768})  \
      ->Args({N, 768, 3072}) \
      ->Args({N, 3072, 768}) \
      ->Args({N, 768, 50304})
BENCHMARK(BM_MatmulForward)
    ->MATMUL_SHAPES(1)
    ->MATMUL_SHAPES(256)
    ->MATMUL_SHAPES(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_MatmulBackward)
    ->MATMUL_SHAPES(256)
    ->MATMUL_SHAPES(4096)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// One product of a training step's linear layer, float32 or bf16 as the model runs it (ops_lowp.h:
// the forward writes bf16 (N,OC) activations, or the float32 residual branch when OC == C or the
// layer is the MLP's projection: args `f32_out`; backward-data accumulates into bf16; backward-
// weights into float32). bf16 forward and backward-data of >= kPackWeightsMinRows rows include the
// reorder of the weights into oneDNN's blocked layout (context_impl.h). The bf16 / float32 time
// ratio per shape is what the step's matmuls can gain (the target is 2x: bf16 peak = 2x fp32 FMA).
// args: N, C, OC, dtype (0 float32, 1 bf16), part (0 forward, 1 backward-data, 2 backward-weights),
// f32_out (bf16 forward: 1 writes float32)
void BM_MatmulLowp(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = static_cast<int>(state.range(1)), OC = static_cast<int>(state.range(2));
  const DType t = state.range(3) ? DType::kBF16 : DType::kF32;
  const int part = static_cast<int>(state.range(4));
  const DType fwd_out = state.range(5) ? DType::kF32 : t;
  const size_t es = dtype_size(t);
  auto to_t = [&](const std::vector<float>& v) {
    std::vector<std::byte> b(v.size() * es);
    cpu::convert(TypedPtr(b.data(), t), v.data(), static_cast<int64_t>(v.size()));
    return b;
  };
  const auto inp = to_t(random_vec(N * C, 1)), w = to_t(random_vec(size_t(OC) * C, 2, 0.02f));
  const auto dout = to_t(random_vec(N * OC, 3));
  const auto b = random_vec(OC, 4);
  std::vector<std::byte> out(N * OC * 4), dinp(N * C * es);
  std::vector<float> dw(size_t(OC) * C);
  CpuBackend ctx;
  for (auto _ : state) {
    if (part == 0) {
      cpu::matmul_forward(ctx, TypedPtr(out.data(), fwd_out), ConstTypedPtr(inp.data(), t),
                          ConstTypedPtr(w.data(), t), b.data(), N, C, OC);
    } else if (part == 1) {
      cpu::matmul_backward(ctx, TypedPtr(dinp.data(), t), nullptr, nullptr,
                           ConstTypedPtr(dout.data(), t), ConstTypedPtr(inp.data(), t),
                           ConstTypedPtr(w.data(), t), N, C, OC);
    } else {
      cpu::matmul_backward(ctx, TypedPtr(), dw.data(), nullptr, ConstTypedPtr(dout.data(), t),
                           ConstTypedPtr(inp.data(), t), ConstTypedPtr(w.data(), t), N, C, OC);
    }
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * N * C * OC);
}
// The linear layers of W2 (baby GPT: N 16384, C 384) and W3' (124M: N 4096, C 768): qkv, attention
// projection, fc, MLP projection; every part in float32 and bf16. Then the CPU speedrun's head
// (B 32 x T 64 rows, C 128, vocab 65 padded to 128; float32 logits).
void matmul_lowp_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t n : {16384, 4096}) {
    const int64_t c = n == 16384 ? 384 : 768;
    for (auto [ci, oci, f32_out] :
         {std::tuple{c, 3 * c, 0}, {c, c, 1}, {c, 4 * c, 0}, {4 * c, c, 1}}) {
      for (int part : {0, 1, 2}) {
        for (int dt : {0, 1}) b->Args({n, ci, oci, dt, part, f32_out});
      }
    }
  }
  for (int part : {0, 1, 2}) {
    for (int dt : {0, 1}) b->Args({2048, 128, 128, dt, part, 1});
  }
}
BENCHMARK(BM_MatmulLowp)->Apply(matmul_lowp_shapes)->Unit(benchmark::kMillisecond)->UseRealTime();

// W1 (nanoGPT's CPU recipe: B 12 x T 64 = 768 rows, C 128): qkv, attproj, fc, fcproj.
#define MATMUL_W1_SHAPES \
  Args({768, 128, 384})->Args({768, 128, 128})->Args({768, 128, 512})->Args({768, 512, 128})
BENCHMARK(BM_MatmulForward)
    ->Name("W1/MatmulForward")
    ->MATMUL_W1_SHAPES->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_MatmulBackward)
    ->Name("W1/MatmulBackward")
    ->MATMUL_W1_SHAPES->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The three products of a W1 layer on oneDNN (impl 0) and on small_gemm (impl 1), float32.
// args: N, C, OC, product (0 forward with bias, 1 dinp += dout W, 2 dW += dout^T inp), impl.
void BM_W1Gemm(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = static_cast<int>(state.range(1)), OC = static_cast<int>(state.range(2));
  const int product = static_cast<int>(state.range(3));
  const bool small = state.range(4) == 1;
  CpuBackend ctx;
  auto inp = random_vec(N * C, 1), w = random_vec(size_t(OC) * C, 2, 0.02f), b = random_vec(OC, 3);
  auto dout = random_vec(N * OC, 4);
  std::vector<float> out(N * OC), dinp(N * C), dw(size_t(OC) * C);
  auto& impl = ctx.impl();
  for (auto _ : state) {
    if (product == 0) {
      if (small) {
        cpu::small_gemm_forward(out.data(), inp.data(), w.data(), b.data(), N, C, OC);
      } else {
        cpu::run_matmul(impl, {N, C, OC, true, MatmulKind::kForward}, inp.data(), w.data(),
                        b.data(), out.data());
      }
    } else if (product == 1) {
      if (small) {
        cpu::small_gemm_backward(dinp.data(), true, nullptr, nullptr, dout.data(), inp.data(),
                                 w.data(), N, C, OC);
      } else {
        cpu::run_matmul(impl, {N, C, OC, false, MatmulKind::kBackwardData}, dout.data(), w.data(),
                        nullptr, dinp.data());
      }
    } else {
      if (small) {
        cpu::small_gemm_backward(nullptr, true, dw.data(), nullptr, dout.data(), inp.data(),
                                 w.data(), N, C, OC);
      } else {
        cpu::run_matmul(impl, {N, C, OC, false, MatmulKind::kBackwardWeight}, dout.data(),
                        inp.data(), nullptr, dw.data());
      }
    }
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * N * C * OC);
}
BENCHMARK(BM_W1Gemm)
    ->Name("W1/Gemm")
    ->ArgsProduct({{768}, {128}, {384, 128, 512}, {0, 1, 2}, {0, 1}})
    ->ArgsProduct({{768}, {512}, {128}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Causal attention FLOPs: forward QK^T and PV over T(T+1)/2 pairs, 2 flops each per HS;
// backward 5 such products (S, dP recomputed, dV, dK, dQ).
double attention_flops(int B, int T, int C, bool backward) {
  const double pairs = double(B) * T * (T + 1) / 2;
  return pairs * C * 2 * (backward ? 5 : 2);
}

// The float32 attention as the model calls it: through a CpuBackend, which keeps the kernel's
// per-thread scratch between calls (cpu::AttentionWorkspace).
void attention_forward_ctx(CpuBackend& ctx, std::vector<float>& out, std::vector<float>& lse,
                           const std::vector<float>& qkv, int B, int T, int C, int NH, float p) {
  cpu::attention_forward(ctx, TypedPtr(out.data()), lse.data(), ConstTypedPtr(qkv.data()), B, T, C,
                         NH, p, 5);
}
void attention_backward_ctx(CpuBackend& ctx, std::vector<float>& dqkv,
                            const std::vector<float>& dout, const std::vector<float>& out,
                            const std::vector<float>& lse, const std::vector<float>& qkv, int B,
                            int T, int C, int NH, float p) {
  cpu::attention_backward(ctx, TypedPtr(dqkv.data()), ConstTypedPtr(dout.data()),
                          ConstTypedPtr(out.data()), lse.data(), ConstTypedPtr(qkv.data()), B, T, C,
                          NH, p, 5);
}

// Times the float32 kernel's forward + backward on random inputs of one shape.
void time_attention(benchmark::State& state, int B, int T, int C, int NH, float p) {
  auto qkv = random_vec(size_t(B) * T * 3 * C, 1), dout = random_vec(size_t(B) * T * C, 2);
  std::vector<float> out(size_t(B) * T * C), lse(size_t(B) * NH * T), dqkv(qkv.size());
  CpuBackend ctx;
  for (auto _ : state) {
    attention_forward_ctx(ctx, out, lse, qkv, B, T, C, NH, p);
    attention_backward_ctx(ctx, dqkv, dout, out, lse, qkv, B, T, C, NH, p);
    benchmark::DoNotOptimize(dqkv.data());
  }
  set_flops(state, attention_flops(B, T, C, false) + attention_flops(B, T, C, true));
}

// args: B, T, dropout*10
void BM_AttentionForwardBackward(benchmark::State& state) {
  time_attention(state, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)), 768, 12,
                 state.range(2) / 10.0f);
}
BENCHMARK(BM_AttentionForwardBackward)
    ->Args({4, 64, 0})
    ->Args({4, 1024, 0})
    ->Args({4, 1024, 2})
    ->Args({1, 2048, 0})
    ->Args({1, 8192, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// W1's attention (nanoGPT's CPU recipe: B 12, 4 heads x 32, T 64), float32, in 64-byte aligned
// buffers as the model's activations are (heads' 128-byte slices then never share a cache line);
// arg 0 times the forward, 1 the backward (after one forward), FLOPs as above.
void BM_AttentionW1(benchmark::State& state) {
  const int B = 12, T = 64, C = 128, NH = 4;
  const bool backward = state.range(0) == 1;
  const size_t rows = size_t(B) * T;
  const auto aligned = [](const std::vector<float>& v) {
    Buffer<float> b(v.size());
    std::copy(v.begin(), v.end(), b.data());
    return b;
  };
  const Buffer<float> qkv = aligned(random_vec(rows * 3 * C, 1)),
                      dout = aligned(random_vec(rows * C, 2));
  Buffer<float> out(rows * C), lse(size_t(B) * NH * T), dqkv(rows * 3 * C);
  CpuBackend ctx;
  const auto forward = [&] {
    cpu::attention_forward(ctx, TypedPtr(out.data()), lse.data(), ConstTypedPtr(qkv.data()), B, T,
                           C, NH, 0.0f, 5);
  };
  forward();
  for (auto _ : state) {
    if (backward) {
      cpu::attention_backward(ctx, TypedPtr(dqkv.data()), ConstTypedPtr(dout.data()),
                              ConstTypedPtr(out.data()), lse.data(), ConstTypedPtr(qkv.data()), B,
                              T, C, NH, 0.0f, 5);
    } else {
      forward();
    }
    benchmark::DoNotOptimize(dqkv.data());
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, attention_flops(B, T, C, backward));
}
BENCHMARK(BM_AttentionW1)
    ->Name("W1/Attention")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// W2's attention: B 64, 6 heads x 64, T 256, fwd+bwd (args: dropout*10), FLOPs as above.
void BM_AttentionW2(benchmark::State& state) {
  time_attention(state, 64, 256, 384, 6, state.range(0) / 10.0f);
}
BENCHMARK(BM_AttentionW2)->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

// Random bf16 attention tensors of one shape and the native kernel's forward + backward on them,
// with its scratch in the context's workspace (kept between calls, as the model's calls through
// the 16-bit op keep it).
struct Bf16Attention {
  int B, T, C, NH;
  std::vector<uint16_t> qkv, dout, out, dqkv;
  std::vector<float> lse;
  CpuBackend ctx;
  Bf16Attention(int b, int t, int c, int nh)
      : B(b),
        T(t),
        C(c),
        NH(nh),
        qkv(size_t(b) * t * 3 * c),
        dout(size_t(b) * t * c),
        out(dout.size()),
        dqkv(qkv.size()) {
    const auto q32 = random_vec(qkv.size(), 1), d32 = random_vec(dout.size(), 2);
    for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = float_to_bf16(q32[i]);
    for (size_t i = 0; i < dout.size(); ++i) dout[i] = float_to_bf16(d32[i]);
    lse.resize(size_t(B) * NH * T);
  }
  void native_forward_backward(float p) {
    auto& ws = ctx.impl().attention;
    cpu::attention_forward_bf16(ws, out.data(), lse.data(), qkv.data(), B, T, C, NH, p, 5);
    cpu::attention_backward_bf16(ws, dqkv.data(), dout.data(), out.data(), lse.data(), qkv.data(),
                                 B, T, C, NH, p, 5);
  }
};

// Attention fwd+bwd in bf16 at W2 (args 0) and W3' (args 1) shapes, dropout as the workload (W2
// 0.2, W3' 0): arg 1 = 0 the native bf16 kernel on the whole batch, 1 the float32 kernel behind
// widening (float16 tensors through the 16-bit op), 2 the bf16 op as the model calls it (batch
// groups of its own), 3 the native kernel without dropout (its cost at W2). FLOPs as above.
void BM_AttentionBf16(benchmark::State& state) {
  const bool w2 = state.range(0) == 0, native = state.range(1) == 0 || state.range(1) == 3;
  const DType op_dtype = state.range(1) == 2 ? DType::kBF16 : DType::kF16;
  const int B = w2 ? 64 : 4, T = w2 ? 256 : 1024, C = w2 ? 384 : 768, NH = w2 ? 6 : 12;
  const float p = w2 && state.range(1) != 3 ? 0.2f : 0.0f;
  Bf16Attention a(B, T, C, NH);
  CpuBackend& ctx = a.ctx;
  for (auto _ : state) {
    if (native) {
      a.native_forward_backward(p);
    } else {
      cpu::attention_forward(ctx, TypedPtr(a.out.data(), op_dtype), a.lse.data(),
                             ConstTypedPtr(a.qkv.data(), op_dtype), B, T, C, NH, p, 5);
      cpu::attention_backward(ctx, TypedPtr(a.dqkv.data(), op_dtype),
                              ConstTypedPtr(a.dout.data(), op_dtype),
                              ConstTypedPtr(a.out.data(), op_dtype), a.lse.data(),
                              ConstTypedPtr(a.qkv.data(), op_dtype), B, T, C, NH, p, 5);
    }
    benchmark::DoNotOptimize(a.dqkv.data());
  }
  set_flops(state, attention_flops(B, T, C, false) + attention_flops(B, T, C, true));
}
BENCHMARK(BM_AttentionBf16)
    ->ArgsProduct({{0, 1}, {0, 1, 2, 3}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The CPU speedrun's attention (B 32, T 64, 4 heads x 32, bf16, no dropout; per layer and step),
// the native kernel: arg 0 forward + backward, 1 forward, 2 backward (after one forward).
void BM_AttentionBf16CpuTrack(benchmark::State& state) {
  const int B = 32, T = 64, C = 128, NH = 4;
  const int part = static_cast<int>(state.range(0));
  Bf16Attention a(B, T, C, NH);
  auto& ws = a.ctx.impl().attention;
  auto forward = [&] {
    cpu::attention_forward_bf16(ws, a.out.data(), a.lse.data(), a.qkv.data(), B, T, C, NH, 0, 5);
  };
  auto backward = [&] {
    cpu::attention_backward_bf16(ws, a.dqkv.data(), a.dout.data(), a.out.data(), a.lse.data(),
                                 a.qkv.data(), B, T, C, NH, 0, 5);
  };
  if (part == 2) forward();
  for (auto _ : state) {
    if (part != 2) forward();
    if (part != 1) backward();
    benchmark::DoNotOptimize(a.dqkv.data());
  }
  set_flops(state, (part != 2 ? attention_flops(B, T, C, false) : 0) +
                       (part != 1 ? attention_flops(B, T, C, true) : 0));
}
BENCHMARK(BM_AttentionBf16CpuTrack)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// W4: B 1, 12 heads x 64, fwd+bwd at long context (args: T; part 0 fwd+bwd, 1 fwd, 2 bwd),
// through a CpuBackend as the model calls it.
// FLOPs as above (FlashAttention's convention for causal attention: backward = 2.5 x forward).
void BM_AttentionW4(benchmark::State& state) {
  const int B = 1, T = static_cast<int>(state.range(0)), part = static_cast<int>(state.range(1));
  const int C = 768, NH = 12;
  auto qkv = random_vec(size_t(B) * T * 3 * C, 1), dout = random_vec(size_t(B) * T * C, 2);
  std::vector<float> out(size_t(B) * T * C), lse(size_t(B) * NH * T), dqkv(qkv.size());
  CpuBackend ctx;
  attention_forward_ctx(ctx, out, lse, qkv, B, T, C, NH, 0.0f);
  for (auto _ : state) {
    if (part != 2) attention_forward_ctx(ctx, out, lse, qkv, B, T, C, NH, 0.0f);
    if (part != 1) attention_backward_ctx(ctx, dqkv, dout, out, lse, qkv, B, T, C, NH, 0.0f);
    benchmark::DoNotOptimize(dqkv.data());
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, (part != 2 ? attention_flops(B, T, C, false) : 0) +
                       (part != 1 ? attention_flops(B, T, C, true) : 0));
}
BENCHMARK(BM_AttentionW4)
    ->ArgsProduct({{1024, 2048, 4096, 8192}, {0}})
    ->Args({1024, 1})
    ->Args({1024, 2})
    ->Args({4096, 1})
    ->Args({4096, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// W4 in bf16, B 1, 12 heads x 64, fwd+bwd (args: T): the way the trainer would choose at this
// shape on this CPU (kernels/kernel_planner.h: native bf16 dot products or widened to float32,
// timed at start-up), through the 16-bit op as the model calls it. The chosen way and both times
// are in the benchmark's label.
void BM_AttentionW4Bf16(benchmark::State& state) {
  const int B = 1, T = static_cast<int>(state.range(0)), C = 768, NH = 12;
  Bf16Attention a(B, T, C, NH);
  const ComputePeaks peaks = measure_compute_peaks(DType::kBF16, omp_get_max_threads());
  const KernelPlan plan = plan_kernel_ways(
      a.ctx, DType::kBF16, {B, T, C, NH, 0.0f}, "auto", omp_get_max_threads(),
      {peaks.bf16_dot.flops_per_s, peaks.fp32_fma.flops_per_s}, /*use_cache=*/false);
  a.ctx.set_ways(plan.ways);
  state.SetLabel(plan.describe());
  for (auto _ : state) {
    cpu::attention_forward(a.ctx, TypedPtr(a.out.data(), DType::kBF16), a.lse.data(),
                           ConstTypedPtr(a.qkv.data(), DType::kBF16), B, T, C, NH, 0.0f, 5);
    cpu::attention_backward(a.ctx, TypedPtr(a.dqkv.data(), DType::kBF16),
                            ConstTypedPtr(a.dout.data(), DType::kBF16),
                            ConstTypedPtr(a.out.data(), DType::kBF16), a.lse.data(),
                            ConstTypedPtr(a.qkv.data(), DType::kBF16), B, T, C, NH, 0.0f, 5);
    benchmark::DoNotOptimize(a.dqkv.data());
  }
  set_flops(state, attention_flops(B, T, C, false) + attention_flops(B, T, C, true));
}
BENCHMARK(BM_AttentionW4Bf16)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->Arg(8192)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_AttentionForward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), T = static_cast<int>(state.range(1));
  const int C = 768, NH = 12;
  auto qkv = random_vec(size_t(B) * T * 3 * C, 1);
  std::vector<float> out(size_t(B) * T * C), lse(size_t(B) * NH * T);
  for (auto _ : state) {
    cpu::attention_forward(out.data(), lse.data(), qkv.data(), B, T, C, NH, 0.0f, 5);
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, attention_flops(B, T, C, false));
}
BENCHMARK(BM_AttentionForward)
    ->Args({4, 64})
    ->Args({4, 1024})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void set_bytes(benchmark::State& state, double bytes) {
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// args: N (= B*T)
void BM_LayerNormForward(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = 768;
  auto x = random_vec(N * C, 1), w = random_vec(C, 2), b = random_vec(C, 3);
  std::vector<float> out(N * C), mean(N), rstd(N);
  for (auto _ : state) {
    cpu::layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N,
                           C);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state, 2.0 * N * C * 4);  // read x, write out
}
void BM_LayerNormBackward(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = 768;
  auto x = random_vec(N * C, 1), w = random_vec(C, 2), dout = random_vec(N * C, 3);
  std::vector<float> mean(N, 0.0f), rstd(N, 1.0f), dx(N * C), dw(C), db(C);
  for (auto _ : state) {
    cpu::layernorm_backward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(),
                            mean.data(), rstd.data(), N, C);
    benchmark::DoNotOptimize(dx.data());
  }
  set_bytes(state, 4.0 * N * C * 4);  // read x, dout, dinp; write dinp
}
BENCHMARK(BM_LayerNormForward)->Arg(256)->Arg(4096)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LayerNormBackward)->Arg(256)->Arg(4096)->Unit(benchmark::kMicrosecond)->UseRealTime();

// W1's LayerNorms (768 rows x 128, 64-byte aligned as the model's) and the CPU speedrun's (2048
// rows, RMSNorm, bf16 outputs / output gradients): args kind (0 the forward, 1 the residual add +
// forward, 2 the backward), rows, storage (0 float32, 1 bf16); bytes as the profile counts them.
void BM_LayerNormSmall(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const int64_t N = state.range(1);
  const int C = 128;
  const bool lowp = state.range(2) == 1;
  const DType t = lowp ? DType::kBF16 : DType::kF32;
  const NormKind norm = lowp ? NormKind::kRmsNorm : NormKind::kLayerNorm;
  const auto aligned = [](const std::vector<float>& v) {
    Buffer<float> b(v.size());
    std::copy(v.begin(), v.end(), b.data());
    return b;
  };
  const Buffer<float> x = aligned(random_vec(N * C, 1)), y = aligned(random_vec(N * C, 4)),
                      w = aligned(random_vec(C, 2)), dout32 = aligned(random_vec(N * C, 5));
  const float* bias = nullptr;
  const size_t es = dtype_size(t);
  Buffer<std::byte> out(N * C * es), dout(N * C * es);
  Buffer<float> res(N * C), mean(N), rstd(N), dx(N * C), dw(C), db(C);
  cpu::convert(TypedPtr(dout.data(), t), dout32.data(), N * C);
  CpuBackend ctx;
  cpu::layernorm_forward(ctx, TypedPtr(out.data(), t), mean.data(), rstd.data(), x.data(), w.data(),
                         bias, N, C, norm);
  for (auto _ : state) {
    if (kind == 0) {
      cpu::layernorm_forward(ctx, TypedPtr(out.data(), t), mean.data(), rstd.data(), x.data(),
                             w.data(), bias, N, C, norm);
    } else if (kind == 1) {
      cpu::residual_layernorm_forward(ctx, res.data(), TypedPtr(out.data(), t), mean.data(),
                                      rstd.data(), x.data(), y.data(), w.data(), bias, N, C, norm);
    } else {
      cpu::layernorm_backward(ctx, dx.data(), dw.data(), nullptr, ConstTypedPtr(dout.data(), t),
                              x.data(), w.data(), mean.data(), rstd.data(), N, C, norm);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(dx.data());
  }
  const double e = static_cast<double>(es);
  set_bytes(state, static_cast<double>(N) * C * (kind == 0 ? 4 + e : 12 + e));
}
BENCHMARK(BM_LayerNormSmall)
    ->Name("W1/LayerNorm")
    ->ArgsProduct({{0, 1, 2}, {768}, {0}})
    ->ArgsProduct({{0, 1, 2}, {2048}, {1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: N elements, kind (0 tanh, 1 exact, 2 relu2), storage (0 float32, 1 bf16 through the 16-bit
// op), backward (0 accumulating, 1 overwriting: the model's)
void BM_GeluForwardBackward(benchmark::State& state) {
  const int64_t N = state.range(0);
  const MlpActivation kind = state.range(1) == 2   ? MlpActivation::kRelu2
                             : state.range(1) == 1 ? MlpActivation::kExact
                                                   : MlpActivation::kTanh;
  const DType t = state.range(2) ? DType::kBF16 : DType::kF32;
  const size_t es = dtype_size(t);
  auto x32 = random_vec(N, 1), dout32 = random_vec(N, 2);
  std::vector<std::byte> x(N * es), dout(N * es), out(N * es), dx(N * es);
  cpu::convert(TypedPtr(x.data(), t), x32.data(), N);
  cpu::convert(TypedPtr(dout.data(), t), dout32.data(), N);
  CpuBackend ctx;
  for (auto _ : state) {
    cpu::gelu_forward(ctx, TypedPtr(out.data(), t), ConstTypedPtr(x.data(), t), N, kind);
    if (state.range(3)) {
      cpu::gelu_backward_overwrite(ctx, TypedPtr(dx.data(), t), ConstTypedPtr(x.data(), t),
                                   ConstTypedPtr(dout.data(), t), N, kind);
    } else {
      cpu::gelu_backward(ctx, TypedPtr(dx.data(), t), ConstTypedPtr(x.data(), t),
                         ConstTypedPtr(dout.data(), t), N, kind);
    }
    benchmark::DoNotOptimize(dx.data());
  }
  set_bytes(state, (state.range(3) ? 5.0 : 6.0) * N * double(es));
}
BENCHMARK(BM_GeluForwardBackward)
    ->Args({4096 * 3072, 0, 0, 0})
    ->Args({4096 * 3072, 1, 0, 0})
    ->Args({4096 * 3072, 0, 1, 0})
    ->Args({8192 * 1024, 2, 0, 1})
    ->Args({8192 * 1024, 2, 1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The MLP's GELU half, forward + backward, fused (matmul_gelu_forward, gelu_matmul_backward) or
// unfused (matmul, gelu, their backwards and the zeroing the model does), in float32 or bf16.
// args: N rows, C (the MLP is C -> 4C -> C), fused (0/1), bf16 (0/1), part (0 forward +
// backward, 1 forward, 2 backward). FLOPs: the two matmuls of
// the fc forward and the three of the projection's backward.
void BM_MlpGelu(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int C = static_cast<int>(state.range(1)), H = 4 * C;
  const bool fused = state.range(2) != 0;
  const DType t = state.range(3) ? DType::kBF16 : DType::kF32;
  CpuBackend ctx;
  // Storage of n random elements of t (float-sized storage).
  auto make = [&](int64_t n, uint64_t seed) {
    std::vector<float> v = random_vec(static_cast<size_t>(n), seed, 0.1f);
    if (t == DType::kF32) return v;
    std::vector<float> store(static_cast<size_t>((n + 1) / 2));
    auto* bits = reinterpret_cast<uint16_t*>(store.data());
    for (int64_t i = 0; i < n; ++i) bits[i] = float_to_bf16(v[static_cast<size_t>(i)]);
    return store;
  };
  auto ptr = [&](std::vector<float>& v) { return TypedPtr(v.data(), t); };
  auto x = make(N * C, 1), w1 = make(int64_t(H) * C, 2), w2 = make(int64_t(C) * H, 3),
       fch = make(N * H, 4), act = make(N * H, 5), dact = make(N * H, 6), dfch = make(N * H, 7),
       dout = make(N * C, 8);
  const auto b1 = random_vec(H, 9);
  std::vector<float> dw2(size_t(C) * H), db2(C);
  const int part = static_cast<int>(state.range(4));  // 0 both, 1 forward, 2 backward
  for (auto _ : state) {
    if (fused) {
      if (part != 2) {
        cpu::matmul_gelu_forward(ctx, ptr(fch), ptr(act), ptr(x), ptr(w1), b1.data(), N, C, H,
                                 MlpActivation::kTanh);
      }
      if (part != 1) {
        cpu::gelu_matmul_backward(ctx, ptr(dfch), dw2.data(), db2.data(), ptr(dout), ptr(fch),
                                  ptr(w2), N, H, C, MlpActivation::kTanh);
      }
    } else {
      if (part != 2) {
        cpu::matmul_forward(ctx, ptr(fch), ptr(x), ptr(w1), b1.data(), N, C, H);
        cpu::gelu_forward(ctx, ptr(act), ptr(fch), N * H, MlpActivation::kTanh);
      }
      if (part != 1) {
        cpu::gelu_forward(ctx, ptr(act), ptr(fch), N * H, MlpActivation::kTanh);  // recompute
        std::memset(dact.data(), 0, dact.size() * sizeof(float));
        cpu::matmul_backward(ctx, ptr(dact), dw2.data(), db2.data(), ptr(dout), ptr(act), ptr(w2),
                             N, H, C);
        std::memset(dfch.data(), 0, dfch.size() * sizeof(float));
        cpu::gelu_backward(ctx, ptr(dfch), ptr(fch), ptr(dact), N * H, MlpActivation::kTanh);
      }
    }
    benchmark::DoNotOptimize(dfch.data());
  }
  set_flops(state, 2.0 * N * C * H * (part == 0 ? 4 : part == 1 ? 1 : 3));
}
BENCHMARK(BM_MlpGelu)
    ->ArgsProduct({{16384}, {384}, {0, 1}, {0, 1}, {0, 1, 2}})  // W2: B 64 x T 256, C 384
    ->ArgsProduct({{4096}, {768}, {0, 1}, {0, 1}, {0}})         // W3': B 4 x T 1024, C 768
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The optimizer step after the backward at GPT-2 124M (vocab 50304): norm, clipping (active:
// max_norm below the norm), AdamW, zeroed gradients, and with bf16 the 16-bit weight copy.
// args: fused (0: GradScaler-free unfused passes clip_grad_norm + step + [convert] + zero;
// 1: grad_global_norm + step_fused), bf16 copy (0/1). Bytes: the unfused passes' count.
void BM_OptimizerStep124M(benchmark::State& state) {
  CpuBackend backend;  // the host: the optimizer ops run here
  const bool fused = state.range(0) != 0, bf16 = state.range(1) != 0;
  ModelConfig config;  // GPT-2 124M
  config.vocab_size = 50257;
  const ParamTable table(config);
  const int64_t n = table.total_numel();
  std::vector<float> params = random_vec(n, 1, 0.02f), grads(n);
  std::vector<uint16_t> lowp(bf16 ? n : 0);
  const TypedPtr copy = bf16 ? TypedPtr(lowp.data(), DType::kBF16) : TypedPtr();
  AdamW opt(table, 0.9, 0.95, 0.1);
  const auto g0 = random_vec(n, 2, 1e-3f);
  for (auto _ : state) {
    state.PauseTiming();
    std::memcpy(grads.data(), g0.data(), n * sizeof(float));  // a backward's gradients
    state.ResumeTiming();
    if (fused) {
      const double norm = grad_global_norm(backend, table, grads.data());
      FusedStepExtras x;
      x.grad_clip = clip_coefficient(norm, 0.1);
      x.params_lowp = copy;
      x.zero_grads = true;
      opt.step_fused(params.data(), grads.data(), 1e-4, x);
    } else {
      clip_grad_norm(backend, table, grads.data(), 0.1);
      opt.step(params.data(), grads.data(), 1e-4);
      if (bf16) cpu::convert(copy, params.data(), n);
      std::memset(grads.data(), 0, n * sizeof(float));
    }
    benchmark::DoNotOptimize(params.data());
  }
  set_bytes(state, 4.0 * n * (1 + 2 + 7 + 1) + (bf16 ? 6.0 * n : 0.0));
}
BENCHMARK(BM_OptimizerStep124M)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(6);

// Newton-Schulz orthogonalization (Muon), 5 steps, on the CPU speedrun's hidden matrices (C 128:
// c_attn (384, 128), attn c_proj (128, 128), c_fc (512, 128), mlp c_proj (128, 512)), the baby
// GPT's c_fc (1536, 384) and GPT-2 124M's c_fc (3072, 768). args: rows, cols, bf16 (0/1).
// GFLOP/s counts newton_schulz_flops.
void BM_NewtonSchulz(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const DType dtype = state.range(2) != 0 ? DType::kBF16 : DType::kF32;
  CpuBackend ctx;
  NewtonSchulz ns(ctx, dtype, rows * cols, std::min(rows, cols));
  const auto m = random_vec(rows * cols, 1);
  std::vector<float> out(rows * cols);
  for (auto _ : state) {
    ns.orthogonalize(out.data(), m.data(), rows, cols, 5);
    benchmark::DoNotOptimize(out.data());
  }
  set_flops(state, newton_schulz_flops(rows, cols, 5));
}
BENCHMARK(BM_NewtonSchulz)
    ->ArgsProduct({{128}, {128}, {0, 1}})
    ->ArgsProduct({{384, 512}, {128}, {0, 1}})
    ->ArgsProduct({{128}, {512}, {0, 1}})
    ->ArgsProduct({{1536}, {384}, {0, 1}})  // the baby GPT's c_fc
    ->ArgsProduct({{3072}, {768}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// args: N rows; V 50257 of Vp 50304, in place.
void BM_CrossEntropyFused(benchmark::State& state) {
  const int64_t N = state.range(0);
  const int V = 50257, Vp = 50304;
  auto logits = random_vec(N * Vp, 1);
  std::vector<int> targets(N);
  for (int64_t n = 0; n < N; ++n) targets[n] = static_cast<int>(n * 7919 % V);
  std::vector<float> losses(N), dl(N * Vp);
  for (auto _ : state) {
    cpu::crossentropy_forward_backward(losses.data(), dl.data(), logits.data(), targets.data(),
                                       1.0f / N, N, V, Vp);
    benchmark::DoNotOptimize(dl.data());
  }
  set_bytes(state, 2.0 * N * Vp * 4);
}
BENCHMARK(BM_CrossEntropyFused)->Arg(256)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace nanogpt

BENCHMARK_MAIN();
