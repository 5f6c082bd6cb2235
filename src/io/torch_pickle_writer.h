// The pickle of a torch.save file written (the counterpart of io/torch_pickle.h): a value tree of
// None, bool, int, float, str, tuple, list, dict (plain or collections.OrderedDict, str or int
// keys) and tensors, emitted as pickle protocol 2 the way torch.save does: a tensor is
// torch._utils._rebuild_tensor_v2(<persistent id ('storage', torch.<Dtype>Storage, key, 'cpu',
// numel)>, offset, shape, stride, False, OrderedDict()). It uses only the opcodes and globals that
// torch.load(weights_only=True) accepts (and our own restricted unpickler reads back).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/torch_pickle.h"

namespace nanogpt {

class PickleOut {
 public:
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kTensor };
  using Items = std::vector<std::pair<PickleOut, PickleOut>>;

  static PickleOut none() { return PickleOut(Kind::kNone); }
  static PickleOut boolean(bool b);
  static PickleOut integer(int64_t i);
  static PickleOut real(double d);
  static PickleOut string(std::string s);
  static PickleOut tuple(std::vector<PickleOut> items);
  static PickleOut list(std::vector<PickleOut> items);
  // ordered: collections.OrderedDict (a state_dict), else a plain dict. Keys: str or int.
  static PickleOut dict(Items items, bool ordered = false);
  // A view of storage t.storage_key (t's dtype, storage_numel, offset, shape, stride).
  static PickleOut tensor(TorchTensorRef t);

  Kind kind() const { return kind_; }
  // Appends (key, value) to a dict.
  void set(PickleOut key, PickleOut value);

 private:
  friend class PickleEmitter;
  explicit PickleOut(Kind kind) : kind_(kind) {}
  Kind kind_;
  bool ordered_ = false;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string string_;
  std::vector<PickleOut> items_;
  Items dict_;
  TorchTensorRef tensor_;
};

// The bytes of `root` as protocol-2 pickle, ending with STOP.
std::string write_torch_pickle(const PickleOut& root);

}  // namespace nanogpt
