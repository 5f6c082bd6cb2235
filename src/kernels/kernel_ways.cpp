// Names of the kernel ways (see kernel_ways.h).
#include "kernels/kernel_ways.h"

namespace nanogpt {

const char* way_name(AttentionBf16Way way) {
  switch (way) {
    case AttentionBf16Way::kNative:
      return "native";
    case AttentionBf16Way::kWidened:
      return "widened";
    case AttentionBf16Way::kOnednn:
      return "onednn";
  }
  return "?";
}

bool parse_way(std::string_view name, AttentionBf16Way& way) {
  if (name == "native") {
    way = AttentionBf16Way::kNative;
  } else if (name == "widened") {
    way = AttentionBf16Way::kWidened;
  } else if (name == "onednn") {
    way = AttentionBf16Way::kOnednn;
  } else {
    return false;
  }
  return true;
}

const char* way_name(SmallProductsWay way) {
  return way == SmallProductsWay::kOnednn ? "onednn" : "tiles";
}

bool parse_way(std::string_view name, SmallProductsWay& way) {
  if (name == "tiles") {
    way = SmallProductsWay::kTiles;
  } else if (name == "onednn") {
    way = SmallProductsWay::kOnednn;
  } else {
    return false;
  }
  return true;
}

SmallProductsWay small_products_way_for(AttentionBf16Way forced) {
  return forced == AttentionBf16Way::kOnednn ? SmallProductsWay::kOnednn : SmallProductsWay::kTiles;
}

}  // namespace nanogpt
