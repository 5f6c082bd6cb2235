// The rows of the backend harness (op_table.h): every op the model calls through kernels/backend.h,
// at float32, bfloat16 and float16 where the model runs it in each, at an odd shape and at a
// GPT-like one, forward and backward. A backward row runs its forward first on the same side, so
// that the saved statistics (mean, rstd, lse) are that side's own.
#include "op_table.h"

#include <fmt/format.h>

#include "core/check.h"

namespace nanogpt::testing {

const RowTensors::Slot& RowTensors::at(const std::string& name) const {
  auto it = slots_.find(name);
  CHECK(it != slots_.end(), "op table: the row has no tensor '{}'", name);
  return it->second;
}

std::string OpRow::name() const { return fmt::format("{} {} {}", op, dtype_name(dtype), shape); }

namespace {

// An input of n values.
TensorSpec in(std::string name, int64_t n, DType t = DType::kF32) {
  return {std::move(name), t, n, Fill::kNormal, -1, 1, false, false};
}
// Positive inputs in [lo, hi) (gains, the rotary tables).
TensorSpec uni(std::string name, int64_t n, float lo, float hi, DType t = DType::kF32) {
  return {std::move(name), t, n, Fill::kUniform, lo, hi, false, false};
}
// An output the op writes or accumulates into: it starts from values (so an accumulating op that
// overwrote, or an overwriting one that accumulated, differs from the reference).
TensorSpec out(std::string name, int64_t n, DType t = DType::kF32) {
  return {std::move(name), t, n, Fill::kNormal, -1, 1, true, false};
}
// An output the op reads nothing of that starts at zero (statistics), compared.
TensorSpec stat(std::string name, int64_t n) {
  return {std::move(name), DType::kF32, n, Fill::kZero, 0, 0, true, false};
}
// Scratch a row needs but does not compare.
TensorSpec scratch(std::string name, int64_t n, DType t = DType::kF32) {
  return {std::move(name), t, n, Fill::kZero, 0, 0, false, false};
}
TensorSpec tokens(std::string name, int64_t n, int below) {
  return {std::move(name), DType::kF32, n, Fill::kTokens, 0, float(below), false, true};
}
TensorSpec targets(std::string name, int64_t n, int below) {
  return {std::move(name), DType::kF32, n, Fill::kTargets, 0, float(below), false, true};
}

// Tolerances: float32 sums in another order than the reference's double ones; a 16-bit output
// two units of its last place apart (both sides round once, from floats a few roundings apart).
Tolerance f32_tol(double rtol = 2e-5) { return {rtol, 1e-9}; }
Tolerance for_dtype(DType t, double f32_rtol = 2e-5) {
  if (t == DType::kF32) return f32_tol(f32_rtol);
  return {t == DType::kBF16 ? 2.0 / 128 : 2.0 / 1024, 1e-4};
}

const char* norm_name(NormKind n) { return n == NormKind::kRmsNorm ? "rms" : "ln"; }
const char* act_name(MlpActivation k) {
  return k == MlpActivation::kTanh ? "tanh" : (k == MlpActivation::kExact ? "erf" : "relu2");
}

constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};

void add_embedding_rows(std::vector<OpRow>& rows) {
  for (const bool pos : {true, false}) {
    const int B = 2, T = 5, C = 7, V = 11;
    const std::string shape = fmt::format("B={} T={} C={} V={}{}", B, T, C, V, pos ? "" : " nopos");
    rows.push_back(make_row(
        "encoder_forward", DType::kF32, shape,
        {out("out", B * T * C), tokens("inp", B * T, V), in("wte", V * C), in("wpe", T * C)},
        f32_tol(), [=](auto& ops, const RowTensors& t) {
          ops.encoder_forward(t.f("out"), t.i("inp"), t.f("wte"), pos ? t.f("wpe") : nullptr, B, T,
                              C);
          return 0.0;
        }));
    rows.push_back(make_row(
        "encoder_backward", DType::kF32, shape,
        {out("dwte", V * C), out("dwpe", T * C), in("dout", B * T * C), tokens("inp", B * T, V)},
        f32_tol(), [=](auto& ops, const RowTensors& t) {
          ops.encoder_backward(t.f("dwte"), pos ? t.f("dwpe") : nullptr, t.f("dout"), t.i("inp"),
                               B, T, C);
          return 0.0;
        }));
  }
}

void add_norm_rows(std::vector<OpRow>& rows) {
  for (const DType dt : kDtypes) {
    for (const NormKind norm : {NormKind::kLayerNorm, NormKind::kRmsNorm}) {
      for (const auto& [N, C] : {std::pair{7, 33}, std::pair{64, 128}}) {
        const std::string shape = fmt::format("N={} C={} {}", N, C, norm_name(norm));
        rows.push_back(make_row(
            "layernorm_forward", dt, shape,
            {out("out", N * C, dt), stat("mean", N), stat("rstd", N), in("inp", N * C),
             uni("w", C, 0.5f, 1.5f), in("b", C)},
            for_dtype(dt), [=](auto& ops, const RowTensors& t) {
              ops.layernorm_forward(t.p("out"), t.f("mean"), t.f("rstd"), t.f("inp"), t.f("w"),
                                    t.f("b"), N, C, norm);
              return 0.0;
            }));
        rows.push_back(make_row(
            "layernorm_backward", dt, shape,
            {scratch("y", N * C, dt), stat("mean", N), stat("rstd", N), in("inp", N * C),
             uni("w", C, 0.5f, 1.5f), in("b", C), in("dout", N * C, dt), out("dinp", N * C),
             out("dw", C), out("db", C)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.layernorm_forward(t.p("y"), t.f("mean"), t.f("rstd"), t.f("inp"), t.f("w"),
                                    t.f("b"), N, C, norm);
              ops.layernorm_backward(t.f("dinp"), t.f("dw"), t.f("db"), t.c("dout"), t.f("inp"),
                                     t.f("w"), t.f("mean"), t.f("rstd"), N, C, norm);
              return 0.0;
            }));
        for (const float w : {1.0f, 0.5f}) {
          rows.push_back(make_row(
              "residual_layernorm_forward", dt, shape + fmt::format(" w={}", w),
              {out("res", N * C), out("out", N * C, dt), stat("mean", N), stat("rstd", N),
               in("a", N * C), in("b", N * C), uni("g", C, 0.5f, 1.5f), in("bias", C)},
              for_dtype(dt), [=](auto& ops, const RowTensors& t) {
                ops.residual_layernorm_forward(t.f("res"), t.p("out"), t.f("mean"), t.f("rstd"),
                                               t.f("a"), t.f("b"), t.f("g"), t.f("bias"), N, C,
                                               norm, w);
                return 0.0;
              }));
        }
      }
    }
  }
}

void add_matmul_rows(std::vector<OpRow>& rows) {
  struct Shape {
    int N, C, OC;
  };
  for (const DType dt : kDtypes) {
    for (const Shape s : {Shape{5, 17, 23}, Shape{64, 128, 96}}) {
      const int N = s.N, C = s.C, OC = s.OC;
      for (const bool bias : {true, false}) {
        const std::string shape = fmt::format("N={} C={} OC={}{}", N, C, OC, bias ? "" : " nobias");
        rows.push_back(make_row(
            "matmul_forward", dt, shape,
            {out("out", N * OC, dt), in("inp", N * C, dt), in("w", OC * C, dt), in("b", OC)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.matmul_forward(t.p("out"), t.c("inp"), t.c("w"), bias ? t.f("b") : nullptr, N,
                                 C, OC);
              return 0.0;
            }));
        rows.push_back(make_row(
            "matmul_backward", dt, shape,
            {out("dinp", N * C, dt), out("dw", OC * C), out("db", OC), in("dout", N * OC, dt),
             in("inp", N * C, dt), in("w", OC * C, dt)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.matmul_backward(t.p("dinp"), t.f("dw"), bias ? t.f("db") : nullptr, t.c("dout"),
                                  t.c("inp"), t.c("w"), N, C, OC);
              return 0.0;
            }));
        rows.push_back(make_row(
            "matmul_backward_overwrite", dt, shape,
            {out("dinp", N * C, dt), out("dw", OC * C), out("db", OC), in("dout", N * OC, dt),
             in("inp", N * C, dt), in("w", OC * C, dt)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.matmul_backward_overwrite(t.p("dinp"), t.f("dw"), bias ? t.f("db") : nullptr,
                                            t.c("dout"), t.c("inp"), t.c("w"), N, C, OC);
              return 0.0;
            }));
      }
      const std::string shape = fmt::format("N={} C={} OC={}", N, C, OC);
      if (dt != DType::kF32) {  // the classifier's: 16-bit operands, float32 logits
        rows.push_back(make_row(
            "matmul_forward", dt, shape + " out=f32",
            {out("out", N * OC), in("inp", N * C, dt), in("w", OC * C, dt)}, f32_tol(1e-4),
            [=](auto& ops, const RowTensors& t) {
              ops.matmul_forward(t.p("out"), t.c("inp"), t.c("w"), nullptr, N, C, OC);
              return 0.0;
            }));
      }
      for (const MlpActivation k : {MlpActivation::kTanh, MlpActivation::kRelu2}) {
        const std::string ks = shape + " " + act_name(k);
        rows.push_back(make_row(
            "matmul_gelu_forward", dt, ks,
            {out("fch", N * OC, dt), out("fchg", N * OC, dt), in("inp", N * C, dt),
             in("w", OC * C, dt), in("b", OC)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.matmul_gelu_forward(t.p("fch"), t.p("fchg"), t.c("inp"), t.c("w"), t.f("b"), N,
                                      C, OC, k);
              return 0.0;
            }));
        // The MLP's second product: out (N, OC) = gelu(pre (N, C)) . w (OC, C)^T.
        rows.push_back(make_row(
            "gelu_matmul_backward", dt, ks,
            {out("dpre", N * C, dt), out("dw", OC * C), out("db", OC), in("dout", N * OC, dt),
             in("pre", N * C, dt), in("w", OC * C, dt)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.gelu_matmul_backward(t.p("dpre"), t.f("dw"), t.f("db"), t.c("dout"), t.c("pre"),
                                       t.c("w"), N, C, OC, k);
              return 0.0;
            }));
      }
    }
  }
}

void add_attention_rows(std::vector<OpRow>& rows) {
  struct Shape {
    int B, T, C, NH;
  };
  for (const DType dt : kDtypes) {
    // heads of 16, 64 (the GPU's flash kernels in bfloat16) and 32 (its any-head kernel, as the
    // CPU speedrun recipe's)
    for (const Shape s : {Shape{2, 9, 32, 2}, Shape{1, 64, 128, 2}, Shape{2, 33, 96, 3}}) {
      const int B = s.B, T = s.T, C = s.C, NH = s.NH;
      for (const float p : {0.0f, 0.1f}) {
        if (p > 0 && dt != DType::kF32) continue;  // the 16-bit masks are drawn per batch group
        const std::string shape = fmt::format("B={} T={} C={} NH={}{}", B, T, C, NH,
                                              p > 0 ? " dropout" : "");
        const int64_t n = int64_t{B} * T * C;
        rows.push_back(make_row(
            "attention_forward", dt, shape,
            {out("out", n, dt), stat("lse", int64_t{B} * NH * T), in("qkv", 3 * n, dt)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.attention_forward(t.p("out"), t.f("lse"), t.c("qkv"), B, T, C, NH, p, 7);
              return 0.0;
            }));
        rows.push_back(make_row(
            "attention_backward", dt, shape,
            {scratch("out", n, dt), scratch("lse", int64_t{B} * NH * T), in("qkv", 3 * n, dt),
             in("dout", n, dt), out("dqkv", 3 * n, dt)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.attention_forward(t.p("out"), t.f("lse"), t.c("qkv"), B, T, C, NH, p, 7);
              ops.attention_backward(t.p("dqkv"), t.c("dout"), t.c("out"), t.f("lse"), t.c("qkv"),
                                     B, T, C, NH, p, 7);
              return 0.0;
            }));
        if (dt != DType::kF32) continue;  // attention = 'naive' runs in float32 only
        const int64_t att = int64_t{B} * NH * T * T;
        rows.push_back(make_row(
            "attention_naive_forward", dt, shape,
            {out("out", n), scratch("att", att), in("qkv", 3 * n)}, f32_tol(1e-4),
            [=](auto& ops, const RowTensors& t) {
              ops.attention_naive_forward(t.f("out"), t.f("att"), t.f("qkv"), B, T, C, NH, p, 7);
              return 0.0;
            }));
        rows.push_back(make_row(
            "attention_naive_backward", dt, shape,
            {scratch("out", n), scratch("att", att), in("qkv", 3 * n), in("dout", n),
             out("dqkv", 3 * n)},
            f32_tol(1e-4), [=](auto& ops, const RowTensors& t) {
              ops.attention_naive_forward(t.f("out"), t.f("att"), t.f("qkv"), B, T, C, NH, p, 7);
              ops.attention_naive_backward(t.f("dqkv"), t.f("dout"), t.f("att"), t.f("qkv"), B, T,
                                           C, NH, p, 7);
              return 0.0;
            }));
      }
    }
  }
  // Sampling's one query against a KV cache of 16 rows, 7 of them valid.
  const int C = 32, NH = 4, t_valid = 7, maxT = 16;
  rows.push_back(make_row(
      "attention_decode", DType::kF32, fmt::format("t={} C={} NH={}", t_valid, C, NH),
      {out("out", C), in("q", C), in("k", maxT * C), in("v", maxT * C)}, f32_tol(1e-4),
      [=](auto& ops, const RowTensors& t) {
        ops.attention_decode(t.f("out"), t.f("q"), t.f("k"), t.f("v"), t_valid, C, NH);
        return 0.0;
      }));
}

void add_elementwise_rows(std::vector<OpRow>& rows) {
  const int64_t N = 1001;
  for (const DType dt : kDtypes) {
    for (const MlpActivation k :
         {MlpActivation::kTanh, MlpActivation::kExact, MlpActivation::kRelu2}) {
      const std::string shape = fmt::format("N={} {}", N, act_name(k));
      rows.push_back(make_row("gelu_forward", dt, shape, {out("out", N, dt), in("inp", N, dt)},
                              for_dtype(dt), [=](auto& ops, const RowTensors& t) {
                                ops.gelu_forward(t.p("out"), t.c("inp"), N, k);
                                return 0.0;
                              }));
      rows.push_back(make_row("gelu_backward", dt, shape,
                              {out("dinp", N, dt), in("inp", N, dt), in("dout", N, dt)},
                              for_dtype(dt), [=](auto& ops, const RowTensors& t) {
                                ops.gelu_backward(t.p("dinp"), t.c("inp"), t.c("dout"), N, k);
                                return 0.0;
                              }));
      rows.push_back(make_row(
          "gelu_backward_overwrite", dt, shape,
          {out("dinp", N, dt), in("inp", N, dt), in("dout", N, dt)}, for_dtype(dt),
          [=](auto& ops, const RowTensors& t) {
            ops.gelu_backward_overwrite(t.p("dinp"), t.c("inp"), t.c("dout"), N, k);
            return 0.0;
          }));
    }
    for (const auto& [to, from] : {std::pair{dt, DType::kF32}, std::pair{DType::kF32, dt}}) {
      if (to == from) continue;
      rows.push_back(make_row(
          "convert", dt, fmt::format("N={} {}->{}", N, dtype_name(from), dtype_name(to)),
          {out("dst", N, to), in("src", N, from)}, for_dtype(to),
          [=](auto& ops, const RowTensors& t) {
            ops.convert(t.p("dst"), t.c("src"), N);
            return 0.0;
          }));
    }
    rows.push_back(make_row("fill_zero", dt, fmt::format("N={}", N), {out("dst", N, dt)},
                            for_dtype(dt), [=](auto& ops, const RowTensors& t) {
                              ops.fill_zero(t.p("dst"), N);
                              return 0.0;
                            }));
  }
  rows.push_back(make_row("convert", DType::kF16, fmt::format("N={} float32->float16", N),
                          {out("dst", N, DType::kF16), in("src", N)}, for_dtype(DType::kF16),
                          [=](auto& ops, const RowTensors& t) {
                            ops.convert(t.p("dst"), t.c("src"), N);
                            return 0.0;
                          }));
  const std::string shape = fmt::format("N={}", N);
  rows.push_back(make_row("residual_forward", DType::kF32, shape,
                          {out("out", N), in("a", N), in("b", N)}, f32_tol(),
                          [=](auto& ops, const RowTensors& t) {
                            ops.residual_forward(t.f("out"), t.f("a"), t.f("b"), N);
                            return 0.0;
                          }));
  // More than one of the skip sum's 4096-element spans.
  const int64_t NS = 5000;
  rows.push_back(make_row("skip_forward", DType::kF32, fmt::format("N={}", NS),
                          {out("out", NS), in("x", NS), in("skip", NS)}, f32_tol(),
                          [=](auto& ops, const RowTensors& t) {
                            ops.skip_forward(t.f("out"), t.f("x"), t.f("skip"), 0.7f, NS);
                            return 0.0;
                          }));
  rows.push_back(make_row("skip_backward", DType::kF32, fmt::format("N={}", NS),
                          {out("dskip", NS), in("dout", NS), in("skip", NS)}, f32_tol(),
                          [=](auto& ops, const RowTensors& t) {
                            return ops.skip_backward(t.f("dskip"), t.f("dout"), t.f("skip"), 0.7f,
                                                     NS);
                          }));
  const float p = 0.2f;
  const std::string dshape = fmt::format("N={} p={}", N, p);
  rows.push_back(make_row("dropout_forward", DType::kF32, dshape, {out("out", N), in("inp", N)},
                          f32_tol(), [=](auto& ops, const RowTensors& t) {
                            ops.dropout_forward(t.f("out"), t.f("inp"), N, p, 11);
                            return 0.0;
                          }));
  rows.push_back(make_row("dropout_backward", DType::kF32, dshape, {out("dinp", N), in("dout", N)},
                          f32_tol(), [=](auto& ops, const RowTensors& t) {
                            ops.dropout_backward(t.f("dinp"), t.f("dout"), N, p, 11);
                            return 0.0;
                          }));
  rows.push_back(make_row("dropout_backward_overwrite", DType::kF32, dshape,
                          {out("dinp", N), in("dout", N)}, f32_tol(),
                          [=](auto& ops, const RowTensors& t) {
                            ops.dropout_backward_overwrite(t.f("dinp"), t.f("dout"), N, p, 11);
                            return 0.0;
                          }));
}

void add_classifier_rows(std::vector<OpRow>& rows) {
  const int N = 9, V = 50, Vp = 64;
  const std::string shape = fmt::format("N={} V={} Vp={}", N, V, Vp);
  const float dloss = 0.37f, cap = 15.0f;
  rows.push_back(make_row("crossentropy_forward", DType::kF32, shape,
                          {out("losses", N), uni("logits", N * Vp, -4, 4), targets("tg", N, V)},
                          f32_tol(1e-5), [=](auto& ops, const RowTensors& t) {
                            ops.crossentropy_forward(t.f("losses"), t.f("logits"), t.i("tg"), N, V,
                                                     Vp);
                            return 0.0;
                          }));
  rows.push_back(make_row(
      "crossentropy_forward_backward", DType::kF32, shape,
      {out("losses", N), out("dlogits", N * Vp), uni("logits", N * Vp, -4, 4), targets("tg", N, V)},
      f32_tol(1e-5), [=](auto& ops, const RowTensors& t) {
        ops.crossentropy_forward_backward(t.f("losses"), t.f("dlogits"), t.f("logits"), t.i("tg"),
                                          dloss, N, V, Vp);
        return 0.0;
      }));
  // In place, as the model runs it: the gradient overwrites the logits.
  rows.push_back(make_row(
      "crossentropy_forward_backward", DType::kF32, shape + " in-place",
      {out("losses", N), out("z", N * Vp), targets("tg", N, V)}, f32_tol(1e-5),
      [=](auto& ops, const RowTensors& t) {
        ops.crossentropy_forward_backward(t.f("losses"), t.f("z"), t.f("z"), t.i("tg"), dloss, N,
                                          V, Vp);
        return 0.0;
      }));
  rows.push_back(make_row("softcap_forward", DType::kF32, fmt::format("N={} cap={}", N * Vp, cap),
                          {out("z", N * Vp)}, f32_tol(1e-5), [=](auto& ops, const RowTensors& t) {
                            ops.softcap_forward(t.f("z"), N * Vp, cap);
                            return 0.0;
                          }));
  rows.push_back(make_row(
      "crossentropy_softcap_forward_backward", DType::kF32, shape + fmt::format(" cap={}", cap),
      {out("losses", N), out("dlogits", N * Vp), uni("logits", N * Vp, -30, 30),
       targets("tg", N, V)},
      f32_tol(1e-5), [=](auto& ops, const RowTensors& t) {
        ops.crossentropy_softcap_forward_backward(t.f("losses"), t.f("dlogits"), t.f("logits"),
                                                  t.i("tg"), dloss, N, V, Vp, cap);
        return 0.0;
      }));
}

void add_qk_rows(std::vector<OpRow>& rows) {
  for (const DType dt : kDtypes) {
    for (const auto& [C, NH] : {std::pair{48, 3}, std::pair{128, 2}}) {
      for (const int parts : {1, 2, 3}) {  // 1 QK-norm, 2 rotary, 3 both
        const bool norm = parts & 1, rotary = parts & 2;
        const int N = 10, T = 4, pos0 = 3, HS = C / NH;
        const float gain = norm ? 2.5f : 1.0f;
        const std::string shape = fmt::format("N={} T={} C={} NH={}{}{}", N, T, C, NH,
                                              norm ? " norm" : "", rotary ? " rotary" : "");
        const int64_t table = int64_t{T + pos0} * (HS / 2);
        rows.push_back(make_row(
            "qk_norm_rotary_forward", dt, shape,
            {out("qkv", int64_t{N} * 3 * C, dt), stat("rstd", int64_t{N} * 2 * NH),
             uni("cos", table, -1, 1), uni("sin", table, -1, 1)},
            for_dtype(dt), [=](auto& ops, const RowTensors& t) {
              ops.qk_norm_rotary_forward(t.p("qkv"), norm ? t.f("rstd") : nullptr,
                                         rotary ? t.f("cos") : nullptr,
                                         rotary ? t.f("sin") : nullptr, N, T, pos0, C, NH, gain);
              return 0.0;
            }));
        rows.push_back(make_row(
            "qk_norm_rotary_backward", dt, shape,
            {in("qkv", int64_t{N} * 3 * C, dt), stat("rstd", int64_t{N} * 2 * NH),
             uni("cos", table, -1, 1), uni("sin", table, -1, 1), out("dqkv", int64_t{N} * 3 * C, dt)},
            for_dtype(dt, 1e-4), [=](auto& ops, const RowTensors& t) {
              ops.qk_norm_rotary_forward(t.p("qkv"), norm ? t.f("rstd") : nullptr,
                                         rotary ? t.f("cos") : nullptr,
                                         rotary ? t.f("sin") : nullptr, N, T, pos0, C, NH, gain);
              ops.qk_norm_rotary_backward(t.p("dqkv"), t.c("qkv"), norm ? t.f("rstd") : nullptr,
                                          rotary ? t.f("cos") : nullptr,
                                          rotary ? t.f("sin") : nullptr, N, T, pos0, C, NH, gain);
              return 0.0;
            }));
      }
    }
  }
}

// The optimizer ops (kernels/optimizer_ops.h) over a table of three tensors that leaves gaps in
// the arena (elements no span names must stay as they were: compared too), one a few elements
// long, one past a CPU thread's slice and the 2048-element blocks of the fused AdamW pass.
void add_optimizer_rows(std::vector<OpRow>& rows) {
  const int64_t n = 6200;
  const std::vector<TensorSpan> spans = {{0, 37}, {40, 1000}, {1100, 5000}};
  const std::string shape = "n=6200 spans=37,1000,5000";
  AdamWConstants k;
  k.b1 = 0.9f;
  k.one_minus_b1 = 0.1f;
  k.b2 = 0.95f;
  k.one_minus_b2 = 0.05f;
  k.bc2_sqrt = 0.3f;
  k.eps = 1e-8f;
  std::vector<AdamWTensorStep> adam;
  for (size_t i = 0; i < spans.size(); ++i) {
    adam.push_back({spans[i], 1e-2f * float(i + 1), i == 1 ? 1.0f : 0.999f});
  }
  for (const bool fused : {false, true}) {
    const GradTransform x{0.5f, 0.75f, true};
    std::vector<TensorSpec> t = {out("p", n), uni("m", n, -0.1f, 0.1f), uni("v", n, 0.01f, 1.0f),
                                 fused ? out("g", n) : in("g", n)};
    t[1].compared = t[2].compared = true;
    if (fused) t.push_back(out("lowp", n, DType::kBF16));
    rows.push_back(make_row(
        "adamw_step", DType::kF32, shape + (fused ? " fused unscale clip zero bf16-copy" : ""), t,
        f32_tol(1e-5), [=](auto& ops, const RowTensors& r) {
          ops.adamw_step({r.f("p"), r.f("g"), r.f("m"), r.f("v")}, adam, k, fused ? &x : nullptr,
                         fused ? r.p("lowp") : TypedPtr());
          return 0.0;
        }));
  }
  std::vector<SgdTensorStep> sgd;
  for (size_t i = 0; i < spans.size(); ++i) sgd.push_back({spans[i], i == 1 ? 0.0f : 0.1f});
  for (const bool momentum : {false, true}) {
    std::vector<TensorSpec> t = {out("p", n), in("g", n)};
    if (momentum) t.push_back(out("b", n));
    rows.push_back(make_row("sgd_step", DType::kF32, shape + (momentum ? " momentum" : ""), t,
                            f32_tol(), [=](auto& ops, const RowTensors& r) {
                              ops.sgd_step(r.f("p"), r.f("g"), momentum ? r.f("b") : nullptr, sgd,
                                           0.05f, 0.9f);
                              return 0.0;
                            }));
  }
  rows.push_back(make_row("sum_of_squares", DType::kF32, shape + " unscale 1/8", {in("g", n)},
                          f32_tol(1e-9), [=](auto& ops, const RowTensors& r) {
                            return ops.sum_of_squares(r.f("g"), spans, 0.125f);
                          }));
  rows.push_back(make_row("scale_tensors", DType::kF32, shape, {out("g", n)}, f32_tol(),
                          [=](auto& ops, const RowTensors& r) {
                            ops.scale_tensors(r.f("g"), spans, 0.3f);
                            return 0.0;
                          }));
  rows.push_back(make_row("scale_and_check_finite", DType::kF32, "n=6200", {out("g", n)},
                          f32_tol(), [=](auto& ops, const RowTensors& r) {
                            return ops.scale_and_check_finite(r.f("g"), n, 0.25f) ? 1.0 : 0.0;
                          }));
  // Past the CPU's one-thread limit (2^15 elements) too.
  for (const int64_t m : {int64_t{777}, int64_t{40000}}) {
    const std::string s = fmt::format("n={}", m);
    rows.push_back(make_row("lerp_toward", DType::kF32, s, {out("avg", m), in("x", m)}, f32_tol(),
                            [=](auto& ops, const RowTensors& r) {
                              ops.lerp_toward(r.f("avg"), r.f("x"), m, 0.9f);
                              return 0.0;
                            }));
    for (const bool nesterov : {false, true}) {
      rows.push_back(make_row("muon_momentum", DType::kF32, s + (nesterov ? " nesterov" : ""),
                              {out("buf", m), out("d", m), in("g", m)}, f32_tol(),
                              [=](auto& ops, const RowTensors& r) {
                                ops.muon_momentum(r.f("buf"), r.f("d"), r.f("g"), m, 0.95f,
                                                  nesterov);
                                return 0.0;
                              }));
    }
    rows.push_back(make_row("muon_update", DType::kF32, s, {out("p", m), in("o", m)}, f32_tol(),
                            [=](auto& ops, const RowTensors& r) {
                              ops.muon_update(r.f("p"), r.f("o"), m, 0.999f, 0.02f);
                              return 0.0;
                            }));
    rows.push_back(make_row("frobenius_sum_sq", DType::kF32, s, {in("m", m)}, f32_tol(1e-9),
                            [=](auto& ops, const RowTensors& r) {
                              return ops.frobenius_sum_sq(r.f("m"), m);
                            }));
    rows.push_back(make_row("normalize_frobenius", DType::kF32, s, {out("x", m), in("m", m)},
                            f32_tol(), [=](auto& ops, const RowTensors& r) {
                              ops.normalize_frobenius(r.f("x"), r.f("m"), m, 1e-7);
                              return 0.0;
                            }));
    rows.push_back(make_row("scale_add", DType::kF32, s, {out("x", m), in("y", m)}, f32_tol(),
                            [=](auto& ops, const RowTensors& r) {
                              ops.scale_add(r.f("x"), r.f("y"), m, 3.4445f);
                              return 0.0;
                            }));
    rows.push_back(make_row("combine", DType::kF32, s, {out("out", m), in("u", m), in("v", m)},
                            f32_tol(1e-4), [=](auto& ops, const RowTensors& r) {
                              ops.combine(r.f("out"), r.f("u"), r.f("v"), m, -4.775f, 2.0315f);
                              return 0.0;
                            }));
  }
}

}  // namespace

std::vector<OpRow> op_table() {
  std::vector<OpRow> rows;
  add_embedding_rows(rows);
  add_norm_rows(rows);
  add_matmul_rows(rows);
  add_attention_rows(rows);
  add_elementwise_rows(rows);
  add_classifier_rows(rows);
  add_qk_rows(rows);
  add_optimizer_rows(rows);
  return rows;
}

}  // namespace nanogpt::testing
