// kernels/cuda/cublas_loader.cu: the binary does not link cuBLAS / cuBLASLt; their entry points
// load the libraries on first use. Runs without a GPU (these calls need none): the forwarding
// reaches the real libraries, and a process that never calls them never loads them.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

namespace {

bool loaded(const char* soname) {
  void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != nullptr;
}

TEST(CublasLoader, LoadsTheLibrariesOnFirstUseOnly) {
  const std::string lt = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  const std::string blas = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  // In its own process (CTest runs each test alone) nothing has called cuBLAS before this line;
  // in a whole test_cuda run on a GPU the earlier tests have, and only the forwarding is checked.
  const bool fresh = !loaded(lt.c_str()) && !loaded(blas.c_str());
  if (::testing::GTEST_FLAG(filter).rfind("CublasLoader.", 0) == 0) {  // this test alone
    EXPECT_TRUE(fresh) << "cuBLAS was loaded before its first use";
  }
  EXPECT_EQ(std::string(cublasGetStatusString(CUBLAS_STATUS_SUCCESS)),
            "success");  // cuBLAS 13's text
  EXPECT_TRUE(loaded(blas.c_str()));
  cublasLtMatmulPreference_t pref = nullptr;
  ASSERT_EQ(cublasLtMatmulPreferenceCreate(&pref), CUBLAS_STATUS_SUCCESS);
  EXPECT_NE(pref, nullptr);
  EXPECT_EQ(cublasLtMatmulPreferenceDestroy(pref), CUBLAS_STATUS_SUCCESS);
  EXPECT_TRUE(loaded(lt.c_str()));
}

}  // namespace
