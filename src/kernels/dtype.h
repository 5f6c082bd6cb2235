// DType: the storage type of a tensor (float32, bfloat16, float16) and TypedPtr, a pointer that
// knows the type of what it points to. The model holds its low-precision tensors this way, so that
// it names a precision, never a CPU type; kernels turn the DType into the right instantiation.
// Compute is always float32 (accumulation, statistics); 16-bit types are storage only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nanogpt {

enum class DType : uint8_t { kF32, kBF16, kF16 };

inline size_t dtype_size(DType t) { return t == DType::kF32 ? 4 : 2; }

// nanoGPT's names: "float32", "bfloat16", "float16".
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kBF16: return "bfloat16";
    case DType::kF16: return "float16";
  }
  return "?";
}

// The allowed names, for error messages.
inline constexpr const char* kDTypeNames = "'float32', 'bfloat16' or 'float16'";

// Parses nanoGPT's dtype names; false when `name` is none of them.
inline bool parse_dtype(std::string_view name, DType& out) {
  if (name == "float32") return out = DType::kF32, true;
  if (name == "bfloat16") return out = DType::kBF16, true;
  if (name == "float16") return out = DType::kF16, true;
  return false;
}

// A mutable pointer to elements of `dtype` (null allowed where an op says so).
struct TypedPtr {
  void* data = nullptr;
  DType dtype = DType::kF32;
  TypedPtr() = default;
  TypedPtr(void* d, DType t) : data(d), dtype(t) {}
  TypedPtr(float* f) : data(f), dtype(DType::kF32) {}  // NOLINT: float* is the common case
  explicit operator bool() const { return data != nullptr; }
  // The element at index i (byte arithmetic by the element size).
  TypedPtr at(int64_t i) const {
    return {static_cast<std::byte*>(data) + i * static_cast<int64_t>(dtype_size(dtype)), dtype};
  }
  float* f32() const { return dtype == DType::kF32 ? static_cast<float*>(data) : nullptr; }
};

// A read-only pointer to elements of `dtype`.
struct ConstTypedPtr {
  const void* data = nullptr;
  DType dtype = DType::kF32;
  ConstTypedPtr() = default;
  ConstTypedPtr(const void* d, DType t) : data(d), dtype(t) {}
  ConstTypedPtr(const float* f) : data(f), dtype(DType::kF32) {}  // NOLINT
  ConstTypedPtr(TypedPtr p) : data(p.data), dtype(p.dtype) {}     // NOLINT
  explicit operator bool() const { return data != nullptr; }
  ConstTypedPtr at(int64_t i) const {
    return {static_cast<const std::byte*>(data) + i * static_cast<int64_t>(dtype_size(dtype)),
            dtype};
  }
  const float* f32() const {
    return dtype == DType::kF32 ? static_cast<const float*>(data) : nullptr;
  }
};

}  // namespace nanogpt
