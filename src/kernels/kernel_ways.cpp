// Names of the kernel ways (see kernel_ways.h).
#include "kernels/kernel_ways.h"

namespace nanogpt {

const char* way_name(AttentionBf16Way way) {
  return way == AttentionBf16Way::kNative ? "native" : "widened";
}

bool parse_way(std::string_view name, AttentionBf16Way& way) {
  if (name == "native") {
    way = AttentionBf16Way::kNative;
  } else if (name == "widened") {
    way = AttentionBf16Way::kWidened;
  } else {
    return false;
  }
  return true;
}

}  // namespace nanogpt
