// Stopping is a request, not a crash: StopRequest catches SIGTERM, SIGINT and SIGUSR1 (a spot
// instance reclaimed, a scheduler's time limit, Ctrl-C) for as long as it lives, and the training
// loop reads it at each step boundary, then checkpoints and exits with kStoppedExitCode. A second
// SIGINT ends the process at once (the default action), as Ctrl-C twice does elsewhere.
#pragma once

#include <memory>
#include <string>

namespace nanogpt {

// The exit status of a run that stopped on request (a signal or max_wall_minutes) after writing
// its checkpoint: EX_TEMPFAIL of sysexits.h, "try again later" (resume with --init_from=resume).
inline constexpr int kStoppedExitCode = 75;

class StopRequest {
 public:
  // Installs the handlers (the previous ones come back when it is destroyed). One at a time per
  // process: the handlers share one flag.
  StopRequest();
  ~StopRequest();
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // The signal that asked to stop (SIGTERM, SIGINT or SIGUSR1), or 0.
  int signal() const;
  bool requested() const { return signal() != 0; }
  // "SIGTERM", "SIGINT", "SIGUSR1" (or "signal N").
  static std::string signal_name(int signo);

 private:
  struct Saved;  // the handlers that were there before
  std::unique_ptr<Saved> saved_;
};

}  // namespace nanogpt
