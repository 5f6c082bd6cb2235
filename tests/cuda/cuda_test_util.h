// Shared helpers for the CUDA tests (tests/cuda/), namespace nanogpt::cuda::testing_cuda: skipping
// without a device (SKIP_WITHOUT_CUDA_DEVICE(), or the CudaTest fixture, which also holds one
// CudaContext per test suite), device tensors of a dtype filled from float vectors (DeviceTensor)
// or typed RAII buffers (device_memory.h's DeviceBuffer), seeded random host data, bfloat16 host
// conversions (core/float16.h), tolerance comparisons and median_ms for the TimingReport tests.
// Compiled by the host compiler: of CUDA's headers only cuda_runtime.h (events) here.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/float16.h"
#include "core/rng.h"
#include "kernels/cuda/cuda_context.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/dtype.h"

// In a test body (or SetUp): skips the test when no CUDA device is usable, saying why.
#define SKIP_WITHOUT_CUDA_DEVICE()                         \
  do {                                                     \
    std::string nanogpt_why_;                              \
    if (!::nanogpt::cuda::device_available(&nanogpt_why_)) \
      GTEST_SKIP() << "no CUDA device: " << nanogpt_why_;  \
  } while (0)

namespace nanogpt::cuda::testing_cuda {

// Fixture: every test skips without a device; ctx() is one CudaContext (TF32 allowed) per test
// suite, created on first use and destroyed after the suite's last test.
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override { SKIP_WITHOUT_CUDA_DEVICE(); }
  static void TearDownTestSuite() { context().reset(); }
  static CudaContext& ctx() {
    auto& c = context();
    if (!c) c = std::make_unique<CudaContext>();
    return *c;
  }

 private:
  static std::unique_ptr<CudaContext>& context() {
    static std::unique_ptr<CudaContext> c;
    return c;
  }
};

// The parameterized twin of CudaTest.
template <typename Param>
class CudaTestWithParam : public CudaTest, public ::testing::WithParamInterface<Param> {};

// ---- host data ----

inline std::vector<float> random_normal(size_t n, uint64_t seed, float stddev = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = stddev * rng.normal();
  return v;
}
inline std::vector<float> random_vector(int64_t n, uint64_t seed, float stddev = 1.0f) {
  return random_normal(static_cast<size_t>(n), seed, stddev);
}

inline std::vector<float> random_uniform(size_t n, uint64_t seed, float lo, float hi) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

// bfloat16 bit patterns <-> float (round to nearest even).
inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = float_to_bf16(v[i]);
  return h;
}
inline std::vector<float> from_bf16(const std::vector<uint16_t>& h) {
  std::vector<float> v(h.size());
  for (size_t i = 0; i < h.size(); ++i) v[i] = bf16_to_float(h[i]);
  return v;
}

// v as a tensor of `dtype` holds it: rounded to nearest even (float32: unchanged).
inline std::vector<float> rounded(const std::vector<float>& v, DType dtype) {
  std::vector<float> r(v);
  if (dtype == DType::kBF16) {
    for (auto& x : r) x = bf16_to_float(float_to_bf16(x));
  } else if (dtype == DType::kF16) {
    for (auto& x : r) x = fp16_to_float(float_to_fp16(x));
  }
  return r;
}
inline std::vector<float> bf16_rounded(const std::vector<float>& v) {
  return rounded(v, DType::kBF16);
}

inline constexpr uint16_t kBf16NaN = 0x7FC0;

// ---- device memory ----

// A device buffer holding `v`.
template <typename T>
DeviceBuffer<T> to_device(const std::vector<T>& v, const char* what = "a test buffer") {
  DeviceBuffer<T> d(v.size(), what);
  d.upload(v);
  return d;
}

// ---- timing (the TimingReport tests: figures printed, nothing asserted) ----

// Median milliseconds of 10 runs of f after 3 warm-ups (cudaEvents on the default stream).
inline double median_ms(const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int i = 0; i < 10; ++i) {
    cudaEventRecord(start);
    f();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  return 0.5 * (ms[4] + ms[5]);
}

// Device buffers filled with NaN (float32, or bf16 bit patterns): outputs a kernel fails to write
// then fail the comparison.
inline DeviceBuffer<float> poisoned_f32(size_t n) {
  return to_device(std::vector<float>(n, std::numeric_limits<float>::quiet_NaN()), "poisoned");
}
inline DeviceBuffer<uint16_t> poisoned_bf16(size_t n) {
  return to_device(std::vector<uint16_t>(n, kBf16NaN), "poisoned bf16");
}

// A device tensor of n elements of `dtype` (float32, bfloat16 or float16), starting `offset`
// elements into its allocation (offset > 0: a less aligned pointer), filled from and read back as
// float vectors (rounded to the dtype on the way in).
class DeviceTensor {
 public:
  DeviceTensor(const std::vector<float>& v, DType dtype, int64_t offset = 0)
      : n_(static_cast<int64_t>(v.size())),
        offset_(offset),
        dtype_(dtype),
        buf_(static_cast<size_t>(n_ + offset) * dtype_size(dtype) + 1, "a test tensor") {
    upload(v);
  }
  // n elements of NaN.
  static DeviceTensor nan(int64_t n, DType dtype, int64_t offset = 0) {
    return DeviceTensor(
        std::vector<float>(static_cast<size_t>(n), std::numeric_limits<float>::quiet_NaN()), dtype,
        offset);
  }

  TypedPtr ptr() const {
    return {const_cast<std::byte*>(buf_.data()) + offset_ * dtype_size(dtype_), dtype_};
  }
  int64_t size() const { return n_; }
  DType dtype() const { return dtype_; }

  void upload(const std::vector<float>& v) {
    const size_t n = static_cast<size_t>(n_);
    if (dtype_ == DType::kF32) {
      copy_to_device(ptr().data, v.data(), n * 4);
      return;
    }
    std::vector<uint16_t> h(n);
    for (size_t i = 0; i < n; ++i) {
      h[i] = dtype_ == DType::kBF16 ? float_to_bf16(v[i]) : float_to_fp16(v[i]);
    }
    copy_to_device(ptr().data, h.data(), n * 2);
  }
  std::vector<float> download() const {
    const size_t n = static_cast<size_t>(n_);
    std::vector<float> v(n);
    if (dtype_ == DType::kF32) {
      copy_to_host(v.data(), ptr().data, n * 4);
      return v;
    }
    std::vector<uint16_t> h(n);
    copy_to_host(h.data(), ptr().data, n * 2);
    for (size_t i = 0; i < n; ++i) {
      v[i] = dtype_ == DType::kBF16 ? bf16_to_float(h[i]) : fp16_to_float(h[i]);
    }
    return v;
  }

 private:
  int64_t n_, offset_;
  DType dtype_;
  DeviceBuffer<std::byte> buf_;
};

// ---- comparison ----

// max |got - want| / max |want - base| (base null: zeros): the error relative to the largest
// expected value (or change, for outputs that accumulate onto `base`); infinity when any element
// of got is NaN or the sizes differ.
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want,
                             const std::vector<float>* base = nullptr) {
  if (got.size() != want.size() || (base && base->size() != want.size())) {
    return std::numeric_limits<double>::infinity();
  }
  double err = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e == e)) return std::numeric_limits<double>::infinity();
    err = std::fmax(err, e);
    scale = std::fmax(scale, std::fabs(static_cast<double>(want[i]) - (base ? (*base)[i] : 0.0f)));
  }
  return err / std::fmax(scale, 1e-30);
}

// Every |got[i] - want[i]| <= atol + rtol * |want[i]| (NaN fails); reports the first 5 failures.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                         double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double tol = atol + rtol * std::fabs(static_cast<double>(want[i]));
    if (!(err <= tol) && failures++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << " want " << want[i] << " err "
                    << err << " > tol " << tol;
    }
  }
  EXPECT_EQ(failures, 0) << what << ": " << failures << " of " << got.size() << " elements off";
}

// Largest |v[i]|, for tolerances relative to a tensor's scale.
inline double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::fmax(m, std::fabs(static_cast<double>(x)));
  return m;
}

}  // namespace nanogpt::cuda::testing_cuda
