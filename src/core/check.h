// CHECK(cond, fmt, args...): always-on validation that throws nanogpt::Error with context.
// Use at the edges (CLI, config, files): say what was expected, what was found, and how to fix it.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace nanogpt {

// The one exception type the program reports to the user (printed by main, exit code 1).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace nanogpt

#define CHECK(cond, ...)            \
  do {                              \
    if (!(cond)) {                  \
      ::nanogpt::fail(__VA_ARGS__); \
    }                               \
  } while (0)
