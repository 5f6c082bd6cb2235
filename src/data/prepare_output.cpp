// PrepareOutput: locking out_dir, clearing an interrupted run's leftovers, and the commit order
// (marker, stale outputs removed, renames with meta.json last, marker removed), with fsyncs.
#include "data/prepare_output.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "core/check.h"
#include "data/dataset_files.h"

namespace nanogpt {

namespace fs = std::filesystem;

namespace {

bool is_shard_name(const std::string& name, const std::string& split) {
  // <split>_NNNNNN.bin
  const std::string prefix = split + "_";
  if (!name.starts_with(prefix) || !name.ends_with(".bin")) return false;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 4);
  return digits.size() == 6 && std::all_of(digits.begin(), digits.end(), ::isdigit);
}

// Names an interrupted prepare leaves: ours (*.partial) and the old writer's (train.bin.tmp ...).
bool is_leftover_name(const std::string& name) {
  return name.ends_with(".partial") || name == "train.bin.tmp" || name == "val.bin.tmp";
}

}  // namespace

bool is_prepare_output_name(const std::string& name) {
  return name == "train.bin" || name == "val.bin" || name == "meta.json" ||
         is_shard_name(name, "train") || is_shard_name(name, "val");
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(fd >= 0, "cannot open directory '{}': {}", dir.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  CHECK(rc == 0, "cannot fsync directory '{}': {}", dir.string(), std::strerror(err));
}

PrepareOutput::PrepareOutput(const fs::path& out_dir, StageHook hook)
    : dir_(out_dir), hook_(std::move(hook)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  CHECK(fs::is_directory(dir_), "out_dir '{}' cannot be created: {}", dir_.string(),
        ec ? ec.message() : "it is not a directory");
  lock_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(lock_fd_ >= 0, "cannot open out_dir '{}': {}", dir_.string(), std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    fail(
        "out_dir '{}' is being written by another `nanogpt prepare` ({}); wait for it to end or "
        "choose another out_dir",
        dir_.string(), std::strerror(err));
  }
  try {
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name == kPrepareIncompleteMarker) {
        leftovers_.push_back(name);  // kept until the commit: the outputs may be a mix until then
      } else if (entry.is_regular_file() && is_leftover_name(name)) {
        fs::remove(entry.path(), ec);
        CHECK(!ec, "cannot remove '{}', left by an interrupted prepare: {}", entry.path().string(),
              ec.message());
        leftovers_.push_back(name);
      }
    }
  } catch (...) {
    ::close(lock_fd_);
    throw;
  }
  std::sort(leftovers_.begin(), leftovers_.end());
}

PrepareOutput::~PrepareOutput() {
  for (const auto& p : partials_) ::unlink(p.c_str());
  if (lock_fd_ >= 0) ::close(lock_fd_);  // (closing releases the flock)
}

std::string PrepareOutput::partial_path(const std::string& name) {
  std::string path = (dir_ / (name + ".partial")).string();
  partials_.push_back(path);
  return path;
}

void PrepareOutput::remove_partial(const std::string& path) {
  ::unlink(path.c_str());
  std::erase(partials_, path);
}

void PrepareOutput::commit(const std::vector<std::pair<std::string, std::string>>& files) {
  CHECK(!files.empty() && files.back().second == "meta.json",
        "PrepareOutput::commit: meta.json must come last");
  const fs::path marker = dir_ / kPrepareIncompleteMarker;
  {
    const int fd = ::open(marker.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(fd >= 0, "cannot create '{}': {}", marker.string(), std::strerror(errno));
    ::close(fd);
  }
  fsync_dir(dir_);
  stage("marker");
  std::set<std::string> fresh;
  for (const auto& f : files) fresh.insert(f.second);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    if (is_prepare_output_name(name) && !fresh.contains(name)) {
      fs::remove(entry.path(), ec);
      CHECK(!ec, "cannot remove the earlier output '{}': {}", entry.path().string(), ec.message());
    }
  }
  stage("stale_removed");
  for (const auto& [partial, name] : files) {
    const fs::path target = dir_ / name;
    CHECK(::rename(partial.c_str(), target.c_str()) == 0, "cannot rename '{}' to '{}': {}", partial,
          target.string(), std::strerror(errno));
    std::erase(partials_, partial);
    stage("renamed:" + name);
  }
  fsync_dir(dir_);
  fs::remove(marker, ec);
  CHECK(!ec, "cannot remove '{}': {}", marker.string(), ec.message());
  fsync_dir(dir_);
  stage("done");
}

}  // namespace nanogpt
