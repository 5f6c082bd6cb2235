// A restricted unpickler for the `data.pkl` of a torch.save archive (io/torch_zip.h): it builds a
// small value tree (None, bool, int64, double, str, tuple, list, dict, tensor reference) and never
// executes anything. It accepts the opcodes pickle protocols 2-5 emit for dicts, lists, tuples,
// scalars, strings, OrderedDict and tensors, and exactly these globals:
//   collections.OrderedDict                      -> a dict (keys in order; attributes dropped)
//   torch._utils._rebuild_tensor_v2              -> a tensor reference
//   torch._utils._rebuild_parameter              -> the tensor it wraps
//   torch.{Float,BFloat16,Half,Long}Storage      -> storage types in persistent ids
// Any other global (e.g. `posix.system`) or opcode is refused with an error naming it. Persistent
// ids ('storage', <storage type>, key, location, numel) become storage references; a tensor's
// shape and stride must fit its storage (checked without overflow, before anything is allocated).
// Everything is bounded: stack and mark depth, memo size, nesting depth, string lengths (by the
// bytes left), the tree's expanded size (shared subtrees counted each time), tensor rank.
// The tensor bytes themselves live in the archive; io/torch_checkpoint.h reads them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nanogpt {

enum class TorchDtype { kFloat32, kBFloat16, kFloat16, kInt64 };
const char* torch_dtype_name(TorchDtype dtype);  // "float32", ...
int torch_dtype_bytes(TorchDtype dtype);

// A tensor as pickled: a view (offset, shape, stride, in elements) of storage `storage_key`
// (the archive entry `data/<storage_key>`, storage_numel elements of dtype). Tensors that share a
// storage (tied weights) have the same key. Invariant after unpickling: every index the view can
// reach lies in [0, storage_numel), and numel() <= storage_numel.
struct TorchTensorRef {
  std::string storage_key;
  std::string location;  // "cpu", "cuda:0", ... (informational)
  TorchDtype dtype = TorchDtype::kFloat32;
  int64_t storage_numel = 0;
  int64_t storage_offset = 0;
  std::vector<int64_t> shape, stride;
  int64_t numel() const;
  // Row-major with no gaps (so numel() elements from storage_offset on).
  bool is_contiguous() const;
};

// Empty when the view (shape, stride, offset) fits its storage and numel() <= storage_numel;
// otherwise what is wrong, naming the shape, stride, offset and storage.
std::string torch_view_problem(const TorchTensorRef& t);

class PickleValue;
using PickleValuePtr = std::shared_ptr<const PickleValue>;

class PickleValue {
 public:
  // kGlobal (a class or function reference) and kStorage (a persistent id) only exist on the
  // unpickler's stack; a tree returned by parse_torch_pickle never holds them.
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kTensor,
    kGlobal,
    kStorage
  };
  using DictItems = std::vector<std::pair<PickleValuePtr, PickleValuePtr>>;

  Kind kind() const { return kind_; }
  const char* kind_name() const;
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }

  // Accessors throw nanogpt::Error "expected <kind>, found <kind>" on the wrong kind.
  bool as_bool() const;
  int64_t as_int() const;
  double as_float() const;  // a float, or an int converted
  const std::string& as_string() const;
  const std::vector<PickleValuePtr>& items() const;  // tuple or list
  const DictItems& dict_items() const;               // in insertion order
  const TorchTensorRef& tensor() const;

  // Dict lookup (nullptr when absent or the key's kind differs).
  const PickleValue* find(std::string_view key) const;
  const PickleValue* find(int64_t key) const;
  // Dict lookup that throws naming the key and some of the keys present.
  const PickleValue& at(std::string_view key) const;

  // A one-line description for messages, e.g. "dict of 3", "tensor float32 [2, 3]", "int 7".
  std::string describe() const;

 private:
  friend class TorchUnpickler;
  Kind kind_ = Kind::kNone;
  bool bool_ = false;
  int64_t int_ = 0;  // kInt; kGlobal: which global
  double float_ = 0;
  std::string string_;  // kString; kGlobal: "module.name"
  std::vector<PickleValuePtr> items_;
  DictItems dict_;
  std::map<std::string, size_t, std::less<>> string_keys_;  // index into dict_
  std::map<int64_t, size_t> int_keys_;
  TorchTensorRef tensor_;  // kTensor; kStorage: key, location, dtype, storage_numel
  // Unpickling bookkeeping: a value placed inside another can no longer change (so no cycles),
  // height is its nesting depth, weight its expanded node count, raw whether it holds a
  // kGlobal / kStorage somewhere.
  bool frozen_ = false;
  bool raw_ = false;
  uint32_t height_ = 1;
  uint64_t weight_ = 1;
};

// Unpickles `bytes` (the whole data.pkl); `name` (e.g. "ckpt.pt:archive/data.pkl") is used in
// errors, which also give the byte offset and opcode. Throws nanogpt::Error on anything refused or
// malformed.
PickleValuePtr parse_torch_pickle(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace nanogpt
