// PrepareOutput: how prepare's files appear in out_dir. Everything it writes carries a name ending
// in ".partial" until the end (and is removed if prepare fails); then commit() creates the marker
// kPrepareIncompleteMarker, removes the previous run's outputs, renames the new files into place
// (meta.json last) and removes the marker. A killed prepare so leaves either the old outputs (plus
// .partial files) or the marker, which the trainer refuses: never a set that only looks complete.
// A rerun removes the .partial leftovers and says so. The directory is locked (flock) meanwhile.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace nanogpt {

// Test hook called at each step ("streamed", "split", "marker", "renamed:train.bin", ...,
// "done"); it may throw or _exit to simulate a failure or a kill. Null = none.
using StageHook = std::function<void(const std::string& stage)>;

class PrepareOutput {
 public:
  // Creates out_dir if needed, locks it, and removes the leftovers of an interrupted prepare
  // (*.partial files; a marker stays until the next commit). Throws naming the directory.
  PrepareOutput(const std::filesystem::path& out_dir, StageHook hook);
  // Removes the partial files still registered (a failed run) and unlocks.
  ~PrepareOutput();
  PrepareOutput(const PrepareOutput&) = delete;
  PrepareOutput& operator=(const PrepareOutput&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // What an interrupted run had left: the files removed, and whether its marker was there.
  const std::vector<std::string>& leftovers() const { return leftovers_; }

  // out_dir/<name>.partial, registered for removal unless committed.
  std::string partial_path(const std::string& name);
  // Removes a registered partial file now.
  void remove_partial(const std::string& path);
  void stage(const std::string& name) const {
    if (hook_) hook_(name);
  }

  // Puts (partial path, final file name) pairs in place as described above; the last pair must be
  // meta.json. Earlier outputs of prepare that the new set does not overwrite are removed
  // (train.bin, val.bin, train_NNNNNN.bin, val_NNNNNN.bin, meta.json).
  void commit(const std::vector<std::pair<std::string, std::string>>& files);

 private:
  std::filesystem::path dir_;
  StageHook hook_;
  int lock_fd_ = -1;
  std::vector<std::string> partials_;
  std::vector<std::string> leftovers_;
};

// True for the names of the files prepare writes (see commit()).
bool is_prepare_output_name(const std::string& name);

// fsync of a directory (renames inside it become durable); throws naming it.
void fsync_dir(const std::filesystem::path& dir);

}  // namespace nanogpt
