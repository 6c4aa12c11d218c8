#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include "core/csv.h"
#include "core/table.h"
#include "tests/common/host_test_util.h"

namespace tgemm {
namespace {

using test::contains;

std::string header() { return csv::join(tuned_table_columns()); }

// One line in tuned_table_columns() order: a valid bf16 row unless `changes` says otherwise.
std::string row_line(const std::map<std::string, std::string>& changes = {}) {
  std::map<std::string, std::string> f = {{"arch", "sm_90a"},
                                          {"sm_count", "132"},
                                          {"M", "16"},
                                          {"N", "4096"},
                                          {"K", "4096"},
                                          {"bias", "False"},
                                          {"dtype", "torch.bfloat16"},
                                          {"outdtype", "torch.bfloat16"},
                                          {"scaleAB", "False"},
                                          {"bpreshuffle", "False"},
                                          {"libtype", "fake"},
                                          {"solidx", "0"},
                                          {"splitK", "0"},
                                          {"us", "10"},
                                          {"kernelName", "fake:tile64"},
                                          {"err_ratio", "0"},
                                          {"tflops", "100"},
                                          {"bw", "200"},
                                          {"epilogue", "none"},
                                          {"M_lo", ""},
                                          {"M_hi", ""}};
  for (const auto& [k, v] : changes) f.at(k) = v;
  std::vector<std::string> fields;
  for (const auto& col : tuned_table_columns()) fields.push_back(f.at(col));
  return csv::join(fields);
}

ParsedTable parse(const std::string& text, const std::string& file = "t.csv") {
  std::istringstream in(text);
  return parse_tuned_table(in, file);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TableKey bf16_key(std::int64_t n = 4096, std::int64_t k = 4096, int sm_count = 132) {
  TableKey key;
  key.arch = "sm_90a";
  key.sm_count = sm_count;
  key.n = n;
  key.k = k;
  return key;
}

TableRow make_row(std::int64_t m, double us, const std::string& kernel, const std::string& file,
                  int line, std::int64_t n = 4096) {
  TableRow r;
  r.key = bf16_key(n);
  r.m = m;
  r.libtype = "fake";
  r.kernel_name = kernel;
  r.us = us;
  r.file = file;
  r.line = line;
  return r;
}

TEST(TableColumns, TunedColumnsInWrittenOrder) {
  EXPECT_EQ(header(),
            "arch,sm_count,M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,libtype,solidx,splitK,us,"
            "kernelName,err_ratio,tflops,bw,epilogue,M_lo,M_hi");
  EXPECT_EQ(csv::join(untuned_table_columns()), "M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue");
}

TEST(ParseTunedTable, ReadsEveryColumn) {
  ParsedTable t = parse(joined({header(), row_line({{"M", "48"},
                                                    {"N", "1024"},
                                                    {"K", "512"},
                                                    {"bias", "True"},
                                                    {"dtype", "torch.float16"},
                                                    {"outdtype", "torch.float32"},
                                                    {"scaleAB", "True"},
                                                    {"bpreshuffle", "True"},
                                                    {"libtype", "cublaslt"},
                                                    {"solidx", "-1"},
                                                    {"splitK", "4"},
                                                    {"us", "12.5"},
                                                    {"kernelName", "cublaslt:heuristic"},
                                                    {"err_ratio", "0.001"},
                                                    {"tflops", "456.25"},
                                                    {"bw", "1234.5"},
                                                    {"sm_count", "114"}})}));
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  const TableRow& r = t.rows[0];
  EXPECT_EQ(r.key.arch, "sm_90a");
  EXPECT_EQ(r.key.sm_count, 114);
  EXPECT_EQ(r.m, 48);
  EXPECT_EQ(r.key.n, 1024);
  EXPECT_EQ(r.key.k, 512);
  EXPECT_TRUE(r.key.bias);
  EXPECT_EQ(r.key.dtype, DType::kFloat16);
  EXPECT_EQ(r.key.out_dtype, DType::kFloat32);
  EXPECT_TRUE(r.key.scale_ab);
  EXPECT_TRUE(r.key.bpreshuffle);
  EXPECT_EQ(r.libtype, "cublaslt");
  EXPECT_EQ(r.solidx, -1);
  EXPECT_EQ(r.split_k, 4);
  EXPECT_DOUBLE_EQ(r.us, 12.5);
  EXPECT_EQ(r.kernel_name, "cublaslt:heuristic");
  EXPECT_DOUBLE_EQ(r.err_ratio, 0.001);
  EXPECT_DOUBLE_EQ(r.tflops, 456.25);
  EXPECT_DOUBLE_EQ(r.bw, 1234.5);
  EXPECT_EQ(r.file, "t.csv");
  EXPECT_EQ(r.line, 2);
}

TEST(ParseTunedTable, ColumnsFoundByNameInAnyOrderAndUnknownOnesIgnored) {
  const std::string text =
      "kernelName,M,comment,N,K,arch,sm_count,bias,dtype,outdtype,libtype,us,solidx,splitK,"
      "scaleAB,bpreshuffle,err_ratio,tflops,bw\n"
      "fake:tile64,16,hello,4096,2048,sm_90a,132,False,torch.bfloat16,torch.bfloat16,fake,12.5,3,"
      "2,False,False,0,10.5,300\n"
      "fake:tile128,32.0,\"a, b\",4096,2048,sm_90a,132,True,bf16,float32,fake,7,0,0,False,True,"
      "0.25,1,2\n";
  ParsedTable t = parse(text);
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 2u);
  const TableRow& a = t.rows[0];
  EXPECT_EQ(a.kernel_name, "fake:tile64");
  EXPECT_EQ(a.m, 16);
  EXPECT_EQ(a.key.n, 4096);
  EXPECT_EQ(a.key.k, 2048);
  EXPECT_EQ(a.key.arch, "sm_90a");
  EXPECT_EQ(a.key.sm_count, 132);
  EXPECT_FALSE(a.key.bias);
  EXPECT_EQ(a.libtype, "fake");
  EXPECT_DOUBLE_EQ(a.us, 12.5);
  EXPECT_EQ(a.solidx, 3);
  EXPECT_EQ(a.split_k, 2);
  EXPECT_DOUBLE_EQ(a.tflops, 10.5);
  EXPECT_DOUBLE_EQ(a.bw, 300);
  EXPECT_EQ(a.line, 2);
  const TableRow& b = t.rows[1];
  EXPECT_EQ(b.kernel_name, "fake:tile128");
  EXPECT_EQ(b.m, 32);  // "32.0" as pandas writes integer columns
  EXPECT_TRUE(b.key.bias);
  EXPECT_EQ(b.key.dtype, DType::kBFloat16);     // short name
  EXPECT_EQ(b.key.out_dtype, DType::kFloat32);  // name without "torch."
  EXPECT_TRUE(b.key.bpreshuffle);
  EXPECT_DOUBLE_EQ(b.err_ratio, 0.25);
  EXPECT_EQ(b.line, 3);
}

TEST(ParseTunedTable, OptionalColumnsMayBeAbsent) {
  // Only the required columns: outdtype defaults to dtype, flags to False, numbers to 0.
  ParsedTable t = parse(
      "arch,sm_count,M,N,K,dtype,libtype,kernelName\n"
      "sm_90a,132,1,8,16,torch.float16,fake,fake:tile64\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].key.dtype, DType::kFloat16);
  EXPECT_EQ(t.rows[0].key.out_dtype, DType::kFloat16);
  EXPECT_FALSE(t.rows[0].key.bias);
  EXPECT_EQ(t.rows[0].split_k, 0);
  EXPECT_EQ(t.rows[0].solidx, 0);
}

TEST(ParseTunedTable, CommentsBlankLinesAndCrlfAreSkippedButCounted) {
  ParsedTable t = parse("# written by tgemm tune\r\n\r\n" + header() + "\r\n   \n" +
                        row_line({{"M", "8"}}) + "\r\n# trailing comment\n");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].m, 8);
  EXPECT_EQ(t.rows[0].line, 5);
  EXPECT_EQ(t.rows[0].kernel_name, "fake:tile64");  // no '\r' left on the last column
  EXPECT_DOUBLE_EQ(t.rows[0].bw, 200);
}

TEST(ParseTunedTable, MalformedLinesWarnWithFileLineAndReasonAndGoodRowsSurvive) {
  std::vector<std::string> lines = {
      header(),                                   // 1
      row_line({{"M", "16"}}),                    // 2 good
      row_line() + ",extra",                      // 3 too many fields
      "sm_90a,132,16,4096",                       // 4 too few fields
      row_line({{"M", "sixteen"}}),               // 5 bad int
      row_line({{"dtype", "torch.float64"}}),     // 6 unknown dtype
      row_line({{"kernelName", ""}}),             // 7 empty kernelName
      row_line({{"M", "0"}}),                     // 8 M = 0
      row_line({{"M", "32"}}),                    // 9 good
      row_line({{"bias", "maybe"}}),              // 10 bad bool
      "\"sm_90a,132",                             // 11 unterminated quote
      row_line({{"N", "-5"}}),                    // 12 negative N
      row_line({{"sm_count", "0"}}),              // 13 sm_count 0
      "",                                         // 14 blank: no warning
      "# a comment, with commas",                 // 15 comment: no warning
      row_line({{"outdtype", "torch.float64"}}),  // 16 unknown outdtype
      row_line({{"libtype", ""}}),                // 17 empty libtype
      row_line({{"arch", ""}}),                   // 18 empty arch
      row_line({{"splitK", "-1"}}),               // 19 negative splitK
      row_line({{"us", "fast"}}),                 // 20 bad double
      row_line({{"K", "4096.5"}}),                // 21 non-integral K
      row_line({{"M", "64"}}),                    // 22 good
  };
  ParsedTable t = parse(joined(lines), "configs/x.csv");

  std::vector<std::int64_t> ms;
  std::vector<int> good_lines;
  for (const auto& r : t.rows) {
    ms.push_back(r.m);
    good_lines.push_back(r.line);
  }
  EXPECT_EQ(ms, (std::vector<std::int64_t>{16, 32, 64}));
  EXPECT_EQ(good_lines, (std::vector<int>{2, 9, 22}));

  // One warning per bad line, in order: "file:line: reason, row skipped".
  const std::vector<std::pair<int, std::vector<std::string>>> expected = {
      {3, {"22 fields", "21"}},
      {4, {"4 fields", "21"}},
      {5, {"M", "'sixteen'"}},
      {6, {"unknown dtype", "torch.float64"}},
      {7, {"empty kernelName"}},
      {8, {"M must be >= 1", "got 0"}},
      {10, {"bias", "'maybe'"}},
      {11, {"unterminated quote"}},
      {12, {"N must be >= 1", "got -5"}},
      {13, {"sm_count must be >= 1", "got 0"}},
      {16, {"unknown outdtype", "torch.float64"}},
      {17, {"empty libtype"}},
      {18, {"empty arch"}},
      {19, {"splitK must be >= 0", "got -1"}},
      {20, {"us", "'fast'"}},
      {21, {"K", "'4096.5'"}},
  };
  ASSERT_EQ(t.warnings.size(), expected.size()) << [&] {
    std::string all;
    for (const auto& w : t.warnings) all += w + "\n";
    return all;
  }();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const std::string& w = t.warnings[i];
    const std::string prefix = "configs/x.csv:" + std::to_string(expected[i].first) + ": ";
    EXPECT_EQ(w.rfind(prefix, 0), 0u) << "expected prefix '" << prefix << "' in: " << w;
    EXPECT_TRUE(contains(w, "skipped")) << w;
    for (const auto& part : expected[i].second) {
      EXPECT_TRUE(contains(w, part)) << "'" << part << "' missing from: " << w;
    }
  }
}

TEST(ParseTunedTable, MissingRequiredHeaderColumnSkipsTheFile) {
  for (const char* missing :
       {"arch", "sm_count", "M", "N", "K", "dtype", "libtype", "kernelName"}) {
    std::vector<std::string> cols;
    for (const auto& c : tuned_table_columns()) {
      if (c != missing) cols.push_back(c);
    }
    // Data lines that would be valid apart from the missing column.
    std::vector<std::string> values;
    std::vector<std::string> full = *csv::split_line(row_line());
    for (std::size_t i = 0; i < tuned_table_columns().size(); ++i) {
      if (tuned_table_columns()[i] != missing) values.push_back(full[i]);
    }
    ParsedTable t =
        parse("# comment\n" + csv::join(cols) + "\n" + csv::join(values) + "\n", "h.csv");
    EXPECT_TRUE(t.rows.empty()) << missing;
    ASSERT_EQ(t.warnings.size(), 1u) << missing;
    EXPECT_EQ(t.warnings[0],
              std::string("h.csv:2: header has no '") + missing + "' column, file skipped");
  }
}

TEST(ParseTunedTable, EmptyInputHasNoRowsAndNoWarnings) {
  ParsedTable t = parse("");
  EXPECT_TRUE(t.rows.empty());
  EXPECT_TRUE(t.warnings.empty());
}

TEST(ParseTunedTable, OnlyCommentsIsANoHeaderWarning) {
  ParsedTable t = parse("# nothing here\n\n", "c.csv");
  EXPECT_TRUE(t.rows.empty());
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_TRUE(contains(t.warnings[0], "c.csv")) << t.warnings[0];
  EXPECT_TRUE(contains(t.warnings[0], "no header")) << t.warnings[0];
}

TEST(FormatTunedRow, WritesColumnsInOrder) {
  TableRow r = make_row(16, 10, "fake:tile64", "", 0);
  r.tflops = 100;
  r.bw = 200;
  EXPECT_EQ(format_tuned_row(r),
            "sm_90a,132,16,4096,4096,False,torch.bfloat16,torch.bfloat16,False,False,fake,0,0,10,"
            "fake:tile64,0,100,200,none,,");
  r.m_lo = 9;
  r.m_hi = 24;
  EXPECT_TRUE(contains(format_tuned_row(r), ",none,9,24")) << format_tuned_row(r);
}

TEST(FormatTunedRow, ParseOfFormatGivesTheSameRow) {
  TableRow r;
  r.key.arch = "sm_90a";
  r.key.sm_count = 114;
  r.key.n = 7168;
  r.key.k = 18432;
  r.key.bias = true;
  r.key.dtype = DType::kFloat16;
  r.key.out_dtype = DType::kFloat32;
  r.key.scale_ab = true;
  r.key.bpreshuffle = true;
  r.m = 4097;
  r.libtype = "cutlass";
  r.solidx = -1;
  r.split_k = 4;
  r.us = 12.5;
  r.kernel_name = "cutlass:sm90_bf16_128x256x64_c2x1_s4_coop, \"quoted\"";  // needs quoting
  r.err_ratio = 0.001;
  r.tflops = 456.25;
  r.bw = 1234.5;

  ParsedTable t = parse(header() + "\n" + format_tuned_row(r) + "\n", "rt.csv");
  ASSERT_TRUE(t.warnings.empty()) << t.warnings[0];
  ASSERT_EQ(t.rows.size(), 1u);
  const TableRow& b = t.rows[0];
  EXPECT_TRUE(b.key == r.key) << b.key.describe() << " vs " << r.key.describe();
  EXPECT_EQ(b.m, r.m);
  EXPECT_EQ(b.libtype, r.libtype);
  EXPECT_EQ(b.solidx, r.solidx);
  EXPECT_EQ(b.split_k, r.split_k);
  EXPECT_DOUBLE_EQ(b.us, r.us);
  EXPECT_EQ(b.kernel_name, r.kernel_name);
  EXPECT_DOUBLE_EQ(b.err_ratio, r.err_ratio);
  EXPECT_DOUBLE_EQ(b.tflops, r.tflops);
  EXPECT_DOUBLE_EQ(b.bw, r.bw);
  EXPECT_EQ(b.file, "rt.csv");
  EXPECT_EQ(b.line, 2);
}

TEST(TableMerge, WithinOneFileADuplicateKeepsTheLowestUs) {
  for (bool fastest_first : {true, false}) {
    Table table;
    TableRow slow = make_row(16, 20, "fake:slow", "a.csv", 2);
    TableRow fast = make_row(16, 5, "fake:fast", "a.csv", 3);
    TableRow slower = make_row(16, 30, "fake:slower", "a.csv", 4);
    if (fastest_first) {
      table.add_rows({fast, slow, slower});
    } else {
      table.add_rows({slow, slower, fast});
    }
    const Table::RowsByM* rows = table.rows_for(bf16_key());
    ASSERT_NE(rows, nullptr);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ(rows->at(16).kernel_name, "fake:fast") << "fastest_first=" << fastest_first;
    EXPECT_DOUBLE_EQ(rows->at(16).us, 5);
    EXPECT_EQ(rows->at(16).line, 3);
    EXPECT_EQ(table.size(), 1u);
  }
}

TEST(TableMerge, ALaterFileReplacesAnEarlierFilesRowEvenWhenSlower) {
  Table table;
  table.add_rows(
      {make_row(16, 5, "fake:tile64", "a.csv", 2), make_row(32, 6, "fake:tile64", "a.csv", 3)});
  table.add_rows(
      {make_row(16, 50, "fake:tile128", "b.csv", 2), make_row(16, 40, "fake:tile256", "b.csv", 3)});
  const Table::RowsByM* rows = table.rows_for(bf16_key());
  ASSERT_NE(rows, nullptr);
  ASSERT_EQ(rows->size(), 2u);
  // M=16: b.csv's fastest row wins over a.csv's (faster) row.
  EXPECT_EQ(rows->at(16).kernel_name, "fake:tile256");
  EXPECT_EQ(rows->at(16).file, "b.csv");
  EXPECT_DOUBLE_EQ(rows->at(16).us, 40);
  // M=32 only in a.csv: kept.
  EXPECT_EQ(rows->at(32).file, "a.csv");
  EXPECT_EQ(table.size(), 2u);
}

TEST(TableMerge, KeysAreSeparateAndRowsAreOrderedByM) {
  Table table;
  table.add_rows({make_row(64, 1, "fake:a", "a.csv", 2), make_row(16, 1, "fake:b", "a.csv", 3),
                  make_row(32, 1, "fake:c", "a.csv", 4, /*n=*/1024)});
  const Table::RowsByM* rows = table.rows_for(bf16_key());
  ASSERT_NE(rows, nullptr);
  std::vector<std::int64_t> ms;
  for (const auto& [m, row] : *rows) ms.push_back(m);
  EXPECT_EQ(ms, (std::vector<std::int64_t>{16, 64}));
  const Table::RowsByM* other = table.rows_for(bf16_key(1024));
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->size(), 1u);
  EXPECT_EQ(table.rows_for(bf16_key(4096, 4096, 114)), nullptr);
  EXPECT_EQ(table.rows_for(bf16_key(4096, 8192)), nullptr);
  EXPECT_EQ(table.size(), 3u);

  std::vector<std::int64_t> all_ns;
  for (const TableRow* r : table.all_rows()) all_ns.push_back(r->key.n * 1000 + r->m);
  EXPECT_EQ(all_ns,
            (std::vector<std::int64_t>{1024 * 1000 + 32, 4096 * 1000 + 16, 4096 * 1000 + 64}));
}

TEST(TableSmCounts, ListsTheSmCountsOfAnArchSorted) {
  Table table;
  TableRow a = make_row(16, 1, "fake:a", "a.csv", 2);
  TableRow b = a;
  b.key.sm_count = 114;
  TableRow c = a;
  c.key.arch = "sm_80";
  c.key.sm_count = 108;
  TableRow d = a;
  d.m = 32;  // same key as a: 132 listed once
  table.add_rows({a, b, c, d});
  EXPECT_EQ(table.sm_counts_for_arch("sm_90a"), (std::vector<int>{114, 132}));
  EXPECT_EQ(table.sm_counts_for_arch("sm_80"), (std::vector<int>{108}));
  EXPECT_TRUE(table.sm_counts_for_arch("sm_100").empty());
}

TEST(TableLoadFile, ReadsAFileAndReportsItsWarnings) {
  test::TempDir dir;
  const std::string path = dir.file("bf16_tuned_gemm.csv");
  test::write_file(
      path, header() + "\n" + row_line({{"M", "16"}}) + "\n" + row_line({{"M", "x"}}) + "\n");
  Table table;
  std::vector<std::string> warnings;
  table.load_file(path, warnings);
  EXPECT_EQ(table.size(), 1u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind(path + ":3: ", 0), 0u) << warnings[0];
  const Table::RowsByM* rows = table.rows_for(bf16_key());
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(rows->at(16).file, path);
}

TEST(TableLoadFile, MissingFileIsAWarningNotAnError) {
  test::TempDir dir;
  const std::string path = dir.file("absent.csv");
  Table table;
  std::vector<std::string> warnings;
  EXPECT_NO_THROW(table.load_file(path, warnings));
  EXPECT_EQ(table.size(), 0u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], path)) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "cannot be opened")) << warnings[0];
}

}  // namespace
}  // namespace tgemm

namespace tgemm {
namespace {

TEST(ParseTunedTable, EpilogueColumnIsPartOfTheKey) {
  const std::string text = csv::join(tuned_table_columns()) + "\n" +
                           "sm_90a,132,16,4096,4096,True,torch.bfloat16,torch.bfloat16,False,False,cublaslt,-1,0,9,"
                           "cublaslt:heuristic,0,1,1,gelu_tanh+c,,\n" +
                           "sm_90a,132,16,4096,4096,True,torch.bfloat16,torch.bfloat16,False,False,cublaslt,-1,0,9,"
                           "cublaslt:heuristic,0,1,1,swish,,\n";
  std::istringstream in(text);
  ParsedTable t = parse_tuned_table(in, "e.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].key.epilogue.activation, Activation::kGeluTanh);
  EXPECT_TRUE(t.rows[0].key.epilogue.use_c);
  EXPECT_FALSE(t.rows[0].key.epilogue.scaled);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("e.csv:3: unknown epilogue 'swish'"), std::string::npos) << t.warnings[0];
  // Tables without the column (AITER's layout) are plain-epilogue rows.
  std::istringstream old("arch,sm_count,M,N,K,dtype,libtype,kernelName\nsm_90a,132,1,8,8,torch.bfloat16,x,x:y\n");
  ParsedTable o = parse_tuned_table(old, "o.csv");
  ASSERT_EQ(o.rows.size(), 1u);
  EXPECT_TRUE(o.rows[0].key.epilogue == EpilogueKey{});
  TableRow r = t.rows[0];
  EXPECT_NE(format_tuned_row(r).find(",gelu_tanh+c"), std::string::npos);
}

TEST(MRange, ParsedWithTheRowAndAbsentMeansItsOwnMOnly) {
  ParsedTable t = parse(joined({header(), row_line({{"M", "16"}, {"M_lo", "9"}, {"M_hi", "24"}}),
                                row_line({{"M", "64"}})}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_EQ(t.rows[0].range_lo(), 9);
  EXPECT_EQ(t.rows[0].range_hi(), 24);
  EXPECT_EQ(t.rows[1].range_lo(), 64);
  EXPECT_EQ(t.rows[1].range_hi(), 64);
  for (std::int64_t m = 0; m < 100; ++m) {
    EXPECT_EQ(t.rows[0].serves(m), m >= 9 && m <= 24) << m;
    EXPECT_EQ(t.rows[1].serves(m), m == 64) << m;
  }
  // A table without the columns (AITER's layout, older tgemm tables): own M only.
  std::istringstream old("arch,sm_count,M,N,K,dtype,libtype,kernelName\nsm_90a,132,8,8,8,torch.bfloat16,x,x:y\n");
  ParsedTable o = parse_tuned_table(old, "o.csv");
  ASSERT_EQ(o.rows.size(), 1u);
  EXPECT_EQ(o.rows[0].range_lo(), 8);
  EXPECT_EQ(o.rows[0].range_hi(), 8);
  // Written and read back unchanged.
  ParsedTable back = parse(header() + "\n" + format_tuned_row(t.rows[0]) + "\n");
  ASSERT_EQ(back.rows.size(), 1u);
  EXPECT_EQ(back.rows[0].m_lo, 9);
  EXPECT_EQ(back.rows[0].m_hi, 24);
}

TEST(MRange, MalformedRangesWarnWithFileAndLineAndAreSkipped) {
  ParsedTable t = parse(joined({header(),
                                row_line({{"M", "16"}, {"M_lo", "9"}}),                     // 2: half a range
                                row_line({{"M", "16"}, {"M_hi", "24"}}),                    // 3: half a range
                                row_line({{"M", "16"}, {"M_lo", "17"}, {"M_hi", "24"}}),    // 4: M below it
                                row_line({{"M", "16"}, {"M_lo", "8"}, {"M_hi", "15"}}),     // 5: M above it
                                row_line({{"M", "16"}, {"M_lo", "0"}, {"M_hi", "24"}}),     // 6: M_lo < 1
                                row_line({{"M", "16"}, {"M_lo", "x"}, {"M_hi", "24"}}),     // 7: not a number
                                row_line({{"M", "16"}, {"M_lo", "16"}, {"M_hi", "16"}})}),  // 8: good
                        "r.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].line, 8);
  ASSERT_EQ(t.warnings.size(), 6u);
  const std::vector<std::string> reasons = {"go together", "go together", "must hold the row's M 16",
                                            "must hold the row's M 16", "M_lo must be >= 1", "bad M_lo 'x'"};
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    EXPECT_EQ(t.warnings[i].rfind("r.csv:" + std::to_string(i + 2) + ": ", 0), 0u) << t.warnings[i];
    EXPECT_TRUE(contains(t.warnings[i], reasons[i])) << t.warnings[i];
    EXPECT_TRUE(contains(t.warnings[i], "skipped")) << t.warnings[i];
  }
}

TableRow ranged(std::int64_t m, std::int64_t lo, std::int64_t hi, const std::string& file, int line) {
  TableRow r = make_row(m, 10, "fake:m" + std::to_string(m), file, line);
  r.m_lo = lo;
  r.m_hi = hi;
  return r;
}

std::vector<std::int64_t> ms_of(const Table& t) {
  std::vector<std::int64_t> out;
  for (const auto& [m, row] : *t.rows_for(bf16_key())) out.push_back(m);
  return out;
}

TEST(MRange, OverlapWithinAFileWarnsAndSkipsTheLaterRow) {
  Table t;
  std::vector<std::string> warnings;
  t.add_rows({ranged(16, 9, 24, "a.csv", 2), ranged(32, 20, 40, "a.csv", 3), ranged(48, 41, 64, "a.csv", 4),
              ranged(8, 1, 8, "a.csv", 5), ranged(12, 12, 12, "a.csv", 6)},
             &warnings);
  // In M order: 8 [1,8], 12 [12,12] kept; 16 [9,24] overlaps 12; 32 [20,40] kept; 48 [41,64] kept.
  EXPECT_EQ(ms_of(t), (std::vector<std::int64_t>{8, 12, 32, 48}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("a.csv:2: ", 0), 0u) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "overlaps the row at line 6")) << warnings[0];
  EXPECT_TRUE(contains(warnings[0], "skipped")) << warnings[0];
}

TEST(MRange, ALaterFilesRowRemovesTheEarlierRowsItOverlaps) {
  Table t;
  t.add_rows({ranged(16, 9, 24, "a.csv", 2), ranged(64, 64, 64, "a.csv", 3), ranged(128, 100, 200, "a.csv", 4),
              ranged(512, 512, 512, "a.csv", 5)});
  std::vector<std::string> warnings;
  t.add_rows({ranged(80, 60, 110, "b.csv", 2)}, &warnings);
  EXPECT_TRUE(warnings.empty());  // layering, not a malformed file
  EXPECT_EQ(ms_of(t), (std::vector<std::int64_t>{16, 80, 512}));
  EXPECT_EQ(t.rows_for(bf16_key())->at(80).file, "b.csv");
}

// Hostile inputs: each one is a warning naming the file (and line where there is one), never a
// crash, a hang, unbounded memory or a row that says something its text did not.

std::string all_warnings(const ParsedTable& t) {
  std::string all;
  for (const auto& w : t.warnings) all += w + "\n";
  return all;
}

TEST(HostileTable, RepeatedKernelNameColumnsSkipTheFileWithOneWarning) {
  // The columns past the header's known ones once made the row read past its end (50: a
  // length_error, 500: a garbage kernelName, 50,000: a segfault).
  for (int extra : {1, 50, 500, 50000}) {
    std::string head = header();
    std::string line = row_line();
    for (int i = 0; i < extra; ++i) {
      head += ",kernelName";
      line += ",fake:extra" + std::to_string(i);
    }
    const std::string text = joined({head, line, row_line()});
    // 50,000 repeats make a 550 KB header: over the line limit, so the limit stops it first; with
    // the limit raised, the repeat is what skips the file.
    const bool over_line_limit = head.size() > (std::size_t{64} << 10);
    EXPECT_EQ(over_line_limit, extra == 50000);
    for (bool raised : {false, true}) {
      std::istringstream in(text);
      ParsedTable t = parse_tuned_table(in, "dup.csv", raised ? csv::ReadLimits{1 << 24, 1 << 26} : csv::ReadLimits{});
      EXPECT_TRUE(t.rows.empty()) << extra;
      ASSERT_EQ(t.warnings.size(), 1u) << extra << ":\n" << all_warnings(t);
      if (over_line_limit && !raised) {
        EXPECT_EQ(t.warnings[0], "dup.csv: line 1 is longer than 65536 bytes, the rest of the file is not read");
      } else {
        EXPECT_EQ(t.warnings[0], "dup.csv:1: header names column 'kernelName' twice (fields 15 and 22), file skipped");
      }
    }
  }
}

TEST(HostileTable, AnyRepeatedColumnSkipsTheFileButRepeatedEmptyNamesDoNot) {
  ParsedTable t = parse(
      "arch,sm_count,M,N,K,dtype,libtype,kernelName,M\n"
      "sm_90a,132,16,8,8,torch.bfloat16,fake,fake:a,4096\n",
      "m.csv");
  EXPECT_TRUE(t.rows.empty());
  ASSERT_EQ(t.warnings.size(), 1u) << all_warnings(t);
  EXPECT_EQ(t.warnings[0], "m.csv:1: header names column 'M' twice (fields 3 and 9), file skipped");
  // Unnamed columns (trailing commas) cannot be asked for: ignored, but rows must still match the
  // header's width.
  ParsedTable e =
      parse(joined({header() + ",,", row_line() + ",,", row_line({{"M", "32"}}) + ",", row_line()}), "e.csv");
  ASSERT_EQ(e.rows.size(), 1u) << all_warnings(e);
  EXPECT_EQ(e.rows[0].line, 2);
  ASSERT_EQ(e.warnings.size(), 2u) << all_warnings(e);
  EXPECT_EQ(e.warnings[0], "e.csv:3: malformed line: 22 fields where the header has 23, row skipped");
  EXPECT_EQ(e.warnings[1], "e.csv:4: malformed line: 21 fields where the header has 23, row skipped");
}

TEST(HostileTable, MeasuresMustBeFiniteAndNonNegative) {
  // A NaN or negative us would win every lowest-us comparison within its file.
  for (const char* column : {"us", "err_ratio", "tflops", "bw"}) {
    std::vector<std::string> lines = {header()};
    const std::vector<std::string> values = {"nan", "NaN", "inf", "-inf", "-1", "-0.001", "1e400", "-1e400"};
    for (const auto& v : values) lines.push_back(row_line({{column, v}}));
    lines.push_back(row_line({{column, "0"}, {"M", "64"}}));
    ParsedTable t = parse(joined(lines), "v.csv");
    ASSERT_EQ(t.rows.size(), 1u) << column << "\n" << all_warnings(t);
    EXPECT_EQ(t.rows[0].m, 64);
    ASSERT_EQ(t.warnings.size(), values.size()) << column << "\n" << all_warnings(t);
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(t.warnings[i], "v.csv:" + std::to_string(i + 2) + ": " + column +
                                   " must be a finite number >= 0, got '" + values[i] + "', row skipped");
    }
  }
}

TEST(HostileTable, ANanRowDoesNotReplaceAFasterDuplicate) {
  ParsedTable t = parse(joined({header(), row_line({{"us", "5"}, {"kernelName", "fake:real"}}),
                                row_line({{"us", "nan"}, {"kernelName", "fake:nan"}})}));
  Table table;
  table.add_rows(t.rows);
  ASSERT_NE(table.rows_for(bf16_key()), nullptr);
  EXPECT_EQ(table.rows_for(bf16_key())->at(16).kernel_name, "fake:real");
}

TEST(HostileTable, IntColumnsAboveInt32AreRejectedNotTruncated) {
  // 4294967428 = 2^32 + 132 became 132 through a cast: a row for 132-SM GPUs.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sm_count", "4294967428"}, {"sm_count", "2147483648"}, {"solidx", "4294967296"},
      {"solidx", "2147483648"},   {"splitK", "4294967297"},   {"splitK", "9223372036854775807"},
  };
  std::vector<std::string> lines = {header()};
  for (const auto& [column, value] : cases) lines.push_back(row_line({{column, value}}));
  lines.push_back(row_line({{"sm_count", "2147483647"}, {"solidx", "2147483647"}, {"splitK", "2147483647"}}));
  ParsedTable t = parse(joined(lines), "i.csv");
  ASSERT_EQ(t.rows.size(), 1u) << all_warnings(t);
  EXPECT_EQ(t.rows[0].key.sm_count, 2147483647);
  EXPECT_EQ(t.rows[0].solidx, 2147483647);
  EXPECT_EQ(t.rows[0].split_k, 2147483647);
  ASSERT_EQ(t.warnings.size(), cases.size()) << all_warnings(t);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(t.warnings[i], "i.csv:" + std::to_string(i + 2) + ": " + cases[i].first + " must be <= 2147483647, got " +
                                 cases[i].second + ", row skipped");
  }
}

TEST(HostileTable, DimensionsAboveInt32AreRejected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"M", "2147483648"}, {"N", "9223372036854775807"}, {"K", "4294967296"}, {"M_hi", "2147483648"}};
  std::vector<std::string> lines = {header()};
  for (const auto& [column, value] : cases) {
    std::map<std::string, std::string> change = {{column, value}};
    if (column == "M_hi") change["M_lo"] = "1";
    lines.push_back(row_line(change));
  }
  lines.push_back(row_line({{"M", "2147483647"}, {"N", "2147483647"}, {"K", "2147483647"}}));
  ParsedTable t = parse(joined(lines), "d.csv");
  ASSERT_EQ(t.rows.size(), 1u) << all_warnings(t);
  EXPECT_EQ(t.rows[0].m, 2147483647);
  ASSERT_EQ(t.warnings.size(), cases.size()) << all_warnings(t);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(t.warnings[i], "d.csv:" + std::to_string(i + 2) + ": " + cases[i].first + " must be <= 2147483647, got " +
                                 cases[i].second + ", row skipped");
  }
  // Beyond int64: not a number at all.
  ParsedTable big = parse(joined({header(), row_line({{"M", "99999999999999999999"}})}), "b.csv");
  ASSERT_EQ(big.warnings.size(), 2u) << all_warnings(big);
  EXPECT_EQ(big.warnings[0], "b.csv:2: bad M '99999999999999999999', row skipped");
}

TEST(HostileTable, AByteOrderMarkBeforeTheHeaderIsAccepted) {
  ParsedTable t = parse("\xEF\xBB\xBF" + joined({header(), row_line()}), "bom.csv");
  EXPECT_TRUE(t.warnings.empty()) << all_warnings(t);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].key.arch, "sm_90a");
  EXPECT_EQ(t.rows[0].line, 2);
  // Before a comment line too.
  ParsedTable c = parse("\xEF\xBB\xBF# tuned\n" + joined({header(), row_line()}), "bom.csv");
  EXPECT_TRUE(c.warnings.empty()) << all_warnings(c);
  EXPECT_EQ(c.rows.size(), 1u);
}

TEST(HostileTable, AFileThatGivesNoRowSaysSoOnce) {
  ParsedTable head_only = parse(header() + "\n", "h.csv");
  EXPECT_TRUE(head_only.rows.empty());
  EXPECT_EQ(head_only.warnings, std::vector<std::string>{"h.csv: a header and no rows, no rows loaded from it"});
  ParsedTable all_bad = parse(joined({header(), row_line({{"M", "x"}}), "# note", row_line({{"us", "-1"}})}), "b.csv");
  EXPECT_TRUE(all_bad.rows.empty());
  ASSERT_EQ(all_bad.warnings.size(), 3u) << all_warnings(all_bad);
  EXPECT_EQ(all_bad.warnings[2], "b.csv: none of its 2 data lines is a usable row, no rows loaded from it");
  // One good row: no summary.
  ParsedTable one = parse(joined({header(), row_line({{"M", "x"}}), row_line()}), "o.csv");
  EXPECT_EQ(one.rows.size(), 1u);
  EXPECT_EQ(one.warnings.size(), 1u) << all_warnings(one);
}

TEST(HostileTable, AnOverlongLineStopsReadingTheFileWithOneWarning) {
  const std::string long_line = row_line({{"kernelName", "fake:" + std::string(70 << 10, 'x')}});
  ParsedTable t = parse(joined({header(), row_line(), long_line, row_line({{"M", "32"}})}), "l.csv");
  ASSERT_EQ(t.rows.size(), 1u) << all_warnings(t);  // the row before it is kept
  EXPECT_EQ(t.rows[0].m, 16);
  EXPECT_EQ(t.warnings,
            std::vector<std::string>{"l.csv: line 3 is longer than 65536 bytes, the rest of the file is not read"});
  // A line of exactly the limit is read.
  std::string at_limit = row_line({{"kernelName", "fake:"}});
  at_limit.insert(at_limit.find("fake:") + 5, std::string((64 << 10) - at_limit.size(), 'y'));
  ASSERT_EQ(at_limit.size(), std::size_t{64} << 10);
  ParsedTable a = parse(joined({header(), at_limit}), "a.csv");
  EXPECT_TRUE(a.warnings.empty()) << all_warnings(a);
  ASSERT_EQ(a.rows.size(), 1u);
  EXPECT_EQ(a.rows[0].kernel_name.rfind("fake:yyy", 0), 0u);
}

TEST(HostileTable, DevZeroIsOneWarningAndNoRows) {
  // No newline ever: without a bound on the line this reads until memory runs out.
  Table table;
  std::vector<std::string> warnings;
  table.load_file("/dev/zero", warnings);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(warnings, std::vector<std::string>{"/dev/zero: line 1 is longer than 65536 bytes, the rest of the file is "
                                               "not read"});
}

// An endless input of short lines, made on demand: a file that never ends without one on disk.
class EndlessLines : public std::streambuf {
 public:
  explicit EndlessLines(const std::string& line) {
    while (block_.size() < 4096) block_ += line;
  }

 protected:
  int_type underflow() override {
    setg(block_.data(), block_.data(), block_.data() + block_.size());
    return traits_type::to_int_type(block_[0]);
  }

 private:
  std::string block_;
};

TEST(HostileTable, AnInputOverSixtyFourMebibytesStopsWithOneWarning) {
  EndlessLines endless("# a comment line that never ends\n");
  std::istream in(&endless);
  ParsedTable t = parse_tuned_table(in, "endless.csv");
  EXPECT_TRUE(t.rows.empty());
  ASSERT_EQ(t.warnings.size(), 1u) << all_warnings(t);
  EXPECT_EQ(t.warnings[0].rfind("endless.csv: the input is larger than 67108864 bytes (at line ", 0), 0u)
      << t.warnings[0];
  EXPECT_TRUE(contains(t.warnings[0], "the rest of the file is not read")) << t.warnings[0];
}

TEST(HostileTable, RowsBeforeTheInputLimitAreKept) {
  const std::string text = joined({header(), row_line({{"M", "1"}}), row_line({{"M", "2"}}), row_line({{"M", "3"}})});
  const std::size_t two_rows = text.size() - row_line({{"M", "3"}}).size() - 1;
  std::istringstream in(text);
  ParsedTable t = parse_tuned_table(in, "s.csv", csv::ReadLimits{1 << 10, two_rows});
  ASSERT_EQ(t.rows.size(), 2u) << all_warnings(t);
  EXPECT_EQ(t.rows[1].m, 2);
  EXPECT_EQ(t.warnings, std::vector<std::string>{"s.csv: the input is larger than " + std::to_string(two_rows) +
                                                 " bytes (at line 4), the rest of the file is not read"});
}

TEST(HostileTable, ADirectoryIsAWarningNamingIt) {
  test::TempDir dir;
  Table table;
  std::vector<std::string> warnings;
  table.load_file(dir.path(), warnings);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(warnings,
            std::vector<std::string>{dir.path() + ": is a directory, not a table file; no rows loaded from it"});
}

TEST(ProblemOfKey, InvertsTableKeyWithContiguousOperands) {
  TableKey key = bf16_key(1000, 520);
  key.bias = true;
  key.dtype = DType::kFloat16;
  key.out_dtype = DType::kFloat32;
  key.epilogue = {Activation::kGeluTanh, true, true};
  const GemmProblem p = problem_of_key(key, 37, 1);
  EXPECT_EQ(p.m, 37);
  EXPECT_EQ(p.device, 1);
  EXPECT_TRUE(p.has_bias());
  EXPECT_EQ(p.bias_type, DType::kFloat16);
  EXPECT_EQ(p.lda, 520);
  EXPECT_EQ(p.ldb, 520);
  EXPECT_EQ(p.ldo, 1000);
  EXPECT_EQ(p.ldc, 1000);
  EXPECT_TRUE(table_key(p, key.arch, key.sm_count) == key);
  // The plain key gives the plain problem.
  const GemmProblem q = problem_of_key(bf16_key(), 1, 0);
  EXPECT_TRUE(q.plain_epilogue());
  EXPECT_FALSE(q.has_bias());
  EXPECT_TRUE(table_key(q, "sm_90a", 132) == bf16_key());
}

}  // namespace
}  // namespace tgemm
