// CRC-32C (Castagnoli), the checksum of every checkpoint file: hardware SSE4.2 crc32 instruction
// when compiled for it (~10+ GB/s), else a table-driven fallback. Incremental: pass the previous
// value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nanogpt {

// crc32c(data, n, crc32c(prefix...)) == crc32c(prefix + data). Start with 0.
// crc32c("123456789") == 0xE3069283.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace nanogpt
