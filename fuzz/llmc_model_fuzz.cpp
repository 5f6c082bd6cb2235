// Fuzzes the llm.c model reader (io/llmc_model): the input is a whole model .bin (256 x int32
// header: magic 20240326, version 3 | 5, maxT, V, L, NH, C, Vp; then the fp32 | bf16 tensors),
// parsed from memory twice: with the bias flag inferred from the file, and forced off.
#include <optional>

#include "fuzz_util.h"
#include "io/llmc_model.h"
#include "model/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  const std::string_view bytes = as_text(data, size);
  for (const std::optional<bool> bias : {std::optional<bool>(), std::optional<bool>(false)}) {
    accepts([&] {
      const LoadedModel m = parse_llmc_model(bytes, "fuzz.bin", bias);
      const ParamTable table(m.config);
      FUZZ_ASSERT(m.params.size() == static_cast<size_t>(table.total_numel()),
                  "params do not match the table");
    });
  }
  return 0;
}
