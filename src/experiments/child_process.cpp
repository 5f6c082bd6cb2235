// fork/exec of /proc/self/exe with redirected output (see child_process.h).
#include "experiments/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>

#include "core/check.h"

namespace nanogpt {

namespace {

std::string self_exe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  CHECK(n > 0, "cannot read /proc/self/exe: {}", std::strerror(errno));
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& args, const std::string& stdout_path,
                           const std::string& stderr_path) {
  const std::string exe = self_exe();
  // Everything the child needs is prepared before fork (only async-signal-safe calls after it).
  std::vector<std::string> argv_text = {exe};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out_fd = ::open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  CHECK(out_fd >= 0, "cannot open '{}' for a run's output: {}", stdout_path, std::strerror(errno));
  const int err_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (err_fd < 0) {
    ::close(out_fd);
    fail("cannot open '{}' for a run's errors: {}", stderr_path, std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  CHECK(pid_ > 0, "cannot start a training process: {}", std::strerror(errno));
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !done_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void ChildProcess::send_signal(int signo) {
  if (pid_ > 0 && !done_) ::kill(pid_, signo);
}

bool ChildProcess::finished() {
  if (done_) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) return false;
  done_ = true;
  if (r < 0) return true;
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
  return true;
}

void ChildProcess::wait() {
  if (done_) return;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  done_ = true;
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
}

std::string tail_lines(const std::string& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += (out.empty() ? "" : "\n") + l;
  return out;
}

}  // namespace nanogpt
