// safetensors round trip (plain, transposed, zeros, metadata), BF16/F16 reading, every validation
// error, write errors (/dev/full), and CRC-32C.
#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "io/crc32c.h"
#include "core/float16.h"
#include "io_test_util.h"

namespace nanogpt {
namespace {

using testing::expect_error;
using testing::TempDir;

TEST(Crc32c, KnownValueAndIncremental) {
  const char* s = "123456789";
  EXPECT_EQ(crc32c(s, 9), 0xE3069283u);
  EXPECT_EQ(crc32c(s + 4, 5, crc32c(s, 4)), 0xE3069283u);
  EXPECT_EQ(crc32c(s, 0), 0u);
  std::vector<unsigned char> big(1000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<unsigned char>(i * 7);
  uint32_t whole = crc32c(big.data(), big.size());
  EXPECT_EQ(crc32c(big.data() + 333, 667, crc32c(big.data(), 333)), whole);
  big[500] ^= 1;
  EXPECT_NE(crc32c(big.data(), big.size()), whole);
}

TEST(Safetensors, RoundTrip) {
  TempDir tmp;
  std::vector<float> a(12), m(6);
  for (int i = 0; i < 12; ++i) a[i] = 0.5f * i - 3;
  for (int i = 0; i < 6; ++i) m[i] = static_cast<float>(i);  // (2, 3): rows 0 1 2 / 3 4 5
  SafeTensorsWriter w;
  w.add("a", {3, 4}, a.data());
  w.add_transposed("t", 2, 3, m.data());
  w.add_zeros("z", {5});
  w.set_metadata({{"format", "pt"}, {"step", "7"}});
  const FileDigest d = w.write(tmp / "x.safetensors");

  SafeTensorsReader r(tmp / "x.safetensors");
  EXPECT_EQ(r.metadata().at("step"), "7");
  EXPECT_EQ(r.tensors().size(), 3u);
  EXPECT_EQ(r.info("t").shape, (std::vector<int64_t>{3, 2}));
  std::vector<float> got(12);
  r.read_f32("a", {3, 4}, got.data());
  EXPECT_EQ(got, a);
  std::vector<float> t(6);
  r.read_f32("t", {3, 2}, t.data());
  EXPECT_EQ(t, (std::vector<float>{0, 3, 1, 4, 2, 5}));
  std::vector<float> z(5, 1.0f);
  r.read_f32("z", {5}, z.data());
  EXPECT_EQ(z, std::vector<float>(5, 0.0f));
  // The digest is of the bytes on disk; the data section starts 8-byte aligned.
  const FileDigest on_disk = digest_file(tmp / "x.safetensors");
  EXPECT_EQ(on_disk.bytes, d.bytes);
  EXPECT_EQ(on_disk.crc32c, d.crc32c);
  uint64_t n = 0;
  std::ifstream(tmp / "x.safetensors", std::ios::binary).read(reinterpret_cast<char*>(&n), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(Safetensors, LargeTransposeMatchesNaive) {
  TempDir tmp;
  const int64_t rows = 100, cols = 150;  // more than one 64-row block, ragged edges
  std::vector<float> src(rows * cols);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i);
  SafeTensorsWriter w;
  w.add_transposed("w", rows, cols, src.data());
  w.write(tmp / "t.safetensors");
  SafeTensorsReader r(tmp / "t.safetensors");
  std::vector<float> got(rows * cols);
  r.read_f32("w", {cols, rows}, got.data());
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t i = 0; i < rows; ++i) ASSERT_EQ(got[j * rows + i], src[i * cols + j]);
  }
}

// Writes a safetensors file from a raw header string and data bytes.
void write_raw(const std::string& path, const std::string& header, const std::string& data,
               uint64_t declared = UINT64_MAX) {
  std::ofstream f(path, std::ios::binary);
  uint64_t n = declared == UINT64_MAX ? header.size() : declared;
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

TEST(Safetensors, ReadsBf16AndF16AsFloat) {
  TempDir tmp;
  // bf16: 1.0 = 0x3F80, -2.5 = 0xC020; f16: 1.0 = 0x3C00, -2.5 = 0xC100, 2^-24 = 0x0001.
  const uint16_t bf[2] = {0x3F80, 0xC020};
  const uint16_t hf[3] = {0x3C00, 0xC100, 0x0001};
  std::string data(reinterpret_cast<const char*>(bf), 4);
  data.append(reinterpret_cast<const char*>(hf), 6);
  write_raw(tmp / "h.safetensors",
            R"({"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},)"
            R"("h":{"dtype":"F16","shape":[3],"data_offsets":[4,10]}})",
            data);
  SafeTensorsReader r(tmp / "h.safetensors");
  float b[2], h[3];
  r.read_f32("b", {2}, b);
  r.read_f32("h", {3}, h);
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -2.5f);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.5f);
  EXPECT_EQ(h[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);  // ties to even
  EXPECT_EQ(fp16_to_float(0x7C00), INFINITY);
}

TEST(Safetensors, ValidationErrorsNameFileAndTensor) {
  TempDir tmp;
  const std::string p = tmp / "bad.safetensors";
  { std::ofstream(p, std::ios::binary) << "abc"; }
  expect_error([&] { SafeTensorsReader r(p); }, {p, "truncated", "3 bytes"});
  write_raw(p, "{}", "", 1ull << 40);
  expect_error([&] { SafeTensorsReader r(p); }, {p, "header length", "limit"});
  write_raw(p, "{}", "", 500);
  expect_error([&] { SafeTensorsReader r(p); }, {p, "truncated", "500"});
  write_raw(p, "{not json", "");
  expect_error([&] { SafeTensorsReader r(p); }, {p, "not valid JSON"});
  write_raw(p, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", std::string(8, '\0'));
  expect_error([&] { SafeTensorsReader r(p); }, {p, "'w'", "truncated", "16"});
  write_raw(p, R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", std::string(16, '\0'));
  expect_error([&] { SafeTensorsReader r(p); }, {p, "'w'", "needs 12"});
  write_raw(p, R"({"w":{"dtype":"Q4","shape":[4],"data_offsets":[0,16]}})", std::string(16, '\0'));
  expect_error([&] { SafeTensorsReader r(p); }, {p, "'w'", "unknown dtype 'Q4'"});
  write_raw(p, R"({"w":{"dtype":"F32","shape":[4]}})", "");
  expect_error([&] { SafeTensorsReader r(p); }, {p, "'w'", "data_offsets"});

  write_raw(p,
            R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
            R"("i":{"dtype":"I32","shape":[1],"data_offsets":[16,20]}})",
            std::string(20, '\0'));
  SafeTensorsReader r(p);
  float out[4];
  expect_error([&] { r.read_f32("w", {4}, out); }, {p, "'w'", "[2, 2]", "expects [4]"});
  expect_error([&] { r.read_f32("nope", {4}, out); }, {p, "no tensor named 'nope'"});
  expect_error([&] { r.read_f32("i", {1}, out); }, {p, "'i'", "I32"});
  expect_error([&] { SafeTensorsReader r2(tmp / "missing.safetensors"); },
               {"missing.safetensors", "No such file"});
}

TEST(Safetensors, WriteErrorIsClear) {
  std::vector<float> big(1 << 20, 1.0f);  // 4 MB: more than the writer's buffer
  SafeTensorsWriter w;
  w.add("w", {1 << 20}, big.data());
  expect_error([&] { w.write("/dev/full"); }, {"/dev/full", "No space left on device"});
  expect_error([&] { w.write("/nonexistent_dir/x.safetensors"); },
               {"/nonexistent_dir/x.safetensors", "cannot create"});
}

// Regression tests from fuzzing (fuzz/safetensors_fuzz.cpp).
TEST(SafetensorsFuzzRegression, HugeShapesFailBeforeAnythingIsSized) {
  TempDir tmp;
  const std::string p = tmp / "huge.safetensors";
  // A "1 TB tensor" (2^18 x 2^20 F32) in a file with no data.
  write_raw(p, R"({"w":{"dtype":"F32","shape":[262144,1048576],"data_offsets":[0,0]}})", "");
  expect_error([&] { SafeTensorsReader r(p); },
               {p, "'w'", "[262144, 1048576]", "more bytes than the file's whole data section"});
  // The product of the dims overflows 64 bits (it used to, signed: undefined behaviour; and
  // 2^62 * 4 * 4 bytes wrapped around to 0, matching an empty byte range).
  write_raw(p, R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}})", "");
  expect_error([&] { SafeTensorsReader r(p); }, {p, "'w'", "more bytes than"});
  write_raw(p, R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", "");
  expect_error([&] { SafeTensorsReader r(p); }, {p, "'w'", "non-negative integers"});
  // A zero dim makes any other dim fine: 0 elements.
  write_raw(p, R"({"w":{"dtype":"F32","shape":[4611686018427387904,0],"data_offsets":[0,0]}})", "");
  EXPECT_EQ(SafeTensorsReader(p).info("w").numel(), 0);
}

TEST(SafetensorsFuzzRegression, EmptyTensorReadsAndBytesEqualFile) {
  TempDir tmp;
  const std::string p = tmp / "e.safetensors";
  const float one = 1.0f;
  std::string data(reinterpret_cast<const char*>(&one), 4);
  write_raw(p,
            R"({"e":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]},)"
            R"("o":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
            data);
  const SafeTensorsReader file(p);
  file.read_f32("e", {0, 4}, nullptr);  // nothing to copy (memcpy from/to null was UB)
  // The in-memory reader sees the same header and data.
  std::ifstream in(p, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const SafeTensorsReader mem(bytes, "mem.safetensors");
  EXPECT_EQ(mem.path(), "mem.safetensors");
  float o = 0;
  mem.read_f32("o", {1}, &o);
  EXPECT_EQ(o, 1.0f);
  EXPECT_EQ(mem.tensors().size(), file.tensors().size());
}

}  // namespace
}  // namespace nanogpt
