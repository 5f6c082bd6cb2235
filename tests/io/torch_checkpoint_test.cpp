// torch.save checkpoints (io/torch_zip, io/torch_pickle, io/torch_checkpoint) from bytes the test
// writes itself: a protocol-2 pickle writer that emits what CPython's pickler and torch.save do
// (OrderedDict via REDUCE + SETITEMS + BUILD, tensors via _rebuild_tensor_v2 with a BINPERSID
// storage id, memoized strings and globals), wrapped in a STORED zip (plain or ZIP64). Covers a
// nanoGPT-shaped ckpt (float32 / bfloat16 / float16 / int64 storages, tied and strided views,
// 0-dim tensors, nested dicts / lists / tuples, scalars), protocol-4 opcodes, and every refusal:
// disallowed globals, unsupported / unknown opcodes, views past their storage, huge shapes,
// truncation at every length, compressed entries, legacy files, CRC, recursion and size bombs,
// and random byte mutations (which must fail with nanogpt::Error or succeed, never crash).
#include "io/torch_checkpoint.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/float16.h"
#include "io_test_util.h"

namespace nanogpt {
namespace {

using namespace std::string_literals;
using testing::expect_error;
using testing::TempDir;

// ---- writers ----

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Emits pickle opcodes the way CPython's protocol-2 pickler does for torch.save's objects.
class PickleWriter {
 public:
  explicit PickleWriter(int proto = 2) {
    op(0x80);
    s_ += static_cast<char>(proto);
  }
  PickleWriter& op(uint8_t c) {
    s_ += static_cast<char>(c);
    return *this;
  }
  PickleWriter& raw(const std::string& bytes) {
    s_ += bytes;
    return *this;
  }
  PickleWriter& mark() { return op('('); }
  PickleWriter& str(const std::string& v) {
    op('X');
    put_le(s_, v.size(), 4);
    s_ += v;
    return *this;
  }
  PickleWriter& integer(int64_t v) {
    if (v >= 0 && v < 256) {
      op('K');
      put_le(s_, static_cast<uint64_t>(v), 1);
    } else if (v >= 0 && v < 65536) {
      op('M');
      put_le(s_, static_cast<uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      put_le(s_, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
    } else {  // LONG1 with the minimal two's complement byte count, as CPython writes it
      std::string b;
      int64_t x = v;
      do {
        b += static_cast<char>(x & 0xFF);
        x >>= 8;
      } while (!((x == 0 && !(b.back() & 0x80)) || (x == -1 && (b.back() & 0x80))));
      op(0x8a);
      s_ += static_cast<char>(b.size());
      s_ += b;
    }
    return *this;
  }
  PickleWriter& real(double v) {
    uint64_t u;
    std::memcpy(&u, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) s_ += static_cast<char>((u >> (8 * i)) & 0xFF);
    return *this;
  }
  PickleWriter& none() { return op('N'); }
  PickleWriter& boolean(bool b) { return op(b ? 0x88 : 0x89); }
  PickleWriter& global(const std::string& module, const std::string& name) {
    op('c');
    s_ += module + "\n" + name + "\n";
    return *this;
  }
  PickleWriter& put(uint8_t i) { return op('q').op(i); }
  PickleWriter& get(uint8_t i) { return op('h').op(i); }
  // A tuple of ints as CPython writes it (EMPTY_TUPLE, TUPLE1-3, or MARK ... TUPLE).
  PickleWriter& int_tuple(const std::vector<int64_t>& v) {
    if (v.empty()) return op(')');
    if (v.size() > 3) mark();
    for (int64_t x : v) integer(x);
    return op(v.size() > 3 ? 't' : static_cast<uint8_t>(0x84 + v.size()));
  }
  // OrderedDict(): GLOBAL collections OrderedDict (memoized at first use), (), REDUCE.
  PickleWriter& ordered_dict() {
    if (od_memo_ < 0) {
      global("collections", "OrderedDict");
      od_memo_ = next_memo();
      put(static_cast<uint8_t>(od_memo_));
    } else {
      get(static_cast<uint8_t>(od_memo_));
    }
    return op(')').op('R');
  }
  // torch.Tensor.__reduce_ex__: _rebuild_tensor_v2((storage pid), offset, size, stride, False,
  // OrderedDict()).
  PickleWriter& tensor(const std::string& storage_type, const std::string& key, int64_t numel,
                       int64_t offset, const std::vector<int64_t>& shape,
                       const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2");
    mark();
    mark();
    if (storage_memo_ < 0) {
      str("storage");
      storage_memo_ = next_memo();
      put(static_cast<uint8_t>(storage_memo_));
    } else {
      get(static_cast<uint8_t>(storage_memo_));
    }
    global("torch", storage_type).str(key).str("cpu").integer(numel).op('t').op('Q');
    integer(offset).int_tuple(shape).int_tuple(stride).boolean(false).ordered_dict();
    return op('t').op('R');
  }
  PickleWriter& stop() { return op('.'); }
  uint8_t next_memo() { return static_cast<uint8_t>(memo_++); }
  const std::string& bytes() const { return s_; }

 private:
  std::string s_;
  int memo_ = 0, od_memo_ = -1, storage_memo_ = -1;
};

struct ZipEntry {
  std::string name;
  std::string data;
  uint16_t method = 0;  // 0 STORED; 8 claims deflate (the bytes are left as they are)
};

// A zip archive of the entries, as PyTorch's writer lays it out (local headers, data, central
// directory, end record); zip64 saturates the 32-bit fields and adds the ZIP64 records.
std::string make_zip(const std::vector<ZipEntry>& entries, bool zip64 = false) {
  std::string out, cd;
  for (const auto& e : entries) {
    const uint64_t local = out.size();
    const uint32_t crc = zip_crc32(e.data.data(), e.data.size());
    put_le(out, 0x04034b50, 4);
    put_le(out, zip64 ? 45 : 20, 2);
    put_le(out, 0, 2);
    put_le(out, e.method, 2);
    put_le(out, 0, 4);  // time, date
    put_le(out, crc, 4);
    put_le(out, zip64 ? 0xFFFFFFFFu : e.data.size(), 4);
    put_le(out, zip64 ? 0xFFFFFFFFu : e.data.size(), 4);
    put_le(out, e.name.size(), 2);
    std::string lextra;
    if (zip64) {
      put_le(lextra, 1, 2);
      put_le(lextra, 16, 2);
      put_le(lextra, e.data.size(), 8);
      put_le(lextra, e.data.size(), 8);
    }
    put_le(lextra, 0x4246, 2);  // PyTorch's "FB" padding field, aligning data to 64 bytes
    const uint64_t before = out.size() + 2 + e.name.size() + lextra.size() + 2;
    const uint64_t pad = (64 - before % 64) % 64;
    put_le(lextra, pad, 2);
    lextra += std::string(pad, 'Z');
    put_le(out, lextra.size(), 2);
    out += e.name + lextra + e.data;

    std::string cextra;
    if (zip64) {
      put_le(cextra, 1, 2);
      put_le(cextra, 24, 2);
      put_le(cextra, e.data.size(), 8);
      put_le(cextra, e.data.size(), 8);
      put_le(cextra, local, 8);
    }
    put_le(cd, 0x02014b50, 4);
    put_le(cd, 0x031E, 2);
    put_le(cd, zip64 ? 45 : 20, 2);
    put_le(cd, 0, 2);
    put_le(cd, e.method, 2);
    put_le(cd, 0, 4);
    put_le(cd, crc, 4);
    put_le(cd, zip64 ? 0xFFFFFFFFu : e.data.size(), 4);
    put_le(cd, zip64 ? 0xFFFFFFFFu : e.data.size(), 4);
    put_le(cd, e.name.size(), 2);
    put_le(cd, cextra.size(), 2);
    put_le(cd, 0, 2);  // comment
    put_le(cd, 0, 2);  // disk
    put_le(cd, 0, 2);  // internal attributes
    put_le(cd, 0, 4);  // external attributes
    put_le(cd, zip64 ? 0xFFFFFFFFu : local, 4);
    cd += e.name + cextra;
  }
  const uint64_t cd_offset = out.size();
  out += cd;
  if (zip64) {
    const uint64_t rec = out.size();
    put_le(out, 0x06064b50, 4);
    put_le(out, 44, 8);
    put_le(out, 45, 2);
    put_le(out, 45, 2);
    put_le(out, 0, 4);
    put_le(out, 0, 4);
    put_le(out, entries.size(), 8);
    put_le(out, entries.size(), 8);
    put_le(out, cd.size(), 8);
    put_le(out, cd_offset, 8);
    put_le(out, 0x07064b50, 4);
    put_le(out, 0, 4);
    put_le(out, rec, 8);
    put_le(out, 1, 4);
  }
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, zip64 ? 0xFFFF : entries.size(), 2);
  put_le(out, zip64 ? 0xFFFF : entries.size(), 2);
  put_le(out, zip64 ? 0xFFFFFFFFu : cd.size(), 4);
  put_le(out, zip64 ? 0xFFFFFFFFu : cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

// A torch.save archive: data.pkl, byteorder, data/<key> for each storage, version.
std::string make_ckpt(const std::string& pkl, const std::map<std::string, std::string>& storages,
                      const std::string& top = "archive", bool zip64 = false,
                      uint16_t pkl_method = 0) {
  std::vector<ZipEntry> e = {{top + "/data.pkl", pkl, pkl_method}, {top + "/byteorder", "little"}};
  for (const auto& [key, bytes] : storages) e.push_back({top + "/data/" + key, bytes});
  e.push_back({top + "/version", "3\n"});
  e.push_back({top + "/.data/serialization_id", "1234567890"});
  return make_zip(e, zip64);
}

std::string f32_bytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}
std::string u16_bytes(const std::vector<float>& v, bool bf16) {
  std::string s;
  for (float x : v) put_le(s, bf16 ? float_to_bf16(x) : float_to_fp16(x), 2);
  return s;
}

// The pickle of a dict of one tensor (key 'w', storage '0'), for the refusal tests.
std::string one_tensor_pickle(const std::string& type, int64_t numel, int64_t offset,
                              const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& stride) {
  PickleWriter p;
  p.op('}').put(p.next_memo()).str("w").tensor(type, "0", numel, offset, shape, stride);
  return p.op('s').stop().bytes();
}

TorchCheckpoint open_bytes(const std::string& bytes) {
  return TorchCheckpoint(std::string_view(bytes), "ckpt.pt");
}

// ---- a nanoGPT-shaped checkpoint ----

// wte (3, 2) float32 on storage '0', tied lm_head on the same storage, a transposed view of it,
// ln_1.weight bfloat16 on '1', optimizer state with a 0-dim step on '2' and exp_avg on '0',
// best_val_loss a 0-dim tensor at offset 1 of '3'; _metadata state on the model OrderedDict.
std::string nanogpt_pickle() {
  PickleWriter p;
  p.op('}').put(p.next_memo()).mark();

  p.str("model").ordered_dict().put(p.next_memo()).mark();
  p.str("_orig_mod.transformer.wte.weight").tensor("FloatStorage", "0", 6, 0, {3, 2}, {2, 1});
  p.str("_orig_mod.lm_head.weight").tensor("FloatStorage", "0", 6, 0, {3, 2}, {2, 1});
  p.str("wte_t").tensor("FloatStorage", "0", 6, 0, {2, 3}, {1, 2});
  p.str("_orig_mod.transformer.h.0.ln_1.weight").tensor("BFloat16Storage", "1", 4, 0, {4}, {1});
  p.op('u');
  // BUILD state {'_metadata': OrderedDict({'': {'version': 1}})}, as state_dict() has.
  p.op('}').str("_metadata").ordered_dict().str("").op('}').str("version").integer(1).op('s');
  p.op('s').op('s').op('b');

  p.str("optimizer").op('}').mark();
  p.str("state").op('}').integer(0).op('}').mark();
  p.str("step").tensor("FloatStorage", "2", 1, 0, {}, {});
  p.str("exp_avg").tensor("FloatStorage", "0", 6, 2, {2, 2}, {2, 1});
  p.op('u').op('s');
  p.str("param_groups").op(']').op('}').mark();
  p.str("lr").real(6e-4).str("betas").real(0.9).real(0.95).op(0x86);
  p.str("eps").real(1e-8).str("weight_decay").real(0.1).str("amsgrad").boolean(false);
  p.str("foreach").none().str("params").op(']').mark().integer(0).integer(1).op('e');
  p.op('u').op('a');
  p.op('u');

  p.str("model_args").op('}').mark();
  p.str("n_layer").integer(12).str("bias").boolean(false).str("dropout").real(0.0);
  p.str("vocab_size").integer(50304).str("big").integer(int64_t{1} << 40);
  p.str("neg").integer(-7).str("neg_big").integer(-(int64_t{1} << 40)).op('u');

  p.str("iter_num").integer(5000);
  p.str("best_val_loss").tensor("FloatStorage", "3", 2, 1, {}, {});
  p.str("config").op('}').mark();
  p.str("out_dir").str("out").str("compile").boolean(true).str("init_from").none();
  p.str("nested").mark().integer(1).op(']').integer(2).op('a').op('}').op(0x86).op('t');
  p.op('u');
  p.op('u');
  return p.stop().bytes();
}

const std::vector<float> kWte = {1.5f, -2.0f, 3.25f, 4.0f, -5.5f, 6.0f};
const std::vector<float> kLn = {1.0f, 0.5f, -0.25f, 3.0f};

std::string nanogpt_ckpt(const std::string& top = "archive", bool zip64 = false) {
  return make_ckpt(nanogpt_pickle(),
                   {{"0", f32_bytes(kWte)},
                    {"1", u16_bytes(kLn, true)},
                    {"2", f32_bytes({42.0f})},
                    {"3", f32_bytes({9.0f, 3.125f})}},
                   top, zip64);
}

void check_nanogpt(const TorchCheckpoint& ck) {
  const PickleValue& root = ck.root();
  ASSERT_TRUE(root.is_dict());
  EXPECT_EQ(root.dict_items().size(), 6u);
  EXPECT_EQ(root.dict_items()[0].first->as_string(), "model");  // insertion order kept
  EXPECT_EQ(ck.format_version(), "3");

  const PickleValue& model = root.at("model");
  ASSERT_EQ(model.dict_items().size(), 4u);
  const TorchTensorRef& wte = model.at("_orig_mod.transformer.wte.weight").tensor();
  const TorchTensorRef& head = model.at("_orig_mod.lm_head.weight").tensor();
  EXPECT_EQ(wte.storage_key, head.storage_key);  // tied
  EXPECT_EQ(wte.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(wte.dtype, TorchDtype::kFloat32);
  EXPECT_TRUE(wte.is_contiguous());
  EXPECT_EQ(ck.read_f32(wte), kWte);
  EXPECT_EQ(ck.read_f32(head), kWte);
  const TorchTensorRef& wte_t = model.at("wte_t").tensor();
  EXPECT_FALSE(wte_t.is_contiguous());
  EXPECT_EQ(ck.read_f32(wte_t), (std::vector<float>{1.5f, 3.25f, -5.5f, -2.0f, 4.0f, 6.0f}));
  const TorchTensorRef& ln = model.at("_orig_mod.transformer.h.0.ln_1.weight").tensor();
  EXPECT_EQ(ln.dtype, TorchDtype::kBFloat16);
  EXPECT_EQ(ck.read_f32(ln), kLn);

  const PickleValue& opt = root.at("optimizer");
  const PickleValue* s0 = opt.at("state").find(int64_t{0});
  ASSERT_NE(s0, nullptr);
  EXPECT_EQ(opt.at("state").find(int64_t{1}), nullptr);
  EXPECT_EQ(s0->at("step").tensor().shape.size(), 0u);
  EXPECT_EQ(ck.read_f32(s0->at("step").tensor()), std::vector<float>{42.0f});
  EXPECT_EQ(ck.read_f32(s0->at("exp_avg").tensor()),
            (std::vector<float>{3.25f, 4.0f, -5.5f, 6.0f}));
  const auto& groups = opt.at("param_groups").items();
  ASSERT_EQ(groups.size(), 1u);
  const PickleValue& g = *groups[0];
  EXPECT_EQ(g.at("lr").as_float(), 6e-4);
  ASSERT_EQ(g.at("betas").kind(), PickleValue::Kind::kTuple);
  EXPECT_EQ(g.at("betas").items()[1]->as_float(), 0.95);
  EXPECT_EQ(g.at("eps").as_float(), 1e-8);
  EXPECT_FALSE(g.at("amsgrad").as_bool());
  EXPECT_TRUE(g.at("foreach").is_none());
  ASSERT_EQ(g.at("params").items().size(), 2u);
  EXPECT_EQ(g.at("params").items()[1]->as_int(), 1);

  const PickleValue& args = root.at("model_args");
  EXPECT_EQ(args.at("n_layer").as_int(), 12);
  EXPECT_FALSE(args.at("bias").as_bool());
  EXPECT_EQ(args.at("dropout").as_float(), 0.0);
  EXPECT_EQ(args.at("vocab_size").as_int(), 50304);
  EXPECT_EQ(args.at("big").as_int(), int64_t{1} << 40);
  EXPECT_EQ(args.at("neg").as_int(), -7);
  EXPECT_EQ(args.at("neg_big").as_int(), -(int64_t{1} << 40));
  EXPECT_EQ(args.at("n_layer").as_float(), 12.0);  // ints read as floats

  EXPECT_EQ(root.at("iter_num").as_int(), 5000);
  EXPECT_EQ(ck.read_f32(root.at("best_val_loss").tensor()), std::vector<float>{3.125f});
  const PickleValue& config = root.at("config");
  EXPECT_EQ(config.at("out_dir").as_string(), "out");
  EXPECT_TRUE(config.at("compile").as_bool());
  EXPECT_TRUE(config.at("init_from").is_none());
  const PickleValue& nested = config.at("nested");  // (1, ([2], {}))
  ASSERT_EQ(nested.items().size(), 2u);
  EXPECT_EQ(nested.items()[0]->as_int(), 1);
  const PickleValue& inner = *nested.items()[1];
  ASSERT_EQ(inner.kind(), PickleValue::Kind::kTuple);
  EXPECT_EQ(inner.items()[0]->kind(), PickleValue::Kind::kList);
  EXPECT_EQ(inner.items()[0]->items()[0]->as_int(), 2);
  EXPECT_TRUE(inner.items()[1]->is_dict());
}

TEST(TorchCheckpoint, ReadsNanoGptShapedCheckpointFromFile) {
  TempDir tmp;
  const std::string bytes = nanogpt_ckpt();
  std::ofstream(tmp / "ckpt.pt", std::ios::binary) << bytes;
  const TorchCheckpoint ck = read_torch_checkpoint(tmp / "ckpt.pt");
  EXPECT_EQ(ck.archive().top_folder(), "archive");
  EXPECT_TRUE(ck.archive().contains(".data/serialization_id"));
  check_nanogpt(ck);
}

TEST(TorchCheckpoint, Zip64AndAnyTopFolder) {
  const std::string bytes = nanogpt_ckpt("ckpt", /*zip64=*/true);
  const TorchCheckpoint ck = open_bytes(bytes);
  EXPECT_EQ(ck.archive().top_folder(), "ckpt");
  check_nanogpt(ck);
}

TEST(TorchCheckpoint, Float16Int64AndErrorsOnWrongAccess) {
  PickleWriter p;
  p.op('}').put(p.next_memo()).mark();
  p.str("h").tensor("HalfStorage", "a", 3, 0, {3}, {1});
  p.str("i").tensor("LongStorage", "b", 2, 0, {2}, {1});
  p.str("e").tensor("FloatStorage", "c", 0, 0, {0, 5}, {5, 1});  // empty
  p.op('u').stop();
  std::string longs;
  put_le(longs, 7, 8);
  put_le(longs, static_cast<uint64_t>(-3), 8);
  const std::string bytes = make_ckpt(
      p.bytes(), {{"a", u16_bytes({0.5f, -2.0f, 65504.0f}, false)}, {"b", longs}, {"c", ""}});
  const TorchCheckpoint ck = open_bytes(bytes);
  EXPECT_EQ(ck.read_f32(ck.root().at("h").tensor()), (std::vector<float>{0.5f, -2.0f, 65504.0f}));
  EXPECT_EQ(ck.read_i64(ck.root().at("i").tensor()), (std::vector<int64_t>{7, -3}));
  EXPECT_TRUE(ck.read_f32(ck.root().at("e").tensor()).empty());
  expect_error([&] { ck.read_f32(ck.root().at("i").tensor()); }, {"ckpt.pt", "int64"});
  expect_error([&] { ck.read_i64(ck.root().at("h").tensor()); }, {"float16", "expected int64"});
  expect_error([&] { (void)ck.root().at("missing"); }, {"no key 'missing'", "'h'"});
  expect_error([&] { (void)ck.root().at("h").as_int(); }, {"expected an int", "tensor float16"});
  // A hand-made ref whose view leaves its storage is refused before any copy.
  TorchTensorRef bad = ck.root().at("h").tensor();
  bad.shape = {4};
  expect_error([&] { ck.read_f32(bad); }, {"more elements than the storage"});
}

TEST(TorchCheckpoint, Protocol4Opcodes) {
  // FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL, BINUNICODE8, as pickle protocol 4 writes.
  std::string s;
  s += "\x80\x04";
  s += '\x95';
  put_le(s, 0, 8);  // frame length (not enforced)
  s += "}\x94";     // EMPTY_DICT MEMOIZE
  auto short_str = [&](const std::string& v) {
    s += '\x8c';
    s += static_cast<char>(v.size());
    s += v;
    s += '\x94';
  };
  short_str("w");
  short_str("torch._utils");
  short_str("_rebuild_tensor_v2");
  s += "\x93\x94(";  // STACK_GLOBAL MEMOIZE MARK
  s += "(";
  short_str("storage");
  short_str("torch");
  short_str("FloatStorage");
  s += "\x93\x94";
  short_str("0");
  s += '\x8d';
  put_le(s, 3, 8);
  s += "cpu";
  s += "K\x02tQ"s;                      // numel 2, TUPLE, BINPERSID
  s += "K\x00K\x02\x85K\x01\x85\x89"s;  // offset 0, (2,), (1,), False
  short_str("collections");
  short_str("OrderedDict");
  s += "\x93)RtRs.";
  const std::string bytes = make_ckpt(s, {{"0", f32_bytes({1.0f, 2.0f})}});
  const TorchCheckpoint ck = open_bytes(bytes);
  EXPECT_EQ(ck.read_f32(ck.root().at("w").tensor()), (std::vector<float>{1.0f, 2.0f}));
}

TEST(TorchCheckpoint, DuplicateKeyKeepsFirstPositionAndLastValue) {
  PickleWriter p;
  p.op('}').mark().str("a").integer(1).str("b").integer(2).str("a").integer(3).op('u').stop();
  const std::string bytes = make_ckpt(p.bytes(), {});
  const TorchCheckpoint ck = open_bytes(bytes);
  ASSERT_EQ(ck.root().dict_items().size(), 2u);
  EXPECT_EQ(ck.root().dict_items()[0].first->as_string(), "a");
  EXPECT_EQ(ck.root().at("a").as_int(), 3);
}

TEST(TorchZip, Crc32KnownValue) {
  EXPECT_EQ(zip_crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(zip_crc32("56789", 5, zip_crc32("1234", 4)), 0xCBF43926u);
}

// data.pkl as CPython 3's own pickle.Pickler (protocol 2) writes it for torch.save's objects: made
// by emulating torch.save's persistent_id and Tensor.__reduce_ex__ with stand-in torch modules, for
// {'model': OrderedDict(wte (3,2) f32 on '0', ln_1 (4,) bf16 on '1', lm_head tied to '0') with
// _metadata, 'optimizer': {'state': {0: {'step': 0-dim on '2', 'exp_avg': (2,2) at offset 2 of
// '0'}}, 'param_groups': [...]}, 'model_args', 'iter_num': 600000, 'best_val_loss': 0-dim on '3',
// 'config'}. Memoized strings / globals (BINGET), SETITEM vs SETITEMS batches, BUILD of _metadata.
const char kCPythonPickle[] =
    "\x80\x02\x7d\x71\x00\x28\x58\x05\x00\x00\x00\x6d\x6f\x64\x65\x6c\x71\x01\x63\x63\x6f\x6c\x6c"
    "\x65\x63\x74\x69\x6f\x6e\x73\x0a\x4f"
    "\x72\x64\x65\x72\x65\x64\x44\x69\x63\x74\x0a\x71\x02\x29\x52\x71\x03\x28\x58\x20\x00\x00\x00"
    "\x5f\x6f\x72\x69\x67\x5f\x6d\x6f\x64"
    "\x2e\x74\x72\x61\x6e\x73\x66\x6f\x72\x6d\x65\x72\x2e\x77\x74\x65\x2e\x77\x65\x69\x67\x68\x74"
    "\x71\x04\x63\x74\x6f\x72\x63\x68\x2e"
    "\x5f\x75\x74\x69\x6c\x73\x0a\x5f\x72\x65\x62\x75\x69\x6c\x64\x5f\x74\x65\x6e\x73\x6f\x72\x5f"
    "\x76\x32\x0a\x71\x05\x28\x28\x58\x07"
    "\x00\x00\x00\x73\x74\x6f\x72\x61\x67\x65\x71\x06\x63\x74\x6f\x72\x63\x68\x0a\x46\x6c\x6f\x61"
    "\x74\x53\x74\x6f\x72\x61\x67\x65\x0a"
    "\x71\x07\x58\x01\x00\x00\x00\x30\x71\x08\x58\x03\x00\x00\x00\x63\x70\x75\x71\x09\x4b\x06\x74"
    "\x71\x0a\x51\x4b\x00\x4b\x03\x4b\x02"
    "\x86\x71\x0b\x4b\x02\x4b\x01\x86\x71\x0c\x89\x68\x02\x29\x52\x71\x0d\x74\x71\x0e\x52\x71\x0f"
    "\x58\x25\x00\x00\x00\x5f\x6f\x72\x69"
    "\x67\x5f\x6d\x6f\x64\x2e\x74\x72\x61\x6e\x73\x66\x6f\x72\x6d\x65\x72\x2e\x68\x2e\x30\x2e\x6c"
    "\x6e\x5f\x31\x2e\x77\x65\x69\x67\x68"
    "\x74\x71\x10\x68\x05\x28\x28\x68\x06\x63\x74\x6f\x72\x63\x68\x0a\x42\x46\x6c\x6f\x61\x74\x31"
    "\x36\x53\x74\x6f\x72\x61\x67\x65\x0a"
    "\x71\x11\x58\x01\x00\x00\x00\x31\x71\x12\x68\x09\x4b\x04\x74\x71\x13\x51\x4b\x00\x4b\x04\x85"
    "\x71\x14\x4b\x01\x85\x71\x15\x89\x68"
    "\x02\x29\x52\x71\x16\x74\x71\x17\x52\x71\x18\x58\x18\x00\x00\x00\x5f\x6f\x72\x69\x67\x5f\x6d"
    "\x6f\x64\x2e\x6c\x6d\x5f\x68\x65\x61"
    "\x64\x2e\x77\x65\x69\x67\x68\x74\x71\x19\x68\x05\x28\x28\x68\x06\x68\x07\x68\x08\x68\x09\x4b"
    "\x06\x74\x71\x1a\x51\x4b\x00\x68\x0b"
    "\x68\x0c\x89\x68\x02\x29\x52\x71\x1b\x74\x71\x1c\x52\x71\x1d\x75\x7d\x71\x1e\x58\x09\x00\x00"
    "\x00\x5f\x6d\x65\x74\x61\x64\x61\x74"
    "\x61\x71\x1f\x68\x02\x29\x52\x71\x20\x28\x58\x00\x00\x00\x00\x71\x21\x7d\x71\x22\x58\x07\x00"
    "\x00\x00\x76\x65\x72\x73\x69\x6f\x6e"
    "\x71\x23\x4b\x01\x73\x58\x0b\x00\x00\x00\x74\x72\x61\x6e\x73\x66\x6f\x72\x6d\x65\x72\x71\x24"
    "\x7d\x71\x25\x68\x23\x4b\x01\x73\x75"
    "\x73\x62\x58\x09\x00\x00\x00\x6f\x70\x74\x69\x6d\x69\x7a\x65\x72\x71\x26\x7d\x71\x27\x28\x58"
    "\x05\x00\x00\x00\x73\x74\x61\x74\x65"
    "\x71\x28\x7d\x71\x29\x4b\x00\x7d\x71\x2a\x28\x58\x04\x00\x00\x00\x73\x74\x65\x70\x71\x2b\x68"
    "\x05\x28\x28\x68\x06\x68\x07\x58\x01"
    "\x00\x00\x00\x32\x71\x2c\x68\x09\x4b\x01\x74\x71\x2d\x51\x4b\x00\x29\x29\x89\x68\x02\x29\x52"
    "\x71\x2e\x74\x71\x2f\x52\x71\x30\x58"
    "\x07\x00\x00\x00\x65\x78\x70\x5f\x61\x76\x67\x71\x31\x68\x05\x28\x28\x68\x06\x68\x07\x68\x08"
    "\x68\x09\x4b\x06\x74\x71\x32\x51\x4b"
    "\x02\x4b\x02\x4b\x02\x86\x71\x33\x68\x0c\x89\x68\x02\x29\x52\x71\x34\x74\x71\x35\x52\x71\x36"
    "\x75\x73\x58\x0c\x00\x00\x00\x70\x61"
    "\x72\x61\x6d\x5f\x67\x72\x6f\x75\x70\x73\x71\x37\x5d\x71\x38\x7d\x71\x39\x28\x58\x02\x00\x00"
    "\x00\x6c\x72\x71\x3a\x47\x3f\x43\xa9"
    "\x2a\x30\x55\x32\x61\x58\x05\x00\x00\x00\x62\x65\x74\x61\x73\x71\x3b\x47\x3f\xec\xcc\xcc\xcc"
    "\xcc\xcc\xcd\x47\x3f\xee\x66\x66\x66"
    "\x66\x66\x66\x86\x71\x3c\x58\x03\x00\x00\x00\x65\x70\x73\x71\x3d\x47\x3e\x45\x79\x8e\xe2\x30"
    "\x8c\x3a\x58\x0c\x00\x00\x00\x77\x65"
    "\x69\x67\x68\x74\x5f\x64\x65\x63\x61\x79\x71\x3e\x47\x3f\xb9\x99\x99\x99\x99\x99\x9a\x58\x07"
    "\x00\x00\x00\x61\x6d\x73\x67\x72\x61"
    "\x64\x71\x3f\x89\x58\x07\x00\x00\x00\x66\x6f\x72\x65\x61\x63\x68\x71\x40\x4e\x58\x08\x00\x00"
    "\x00\x6d\x61\x78\x69\x6d\x69\x7a\x65"
    "\x71\x41\x89\x58\x06\x00\x00\x00\x70\x61\x72\x61\x6d\x73\x71\x42\x5d\x71\x43\x28\x4b\x00\x4b"
    "\x01\x4b\x02\x65\x75\x61\x75\x58\x0a"
    "\x00\x00\x00\x6d\x6f\x64\x65\x6c\x5f\x61\x72\x67\x73\x71\x44\x7d\x71\x45\x28\x58\x07\x00\x00"
    "\x00\x6e\x5f\x6c\x61\x79\x65\x72\x71"
    "\x46\x4b\x0c\x58\x06\x00\x00\x00\x6e\x5f\x68\x65\x61\x64\x71\x47\x4b\x0c\x58\x06\x00\x00\x00"
    "\x6e\x5f\x65\x6d\x62\x64\x71\x48\x4d"
    "\x00\x03\x58\x0a\x00\x00\x00\x62\x6c\x6f\x63\x6b\x5f\x73\x69\x7a\x65\x71\x49\x4d\x00\x04\x58"
    "\x04\x00\x00\x00\x62\x69\x61\x73\x71"
    "\x4a\x89\x58\x0a\x00\x00\x00\x76\x6f\x63\x61\x62\x5f\x73\x69\x7a\x65\x71\x4b\x4d\x80\xc4\x58"
    "\x07\x00\x00\x00\x64\x72\x6f\x70\x6f"
    "\x75\x74\x71\x4c\x47\x00\x00\x00\x00\x00\x00\x00\x00\x75\x58\x08\x00\x00\x00\x69\x74\x65\x72"
    "\x5f\x6e\x75\x6d\x71\x4d\x4a\xc0\x27"
    "\x09\x00\x58\x0d\x00\x00\x00\x62\x65\x73\x74\x5f\x76\x61\x6c\x5f\x6c\x6f\x73\x73\x71\x4e\x68"
    "\x05\x28\x28\x68\x06\x68\x07\x58\x01"
    "\x00\x00\x00\x33\x71\x4f\x68\x09\x4b\x01\x74\x71\x50\x51\x4b\x00\x29\x29\x89\x68\x02\x29\x52"
    "\x71\x51\x74\x71\x52\x52\x71\x53\x58"
    "\x06\x00\x00\x00\x63\x6f\x6e\x66\x69\x67\x71\x54\x7d\x71\x55\x28\x58\x07\x00\x00\x00\x6f\x75"
    "\x74\x5f\x64\x69\x72\x71\x56\x58\x03"
    "\x00\x00\x00\x6f\x75\x74\x71\x57\x58\x0d\x00\x00\x00\x65\x76\x61\x6c\x5f\x69\x6e\x74\x65\x72"
    "\x76\x61\x6c\x71\x58\x4d\xd0\x07\x58"
    "\x16\x00\x00\x00\x61\x6c\x77\x61\x79\x73\x5f\x73\x61\x76\x65\x5f\x63\x68\x65\x63\x6b\x70\x6f"
    "\x69\x6e\x74\x71\x59\x88\x58\x09\x00"
    "\x00\x00\x69\x6e\x69\x74\x5f\x66\x72\x6f\x6d\x71\x5a\x58\x07\x00\x00\x00\x73\x63\x72\x61\x74"
    "\x63\x68\x71\x5b\x58\x0e\x00\x00\x00"
    "\x77\x61\x6e\x64\x62\x5f\x72\x75\x6e\x5f\x6e\x61\x6d\x65\x71\x5c\x58\x04\x00\x00\x00\x67\x70"
    "\x74\x32\x71\x5d\x58\x0d\x00\x00\x00"
    "\x6c\x65\x61\x72\x6e\x69\x6e\x67\x5f\x72\x61\x74\x65\x71\x5e\x47\x3f\x43\xa9\x2a\x30\x55\x32"
    "\x61\x58\x09\x00\x00\x00\x6d\x61\x78"
    "\x5f\x69\x74\x65\x72\x73\x71\x5f\x4a\xc0\x27\x09\x00\x58\x07\x00\x00\x00\x63\x6f\x6d\x70\x69"
    "\x6c\x65\x71\x60\x88\x58\x07\x00\x00"
    "\x00\x62\x61\x63\x6b\x65\x6e\x64\x71\x61\x58\x04\x00\x00\x00\x6e\x63\x63\x6c\x71\x62\x58\x03"
    "\x00\x00\x00\x62\x69\x67\x71\x63\x8a"
    "\x06\x00\x00\x00\x00\x00\x01\x58\x03\x00\x00\x00\x6e\x65\x67\x71\x64\x4a\xfb\xff\xff\xff\x58"
    "\x04\x00\x00\x00\x6e\x6f\x6e\x65\x71"
    "\x65\x4e\x75\x75\x2e";

TEST(TorchCheckpoint, ReadsWhatCPythonsPicklerWrites) {
  const std::string pkl(kCPythonPickle, sizeof(kCPythonPickle) - 1);
  const std::string bytes = make_ckpt(pkl, {{"0", f32_bytes(kWte)},
                                            {"1", u16_bytes(kLn, true)},
                                            {"2", f32_bytes({42.0f})},
                                            {"3", f32_bytes({3.125f})}});
  const TorchCheckpoint ck = open_bytes(bytes);
  const PickleValue& root = ck.root();
  const PickleValue& model = root.at("model");
  ASSERT_EQ(model.dict_items().size(), 3u);
  EXPECT_EQ(model.dict_items()[1].first->as_string(), "_orig_mod.transformer.h.0.ln_1.weight");
  EXPECT_EQ(ck.read_f32(model.at("_orig_mod.transformer.wte.weight").tensor()), kWte);
  EXPECT_EQ(ck.read_f32(model.at("_orig_mod.lm_head.weight").tensor()), kWte);
  EXPECT_EQ(ck.read_f32(model.at("_orig_mod.transformer.h.0.ln_1.weight").tensor()), kLn);
  const PickleValue& state = *root.at("optimizer").at("state").find(int64_t{0});
  EXPECT_EQ(ck.read_f32(state.at("step").tensor()), std::vector<float>{42.0f});
  EXPECT_EQ(ck.read_f32(state.at("exp_avg").tensor()),
            (std::vector<float>{3.25f, 4.0f, -5.5f, 6.0f}));
  const PickleValue& group = *root.at("optimizer").at("param_groups").items().at(0);
  EXPECT_EQ(group.at("betas").items().at(1)->as_float(), 0.95);
  EXPECT_EQ(group.at("params").items().size(), 3u);
  EXPECT_TRUE(group.at("foreach").is_none());
  EXPECT_EQ(root.at("model_args").at("n_embd").as_int(), 768);
  EXPECT_FALSE(root.at("model_args").at("bias").as_bool());
  EXPECT_EQ(root.at("iter_num").as_int(), 600000);
  EXPECT_EQ(ck.read_f32(root.at("best_val_loss").tensor()), std::vector<float>{3.125f});
  const PickleValue& config = root.at("config");
  EXPECT_EQ(config.at("wandb_run_name").as_string(), "gpt2");
  EXPECT_EQ(config.at("learning_rate").as_float(), 0.0006);
  EXPECT_EQ(config.at("big").as_int(), int64_t{1} << 40);
  EXPECT_EQ(config.at("neg").as_int(), -5);
  EXPECT_TRUE(config.at("none").is_none());
  EXPECT_TRUE(config.at("compile").as_bool());
}

// A real torch.save file, when NANOGPT_TORCH_CKPT names one (e.g. nanoGPT's out/ckpt.pt): opens it
// and reads every floating-point tensor. Skipped otherwise.
TEST(TorchCheckpoint, ReadsFileFromEnvironment) {
  const char* path = std::getenv("NANOGPT_TORCH_CKPT");
  if (!path || !*path) GTEST_SKIP() << "set NANOGPT_TORCH_CKPT to a torch.save file";
  const TorchCheckpoint ck = read_torch_checkpoint(path);
  int64_t tensors = 0, elements = 0;
  std::vector<const PickleValue*> todo = {&ck.root()};
  while (!todo.empty()) {
    const PickleValue* v = todo.back();
    todo.pop_back();
    if (v->is_tensor()) {
      ++tensors;
      elements += v->tensor().numel();
      if (v->tensor().dtype != TorchDtype::kInt64) (void)ck.read_f32(v->tensor());
    } else if (v->is_dict()) {
      for (const auto& [k, c] : v->dict_items()) todo.push_back(c.get());
    } else if (v->kind() == PickleValue::Kind::kList || v->kind() == PickleValue::Kind::kTuple) {
      for (const auto& c : v->items()) todo.push_back(c.get());
    }
  }
  std::printf("%s: %lld tensor references, %lld elements, top folder '%s', version '%s'\n", path,
              static_cast<long long>(tensors), static_cast<long long>(elements),
              ck.archive().top_folder().c_str(), ck.format_version().c_str());
}

// ---- refusals ----

TEST(TorchCheckpoint, RefusesDisallowedGlobals) {
  for (const auto& [module, name] :
       std::vector<std::pair<std::string, std::string>>{{"os", "system"},
                                                        {"posix", "system"},
                                                        {"builtins", "eval"},
                                                        {"torch", "DoubleStorage"},
                                                        {"collections", "OrderedDictX"}}) {
    PickleWriter p;
    p.global(module, name).str("echo pwned").op(0x85).op('R').stop();
    expect_error(
        [&] { open_bytes(make_ckpt(p.bytes(), {})); },
        {"ckpt.pt:archive/data.pkl", "GLOBAL", "'" + module + "." + name + "'", "not allowed"});
  }
  // The classic payload byte for byte: cos\nsystem\n(S'...'\ntR.
  expect_error([&] { open_bytes(make_ckpt("cos\nsystem\n(S'echo pwned'\ntR.", {})); },
               {"'os.system' is not allowed", "byte 0"});
}

TEST(TorchCheckpoint, RefusesUnsupportedAndUnknownOpcodes) {
  PickleWriter inst;
  inst.op('i').raw("os\nsystem\n").stop();  // INST: a named opcode that is never accepted
  expect_error([&] { open_bytes(make_ckpt(inst.bytes(), {})); },
               {"opcode INST is not supported", "byte 2"});
  PickleWriter unknown;
  unknown.op(0xff).stop();
  expect_error([&] { open_bytes(make_ckpt(unknown.bytes(), {})); }, {"unknown opcode 0xff"});
  PickleWriter newobj;
  newobj.global("collections", "OrderedDict").op(')').op(0x81).stop();
  expect_error([&] { open_bytes(make_ckpt(newobj.bytes(), {})); }, {"NEWOBJ"});
  PickleWriter long4;
  long4.op(0x8a).op(9).raw(std::string(9, '\1')).stop();
  expect_error([&] { open_bytes(make_ckpt(long4.bytes(), {})); }, {"LONG1", "64 bits"});
  PickleWriter proto;
  proto.op(0x80).op(6).none().stop();
  expect_error([&] { open_bytes(make_ckpt(proto.bytes(), {})); }, {"protocol 6"});
}

TEST(TorchCheckpoint, RefusesViewsOutsideTheirStorage) {
  const std::string data = f32_bytes(kWte);  // 6 floats
  // Offset past the end of the storage.
  expect_error(
      [&] {
        open_bytes(make_ckpt(one_tensor_pickle("FloatStorage", 6, 10, {1}, {1}), {{"0", data}}));
      },
      {"offset is past the end of the storage", "storage '0'", "offset 10"});
  // Shape reaching past the end via offset + extent.
  expect_error(
      [&] {
        open_bytes(
            make_ckpt(one_tensor_pickle("FloatStorage", 6, 3, {2, 2}, {2, 1}), {{"0", data}}));
      },
      {"reaches past the end of the storage"});
  // A 1e12-element shape: refused before anything is allocated.
  expect_error(
      [&] {
        open_bytes(
            make_ckpt(one_tensor_pickle("FloatStorage", 6, 0, {1000000, 1000000}, {1000000, 1}),
                      {{"0", data}}));
      },
      {"more elements than the storage", "[1000000, 1000000]"});
  // Strides that overflow int64 when multiplied out.
  expect_error(
      [&] {
        open_bytes(make_ckpt(one_tensor_pickle("FloatStorage", 6, 0, {2, 2}, {INT64_C(1) << 62, 1}),
                             {{"0", data}}));
      },
      {"reaches past the end"});
  // The storage says 6 elements but its data file holds 4 (truncated), or 8 (corrupt).
  expect_error(
      [&] {
        open_bytes(make_ckpt(one_tensor_pickle("FloatStorage", 6, 0, {6}, {1}),
                             {{"0", f32_bytes({1, 2, 3, 4})}}));
      },
      {"truncated", "storage '0' should hold 6 float32 elements (24 bytes)", "16 bytes"});
  expect_error(
      [&] {
        open_bytes(make_ckpt(one_tensor_pickle("BFloat16Storage", 6, 0, {6}, {1}), {{"0", data}}));
      },
      {"corrupt", "12 bytes", "24 bytes"});
  // A storage entry that is absent.
  expect_error(
      [&] { open_bytes(make_ckpt(one_tensor_pickle("FloatStorage", 6, 0, {6}, {1}), {})); },
      {"no entry 'archive/data/0'"});
  // An impossible storage size (numel * 8 would overflow).
  expect_error(
      [&] {
        open_bytes(
            make_ckpt(one_tensor_pickle("LongStorage", INT64_MAX / 4, 0, {1}, {1}), {{"0", data}}));
      },
      {"impossible element count"});
}

TEST(TorchCheckpoint, RefusesInconsistentTiedStorages) {
  PickleWriter p;
  p.op('}').mark();
  p.str("a").tensor("FloatStorage", "0", 6, 0, {6}, {1});
  p.str("b").tensor("BFloat16Storage", "0", 12, 0, {12}, {1});
  p.op('u').stop();
  expect_error(
      [&] {
        open_bytes(make_ckpt(p.bytes(), {{"0", f32_bytes(kWte)}}));
      },
      {"storage '0' is used as", "float32", "bfloat16"});
}

TEST(TorchCheckpoint, RefusesTruncationAtEveryLength) {
  const std::string full = nanogpt_ckpt();
  for (size_t n = 0; n < full.size(); ++n) {
    try {
      open_bytes(full.substr(0, n));
      ADD_FAILURE() << "a " << n << "-byte prefix was accepted";
    } catch (const Error& e) {
      if (n > 0 && n < full.size() - 22) {  // no end record at all: named as truncated
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
      }
    }
  }
  // A pickle stream without its STOP (inside an intact archive).
  std::string pkl = nanogpt_pickle();
  pkl.resize(pkl.size() / 2);
  expect_error([&] { open_bytes(make_ckpt(pkl, {})); }, {"truncated"});
}

TEST(TorchCheckpoint, RefusesCompressedEntries) {
  expect_error(
      [&] { open_bytes(make_ckpt(nanogpt_pickle(), {}, "archive", false, /*pkl_method=*/8)); },
      {"'archive/data.pkl' is compressed", "deflate", "STORED"});
}

TEST(TorchCheckpoint, RefusesLegacyAndNonZipFiles) {
  // torch.save(..., _use_new_zipfile_serialization=False): the magic number pickle comes first.
  const std::string legacy = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.";
  TempDir tmp;
  std::ofstream(tmp / "old.pt", std::ios::binary) << legacy;
  expect_error([&] { read_torch_checkpoint(tmp / "old.pt"); },
               {"old.pt", "legacy", "torch.save(torch.load(", "PyTorch >= 1.6"});
  expect_error([&] { open_bytes(std::string(100, 'x')); }, {"not a torch.save zip archive"});
  expect_error([&] { read_torch_checkpoint(tmp / "missing.pt"); }, {"missing.pt"});
  // A zip archive that is not a torch.save one.
  expect_error([&] { open_bytes(make_zip({{"a/readme.txt", "hi"}})); }, {"no 'a/data.pkl'"});
  expect_error(
      [&] {
        open_bytes(make_zip({{"a/data.pkl", "N."}, {"b/x", ""}}));
      },
      {"two top folders"});
  expect_error([&] { open_bytes(make_zip({{"data.pkl", "N."}})); }, {"not inside a top folder"});
}

TEST(TorchCheckpoint, RefusesCorruptPickleAndBigEndian) {
  std::string bytes = nanogpt_ckpt();
  const size_t at = bytes.find("_orig_mod.lm_head");
  ASSERT_NE(at, std::string::npos);
  bytes[at] ^= 1;
  expect_error([&] { open_bytes(bytes); }, {"CRC-32", "archive/data.pkl"});
  expect_error(
      [&] {
        open_bytes(make_zip({{"archive/data.pkl", "N."}, {"archive/byteorder", "big"}}));
      },
      {"'big'-endian"});
}

TEST(TorchCheckpoint, RefusesRecursionAndSizeBombs) {
  // A list appended to itself (l = []; l.append(l)).
  PickleWriter self;
  self.op(']').put(0).get(0).op('a').stop();
  expect_error([&] { open_bytes(make_ckpt(self.bytes(), {})); }, {"modified after being placed"});
  // A list inside a tuple inside the list: frozen when placed, so the append is refused.
  PickleWriter cycle;
  cycle.op(']').put(0).get(0).op(0x85).op('a').stop();
  expect_error([&] { open_bytes(make_ckpt(cycle.bytes(), {})); }, {"modified after being placed"});
  // 200 nested lists.
  PickleWriter deep;
  for (int i = 0; i < 200; ++i) deep.op(']');
  for (int i = 0; i < 199; ++i) deep.op('a');
  expect_error([&] { open_bytes(make_ckpt(deep.stop().bytes(), {})); }, {"nested more than 100"});
  // x = (); 40 times: x = (x, x) - 2^40 nodes when expanded, 200 bytes of pickle.
  PickleWriter laughs;
  laughs.op(')');
  for (int i = 0; i < 40; ++i) laughs.put(0).get(0).op(0x86);
  expect_error([&] { open_bytes(make_ckpt(laughs.stop().bytes(), {})); }, {"more than 16777216"});
  // Stack underflow, SETITEMS without a dict, memo misses, a bare global as the result.
  PickleWriter under;
  under.op('a').stop();
  expect_error([&] { open_bytes(make_ckpt(under.bytes(), {})); }, {"APPEND", "stack underflow"});
  PickleWriter memo;
  memo.get(7).stop();
  expect_error([&] { open_bytes(make_ckpt(memo.bytes(), {})); }, {"memo entry 7"});
  PickleWriter bare;
  bare.global("collections", "OrderedDict").stop();
  expect_error([&] { open_bytes(make_ckpt(bare.bytes(), {})); }, {"bare global"});
  PickleWriter boolkey;
  boolkey.op('}').boolean(true).integer(1).op('s').stop();
  expect_error([&] { open_bytes(make_ckpt(boolkey.bytes(), {})); }, {"not a str or int"});
  PickleWriter call;
  call.global("torch", "FloatStorage").op(')').op('R').stop();
  expect_error([&] { open_bytes(make_ckpt(call.bytes(), {})); }, {"cannot be called"});
  PickleWriter pid;
  pid.str("storage").op(0x85).op('Q').stop();
  expect_error([&] { open_bytes(make_ckpt(pid.bytes(), {})); }, {"persistent id"});
  // A string longer than the bytes left.
  PickleWriter longstr;
  longstr.op('X').raw(std::string("\xff\xff\xff\x7f", 4)).raw("abc").stop();
  expect_error([&] { open_bytes(make_ckpt(longstr.bytes(), {})); },
               {"BINUNICODE", "truncated", "2147483647 bytes"});
}

TEST(TorchCheckpoint, RandomMutationsFailCleanly) {
  const std::string base = nanogpt_ckpt();
  std::mt19937 rng(1234);
  int accepted = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string b = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng() % b.size();
      b[at] = static_cast<char>(rng() % 3 == 0 ? b[at] ^ (1 << (rng() % 8)) : rng());
    }
    try {
      const TorchCheckpoint ck = open_bytes(b);
      ++accepted;
      // Whatever was accepted reads back within bounds.
      std::vector<const PickleValue*> todo = {&ck.root()};
      while (!todo.empty()) {
        const PickleValue* v = todo.back();
        todo.pop_back();
        if (v->is_tensor() && v->tensor().dtype != TorchDtype::kInt64) {
          (void)ck.read_f32(v->tensor());
        } else if (v->is_dict()) {
          for (const auto& [k, c] : v->dict_items()) todo.push_back(c.get());
        } else if (v->kind() == PickleValue::Kind::kList ||
                   v->kind() == PickleValue::Kind::kTuple) {
          for (const auto& c : v->items()) todo.push_back(c.get());
        }
      }
    } catch (const Error&) {
    }
  }
  // Flips in padding, tensor data and unused fields are harmless, so some survive.
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace nanogpt
