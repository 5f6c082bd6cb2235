// transpose_tiled against the element-by-element definition: shapes around its 64 x 64 tile
// (partial tiles on both sides, one row, one column), into and out of strided rows, and the
// floats past each output row left alone.
#include "core/transpose.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace nanogpt {
namespace {

class TransposeTiled : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(TransposeTiled, MatchesTheDefinition) {
  const auto [rows, cols] = GetParam();
  const int64_t in_stride = cols + 3, out_stride = rows + 5;  // padded rows on both sides
  std::vector<float> in(static_cast<size_t>(rows * in_stride));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f - 7.0f;
  std::vector<float> out(static_cast<size_t>(cols * out_stride), -1.0f);
  transpose_tiled(out.data(), out_stride, in.data(), in_stride, rows, cols);
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < out_stride; ++i) {
      const float want = i < rows ? in[static_cast<size_t>(i * in_stride + j)] : -1.0f;
      ASSERT_EQ(out[static_cast<size_t>(j * out_stride + i)], want) << "out row " << j << ", " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TransposeTiled,
                         ::testing::Values(std::make_tuple(1, 1), std::make_tuple(1, 130),
                                           std::make_tuple(130, 1), std::make_tuple(64, 64),
                                           std::make_tuple(128, 512), std::make_tuple(512, 128),
                                           std::make_tuple(67, 129)));

}  // namespace
}  // namespace nanogpt
