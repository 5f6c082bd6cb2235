// StopRequest: the signal handlers that turn SIGTERM, SIGINT and SIGUSR1 into a flag the training
// loop reads. The flag is the one piece of process-wide state a handler can reach: a lock-free
// atomic written only by the handler and cleared when a StopRequest is made.
#include "train/stop_request.h"

#include <signal.h>

#include <atomic>

#include "core/check.h"

namespace nanogpt {

namespace {

std::atomic<int> g_stop_signal{0};  // what a handler may touch: async-signal-safe when lock-free
static_assert(std::atomic<int>::is_always_lock_free);

constexpr int kSignals[] = {SIGTERM, SIGINT, SIGUSR1};

void on_stop_signal(int signo) {
  int expected = 0;
  if (!g_stop_signal.compare_exchange_strong(expected, signo) && signo == SIGINT) {
    // A second Ctrl-C: stop now, as the default action does (both calls are async-signal-safe).
    ::signal(SIGINT, SIG_DFL);
    ::raise(SIGINT);
  }
}

}  // namespace

struct StopRequest::Saved {
  struct sigaction previous[3];
};

StopRequest::StopRequest() : saved_(std::make_unique<Saved>()) {
  g_stop_signal.store(0);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and writes in flight go on; the loop checks the flag
  for (int i = 0; i < 3; ++i) {
    CHECK(sigaction(kSignals[i], &action, &saved_->previous[i]) == 0,
          "cannot install the handler of {}", signal_name(kSignals[i]));
  }
}

StopRequest::~StopRequest() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &saved_->previous[i], nullptr);
}

int StopRequest::signal() const { return g_stop_signal.load(std::memory_order_relaxed); }

std::string StopRequest::signal_name(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "signal " + std::to_string(signo);
  }
}

}  // namespace nanogpt
