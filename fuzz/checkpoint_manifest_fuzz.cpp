// Fuzzes a checkpoint's manifest.json (io/checkpoint: parse_checkpoint_manifest): format name and
// version, and the listed files with their byte counts and CRC-32C checksums.
#include "fuzz_util.h"
#include "io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  CheckpointManifest m;
  if (!accepts([&] { m = parse_checkpoint_manifest(as_text(data, size), "manifest.json"); })) {
    return 0;
  }
  FUZZ_ASSERT(m.format_version >= 1 && m.format_version <= kCheckpointFormatVersion,
              "format_version %d accepted", m.format_version);
  for (const char* f :
       {"model.safetensors", "config.json", "optimizer.safetensors", "state.json"}) {
    FUZZ_ASSERT(m.files.count(f) == 1, "%s not listed", f);
  }
  return 0;
}
