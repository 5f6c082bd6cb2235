// StopRequest: each of SIGTERM, SIGINT and SIGUSR1 becomes the request (the first one wins), the
// handlers that were there before come back when it ends, and a second SIGINT ends the process
// at once.
#include "train/stop_request.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>

namespace nanogpt {
namespace {

TEST(StopRequest, EachSignalBecomesTheRequestAndTheFirstWins) {
  for (const int signo : {SIGTERM, SIGINT, SIGUSR1}) {
    StopRequest stop;
    EXPECT_FALSE(stop.requested());
    ASSERT_EQ(::raise(signo), 0);
    EXPECT_TRUE(stop.requested());
    EXPECT_EQ(stop.signal(), signo);
    if (signo != SIGINT) {
      ASSERT_EQ(::raise(SIGUSR1 == signo ? SIGTERM : SIGUSR1), 0);
      EXPECT_EQ(stop.signal(), signo) << "the first signal is the one reported";
    }
  }
  EXPECT_EQ(StopRequest::signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(StopRequest::signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(StopRequest::signal_name(SIGUSR1), "SIGUSR1");
}

TEST(StopRequest, ANewRequestStartsClearAndTheOldHandlersComeBack) {
  struct sigaction before {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &before), 0);
  {
    StopRequest stop;
    ASSERT_EQ(::raise(SIGTERM), 0);
    EXPECT_TRUE(stop.requested());
  }
  StopRequest next;
  EXPECT_FALSE(next.requested());
  struct sigaction during {};
  ASSERT_EQ(sigaction(SIGTERM, nullptr, &during), 0);
  EXPECT_NE(during.sa_handler, before.sa_handler);
}

TEST(StopRequest, HandlersAreRestoredWhenItEnds) {
  struct sigaction before {
  }, after{};
  ASSERT_EQ(sigaction(SIGUSR1, nullptr, &before), 0);
  { StopRequest stop; }
  ASSERT_EQ(sigaction(SIGUSR1, nullptr, &after), 0);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST(StopRequestDeathTest, ASecondSigintEndsTheProcessAtOnce) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        StopRequest stop;
        ::raise(SIGINT);  // the request: the process goes on
        if (!stop.requested()) std::exit(3);
        ::raise(SIGINT);  // the second: the default action
        std::exit(4);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

}  // namespace
}  // namespace nanogpt
