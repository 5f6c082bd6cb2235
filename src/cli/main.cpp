// nanogpt: the one binary. Dispatches `nanogpt <command> [config files...] [--key=value ...]`.
#include <cstdio>

int main() {
  std::puts("nanogpt: under construction");
  return 0;
}
