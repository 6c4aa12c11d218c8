#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cublaslt/cublaslt_config.h"

namespace tgemm {
namespace {

LtConfig config(int algo, int tile, int stages, int split_k, int red, int swz, int opt, int inner,
                int cluster, std::size_t version) {
  LtConfig c;
  c.algo = algo;
  c.tile = tile;
  c.stages = stages;
  c.split_k = split_k;
  c.reduction = red;
  c.swizzle = swz;
  c.custom = opt;
  c.inner_shape = inner;
  c.cluster_shape = cluster;
  c.version = version;
  return c;
}

constexpr const char* kName =
    "cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100";

TEST(LtName, FormatIsTheDocumentedName) {
  EXPECT_EQ(format_lt_name(config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100)), kName);
  EXPECT_EQ(format_lt_name(config(1, 2, 3, 4, 5, 6, 7, 8, 9, 120804)),
            "cublaslt:algo1_tile2_stages3_splitk4_red5_swz6_opt7_inner8_cluster9_v120804");
}

TEST(LtName, ParseOfFormatGivesTheConfig) {
  const std::vector<LtConfig> configs = {
      config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100), config(1, 2, 3, 4, 5, 6, 7, 8, 9, 120804),
      config(0, 0, 0, 1, 0, 0, 0, 0, 0, 0), config(71, 511, 40, 16, 2, 1, 3, 12, 25, 130001),
      config(2147483647, 1, 1, 1, 1, 1, 1, 1, 1, 99999999)};
  for (const LtConfig& c : configs) {
    std::string name = format_lt_name(c);
    std::string why;
    auto back = parse_lt_name(name, why);
    ASSERT_TRUE(back.has_value()) << name << ": " << why;
    EXPECT_TRUE(*back == c) << name << " parsed to " << format_lt_name(*back);
  }
}

TEST(LtName, ParsesEveryField) {
  std::string why;
  auto c = parse_lt_name(
      "cublaslt:algo1_tile2_stages3_splitk4_red5_swz6_opt7_inner8_cluster9_v120804", why);
  ASSERT_TRUE(c.has_value()) << why;
  EXPECT_EQ(c->algo, 1);
  EXPECT_EQ(c->tile, 2);
  EXPECT_EQ(c->stages, 3);
  EXPECT_EQ(c->split_k, 4);
  EXPECT_EQ(c->reduction, 5);
  EXPECT_EQ(c->swizzle, 6);
  EXPECT_EQ(c->custom, 7);
  EXPECT_EQ(c->inner_shape, 8);
  EXPECT_EQ(c->cluster_shape, 9);
  EXPECT_EQ(c->version, 120804u);
}

TEST(LtConfigEquality, EveryFieldCounts) {
  const LtConfig base = config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100);
  EXPECT_TRUE(base == base);
  const std::vector<LtConfig> different = {
      config(67, 20, 8, 1, 0, 0, 0, 0, 0, 130100), config(66, 21, 8, 1, 0, 0, 0, 0, 0, 130100),
      config(66, 20, 9, 1, 0, 0, 0, 0, 0, 130100), config(66, 20, 8, 2, 0, 0, 0, 0, 0, 130100),
      config(66, 20, 8, 1, 1, 0, 0, 0, 0, 130100), config(66, 20, 8, 1, 0, 1, 0, 0, 0, 130100),
      config(66, 20, 8, 1, 0, 0, 1, 0, 0, 130100), config(66, 20, 8, 1, 0, 0, 0, 1, 0, 130100),
      config(66, 20, 8, 1, 0, 0, 0, 0, 1, 130100), config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130101)};
  for (const LtConfig& d : different) EXPECT_FALSE(base == d) << format_lt_name(d);
}

struct BadName {
  const char* name;
  const char* reason_part;  // must appear in `why`
};

TEST(LtName, MalformedNamesAreRejectedWithAReason) {
  const std::vector<BadName> cases = {
      // wrong prefix
      {"cutlass:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "cublaslt:"},
      {"algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "cublaslt:"},
      {"", "cublaslt:"},
      {"cuBLASLt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100",
       "cublaslt:"},
      // the heuristic name is not a configuration
      {"cublaslt:heuristic", "algo"},
      // missing fields
      {"cublaslt:algo66_tile20_stages8_splitk1_swz0_opt0_inner0_cluster0_v130100", "red"},
      {"cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0",
       "not a cuBLASLt configuration"},
      {"cublaslt:algo66", "not a cuBLASLt configuration"},
      {"cublaslt:", "algo"},
      // fields out of order
      {"cublaslt:tile20_algo66_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "algo"},
      // not numbers
      {"cublaslt:algoX_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "'X'"},
      {"cublaslt:algo_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100",
       "algo value ''"},
      {"cublaslt:algo66_tile2x_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "'2x'"},
      {"cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v13.1", "'13.1'"},
      {"cublaslt:algo-1_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "'-1'"},
      // split-K of 0 slices
      {"cublaslt:algo66_tile20_stages8_splitk0_red0_swz0_opt0_inner0_cluster0_v130100", "splitk 0"},
      // trailing junk
      {"cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100_x",
       "cuBLASLt"},
      {"cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100x",
       "'130100x'"},
      {"cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100 ", "v value"},
  };
  for (const BadName& c : cases) {
    std::string why;
    auto parsed = parse_lt_name(c.name, why);
    EXPECT_FALSE(parsed.has_value()) << "accepted: '" << c.name << "'";
    EXPECT_NE(why.find(c.reason_part), std::string::npos)
        << "'" << c.name << "': why = '" << why << "' lacks '" << c.reason_part << "'";
    if (c.name[0] != '\0') {
      EXPECT_NE(why.find(c.name), std::string::npos) << "why does not quote the name: " << why;
    }
  }
}

// Fields are ints: a value that does not fit must be rejected, not wrapped into another valid
// configuration (4294967362 = 2^32 + 66 would otherwise read as algo 66).
TEST(LtName, ValuesThatDoNotFitAnIntAreRejected) {
  for (const char* name :
       {"cublaslt:algo4294967362_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100",
        "cublaslt:algo66_tile20_stages8_splitk4294967297_red0_swz0_opt0_inner0_cluster0_v130100",
        "cublaslt:algo2147483648_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100"}) {
    std::string why;
    auto parsed = parse_lt_name(name, why);
    EXPECT_FALSE(parsed.has_value())
        << "accepted '" << name << "' as " << (parsed ? format_lt_name(*parsed) : std::string());
  }
}

TEST(LtVersion, Format) {
  EXPECT_EQ(format_lt_version(130100), "13.1.0");
  EXPECT_EQ(format_lt_version(120804), "12.8.4");
  EXPECT_EQ(format_lt_version(110203), "11.2.3");
}

// Backend::refine's bases: screen order kept, each configuration reduced to its base, the
// heuristic and malformed names skipped, duplicates of a base dropped, at most max_bases.
TEST(LtRefineBases, FastestDistinctBasesInScreenOrder) {
  const std::vector<std::string> screened = {
      "cublaslt:heuristic",
      "cublaslt:algo66_tile393_stages35_splitk8_red2_swz1_opt5_inner0_cluster4_v130100",
      "cublaslt:algo66_tile10_stages35_splitk1_red0_swz0_opt0_inner0_cluster3_v130100",
      "not a name",
      "cublaslt:algo66_tile393_stages35_splitk1_red0_swz0_opt1_inner0_cluster4_v130100",  // same base as #2
      "cublaslt:algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100",
  };
  const std::vector<LtConfig> all = lt_refine_bases(screened, 24);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0], config(66, 393, 35, 1, 0, 0, 0, 0, 4, 130100));
  EXPECT_EQ(all[1], config(66, 10, 35, 1, 0, 0, 0, 0, 3, 130100));
  EXPECT_EQ(all[2], config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100));
  const std::vector<LtConfig> two = lt_refine_bases(screened, 2);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1], all[1]);
  EXPECT_TRUE(lt_refine_bases(screened, 0).empty());
  EXPECT_TRUE(lt_refine_bases({}, 24).empty());
}

TEST(LtA8W8Name, FormatIsTheDocumentedName) {
  const LtConfig c = config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100);
  EXPECT_EQ(format_lt_a8w8_name(LtA8W8Form::kFused, c),
            "cublaslt:fused_algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100");
  EXPECT_EQ(format_lt_a8w8_name(LtA8W8Form::kStaged, c),
            "cublaslt:staged_algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100");
}

TEST(LtA8W8Name, ParseOfFormatGivesTheFormAndConfig) {
  const std::vector<LtConfig> configs = {config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100),
                                         config(1, 2, 3, 4, 5, 6, 7, 8, 9, 120804),
                                         config(71, 511, 40, 16, 2, 1, 3, 12, 25, 130001)};
  for (LtA8W8Form form : {LtA8W8Form::kFused, LtA8W8Form::kStaged}) {
    for (const LtConfig& c : configs) {
      const std::string name = format_lt_a8w8_name(form, c);
      std::string why;
      auto back = parse_lt_a8w8_name(name, why);
      ASSERT_TRUE(back.has_value()) << name << ": " << why;
      EXPECT_EQ(back->form, form) << name;
      EXPECT_TRUE(back->config == c) << name << " parsed to " << format_lt_name(back->config);
      EXPECT_EQ(lt_a8w8_base_name(name), format_lt_name(c));
    }
  }
}

TEST(LtA8W8Name, OtherNamesAreNotA8W8Configurations) {
  for (const char* name : {"cublaslt:heuristic", "cublaslt:heuristic_staged", kName, "cublaslt:fused_heuristic",
                           "cublaslt:staged_algo66", "cublaslt:scaled_algo66_tile20",
                           "skinny:fused_algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", "",
                           "cublaslt:fused_algo66_tile20_stages8_splitk0_red0_swz0_opt0_inner0_cluster0_v130100"}) {
    std::string why;
    EXPECT_FALSE(parse_lt_a8w8_name(name, why).has_value()) << name;
    EXPECT_FALSE(why.empty()) << name;
  }
  // The a16w16 parser refuses the a8w8 forms: a bf16 row cannot name an a8w8 configuration.
  std::string why;
  EXPECT_FALSE(
      parse_lt_name("cublaslt:staged_algo66_tile20_stages8_splitk1_red0_swz0_opt0_inner0_cluster0_v130100", why));
  EXPECT_EQ(lt_a8w8_base_name(kName), kName);
  EXPECT_EQ(lt_a8w8_base_name("cublaslt:heuristic"), "cublaslt:heuristic");
}

TEST(LtA8W8Name, RefineBasesOfA8W8NamesThroughTheirBaseNames) {
  // CublasLtBackend::refine maps screened a8w8 names to their a16w16 form before lt_refine_bases.
  const std::vector<std::string> screened = {
      lt_a8w8_base_name(format_lt_a8w8_name(LtA8W8Form::kStaged, config(66, 20, 8, 4, 2, 0, 1, 0, 0, 130100))),
      lt_a8w8_base_name(format_lt_a8w8_name(LtA8W8Form::kStaged, config(66, 20, 8, 1, 0, 1, 0, 0, 0, 130100))),
      lt_a8w8_base_name(format_lt_a8w8_name(LtA8W8Form::kStaged, config(67, 21, 8, 1, 0, 0, 0, 0, 2, 130100)))};
  const std::vector<LtConfig> bases = lt_refine_bases(screened, 8);
  ASSERT_EQ(bases.size(), 2u);
  EXPECT_TRUE(bases[0] == config(66, 20, 8, 1, 0, 0, 0, 0, 0, 130100)) << format_lt_name(bases[0]);
  EXPECT_TRUE(bases[1] == config(67, 21, 8, 1, 0, 0, 0, 0, 2, 130100)) << format_lt_name(bases[1]);
}

}  // namespace
}  // namespace tgemm
