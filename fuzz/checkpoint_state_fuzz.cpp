// Fuzzes a checkpoint's state.json (train/train_state: parse_training_state, with the training
// loader's state read by data/loader's LoaderState::from_json): iter_num, best_val_loss, optimizer,
// optimizer_steps, train_loader {rng words, shard, pos, batches, batch_size, block_size,
// world_size, rank}. An accepted loader state must survive to_json -> from_json, and restoring it
// into a random and a sequential loader (B = 2, T = 8, one 4096-token file) must either be
// rejected with nanogpt::Error or give batches read from inside the file.
#include <vector>

#include "fuzz_util.h"
#include "train/train_state.h"

namespace {

const std::string& token_file() {
  static const std::string path = [] {
    std::vector<uint16_t> tokens(4096);
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<uint16_t>(i % 50);
    return nanogpt::fuzz::write_scratch_file(
        "tokens.bin", {reinterpret_cast<const char*>(tokens.data()), tokens.size() * 2});
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nanogpt;
  using namespace nanogpt::fuzz;
  TrainingState s;
  if (!accepts([&] { s = parse_training_state(as_text(data, size), "state.json"); })) return 0;
  const LoaderState back =
      LoaderState::from_json(nlohmann::json::parse(s.train_loader.to_json().dump()), "written");
  FUZZ_ASSERT(back == s.train_loader, "loader state round trip changed it");
  for (const char* sampling : {"random", "sequential"}) {
    LoaderConfig lc;
    lc.sampling = sampling;
    lc.batch_size = 2;
    lc.block_size = 8;
    DataLoader loader(token_file(), lc);
    if (!accepts([&] { loader.set_state(s.train_loader); })) continue;
    std::vector<int32_t> x(16), y(16);
    for (int k = 0; k < 3; ++k) {
      loader.next_batch(x.data(), y.data());
      for (int i = 0; i < 16; ++i) FUZZ_ASSERT(x[i] < 50 && y[i] < 50, "batch value out of range");
    }
  }
  return 0;
}
