// Fuzzes safetensors reading (io/safetensors, io/hf_gpt2): the input is a whole file (8-byte header
// length, JSON header with dtypes, shapes and data_offsets, tensor bytes). It is parsed from memory
// and every float tensor is converted; then the same bytes are loaded as a Hugging Face GPT-2
// model.safetensors with no config.json (the model shape is inferred from the tensors).
#include <vector>

#include "fuzz_util.h"
#include "io/hf_gpt2.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  const std::string_view bytes = as_text(data, size);
  accepts([&] {
    const SafeTensorsReader reader(bytes, "fuzz.safetensors");
    std::vector<float> out;
    for (const auto& [name, info] : reader.tensors()) {
      FUZZ_ASSERT(info.begin <= info.end && info.end <= size, "tensor '%s' outside the file",
                  name.c_str());
      if (info.dtype != "F32" && info.dtype != "BF16" && info.dtype != "F16") continue;
      out.resize(static_cast<size_t>(info.numel()));
      reader.read_f32(name, info.shape, out.data());
    }
    (void)reader.info("wte.weight");
  });
  const std::string path = write_scratch_file("model.safetensors", bytes);
  accepts([&] {
    const LoadedModel m = load_hf_gpt2(path);
    FUZZ_ASSERT(m.params.size() > 0, "empty model loaded");
  });
  return 0;
}
