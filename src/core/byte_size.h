// Byte sizes as users write them in config keys ("1073741824", "64M", "1G", "512KiB") and as we
// print them ("64 MiB"). Suffixes are binary: K = 1024, M = 1024^2, G = 1024^3, T = 1024^4.
#pragma once

#include <cstdint>
#include <string>

namespace nanogpt {

// A plain byte count or a number with a suffix K, M, G or T (optionally followed by "B" or "iB",
// any case; "1.5G" allowed). Throws nanogpt::Error naming `key` and the value on anything else.
int64_t parse_byte_size(const std::string& text, const std::string& key);

// "512 B", "64.0 KiB", "1.5 GiB": the largest unit that keeps the number >= 1.
std::string format_byte_size(int64_t bytes);

}  // namespace nanogpt
