// The backend harness: every row of the op table (op_table.h) on the scalar reference and on each
// backend, compared. One test per (row, backend): a backend that is not in this binary or finds no
// device skips its rows saying why; an op a present backend does not support is reported as not
// supported (never skipped in silence); BackendOps.SupportMatrix prints the whole matrix, op x
// dtype x backend (run it alone: test_backends --gtest_filter=BackendOps.SupportMatrix).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/float16.h"
#include "kernels/cpu_backend.h"
#include "op_table.h"
#if NANOGPT_TEST_CUDA
#include "kernels/cuda/cuda_backend.h"
#endif

namespace nanogpt::testing {
namespace {

// A backend the harness runs rows on: made when present, else the reason it is not.
struct BackendSlot {
  std::string name;
  std::function<std::unique_ptr<Backend>()> make;  // null when absent
  std::string absent_reason;
};

std::vector<BackendSlot> backend_slots() {
  std::vector<BackendSlot> slots;
  slots.push_back({"cpu", [] { return std::make_unique<CpuBackend>(); }, ""});
#if NANOGPT_TEST_CUDA
  std::string why;
  if (cuda::device_available(&why)) {
    slots.push_back({"cuda", [] { return std::make_unique<CudaBackend>(); }, ""});
  } else {
    slots.push_back({"cuda", nullptr, "no usable GPU here: " + why});
  }
#else
  slots.push_back({"cuda", nullptr,
                   "this build has no CUDA backend (built without nvcc, or -DNANOGPT_CUDA=OFF)"});
#endif
  return slots;
}

const std::vector<OpRow>& rows() {
  static const std::vector<OpRow> table = op_table();
  return table;
}

size_t spec_bytes(const TensorSpec& s) {
  return static_cast<size_t>(s.numel) * (s.ints ? sizeof(int) : dtype_size(s.dtype));
}

// The tensor's starting bytes (fixed seed per row and tensor).
std::vector<std::byte> initial_bytes(const TensorSpec& s, uint64_t seed) {
  std::vector<std::byte> bytes(spec_bytes(s));
  std::mt19937_64 gen(seed);
  if (s.ints) {
    std::vector<int> v(static_cast<size_t>(s.numel));
    std::uniform_int_distribution<int> id(0, static_cast<int>(s.hi) - 1);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = (s.fill == Fill::kTargets && i % 5 == 3) ? -1 : id(gen);
    }
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
  }
  std::vector<float> v(static_cast<size_t>(s.numel), 0.0f);
  if (s.fill == Fill::kNormal) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (float& x : v) x = nd(gen);
  } else if (s.fill == Fill::kUniform) {
    std::uniform_real_distribution<float> ud(s.lo, s.hi);
    for (float& x : v) x = ud(gen);
  }
  if (s.dtype == DType::kF32) {
    std::memcpy(bytes.data(), v.data(), bytes.size());
  } else {
    std::vector<uint16_t> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      h[i] = s.dtype == DType::kBF16 ? float_to_bf16(v[i]) : float_to_fp16(v[i]);
    }
    std::memcpy(bytes.data(), h.data(), bytes.size());
  }
  return bytes;
}

std::vector<double> as_doubles(const TensorSpec& s, const std::vector<std::byte>& bytes) {
  std::vector<double> v(static_cast<size_t>(s.numel));
  for (size_t i = 0; i < v.size(); ++i) {
    if (s.dtype == DType::kF32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      v[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = s.dtype == DType::kBF16 ? bf16_to_float(h) : fp16_to_float(h);
    }
  }
  return v;
}

// Compares one output: NaN/Inf, the per-element error bound, the normalized squared error.
void expect_close(const std::string& what, const std::vector<double>& got,
                  const std::vector<double>& want, const Tolerance& tol) {
  double mean_abs = 0, err2 = 0, ref2 = 0;
  for (double w : want) mean_abs += std::fabs(w);
  mean_abs /= want.empty() ? 1.0 : double(want.size());
  int reported = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!std::isfinite(got[i]) && std::isfinite(want[i])) {
      if (reported++ < 3) ADD_FAILURE() << what << "[" << i << "] = " << got[i] << " (not finite)";
      continue;
    }
    const double e = std::fabs(got[i] - want[i]);
    err2 += e * e;
    ref2 += want[i] * want[i];
    const double bound = tol.rtol * (std::fabs(want[i]) + mean_abs);
    worst = std::max(worst, bound > 0 ? e / bound : e);
    if (!(e <= bound) && reported++ < 3) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", reference " << want[i]
                    << " (error " << e << ", bound " << bound << ")";
    }
  }
  const double nmse = ref2 > 0 ? err2 / ref2 : err2;
  EXPECT_LE(nmse, tol.nmse) << what << ": normalized squared error";
  (void)worst;
}

// Runs row r on the reference: the compared tensors' final bytes (name -> bytes) and the scalar.
struct Result {
  std::map<std::string, std::vector<std::byte>> bytes;
  double scalar = 0;
};

Result run_on_reference(const OpRow& r, uint64_t seed) {
  std::map<std::string, std::vector<std::byte>> host;
  RowTensors t;
  for (size_t k = 0; k < r.tensors.size(); ++k) {
    const TensorSpec& s = r.tensors[k];
    host[s.name] = initial_bytes(s, seed + k);
    t.set(s.name, {host[s.name].data(), s.dtype});
  }
  RefOps ref;
  Result out;
  out.scalar = r.on_ref(ref, t);
  for (const TensorSpec& s : r.tensors) {
    if (s.compared) out.bytes[s.name] = host[s.name];
  }
  return out;
}

// The same row with every tensor in the backend's memory (uploaded, run, downloaded).
Result run_on_backend(const OpRow& r, Backend& backend, uint64_t seed) {
  std::map<std::string, Buffer<std::byte>> device;
  RowTensors t;
  for (size_t k = 0; k < r.tensors.size(); ++k) {
    const TensorSpec& s = r.tensors[k];
    const std::vector<std::byte> init = initial_bytes(s, seed + k);
    Buffer<std::byte> b(init.size(), nullptr, &backend);
    backend.upload(b.data(), init.data(), init.size());
    t.set(s.name, {b.data(), s.dtype});
    device.emplace(s.name, std::move(b));
  }
  Result out;
  out.scalar = r.on_backend(backend, t);
  backend.synchronize();
  for (const TensorSpec& s : r.tensors) {
    if (!s.compared) continue;
    std::vector<std::byte> bytes(spec_bytes(s));
    backend.download(bytes.data(), device.at(s.name).data(), bytes.size());
    out.bytes[s.name] = std::move(bytes);
  }
  return out;
}

class BackendOps : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(BackendOps, MatchesTheReference) {
  const auto [ri, bi] = GetParam();
  const OpRow& r = rows()[ri];
  const BackendSlot slot = backend_slots()[bi];
  if (!slot.make) GTEST_SKIP() << slot.name << ": " << slot.absent_reason;
  const std::unique_ptr<Backend> backend = slot.make();
  if (!backend->supports(r.op, r.dtype)) {
    // A gap, listed: the support matrix prints it, and a CPU gap is a failure there.
    std::cout << "[ NOT SUPPORTED ] " << slot.name << ": " << r.name() << "\n";
    GTEST_SKIP() << slot.name << " does not support " << r.name();
  }
  const uint64_t seed = 1000 + 37 * static_cast<uint64_t>(ri);
  const Result want = run_on_reference(r, seed);
  Result got;
  try {
    got = run_on_backend(r, *backend, seed);
  } catch (const UnsupportedOp& e) {  // a case of the op without a kernel: listed, not hidden
    std::cout << "[ NOT SUPPORTED ] " << slot.name << ": " << r.name() << ": " << e.what() << "\n";
    if (slot.name == "cpu") FAIL() << "the CPU backend must run every row: " << e.what();
    GTEST_SKIP() << slot.name << " does not support " << r.name() << ": " << e.what();
  }
  for (const TensorSpec& s : r.tensors) {
    if (!s.compared) continue;
    expect_close(slot.name + ": " + r.name() + ": " + s.name, as_doubles(s, got.bytes.at(s.name)),
                 as_doubles(s, want.bytes.at(s.name)), r.tol);
  }
  EXPECT_NEAR(got.scalar, want.scalar, r.tol.rtol * (std::fabs(want.scalar) + 1.0))
      << slot.name << ": " << r.name() << ": the op's result";
}

std::string row_test_name(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  const auto [ri, bi] = info.param;
  std::string n = backend_slots()[bi].name + "_" + std::to_string(ri) + "_" + rows()[ri].op + "_" +
                  dtype_name(rows()[ri].dtype);
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

INSTANTIATE_TEST_SUITE_P(Table, BackendOps,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(rows().size())),
                                            ::testing::Range(0, static_cast<int>(
                                                                    backend_slots().size()))),
                         row_test_name);

// Op x dtype x backend: "ok" (every row of it runs: the comparisons are the tests above),
// "partial" or "NOT SUPPORTED" (some or all of its rows refused, each listed below the table with
// the backend's reason), or "absent" (the backend is not in this binary or finds no device, why
// below). The CPU runs every row.
TEST(BackendOpsSupport, SupportMatrix) {
  std::vector<std::unique_ptr<Backend>> made;
  const std::vector<BackendSlot> slots = backend_slots();
  for (const BackendSlot& s : slots) made.push_back(s.make ? s.make() : nullptr);
  std::set<std::pair<std::string, std::string>> seen;
  std::string table = "op harness support matrix (op, dtype: one column per backend)\n";
  table += fmt::format("{:<40} {:<9}", "op", "dtype");
  for (const BackendSlot& s : slots) table += fmt::format(" {:<14}", s.name);
  table += "\n";
  int cpu_gaps = 0;
  std::string notes;  // the rows a backend refused, with its reason
  for (const OpRow& r : rows()) {
    if (!seen.insert({r.op, dtype_name(r.dtype)}).second) continue;
    table += fmt::format("{:<40} {:<9}", r.op, dtype_name(r.dtype));
    for (size_t b = 0; b < slots.size(); ++b) {
      std::string cell = "absent";
      if (made[b]) {
        // Every row of this op and dtype: all run (ok), none (NOT SUPPORTED) or some (partial).
        int runs = 0, refused = 0;
        for (size_t k = 0; k < rows().size(); ++k) {
          const OpRow& row = rows()[k];
          if (row.op != r.op || row.dtype != r.dtype) continue;
          if (!made[b]->supports(row.op, row.dtype)) {
            ++refused;
            continue;
          }
          try {
            run_on_backend(row, *made[b], 1000 + 37 * k);
            ++runs;
          } catch (const UnsupportedOp& e) {
            ++refused;
            notes += fmt::format("{}: {}: {}\n", slots[b].name, row.name(), e.what());
          }
        }
        cell = refused == 0 ? "ok" : (runs == 0 ? "NOT SUPPORTED" : "partial");
        if (refused > 0 && slots[b].name == "cpu") ++cpu_gaps;
      }
      table += fmt::format(" {:<14}", cell);
    }
    table += "\n";
  }
  table += notes;
  for (const BackendSlot& s : slots) {
    if (!s.make) table += fmt::format("{}: absent: {}\n", s.name, s.absent_reason);
  }
  std::cout << table;
  EXPECT_EQ(cpu_gaps, 0) << "the CPU backend must run every op of the table";
  EXPECT_GE(seen.size(), 40u) << "the table lost rows";
}

}  // namespace
}  // namespace nanogpt::testing
