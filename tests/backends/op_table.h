// The op table of the backend harness (llama.cpp's test-backend-ops as the model): each row is one
// op of kernels/backend.h at one dtype and shape (odd shapes included), forward or backward, with
// its tensors (made on the host from fixed seeds), the tolerance of its comparison, and its call
// written once as a generic lambda that runs on the scalar reference (RefOps) and on any Backend.
// The runner (backend_ops_test.cpp) puts the inputs in each backend's memory, runs the row, brings
// the outputs back and compares them with the reference's: max error against the reference's
// magnitude, normalized squared error, and no NaN or Inf.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/dtype.h"
#include "ref_ops.h"

namespace nanogpt::testing {

// How a tensor starts: values from a fixed seed, zeros, token ids below `hi`, or targets below
// `hi` with every fifth -1 (ignored).
enum class Fill { kNormal, kUniform, kZero, kTokens, kTargets };

struct TensorSpec {
  std::string name;
  DType dtype = DType::kF32;
  int64_t numel = 0;
  Fill fill = Fill::kNormal;
  float lo = -1.0f, hi = 1.0f;  // kUniform's range; kTokens / kTargets: ids below hi
  bool compared = false;        // an output (or an in-place tensor): compared after the op
  bool ints = false;            // int32 (token ids, targets)
};

// The tensors of a row as one side (the reference's host, or a backend's memory) holds them.
class RowTensors {
 public:
  struct Slot {
    void* data = nullptr;
    DType dtype = DType::kF32;
  };
  void set(const std::string& name, Slot s) { slots_[name] = s; }
  float* f(const std::string& name) const { return static_cast<float*>(at(name).data); }
  int* i(const std::string& name) const { return static_cast<int*>(at(name).data); }
  TypedPtr p(const std::string& name) const { return {at(name).data, at(name).dtype}; }
  ConstTypedPtr c(const std::string& name) const { return {at(name).data, at(name).dtype}; }

 private:
  const Slot& at(const std::string& name) const;
  std::map<std::string, Slot> slots_;
};

// Per op: |got - want| <= rtol * (|want| + mean |want|) element by element, and the normalized
// squared error sum (got - want)^2 / sum want^2 <= nmse.
struct Tolerance {
  double rtol = 1e-5;
  double nmse = 1e-10;
};

struct OpRow {
  std::string op;     // the Backend method (kernels/backend.h), as the support matrix names it
  DType dtype;        // the row's tensor dtype (the activations')
  std::string shape;  // e.g. "N=7 C=33"
  std::vector<TensorSpec> tensors;
  Tolerance tol;
  // The call; returns the op's scalar result where it has one (skip_backward's sum), else 0.
  std::function<double(RefOps&, const RowTensors&)> on_ref;
  std::function<double(Backend&, const RowTensors&)> on_backend;
  std::string name() const;  // "op dtype shape"
};

// Makes a row whose call `f(ops, t)` is one generic lambda for both sides.
template <class F>
OpRow make_row(std::string op, DType dtype, std::string shape, std::vector<TensorSpec> tensors,
               Tolerance tol, F f) {
  OpRow r{std::move(op), dtype, std::move(shape), std::move(tensors), tol, {}, {}};
  r.on_ref = [f](RefOps& o, const RowTensors& t) -> double { return f(o, t); };
  r.on_backend = [f](Backend& o, const RowTensors& t) -> double { return f(o, t); };
  return r;
}

// Every row (op_table.cpp).
std::vector<OpRow> op_table();

}  // namespace nanogpt::testing
