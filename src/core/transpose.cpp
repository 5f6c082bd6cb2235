// Tiled transpose through a padded stack tile.
#include "core/transpose.h"

#include <algorithm>
#include <cstring>

namespace nanogpt {

void transpose_tiled(float* out, int64_t out_stride, const float* in, int64_t in_stride,
                     int64_t rows, int64_t cols) {
  constexpr int64_t kBlock = 64;
  float tile[kBlock * (kBlock + 1)];  // (cols block, rows block), padded row stride
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t ni = std::min(kBlock, rows - i0);
    for (int64_t j0 = 0; j0 < cols; j0 += kBlock) {
      const int64_t nj = std::min(kBlock, cols - j0);
      for (int64_t i = 0; i < ni; ++i) {
        const float* row = in + (i0 + i) * in_stride + j0;
        for (int64_t j = 0; j < nj; ++j) tile[j * (kBlock + 1) + i] = row[j];
      }
      for (int64_t j = 0; j < nj; ++j) {
        std::memcpy(out + (j0 + j) * out_stride + i0, tile + j * (kBlock + 1),
                    static_cast<size_t>(ni) * sizeof(float));
      }
    }
  }
}

}  // namespace nanogpt
