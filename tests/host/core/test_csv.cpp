#include <gtest/gtest.h>

#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/csv.h"

namespace tgemm::csv {
namespace {

using Fields = std::vector<std::string>;

Fields split_ok(std::string_view line) {
  auto f = split_line(line);
  EXPECT_TRUE(f.has_value()) << "split_line failed on: " << line;
  return f.value_or(Fields{});
}

TEST(CsvSplit, PlainFields) {
  EXPECT_EQ(split_ok("a,b,c"), (Fields{"a", "b", "c"}));
  EXPECT_EQ(split_ok("sm_90a,132,16"), (Fields{"sm_90a", "132", "16"}));
}

TEST(CsvSplit, EmptyFieldsAreKept) {
  EXPECT_EQ(split_ok(""), (Fields{""}));
  EXPECT_EQ(split_ok("a,,b"), (Fields{"a", "", "b"}));
  EXPECT_EQ(split_ok("a,"), (Fields{"a", ""}));
  EXPECT_EQ(split_ok(",a"), (Fields{"", "a"}));
  EXPECT_EQ(split_ok(",,"), (Fields{"", "", ""}));
}

TEST(CsvSplit, UnquotedFieldsAreTrimmed) {
  EXPECT_EQ(split_ok("  a , b\t,c\r"), (Fields{"a", "b", "c"}));
}

TEST(CsvSplit, QuotedFieldsKeepCommasSpacesAndDoubledQuotes) {
  EXPECT_EQ(split_ok(R"("a,b",c)"), (Fields{"a,b", "c"}));
  EXPECT_EQ(split_ok(R"(x," padded ",y)"), (Fields{"x", " padded ", "y"}));
  EXPECT_EQ(split_ok(R"("he said ""hi""",2)"), (Fields{R"(he said "hi")", "2"}));
  EXPECT_EQ(split_ok(R"("")"), (Fields{""}));
  EXPECT_EQ(split_ok(R"(a,"")"), (Fields{"a", ""}));
  // Whitespace before the opening quote is not part of the field.
  EXPECT_EQ(split_ok(R"(a,  "b,c")"), (Fields{"a", "b,c"}));
}

TEST(CsvSplit, UnterminatedQuoteIsAnError) {
  EXPECT_FALSE(split_line(R"("abc)").has_value());
  EXPECT_FALSE(split_line(R"(a,"b)").has_value());
  EXPECT_FALSE(split_line(R"(a,"b"",c)").has_value());  // "" is an escaped quote, still open
  EXPECT_FALSE(split_line(R"(")").has_value());
}

TEST(CsvQuote, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(quote("cublaslt:algo66_tile20"), "cublaslt:algo66_tile20");
  EXPECT_EQ(quote(""), "");
  EXPECT_EQ(quote("a,b"), R"("a,b")");
  EXPECT_EQ(quote(R"(say "x")"), R"("say ""x""")");
  EXPECT_EQ(quote("two\nlines"), "\"two\nlines\"");
}

TEST(CsvJoin, JoinsWithCommasAndQuotes) {
  EXPECT_EQ(join({"a", "b,c", "", R"(q")"}), R"(a,"b,c",,"q""")");
  EXPECT_EQ(join({}), "");
}

TEST(CsvRoundTrip, JoinThenSplitGivesTheFields) {
  const std::vector<Fields> cases = {
      {"a"},
      {"a", "b", "c"},
      {"", "", ""},
      {"a,b", "c"},
      {R"(x"y)", R"("quoted")", R"("")"},
      {"cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "1.5"},
      {"sm_90a", "132", "torch.bfloat16", "True"},
      {",", ",,", "\""},
  };
  for (const Fields& fields : cases) {
    std::string line = join(fields);
    auto back = split_line(line);
    ASSERT_TRUE(back.has_value()) << line;
    EXPECT_EQ(*back, fields) << "line: " << line;
  }
}

// Unquoted fields are trimmed on reading, so quote() must quote fields that start or end with
// whitespace for join/split to round-trip them.
TEST(CsvRoundTrip, SurroundingWhitespaceSurvives) {
  const Fields fields = {" lead", "trail ", "\ttab", "mid dle"};
  std::string line = join(fields);
  auto back = split_line(line);
  ASSERT_TRUE(back.has_value()) << line;
  EXPECT_EQ(*back, fields) << "line: " << line;
}

TEST(CsvParseInt, Integers) {
  EXPECT_EQ(parse_int("0"), 0);
  EXPECT_EQ(parse_int("16"), 16);
  EXPECT_EQ(parse_int("-3"), -3);
  EXPECT_EQ(parse_int(" 7 "), 7);
  EXPECT_EQ(parse_int("9223372036854775807"), std::numeric_limits<long long>::max());
}

TEST(CsvParseInt, AcceptsIntegralFloatsAsPandasWritesThem) {
  EXPECT_EQ(parse_int("16.0"), 16);
  EXPECT_EQ(parse_int("4096.0"), 4096);
  EXPECT_EQ(parse_int("-2.0"), -2);
}

TEST(CsvParseInt, RejectsNonIntegers) {
  EXPECT_EQ(parse_int(""), std::nullopt);
  EXPECT_EQ(parse_int("   "), std::nullopt);
  EXPECT_EQ(parse_int("abc"), std::nullopt);
  EXPECT_EQ(parse_int("12abc"), std::nullopt);
  EXPECT_EQ(parse_int("16.5"), std::nullopt);
  EXPECT_EQ(parse_int("1 2"), std::nullopt);
  EXPECT_EQ(parse_int("99999999999999999999"), std::nullopt);  // overflows long long
  EXPECT_EQ(parse_int("9223372036854775808"), std::nullopt);   // 2^63
  EXPECT_EQ(parse_int("1e30"), std::nullopt);
}

TEST(CsvParseDouble, Numbers) {
  EXPECT_EQ(parse_double("1.5"), 1.5);
  EXPECT_EQ(parse_double("-2e-3"), -2e-3);
  EXPECT_EQ(parse_double(" 3 "), 3.0);
  EXPECT_EQ(parse_double("16"), 16.0);
  EXPECT_EQ(parse_double(""), std::nullopt);
  EXPECT_EQ(parse_double("x"), std::nullopt);
  EXPECT_EQ(parse_double("1.5us"), std::nullopt);
}

TEST(CsvParseBool, PythonAndNumericSpellings) {
  for (const char* t : {"True", "true", "TRUE", "1", " True "}) EXPECT_EQ(parse_bool(t), true) << t;
  for (const char* f : {"False", "false", "FALSE", "0", " 0"}) EXPECT_EQ(parse_bool(f), false) << f;
  for (const char* bad : {"", "yes", "no", "2", "Truee", "T"}) {
    EXPECT_EQ(parse_bool(bad), std::nullopt) << "'" << bad << "'";
  }
}

// Every line `reader` gives, then how it stopped.
std::pair<Fields, LineReader::Stop> read_all(const std::string& text, ReadLimits limits = {}) {
  std::istringstream in(text);
  LineReader reader(in, limits);
  Fields lines;
  std::string line;
  while (reader.next(&line)) lines.push_back(line);
  EXPECT_FALSE(reader.next(&line)) << "a stopped reader gave another line";
  EXPECT_TRUE(line.empty());
  return {lines, reader.stop()};
}

TEST(CsvLineReader, LinesWithoutTheirEndingsAndALastLineWithoutNewline) {
  EXPECT_EQ(read_all("a,b\nc\r\n\nlast"), std::make_pair(Fields{"a,b", "c", "", "last"}, LineReader::Stop::kEnd));
  EXPECT_EQ(read_all("one\n"), std::make_pair(Fields{"one"}, LineReader::Stop::kEnd));
  EXPECT_EQ(read_all(""), std::make_pair(Fields{}, LineReader::Stop::kEnd));
  // Only one '\r' before the '\n' is a line ending; others are data (split_line trims them).
  EXPECT_EQ(read_all("x\r\r\n").first, Fields{"x\r"});
}

TEST(CsvLineReader, ByteOrderMarkDroppedAtTheStartOfTheInputOnly) {
  const std::string bom = "\xEF\xBB\xBF";
  EXPECT_EQ(read_all(bom + "M,N\n1,2\n").first, (Fields{"M,N", "1,2"}));
  EXPECT_EQ(read_all(bom).first, Fields{""});
  EXPECT_EQ(read_all("M,N\n" + bom + "1,2\n").first, (Fields{"M,N", bom + "1,2"}));
  EXPECT_EQ(read_all("\xEF\xBB"
                     "M\n")
                .first,
            Fields{"\xEF\xBB"
                   "M"});  // not a whole mark
}

TEST(CsvLineReader, ALineOverTheLimitStopsReadingAndSaysWhere) {
  const ReadLimits limits{8, 1000};
  std::istringstream in("12345678\n123456789\nafter\n");
  LineReader reader(in, limits);
  std::string line;
  ASSERT_TRUE(reader.next(&line));
  EXPECT_EQ(line, "12345678");  // exactly the limit: a line
  EXPECT_FALSE(reader.next(&line));
  EXPECT_EQ(reader.stop(), LineReader::Stop::kLineTooLong);
  EXPECT_EQ(reader.line_no(), 1);
  EXPECT_EQ(reader.stop_reason(), "line 2 is longer than 8 bytes");
  EXPECT_FALSE(reader.next(&line));  // the line after it is not read either
  EXPECT_TRUE(line.empty());
}

TEST(CsvLineReader, AnInputOverTheLimitStopsReadingAndSaysWhere) {
  const ReadLimits limits{100, 10};
  auto [lines, stop] = read_all("abcd\nefgh\nijkl\n", limits);
  EXPECT_EQ(lines, (Fields{"abcd", "efgh"}));  // 10 bytes with their newlines
  EXPECT_EQ(stop, LineReader::Stop::kInputTooLarge);
  std::istringstream in("abcd\nefgh\nijkl\n");
  LineReader reader(in, limits);
  std::string line;
  while (reader.next(&line)) {
  }
  EXPECT_EQ(reader.stop_reason(), "the input is larger than 10 bytes (at line 3)");
  // Exactly the limit is not over it.
  EXPECT_EQ(read_all("abcd\nefgh\n", limits).second, LineReader::Stop::kEnd);
}

TEST(CsvLineReader, NoReasonWhenTheInputEnded) {
  std::istringstream in("a\n");
  LineReader reader(in);
  std::string line;
  while (reader.next(&line)) {
  }
  EXPECT_EQ(reader.stop(), LineReader::Stop::kEnd);
  EXPECT_EQ(reader.stop_reason(), "");
  EXPECT_EQ(reader.line_no(), 1);
}

}  // namespace
}  // namespace tgemm::csv
