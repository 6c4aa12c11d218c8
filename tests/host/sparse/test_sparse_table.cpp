// Host tests of sparse_gemm's tuned table (src/sparse/sparse_table.h): density buckets, the
// exact-M-then-range lookup, optional columns, and the errors of malformed rows.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "sparse/sparse_table.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

TEST(SparseTable, DensityBuckets) {
  EXPECT_EQ(sparse_density_bucket(0.001), 0.005);
  EXPECT_EQ(sparse_density_bucket(0.01), 0.01);
  EXPECT_EQ(sparse_density_bucket(0.04), 0.05);
  EXPECT_EQ(sparse_density_bucket(0.05), 0.05);
  EXPECT_EQ(sparse_density_bucket(0.3), 0.5);
  EXPECT_EQ(sparse_density_bucket(0.7), 1.0);
}

TEST(SparseTable, ExactMThenRange) {
  std::istringstream in(
      "pattern,density,M,N,K,dtype,backend,algorithm,split_k,M_lo,M_hi\n"
      "2:4,0.5,512,4096,4096,torch.bfloat16,cusparselt,3,2,257,1024\n"
      "2:4,0.5,600,4096,4096,torch.bfloat16,dense,,,,\n"
      "csr,0.05,64,1024,1024,bf16,cusparse,,,,\n");
  SparseTable t;
  t.add(in, "t.csv");
  EXPECT_EQ(t.rows(), 3u);
  auto exact = t.find(SparsePattern::k2of4, 0.5, 0, 600, 4096, 4096, DType::kBFloat16);
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(exact->backend, SparseBackend::kDense);
  EXPECT_EQ(exact->algorithm, -1);
  EXPECT_EQ(exact->where, "t.csv:3");
  auto ranged = t.find(SparsePattern::k2of4, 0.5, 0, 700, 4096, 4096, DType::kBFloat16);
  ASSERT_TRUE(ranged.has_value());
  EXPECT_EQ(ranged->backend, SparseBackend::kCusparselt);
  EXPECT_EQ(ranged->algorithm, 3);
  EXPECT_EQ(ranged->split_k, 2);
  EXPECT_FALSE(t.find(SparsePattern::k2of4, 0.5, 0, 2048, 4096, 4096, DType::kBFloat16).has_value());
  EXPECT_FALSE(t.find(SparsePattern::k2of4, 0.5, 0, 512, 4096, 4096, DType::kFloat16).has_value());
  // 4% and 5% share the 0.05 bucket; 1% does not.
  EXPECT_TRUE(t.find(SparsePattern::kCsr, 0.04, 0, 64, 1024, 1024, DType::kBFloat16).has_value());
  EXPECT_FALSE(t.find(SparsePattern::kCsr, 0.01, 0, 64, 1024, 1024, DType::kBFloat16).has_value());
}

TEST(SparseTable, BlockRowsAreKeyedByBlockSizeAndFp8ByDtype) {
  std::istringstream in(
      "pattern,density,block_size,M,N,K,dtype,backend,algorithm,split_k\n"
      "block,0.2,64,512,4096,4096,torch.bfloat16,dense,,\n"
      "block,0.2,32,512,4096,4096,torch.bfloat16,cusparse,14,\n"
      "2:4,0.5,,512,4096,4096,torch.float8_e4m3fn,cusparselt,5,1\n");
  SparseTable t;
  t.add(in, "b.csv");
  auto b64 = t.find(SparsePattern::kBlock, 0.15, 64, 512, 4096, 4096, DType::kBFloat16);
  ASSERT_TRUE(b64.has_value());
  EXPECT_EQ(b64->backend, SparseBackend::kDense);
  auto b32 = t.find(SparsePattern::kBlock, 0.15, 32, 512, 4096, 4096, DType::kBFloat16);
  ASSERT_TRUE(b32.has_value());
  EXPECT_EQ(b32->backend, SparseBackend::kCusparse);
  EXPECT_EQ(b32->algorithm, 14);
  EXPECT_FALSE(t.find(SparsePattern::kBlock, 0.15, 16, 512, 4096, 4096, DType::kBFloat16).has_value());
  auto fp8 = t.find(SparsePattern::k2of4, 0.5, 0, 512, 4096, 4096, DType::kFloat8E4M3);
  ASSERT_TRUE(fp8.has_value());
  EXPECT_EQ(fp8->algorithm, 5);
  EXPECT_FALSE(t.find(SparsePattern::k2of4, 0.5, 0, 512, 4096, 4096, DType::kBFloat16).has_value());
}

void expect_table_error(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  SparseTable t;
  try {
    t.add(in, "bad.csv");
    FAIL() << "no tgemm::Error for: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(SparseTable, MalformedRowsNameFileLineAndValue) {
  const std::string header = "pattern,density,M,N,K,dtype,backend\n";
  expect_table_error("pattern,M,N,K,dtype,backend\n", "bad.csv:1: the header has no column density");
  expect_table_error(header + "3:4,0.5,1,16,16,bf16,cusparselt\n",
                     "bad.csv:2: pattern must be 2:4, csr or block, got '3:4'");
  expect_table_error(header + "csr,1.5,1,16,16,bf16,cusparse\n", "density must be in (0, 1], got '1.5'");
  expect_table_error(header + "csr,0.1,1,16,16,fp32,cusparse\n", "dtype must be torch.bfloat16 or torch.float16");
  expect_table_error(header + "csr,0.1,1,16,16,bf16,cusparselt\n", "backend cusparselt serves 2:4 rows only");
  expect_table_error(header + "2:4,0.5,1,16,16,bf16,cusparse\n", "backend cusparse serves csr and block rows only");
  expect_table_error(header + "2:4,0.5,x,16,16,bf16,dense\n", "M must be an integer, got 'x'");
  expect_table_error(header + "block,0.1,1,16,16,bf16,dense\n", "block_size must be positive on a block row");
  expect_table_error("pattern,density,block_size,M,N,K,dtype,backend\ncsr,0.1,16,1,16,16,bf16,dense\n",
                     "block_size must be positive on a block row and 0");
  expect_table_error(header + "csr,0.1,1,16,16,torch.float8_e4m3fn,cusparse\n", "float8_e4m3fn on a 2:4 row");
  expect_table_error(header + "2:4,0.5,0,16,16,bf16,dense\n", "M, N and K must be positive");
}

}  // namespace
}  // namespace tgemm
