// The tmp-dir / move-aside / rename protocol for atomic directory replacement.
#include "io/atomic_dir.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "core/check.h"
#include "io/file_util.h"

namespace nanogpt {
namespace fs = std::filesystem;

namespace {

std::string parent_of(const std::string& dir) {
  fs::path p = fs::path(dir).parent_path();
  return p.empty() ? "." : p.string();
}

// Removes `<dir>.tmp-<pid>` folders whose process no longer runs (crashed writes).
void remove_stale_tmp_dirs(const std::string& dir) {
  const fs::path base(dir);
  const std::string prefix = base.filename().string() + ".tmp-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent_of(dir), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string pid_text = name.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

}  // namespace

AtomicDirWriter::AtomicDirWriter(std::string dir, std::string marker_file, FaultHook hook)
    : dir_(std::move(dir)), marker_(std::move(marker_file)), hook_(std::move(hook)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  CHECK(!dir_.empty(), "checkpoint directory name is empty");
  std::error_code ec;
  if (fs::exists(dir_, ec)) {
    CHECK(fs::is_directory(dir_, ec), "'{}' exists and is not a directory; choose another out_dir",
          dir_);
    CHECK(fs::is_empty(dir_, ec) || fs::exists(dir_ + "/" + marker_, ec),
          "'{}' exists but holds no '{}': refusing to replace a folder that is not a checkpoint "
          "(choose another directory or remove it)",
          dir_, marker_);
  }
  fs::create_directories(parent_of(dir_), ec);
  CHECK(!ec, "cannot create the parent directory of '{}': {}", dir_, ec.message());
  remove_stale_tmp_dirs(dir_);
  tmp_ = dir_ + ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp_, ec);
  CHECK(fs::create_directory(tmp_, ec) && !ec, "cannot create '{}': {}", tmp_, ec.message());
  try {
    stage("tmp_created");
  } catch (...) {  // the destructor does not run when the constructor throws
    fs::remove_all(tmp_, ec);
    throw;
  }
}

AtomicDirWriter::~AtomicDirWriter() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

void AtomicDirWriter::commit() {
  fsync_directory(tmp_);
  const std::string old = dir_ + ".old";
  const std::string parent = parent_of(dir_);
  std::error_code ec;
  const bool have_dir = fs::exists(dir_, ec);
  if (have_dir) {
    // `dir` is complete, so an `.old` beside it is a finished write's leftover.
    fs::remove_all(old, ec);
    CHECK(!ec, "cannot remove the leftover '{}': {}", old, ec.message());
    CHECK(::rename(dir_.c_str(), old.c_str()) == 0, "cannot move '{}' aside to '{}': {}", dir_, old,
          errno_text(errno));
    fsync_directory(parent);
    stage("old_moved_aside");
  }
  // Without `dir`, an existing `.old` is the last good version: keep it until the new one is in.
  if (::rename(tmp_.c_str(), dir_.c_str()) != 0) {
    const int err = errno;
    if (have_dir) ::rename(old.c_str(), dir_.c_str());  // put the previous version back
    fail("cannot rename '{}' to '{}': {}", tmp_, dir_, errno_text(err));
  }
  committed_ = true;
  fsync_directory(parent);
  stage("new_in_place");
  fs::remove_all(old, ec);
  fsync_directory(parent);
  stage("done");
}

std::string resolve_committed_dir(const std::string& dir_in) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::error_code ec;
  if (fs::exists(dir, ec)) return dir;
  if (fs::exists(dir + ".old", ec)) return dir + ".old";
  fail("checkpoint directory '{}' does not exist (nor '{}.old'); check out_dir", dir, dir);
}

}  // namespace nanogpt
