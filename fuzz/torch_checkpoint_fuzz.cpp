// Fuzzes torch.save checkpoint reading (io/torch_zip, io/torch_pickle, io/torch_checkpoint): the
// input is a whole ckpt.pt (a zip archive of data.pkl, data/<key> storages, version, byteorder).
// It is opened from memory and every tensor reachable from the root is copied out (float32 /
// bfloat16 / float16 as float, int64 as int64); then data.pkl's bytes alone are also fed straight
// to the unpickler, so pickle mutations are not all stopped by the archive's CRC check. What opens
// is also mapped as nanoGPT's checkpoint (io/nanogpt_checkpoint: names, shapes, AdamW's groups).
#include <vector>

#include "fuzz_util.h"
#include "io/nanogpt_checkpoint.h"
#include "io/torch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  const std::string_view bytes = as_text(data, size);
  accepts([&] {
    const TorchCheckpoint ck(bytes, "fuzz.pt");
    std::vector<const PickleValue*> todo = {&ck.root()};
    size_t visited = 0;
    while (!todo.empty() && visited++ < 100000) {
      const PickleValue* v = todo.back();
      todo.pop_back();
      switch (v->kind()) {
        case PickleValue::Kind::kTensor: {
          const TorchTensorRef& t = v->tensor();
          FUZZ_ASSERT(t.numel() <= t.storage_numel, "tensor on '%s' larger than its storage",
                      t.storage_key.c_str());
          const auto storage = ck.storage_bytes(t);
          FUZZ_ASSERT(storage.data() >= data && storage.data() + storage.size() <= data + size,
                      "storage '%s' outside the file", t.storage_key.c_str());
          if (t.dtype == TorchDtype::kInt64) {
            (void)ck.read_i64(t);
          } else {
            (void)ck.read_f32(t);
          }
          break;
        }
        case PickleValue::Kind::kDict:
          for (const auto& [k, c] : v->dict_items()) todo.push_back(c.get());
          break;
        case PickleValue::Kind::kTuple:
        case PickleValue::Kind::kList:
          for (const auto& c : v->items()) todo.push_back(c.get());
          break;
        case PickleValue::Kind::kGlobal:
        case PickleValue::Kind::kStorage:
          FUZZ_ASSERT(false, "a %s value escaped the unpickler", v->kind_name());
          break;
        default:
          break;
      }
    }
    (void)ck.root().find("model");
    accepts([&] { (void)nanogpt_checkpoint_from(ck, /*with_optimizer=*/true); });
  });
  // The same bytes as a bare data.pkl.
  accepts([&] {
    const PickleValuePtr root = parse_torch_pickle({data, size}, "fuzz.pkl");
    FUZZ_ASSERT(root != nullptr, "null root");
    (void)root->describe();
  });
  return 0;
}
