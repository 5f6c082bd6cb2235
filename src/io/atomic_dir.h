// Crash-safe replacement of a directory: build the new contents in `<dir>.tmp-<pid>`, fsync, then
// move the old `<dir>` aside to `<dir>.old`, rename the new one into place, and remove the old one
// (Linux cannot rename a directory over a non-empty one). At every instant either `<dir>` or
// `<dir>.old` holds a complete version; resolve_committed_dir finds it.
#pragma once

#include <functional>
#include <string>

namespace nanogpt {

// Test hook: called with the name of each step ("tmp_created", "model.safetensors", ...,
// "old_moved_aside", "new_in_place", "done"). It may throw (simulated failure) or _exit (simulated
// crash). Null = no hook.
using FaultHook = std::function<void(const std::string& stage)>;

class AtomicDirWriter {
 public:
  // Prepares an empty `<dir>.tmp-<pid>` (removing leftovers of dead processes' writes). Refuses to
  // replace an existing `dir` that lacks `marker_file` (so a non-checkpoint folder is never
  // clobbered).
  AtomicDirWriter(std::string dir, std::string marker_file, FaultHook hook = nullptr);
  // Removes the temporary directory unless commit() succeeded.
  ~AtomicDirWriter();
  AtomicDirWriter(const AtomicDirWriter&) = delete;
  AtomicDirWriter& operator=(const AtomicDirWriter&) = delete;

  const std::string& tmp_dir() const { return tmp_; }
  std::string tmp_path(const std::string& file) const { return tmp_ + "/" + file; }
  void stage(const std::string& name) const {
    if (hook_) hook_(name);
  }
  // fsyncs the temporary directory and swaps it into place as described above.
  void commit();

 private:
  std::string dir_, tmp_, marker_;
  FaultHook hook_;
  bool committed_ = false;
};

// `dir` if it exists; else `<dir>.old` if that exists (a crash between moving the old version aside
// and renaming the new one in); else throws naming `dir`.
std::string resolve_committed_dir(const std::string& dir);

}  // namespace nanogpt
