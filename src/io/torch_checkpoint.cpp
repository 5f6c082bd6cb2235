// Opening a torch.save checkpoint (archive + restricted unpickle + per-tensor storage checks) and
// copying tensors out of it as float32 / int64 (contiguous fast path, strided gather otherwise).
#include "io/torch_checkpoint.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <unordered_set>

#include "core/check.h"
#include "core/float16.h"

namespace nanogpt {
namespace {

std::string trimmed(std::span<const uint8_t> bytes) {
  std::string s(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// Calls f(storage element index, output index) for every element of t, row-major over its shape.
template <typename F>
void for_each_element(const TorchTensorRef& t, F&& f) {
  const int64_t n = t.numel();
  if (n == 0) return;
  if (t.is_contiguous()) {
    for (int64_t i = 0; i < n; ++i) f(t.storage_offset + i, i);
    return;
  }
  const size_t rank = t.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t src = t.storage_offset;
  for (int64_t i = 0; i < n; ++i) {
    f(src, i);
    for (size_t d = rank; d-- > 0;) {  // odometer: bump the last dimension, carry leftwards
      if (++index[d] < t.shape[d]) {
        src += t.stride[d];
        break;
      }
      src -= (t.shape[d] - 1) * t.stride[d];
      index[d] = 0;
    }
  }
}

}  // namespace

TorchCheckpoint::TorchCheckpoint(const std::string& path) : archive_(path) { validate(); }

TorchCheckpoint::TorchCheckpoint(std::string_view bytes, const std::string& name)
    : archive_(bytes, name) {
  validate();
}

void TorchCheckpoint::validate() {
  const std::string pkl_name = path() + ":" + archive_.top_folder() + "/data.pkl";
  root_ = parse_torch_pickle(archive_.read("data.pkl", /*verify_crc=*/true), pkl_name);
  if (archive_.contains("version")) version_ = trimmed(archive_.read("version"));

  // Every tensor once (shared subtrees are visited once): its storage entry and view must agree.
  struct Seen {
    TorchDtype dtype;
    int64_t numel;
  };
  std::map<std::string, Seen> storages;
  std::unordered_set<const PickleValue*> visited;
  std::vector<const PickleValue*> todo = {root_.get()};
  while (!todo.empty()) {
    const PickleValue* v = todo.back();
    todo.pop_back();
    if (!visited.insert(v).second) continue;
    switch (v->kind()) {
      case PickleValue::Kind::kTuple:
      case PickleValue::Kind::kList:
        for (const auto& c : v->items()) todo.push_back(c.get());
        break;
      case PickleValue::Kind::kDict:
        for (const auto& [k, c] : v->dict_items()) todo.push_back(c.get());
        break;
      case PickleValue::Kind::kTensor: {
        const TorchTensorRef& t = v->tensor();
        auto [it, fresh] = storages.emplace(t.storage_key, Seen{t.dtype, t.storage_numel});
        CHECK(fresh || (it->second.dtype == t.dtype && it->second.numel == t.storage_numel),
              "'{}' is corrupt: storage '{}' is used as {} {} elements and as {} {} elements",
              path(), t.storage_key, it->second.numel, torch_dtype_name(it->second.dtype),
              t.storage_numel, torch_dtype_name(t.dtype));
        if (fresh) (void)storage_bytes(t);  // entry present, size matches
        break;
      }
      default:
        break;
    }
  }
}

std::span<const uint8_t> TorchCheckpoint::storage_bytes(const TorchTensorRef& t) const {
  const std::string entry = "data/" + t.storage_key;
  CHECK(archive_.contains(entry),
        "'{}' is corrupt: a tensor uses storage '{}' but the archive has no entry '{}/{}'", path(),
        t.storage_key, archive_.top_folder(), entry);
  const uint64_t elem = static_cast<uint64_t>(torch_dtype_bytes(t.dtype));
  const uint64_t have = archive_.entry_size(entry);
  // The unpickler already bounds storage_numel by INT64_MAX / elem; a hand-made ref might not.
  CHECK(t.storage_numel >= 0 && static_cast<uint64_t>(t.storage_numel) <= INT64_MAX / elem,
        "'{}': storage '{}' has an impossible element count {}", path(), t.storage_key,
        t.storage_numel);
  CHECK(static_cast<uint64_t>(t.storage_numel) * elem == have,
        "'{}' is {}: storage '{}' should hold {} {} elements ({} bytes) but its entry '{}/{}' has "
        "{} bytes",
        path(), static_cast<uint64_t>(t.storage_numel) * elem > have ? "truncated" : "corrupt",
        t.storage_key, t.storage_numel, torch_dtype_name(t.dtype),
        static_cast<uint64_t>(t.storage_numel) * elem, archive_.top_folder(), entry, have);
  const std::string problem = torch_view_problem(t);
  CHECK(problem.empty(), "'{}': {}", path(), problem);
  return archive_.read(entry);
}

void TorchCheckpoint::read_f32(const TorchTensorRef& t, float* out) const {
  const std::span<const uint8_t> bytes = storage_bytes(t);
  const uint8_t* src = bytes.data();
  switch (t.dtype) {
    case TorchDtype::kFloat32:
      if (t.is_contiguous()) {
        if (t.numel() > 0) {
          std::memcpy(out, src + 4 * t.storage_offset, static_cast<size_t>(t.numel()) * 4);
        }
        return;
      }
      for_each_element(t, [&](int64_t s, int64_t i) { std::memcpy(out + i, src + 4 * s, 4); });
      return;
    case TorchDtype::kBFloat16:
    case TorchDtype::kFloat16: {
      const bool bf16 = t.dtype == TorchDtype::kBFloat16;
      for_each_element(t, [&](int64_t s, int64_t i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * s, 2);
        out[i] = bf16 ? bf16_to_float(h) : fp16_to_float(h);
      });
      return;
    }
    case TorchDtype::kInt64:
      break;
  }
  fail("'{}': storage '{}' holds {} elements; expected float32, bfloat16 or float16", path(),
       t.storage_key, torch_dtype_name(t.dtype));
}

std::vector<float> TorchCheckpoint::read_f32(const TorchTensorRef& t) const {
  (void)storage_bytes(t);  // validates the view (so numel() is bounded) before sizing
  std::vector<float> out(static_cast<size_t>(t.numel()));
  read_f32(t, out.data());
  return out;
}

std::vector<int64_t> TorchCheckpoint::read_i64(const TorchTensorRef& t) const {
  const std::span<const uint8_t> bytes = storage_bytes(t);
  CHECK(t.dtype == TorchDtype::kInt64, "'{}': storage '{}' holds {} elements; expected int64",
        path(), t.storage_key, torch_dtype_name(t.dtype));
  std::vector<int64_t> out(static_cast<size_t>(t.numel()));
  for_each_element(t, [&](int64_t s, int64_t i) { std::memcpy(&out[i], bytes.data() + 8 * s, 8); });
  return out;
}

TorchCheckpoint read_torch_checkpoint(const std::string& path) { return TorchCheckpoint(path); }

}  // namespace nanogpt
