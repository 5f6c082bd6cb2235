// Reference forms of the fused MLP ops (ops_lowp.h: matmul_gelu_forward, gelu_matmul_backward):
// by definition the unfused sequence of reference ops, with every intermediate stored in the
// dtype the unfused path stores it in.
#include <cstring>
#include <vector>

#include "kernels/ops_lowp.h"

namespace nanogpt::ref {

namespace {

// A zeroed (n) tensor of `dtype` owned here.
struct Temp {
  std::vector<uint16_t> bits;
  std::vector<float> f32;
  DType dtype;
  Temp(int64_t n, DType t) : dtype(t) {
    if (t == DType::kF32) {
      f32.assign(static_cast<size_t>(n), 0.0f);
    } else {
      bits.assign(static_cast<size_t>(n), 0);
    }
  }
  TypedPtr ptr() {
    return dtype == DType::kF32 ? TypedPtr(f32.data()) : TypedPtr(bits.data(), dtype);
  }
};

}  // namespace

void matmul_gelu_forward(TypedPtr fch, TypedPtr fch_gelu, ConstTypedPtr inp, ConstTypedPtr weight,
                         const float* bias, int64_t N, int C, int OC, MlpActivation kind) {
  matmul_forward(fch, inp, weight, bias, N, C, OC);
  gelu_forward(fch_gelu, fch, N * OC, kind);
}

void gelu_matmul_backward(TypedPtr dpre, float* dweight, float* dbias, ConstTypedPtr dout,
                          ConstTypedPtr pre, ConstTypedPtr weight, int64_t N, int C, int OC,
                          MlpActivation kind) {
  const int64_t n = N * C;
  Temp act(n, pre.dtype), dact(n, dpre.dtype);  // gelu(pre) and its gradient, (N, C)
  gelu_forward(act.ptr(), pre, n, kind);
  matmul_backward(dact.ptr(), dweight, dbias, dout, act.ptr(), weight, N, C, OC);
  std::memset(dpre.data, 0, static_cast<size_t>(n) * dtype_size(dpre.dtype));
  gelu_backward(dpre, pre, dact.ptr(), n, kind);
}

}  // namespace nanogpt::ref
