// The restricted unpickler: an explicit stack machine over an allow-list of opcodes and globals,
// building PickleValue trees. Written from the pickle format's documented opcode semantics
// (pickletools); nothing is ever imported or called - the allowed globals only select which of a
// few fixed value constructors REDUCE runs.
#include "io/torch_pickle.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "core/check.h"

namespace nanogpt {
namespace {

constexpr size_t kMaxStack = 1 << 20;        // values on the stack at once
constexpr size_t kMaxMarks = 1 << 16;        // open MARKs
constexpr size_t kMaxMemo = 1 << 22;         // memo entries
constexpr uint32_t kMaxHeight = 100;         // nesting depth of the tree
constexpr uint64_t kMaxWeight = 1ull << 24;  // nodes of the tree with shared subtrees expanded
constexpr size_t kMaxRank = 64;              // torch's own limit on tensor dimensions
constexpr size_t kMaxGlobalName = 256;       // bytes of a GLOBAL's module or name line

enum GlobalId : int64_t {
  kOrderedDict,
  kRebuildTensorV2,
  kRebuildParameter,
  kFloatStorage,
  kBFloat16Storage,
  kHalfStorage,
  kLongStorage,
};

struct AllowedGlobal {
  const char* module;
  const char* name;
  GlobalId id;
};

constexpr AllowedGlobal kAllowedGlobals[] = {
    {"collections", "OrderedDict", kOrderedDict},
    {"torch._utils", "_rebuild_tensor_v2", kRebuildTensorV2},
    {"torch._utils", "_rebuild_parameter", kRebuildParameter},
    {"torch", "FloatStorage", kFloatStorage},
    {"torch", "BFloat16Storage", kBFloat16Storage},
    {"torch", "HalfStorage", kHalfStorage},
    {"torch", "LongStorage", kLongStorage},
};

bool is_storage_global(int64_t id) { return id >= kFloatStorage && id <= kLongStorage; }

TorchDtype storage_dtype(int64_t id) {
  switch (id) {
    case kBFloat16Storage:
      return TorchDtype::kBFloat16;
    case kHalfStorage:
      return TorchDtype::kFloat16;
    case kLongStorage:
      return TorchDtype::kInt64;
    default:
      return TorchDtype::kFloat32;
  }
}

// Every opcode of pickle protocols 0-5 by name, for messages.
struct OpcodeName {
  uint8_t op;
  const char* name;
};
// clang-format off
constexpr OpcodeName kOpcodeNames[] = {
    {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"},
    {'I', "INT"}, {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"},
    {'N', "NONE"}, {'P', "PERSID"}, {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"},
    {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"}, {'X', "BINUNICODE"},
    {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"}, {'}', "EMPTY_DICT"},
    {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"}, {'j', "LONG_BINGET"},
    {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"},
    {'r', "LONG_BINPUT"}, {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"},
    {0x80, "PROTO"}, {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"},
    {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"},
    {0x8a, "LONG1"}, {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"}, {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
};
// clang-format on

// nullptr for bytes that are no opcode.
const char* opcode_name(uint8_t op) {
  for (const auto& o : kOpcodeNames) {
    if (o.op == op) return o.name;
  }
  return nullptr;
}

const char* kind_string(PickleValue::Kind k) {
  using K = PickleValue::Kind;
  switch (k) {
    case K::kNone:
      return "None";
    case K::kBool:
      return "bool";
    case K::kInt:
      return "int";
    case K::kFloat:
      return "float";
    case K::kString:
      return "str";
    case K::kTuple:
      return "tuple";
    case K::kList:
      return "list";
    case K::kDict:
      return "dict";
    case K::kTensor:
      return "tensor";
    case K::kGlobal:
      return "global";
    case K::kStorage:
      return "storage";
  }
  return "?";
}

std::string dims_string(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

}  // namespace

// ---- dtypes and tensor references ----

const char* torch_dtype_name(TorchDtype dtype) {
  switch (dtype) {
    case TorchDtype::kFloat32:
      return "float32";
    case TorchDtype::kBFloat16:
      return "bfloat16";
    case TorchDtype::kFloat16:
      return "float16";
    case TorchDtype::kInt64:
      return "int64";
  }
  return "?";
}

int torch_dtype_bytes(TorchDtype dtype) {
  switch (dtype) {
    case TorchDtype::kFloat32:
      return 4;
    case TorchDtype::kBFloat16:
      return 2;
    case TorchDtype::kFloat16:
      return 2;
    case TorchDtype::kInt64:
      return 8;
  }
  return 0;
}

int64_t TorchTensorRef::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // bounded by storage_numel for unpickled refs
  return n;
}

bool TorchTensorRef::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;  // any stride is fine for a dimension of size 1
    if (stride[i] != expected) return numel() == 0;
    expected *= shape[i];
  }
  return true;
}

std::string torch_view_problem(const TorchTensorRef& t) {
  // numel <= storage numel (so a "1 TB" shape is refused before anything is sized from it), and
  // the last reachable element, offset + sum (n-1)*stride, is inside the storage. Computed so
  // that nothing overflows: every partial result stays <= storage_numel.
  const int64_t sn = t.storage_numel;
  auto where = [&] {
    return fmt::format(
        "tensor of shape {} (stride {}, offset {}) on storage '{}' of {} {} elements",
        dims_string(t.shape), dims_string(t.stride), t.storage_offset, t.storage_key, sn,
        torch_dtype_name(t.dtype));
  };
  if (t.shape.size() != t.stride.size() || t.shape.size() > kMaxRank) {
    return where() + ": shape and stride differ in rank (or exceed 64 dimensions)";
  }
  if (sn < 0 || t.storage_offset < 0) return where() + ": negative storage size or offset";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] < 0 || t.stride[i] < 0) return where() + ": negative size or stride";
  }
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) {
    if (t.storage_offset > sn) return where() + ": the offset is past the end of the storage";
    return "";
  }
  int64_t numel = 1;
  for (int64_t d : t.shape) {
    if (numel > sn / d) {
      return where() +
             ": the shape has more elements than the storage (expanded/broadcast tensors are not "
             "supported; save .contiguous() copies)";
    }
    numel *= d;
  }
  int64_t last = t.storage_offset;
  if (last >= sn) return where() + ": the offset is past the end of the storage";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    const int64_t n = t.shape[i] - 1;
    if (n > 0 && t.stride[i] > (sn - 1 - last) / n) {
      return where() + ": the view reaches past the end of the storage";
    }
    last += n * t.stride[i];
  }
  return "";
}

// ---- PickleValue accessors ----

const char* PickleValue::kind_name() const { return kind_string(kind_); }

namespace {
[[noreturn]] void wrong_kind(const PickleValue& v, const char* expected) {
  fail("torch checkpoint: expected {} but found {}", expected, v.describe());
}
}  // namespace

bool PickleValue::as_bool() const {
  if (kind_ != Kind::kBool) wrong_kind(*this, "a bool");
  return bool_;
}

int64_t PickleValue::as_int() const {
  if (kind_ != Kind::kInt) wrong_kind(*this, "an int");
  return int_;
}

double PickleValue::as_float() const {
  if (kind_ == Kind::kInt) return static_cast<double>(int_);
  if (kind_ != Kind::kFloat) wrong_kind(*this, "a float");
  return float_;
}

const std::string& PickleValue::as_string() const {
  if (kind_ != Kind::kString) wrong_kind(*this, "a str");
  return string_;
}

const std::vector<PickleValuePtr>& PickleValue::items() const {
  if (kind_ != Kind::kTuple && kind_ != Kind::kList) wrong_kind(*this, "a tuple or list");
  return items_;
}

const PickleValue::DictItems& PickleValue::dict_items() const {
  if (kind_ != Kind::kDict) wrong_kind(*this, "a dict");
  return dict_;
}

const TorchTensorRef& PickleValue::tensor() const {
  if (kind_ != Kind::kTensor) wrong_kind(*this, "a tensor");
  return tensor_;
}

const PickleValue* PickleValue::find(std::string_view key) const {
  if (kind_ != Kind::kDict) wrong_kind(*this, "a dict");
  auto it = string_keys_.find(key);
  return it == string_keys_.end() ? nullptr : dict_[it->second].second.get();
}

const PickleValue* PickleValue::find(int64_t key) const {
  if (kind_ != Kind::kDict) wrong_kind(*this, "a dict");
  auto it = int_keys_.find(key);
  return it == int_keys_.end() ? nullptr : dict_[it->second].second.get();
}

const PickleValue& PickleValue::at(std::string_view key) const {
  const PickleValue* v = find(key);
  if (!v) {
    std::vector<std::string> some;
    for (const auto& [k, val] : dict_) {
      if (some.size() == 8) break;
      some.push_back(k->kind_ == Kind::kString ? "'" + k->string_ + "'" : k->describe());
    }
    fail("torch checkpoint: no key '{}' in a dict of {} (keys: {}{})", key, dict_.size(),
         fmt::join(some, ", "), dict_.size() > some.size() ? ", ..." : "");
  }
  return *v;
}

std::string PickleValue::describe() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return bool_ ? "bool True" : "bool False";
    case Kind::kInt:
      return fmt::format("int {}", int_);
    case Kind::kFloat:
      return fmt::format("float {}", float_);
    case Kind::kString:
      return string_.size() <= 40 ? fmt::format("str '{}'", string_)
                                  : fmt::format("str '{}...'", string_.substr(0, 40));
    case Kind::kTuple:
      return fmt::format("tuple of {}", items_.size());
    case Kind::kList:
      return fmt::format("list of {}", items_.size());
    case Kind::kDict:
      return fmt::format("dict of {}", dict_.size());
    case Kind::kTensor:
      return fmt::format("tensor {} {}", torch_dtype_name(tensor_.dtype),
                         dims_string(tensor_.shape));
    case Kind::kGlobal:
      return fmt::format("global {}", string_);
    case Kind::kStorage:
      return fmt::format("storage '{}' ({} x {})", tensor_.storage_key, tensor_.storage_numel,
                         torch_dtype_name(tensor_.dtype));
  }
  return "?";
}

// ---- the unpickler ----

class TorchUnpickler {
 public:
  TorchUnpickler(std::span<const uint8_t> bytes, const std::string& name)
      : data_(bytes.data()), size_(bytes.size()), name_(name) {}

  PickleValuePtr run();

 private:
  using Ptr = std::shared_ptr<PickleValue>;
  using Kind = PickleValue::Kind;

  template <typename... Args>
  [[noreturn]] void bad(fmt::format_string<Args...> format, Args&&... args) const {
    const char* op = opcode_name(op_);
    fail("'{}': pickle byte {} (opcode {}): {}", name_, op_pos_,
         op ? std::string(op) : fmt::format("0x{:02x}", op_),
         fmt::format(format, std::forward<Args>(args)...));
  }

  // Raw reads of the opcode's argument bytes.
  const uint8_t* take(uint64_t n) {
    if (n > size_ - pos_) {
      bad("the pickle is truncated: the argument needs {} bytes but only {} remain", n,
          size_ - pos_);
    }
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint64_t take_le(int n) {
    const uint8_t* p = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }
  std::string take_line() {
    const uint8_t* start = data_ + pos_;
    const uint64_t limit = std::min<uint64_t>(size_ - pos_, kMaxGlobalName + 1);
    const void* nl = std::memchr(start, '\n', static_cast<size_t>(limit));
    if (!nl && limit == size_ - pos_) bad("the pickle is truncated inside a GLOBAL name line");
    if (!nl) bad("a GLOBAL name line has no newline within {} bytes", kMaxGlobalName);
    const auto n = static_cast<uint64_t>(static_cast<const uint8_t*>(nl) - start);
    pos_ += n + 1;
    return std::string(reinterpret_cast<const char*>(start), n);
  }

  Ptr make(Kind kind) {
    auto v = std::make_shared<PickleValue>();
    v->kind_ = kind;
    return v;
  }
  void push(Ptr v) {
    if (stack_.size() >= kMaxStack) bad("more than {} values on the stack", kMaxStack);
    stack_.push_back(std::move(v));
  }
  size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  Ptr pop() {
    if (stack_.size() <= fence()) bad("stack underflow (the pickle is corrupt)");
    Ptr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Ptr& top() {
    if (stack_.size() <= fence()) bad("stack underflow (the pickle is corrupt)");
    return stack_.back();
  }
  // Pops the innermost MARK and the values above it.
  std::vector<Ptr> pop_mark() {
    if (marks_.empty()) bad("no MARK to pop (the pickle is corrupt)");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ptr> items(std::make_move_iterator(stack_.begin() + static_cast<ptrdiff_t>(mark)),
                           std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }

  // Places child inside parent: the child is frozen (can never change again), so no value can
  // come to contain itself; height and expanded weight are bounded.
  void adopt(PickleValue& parent, const Ptr& child) {
    child->frozen_ = true;
    if (parent.frozen_) {
      bad("a {} is modified after being placed inside another value (recursive or shared "
          "containers are not supported)",
          parent.kind_name());
    }
    parent.height_ = std::max(parent.height_, child->height_ + 1);
    if (parent.height_ > kMaxHeight) bad("values are nested more than {} deep", kMaxHeight);
    parent.weight_ += child->weight_;
    if (parent.weight_ > kMaxWeight) {
      bad("the value tree has more than {} nodes (counting shared values each time they are "
          "used)",
          kMaxWeight);
    }
    parent.raw_ = parent.raw_ || child->raw_;
  }
  Ptr make_tuple(std::vector<Ptr> items) {
    Ptr t = make(Kind::kTuple);
    t->items_.reserve(items.size());
    for (auto& v : items) {
      adopt(*t, v);
      t->items_.push_back(std::move(v));
    }
    return t;
  }
  void list_append(PickleValue& list, Ptr v) {
    if (list.kind_ != Kind::kList) bad("APPEND(S) target is a {}, not a list", list.kind_name());
    adopt(list, v);
    list.items_.push_back(std::move(v));
  }
  void dict_set(PickleValue& dict, Ptr key, Ptr value) {
    if (dict.kind_ != Kind::kDict) bad("SETITEM(S) target is a {}, not a dict", dict.kind_name());
    if (key->kind_ != Kind::kString && key->kind_ != Kind::kInt) {
      bad("dict key {} is not a str or int (the only key types supported)", key->describe());
    }
    adopt(dict, key);
    adopt(dict, value);
    if (key->kind_ == Kind::kString) {
      auto [it, fresh] = dict.string_keys_.emplace(key->string_, dict.dict_.size());
      if (!fresh) {  // Python keeps the first position and takes the new value
        dict.dict_[it->second].second = std::move(value);
        return;
      }
    } else {
      auto [it, fresh] = dict.int_keys_.emplace(key->int_, dict.dict_.size());
      if (!fresh) {
        dict.dict_[it->second].second = std::move(value);
        return;
      }
    }
    dict.dict_.emplace_back(std::move(key), std::move(value));
  }

  void memo_put(uint64_t index) {
    Ptr& v = top();
    if (memo_.size() >= kMaxMemo && !memo_.count(index)) {
      bad("more than {} memo entries", kMaxMemo);
    }
    memo_[index] = v;
  }
  void memo_get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) bad("memo entry {} was never stored (the pickle is corrupt)", index);
    push(it->second);
  }

  void global(const std::string& module, const std::string& name) {
    for (const auto& g : kAllowedGlobals) {
      if (module == g.module && name == g.name) {
        Ptr v = make(Kind::kGlobal);
        v->int_ = g.id;
        v->string_ = module + "." + name;
        v->raw_ = true;
        push(std::move(v));
        return;
      }
    }
    std::vector<std::string> allowed;
    for (const auto& g : kAllowedGlobals) allowed.push_back(std::string(g.module) + "." + g.name);
    bad("global '{}.{}' is not allowed: a torch checkpoint only needs {}; this file is not a "
        "plain nanoGPT checkpoint (or is malicious) and will not be unpickled",
        module, name, fmt::join(allowed, ", "));
  }

  Ptr persistent_load(const Ptr& pid);
  Ptr reduce(const Ptr& callable, const Ptr& args);
  Ptr rebuild_tensor(const std::vector<PickleValuePtr>& args);

  const uint8_t* data_;
  uint64_t size_;
  const std::string& name_;
  uint64_t pos_ = 0;
  uint64_t op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ptr> memo_;
};

TorchUnpickler::Ptr TorchUnpickler::persistent_load(const Ptr& pid) {
  // torch.save: ('storage', torch.<Type>Storage, key: str, location: str, numel: int)
  if (pid->kind_ != Kind::kTuple || pid->items_.size() != 5 ||
      pid->items_[0]->kind_ != Kind::kString || pid->items_[0]->string_ != "storage") {
    bad("persistent id {} is not torch's ('storage', type, key, location, numel)", pid->describe());
  }
  const auto& it = pid->items_;
  if (it[1]->kind_ != Kind::kGlobal || !is_storage_global(it[1]->int_)) {
    bad("persistent id storage type is {}, not one of torch.FloatStorage, BFloat16Storage, "
        "HalfStorage, LongStorage",
        it[1]->describe());
  }
  if (it[2]->kind_ != Kind::kString || it[3]->kind_ != Kind::kString ||
      it[4]->kind_ != Kind::kInt) {
    bad("persistent id ('storage', {}, {}, {}, {}) needs a str key, str location and int numel",
        it[1]->describe(), it[2]->describe(), it[3]->describe(), it[4]->describe());
  }
  Ptr s = make(Kind::kStorage);
  s->raw_ = true;
  TorchTensorRef& t = s->tensor_;
  t.dtype = storage_dtype(it[1]->int_);
  t.storage_key = it[2]->string_;
  t.location = it[3]->string_;
  t.storage_numel = it[4]->int_;
  if (t.storage_numel < 0 ||
      t.storage_numel > std::numeric_limits<int64_t>::max() / torch_dtype_bytes(t.dtype)) {
    bad("storage '{}' has an impossible element count {}", t.storage_key, t.storage_numel);
  }
  return s;
}

TorchUnpickler::Ptr TorchUnpickler::rebuild_tensor(const std::vector<PickleValuePtr>& a) {
  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks
  //                    [, metadata])
  if (a.size() != 6 && a.size() != 7) {
    bad("_rebuild_tensor_v2 takes 6 or 7 arguments, got {}", a.size());
  }
  if (a[0]->kind_ != Kind::kStorage) bad("_rebuild_tensor_v2's storage is a {}", a[0]->describe());
  Ptr v = make(Kind::kTensor);
  TorchTensorRef& t = v->tensor_;
  t = a[0]->tensor_;
  const std::string& key = t.storage_key;
  if (a[1]->kind_ != Kind::kInt || a[1]->int_ < 0) {
    bad("tensor on storage '{}': storage offset {} is not a non-negative int", key,
        a[1]->describe());
  }
  t.storage_offset = a[1]->int_;
  for (int k = 2; k <= 3; ++k) {
    if (a[k]->kind_ != Kind::kTuple) {
      bad("tensor on storage '{}': {} is a {}, not a tuple", key, k == 2 ? "size" : "stride",
          a[k]->describe());
    }
    if (a[k]->items_.size() > kMaxRank) {
      bad("tensor on storage '{}' has {} dimensions (at most {})", key, a[k]->items_.size(),
          kMaxRank);
    }
    auto& out = k == 2 ? t.shape : t.stride;
    for (const auto& d : a[k]->items_) {
      if (d->kind_ != Kind::kInt || d->int_ < 0) {
        bad("tensor on storage '{}': {} entry {} is not a non-negative int", key,
            k == 2 ? "size" : "stride", d->describe());
      }
      out.push_back(d->int_);
    }
  }
  if (t.shape.size() != t.stride.size()) {
    bad("tensor on storage '{}': size {} and stride {} differ in rank", key, dims_string(t.shape),
        dims_string(t.stride));
  }
  if (a[4]->kind_ != Kind::kBool) bad("requires_grad is a {}, not a bool", a[4]->describe());
  if (!(a[5]->kind_ == Kind::kNone || (a[5]->kind_ == Kind::kDict && a[5]->dict_.empty()))) {
    bad("tensor on storage '{}' has backward hooks ({}); they are not supported", key,
        a[5]->describe());
  }
  const std::string problem = torch_view_problem(t);
  if (!problem.empty()) bad("{}", problem);
  return v;
}

TorchUnpickler::Ptr TorchUnpickler::reduce(const Ptr& callable, const Ptr& args) {
  if (callable->kind_ != Kind::kGlobal)
    bad("REDUCE calls a {}, not a global", callable->describe());
  if (args->kind_ != Kind::kTuple) bad("REDUCE arguments are a {}, not a tuple", args->describe());
  const auto& a = args->items_;
  switch (callable->int_) {
    case kOrderedDict:
      if (!a.empty()) bad("OrderedDict is called with {} arguments; expected ()", a.size());
      return make(Kind::kDict);
    case kRebuildTensorV2:
      return rebuild_tensor(a);
    case kRebuildParameter:
      // _rebuild_parameter(data, requires_grad, backward_hooks): the tensor itself.
      if (a.size() != 3 || a[0]->kind_ != Kind::kTensor) {
        bad("_rebuild_parameter expects (tensor, requires_grad, hooks), got {}", args->describe());
      }
      return std::const_pointer_cast<PickleValue>(a[0]);
    default:
      bad("{} cannot be called (storages only appear in persistent ids)", callable->string_);
  }
}

PickleValuePtr TorchUnpickler::run() {
  while (true) {
    op_pos_ = pos_;
    if (pos_ >= size_) {
      op_ = 0;
      bad("the pickle is truncated: it ends without a STOP opcode ({} bytes)", size_);
    }
    op_ = data_[pos_++];
    switch (op_) {
      case 0x80: {  // PROTO
        const uint8_t proto = *take(1);
        if (proto > 5) bad("pickle protocol {} is newer than 5", proto);
        break;
      }
      case 0x95: {  // FRAME: a length prefix for the opcodes that follow; nothing to do
        const uint64_t n = take_le(8);
        if (n > size_ - pos_) bad("frame of {} bytes runs past the end ({} left)", n, size_ - pos_);
        break;
      }
      case '.': {  // STOP
        Ptr result = pop();
        if (result->raw_) {
          bad("the result holds a bare global or storage ({}), which a torch checkpoint never "
              "does",
              result->describe());
        }
        return result;
      }
      case '(':  // MARK
        if (marks_.size() >= kMaxMarks) bad("more than {} nested MARKs", kMaxMarks);
        marks_.push_back(stack_.size());
        break;
      case '}':
        push(make(Kind::kDict));
        break;  // EMPTY_DICT
      case ']':
        push(make(Kind::kList));
        break;  // EMPTY_LIST
      case ')':
        push(make(Kind::kTuple));
        break;  // EMPTY_TUPLE
      case 'q':
        memo_put(take_le(1));
        break;  // BINPUT
      case 'r':
        memo_put(take_le(4));
        break;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        memo_get(take_le(1));
        break;  // BINGET
      case 'j':
        memo_get(take_le(4));
        break;     // LONG_BINGET
      case 'c': {  // GLOBAL "module\nname\n"
        const std::string module = take_line();
        const std::string name = take_line();
        global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const Ptr name = pop();
        const Ptr module = pop();
        if (module->kind_ != Kind::kString || name->kind_ != Kind::kString) {
          bad("STACK_GLOBAL needs two strs, got {} and {}", module->describe(), name->describe());
        }
        global(module->string_, name->string_);
        break;
      }
      case 'X':     // BINUNICODE
      case 0x8c:    // SHORT_BINUNICODE
      case 0x8d: {  // BINUNICODE8
        const uint64_t n = take_le(op_ == 'X' ? 4 : op_ == 0x8c ? 1 : 8);
        const uint8_t* p = take(n);  // bounded by the bytes left, before anything is allocated
        Ptr s = make(Kind::kString);
        s->string_.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
        push(std::move(s));
        break;
      }
      case 'J':    // BININT: signed 32-bit
      case 'K':    // BININT1: unsigned 8-bit
      case 'M': {  // BININT2: unsigned 16-bit
        Ptr v = make(Kind::kInt);
        if (op_ == 'J') {
          v->int_ = static_cast<int32_t>(static_cast<uint32_t>(take_le(4)));
        } else {
          v->int_ = static_cast<int64_t>(take_le(op_ == 'K' ? 1 : 2));
        }
        push(std::move(v));
        break;
      }
      case 0x8a: {  // LONG1: n bytes, little-endian two's complement
        const uint8_t n = *take(1);
        if (n > 8) bad("an integer of {} bytes does not fit in 64 bits", n);
        Ptr v = make(Kind::kInt);
        if (n > 0) {
          uint64_t u = take_le(n);
          if (n < 8 && (u >> (8 * n - 1)) & 1) u |= ~uint64_t{0} << (8 * n);  // sign-extend
          v->int_ = static_cast<int64_t>(u);
        }
        push(std::move(v));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const uint8_t* p = take(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
        Ptr v = make(Kind::kFloat);
        std::memcpy(&v->float_, &u, 8);
        push(std::move(v));
        break;
      }
      case 0x88:    // NEWTRUE
      case 0x89: {  // NEWFALSE
        Ptr v = make(Kind::kBool);
        v->bool_ = op_ == 0x88;
        push(std::move(v));
        break;
      }
      case 'N':
        push(make(Kind::kNone));
        break;
      case 't':
        push(make_tuple(pop_mark()));
        break;      // TUPLE
      case 0x85:    // TUPLE1
      case 0x86:    // TUPLE2
      case 0x87: {  // TUPLE3
        const size_t n = op_ - 0x84u;
        std::vector<Ptr> items(n);
        for (size_t i = n; i-- > 0;) items[i] = pop();
        push(make_tuple(std::move(items)));
        break;
      }
      case 's': {  // SETITEM
        Ptr value = pop();
        Ptr key = pop();
        dict_set(*top(), std::move(key), std::move(value));
        break;
      }
      case 'u': {  // SETITEMS
        std::vector<Ptr> items = pop_mark();
        if (items.size() % 2)
          bad("SETITEMS has an odd number ({}) of keys and values", items.size());
        Ptr& dict = top();
        for (size_t i = 0; i < items.size(); i += 2) {
          dict_set(*dict, std::move(items[i]), std::move(items[i + 1]));
        }
        break;
      }
      case 'a': {  // APPEND
        Ptr v = pop();
        list_append(*top(), std::move(v));
        break;
      }
      case 'e': {  // APPENDS
        std::vector<Ptr> items = pop_mark();
        Ptr& list = top();
        for (auto& v : items) list_append(*list, std::move(v));
        break;
      }
      case 'R': {  // REDUCE
        const Ptr args = pop();
        const Ptr callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 'b': {  // BUILD: OrderedDict state (instance attributes such as _metadata): dropped
        const Ptr state = pop();
        const Ptr& obj = top();
        if (obj->kind_ != Kind::kDict)
          bad("BUILD on a {} (only OrderedDict state)", obj->describe());
        const bool ok_state =
            state->kind_ == Kind::kNone || state->kind_ == Kind::kDict ||
            (state->kind_ == Kind::kTuple && state->items_.size() == 2 &&
             std::all_of(state->items_.begin(), state->items_.end(), [](const PickleValuePtr& s) {
               return s->kind_ == Kind::kNone || s->kind_ == Kind::kDict;
             }));
        if (!ok_state) bad("BUILD state {} is not an attribute dict", state->describe());
        break;
      }
      case 'Q': {  // BINPERSID
        const Ptr pid = pop();
        push(persistent_load(pid));
        break;
      }
      default: {
        const char* name = opcode_name(op_);
        if (name) {
          bad("opcode {} is not supported: torch.save does not emit it for checkpoints, so this "
              "restricted unpickler refuses it",
              name);
        }
        bad("unknown opcode 0x{:02x}: not a pickle, or corrupt", op_);
      }
    }
  }
}

PickleValuePtr parse_torch_pickle(std::span<const uint8_t> bytes, const std::string& name) {
  TorchUnpickler unpickler(bytes, name);
  return unpickler.run();
}

}  // namespace nanogpt
