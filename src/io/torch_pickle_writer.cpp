// Pickle protocol 2 for torch.save's data.pkl, written (see torch_pickle_writer.h).
#include "io/torch_pickle_writer.h"

#include <bit>
#include <cstring>

#include "core/check.h"

namespace nanogpt {

PickleOut PickleOut::boolean(bool b) {
  PickleOut v(Kind::kBool);
  v.bool_ = b;
  return v;
}
PickleOut PickleOut::integer(int64_t i) {
  PickleOut v(Kind::kInt);
  v.int_ = i;
  return v;
}
PickleOut PickleOut::real(double d) {
  PickleOut v(Kind::kFloat);
  v.float_ = d;
  return v;
}
PickleOut PickleOut::string(std::string s) {
  PickleOut v(Kind::kString);
  v.string_ = std::move(s);
  return v;
}
PickleOut PickleOut::tuple(std::vector<PickleOut> items) {
  PickleOut v(Kind::kTuple);
  v.items_ = std::move(items);
  return v;
}
PickleOut PickleOut::list(std::vector<PickleOut> items) {
  PickleOut v(Kind::kList);
  v.items_ = std::move(items);
  return v;
}
PickleOut PickleOut::dict(Items items, bool ordered) {
  PickleOut v(Kind::kDict);
  v.ordered_ = ordered;
  for (auto& [k, value] : items) v.set(std::move(k), std::move(value));
  return v;
}
PickleOut PickleOut::tensor(TorchTensorRef t) {
  CHECK(torch_view_problem(t).empty(), "torch pickle writer: {}", torch_view_problem(t));
  PickleOut v(Kind::kTensor);
  v.tensor_ = std::move(t);
  return v;
}

void PickleOut::set(PickleOut key, PickleOut value) {
  CHECK(kind_ == Kind::kDict, "torch pickle writer: set() on a non-dict");
  CHECK(key.kind_ == Kind::kString || key.kind_ == Kind::kInt,
        "torch pickle writer: dict keys must be str or int");
  dict_.emplace_back(std::move(key), std::move(value));
}

class PickleEmitter {
 public:
  std::string out;

  void op(uint8_t code) { out.push_back(static_cast<char>(code)); }
  void le(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  }
  void global(const char* module, const char* name) {
    op('c');
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  void integer(int64_t i) {
    if (i >= 0 && i < 256) {
      op('K');
      le(static_cast<uint64_t>(i), 1);
    } else if (i >= 0 && i < 65536) {
      op('M');
      le(static_cast<uint64_t>(i), 2);
    } else if (i >= INT32_MIN && i <= INT32_MAX) {
      op('J');
      le(static_cast<uint32_t>(static_cast<int32_t>(i)), 4);
    } else {
      op(0x8a);  // LONG1: 8 bytes of two's complement
      le(8, 1);
      le(static_cast<uint64_t>(i), 8);
    }
  }
  void string(const std::string& s) {
    CHECK(s.size() < 0xFFFFFFFFu, "torch pickle writer: a string of {} bytes", s.size());
    op('X');
    le(s.size(), 4);
    out += s;
  }
  void ordered_dict_call() {  // collections.OrderedDict()
    global("collections", "OrderedDict");
    op(')');
    op('R');
  }
  static const char* storage_name(TorchDtype d) {
    switch (d) {
      case TorchDtype::kFloat32:
        return "FloatStorage";
      case TorchDtype::kBFloat16:
        return "BFloat16Storage";
      case TorchDtype::kFloat16:
        return "HalfStorage";
      case TorchDtype::kInt64:
        return "LongStorage";
    }
    return "FloatStorage";
  }
  void ints_tuple(const std::vector<int64_t>& v) {
    op('(');
    for (int64_t x : v) integer(x);
    op('t');
  }

  void emit(const PickleOut& v) {
    using K = PickleOut::Kind;
    switch (v.kind_) {
      case K::kNone:
        op('N');
        return;
      case K::kBool:
        op(v.bool_ ? 0x88 : 0x89);
        return;
      case K::kInt:
        integer(v.int_);
        return;
      case K::kFloat: {
        op('G');
        const uint64_t bits = std::bit_cast<uint64_t>(v.float_);
        for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(bits >> (8 * i)));
        return;
      }
      case K::kString:
        string(v.string_);
        return;
      case K::kTuple:
        if (v.items_.empty()) {
          op(')');
          return;
        }
        op('(');
        for (const auto& x : v.items_) emit(x);
        op('t');
        return;
      case K::kList:
        op(']');
        if (v.items_.empty()) return;
        op('(');
        for (const auto& x : v.items_) emit(x);
        op('e');
        return;
      case K::kDict:
        if (v.ordered_) {
          ordered_dict_call();
        } else {
          op('}');
        }
        if (v.dict_.empty()) return;
        op('(');
        for (const auto& [k, x] : v.dict_) {
          emit(k);
          emit(x);
        }
        op('u');
        return;
      case K::kTensor: {
        const TorchTensorRef& t = v.tensor_;
        global("torch._utils", "_rebuild_tensor_v2");
        op('(');
        op('(');  // persistent id
        string("storage");
        global("torch", storage_name(t.dtype));
        string(t.storage_key);
        string(t.location.empty() ? "cpu" : t.location);
        integer(t.storage_numel);
        op('t');
        op('Q');  // BINPERSID
        integer(t.storage_offset);
        ints_tuple(t.shape);
        ints_tuple(t.stride);
        op(0x89);             // requires_grad False
        ordered_dict_call();  // backward hooks
        op('t');
        op('R');
        return;
      }
    }
  }
};

std::string write_torch_pickle(const PickleOut& root) {
  PickleEmitter e;
  e.op(0x80);
  e.le(2, 1);
  e.emit(root);
  e.op('.');
  return std::move(e.out);
}

}  // namespace nanogpt
