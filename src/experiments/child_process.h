// Runs this same binary (/proc/self/exe) as a child process with stdout and stderr appended to
// files: each sweep run is its own process, so its peak memory and RSS are its own. The child is
// killed if the parent dies (PR_SET_PDEATHSIG), so killing a sweep never leaves orphan trainings.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace nanogpt {

class ChildProcess {
 public:
  // Starts `<this binary> args...`; stdout to stdout_path, stderr to stderr_path (appended).
  ChildProcess(const std::vector<std::string>& args, const std::string& stdout_path,
               const std::string& stderr_path);
  ~ChildProcess();  // kills and reaps a child still running
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // True once the child has exited (non-blocking).
  bool finished();
  // Blocks until it exits.
  void wait();
  // Sends it `signo` (a stop request passed on: SIGTERM, SIGINT, SIGUSR1); nothing once it exited.
  void send_signal(int signo);
  // Exit code, or -1 if killed by a signal (see signal()). Valid after finished().
  int exit_code() const { return exit_code_; }
  int signal() const { return signal_; }

 private:
  pid_t pid_ = -1;
  bool done_ = false;
  int exit_code_ = -1, signal_ = 0;
};

// The last `lines` non-empty lines of a text file ("" if none).
std::string tail_lines(const std::string& path, int lines);

}  // namespace nanogpt
