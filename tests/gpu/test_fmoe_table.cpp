// fused_moe's tuned table on the GPU: a row for a small key naming a path other than the default
// rule's (src/moe/fmoe_dispatch.h) is followed (describe_fused_moe's level, solution, file and
// line) with a correct output; a row serves its token bucket only; TGEMM_GROUPED_BACKEND overrides
// the table; a row naming an instance this build cannot run is one warning and the default
// serves; under TGEMM_TUNE_GEMM a call no row serves records its key once, at its bucket's top;
// `tgemm tune-fmoe`'s race (tuner/fmoe_race.h) tunes a tiny key whose row fused_moe then follows,
// and its fp32 reference passes fused_moe's output and fails a wrong one.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/log.h"
#include "core/validate_moe.h"
#include "cuda/device.h"
#include "grouped/gmm_cutlass.h"
#include "moe/fmoe_dispatch.h"
#include "moe/fmoe_table.h"
#include "tests/common/gpu_test_util.h"
#include "tests/gpu/grouped_checks.h"
#include "tests/gpu/moe_checks.h"
#include "tgemm/config.h"
#include "tgemm/moe.h"
#include "tuner/fmoe_race.h"

namespace tgemm {
namespace {

// Points TGEMM_CONFIG_FMOE at a file holding `rows` for its lifetime (then restores the variable
// and the configuration).
class FmoeTableFile {
 public:
  explicit FmoeTableFile(const std::vector<FmoeRow>& rows) {
    char dir[] = "/tmp/tgemm_fmoe_table_XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    path_ = dir_ + "/tuned_fmoe.csv";
    std::ofstream out(path_);
    out << csv::join(fmoe_tuned_columns()) << "\n";
    for (const FmoeRow& r : rows) out << format_fmoe_row(r) << "\n";
    out.close();
    env_ = std::make_unique<test::EnvScope>("TGEMM_CONFIG_FMOE", path_.c_str());
  }
  ~FmoeTableFile() {
    env_.reset();
    std::remove(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  std::unique_ptr<test::EnvScope> env_;
};

// T = 48 tokens (bucket 64), k = 2 of E = 8 experts, H = 128, I = 96: H and I multiples of 8, so
// every CUTLASS grouped instance of bf16 can take both GEMMs.
test::MoeCase small_case(std::int64_t t = 48) {
  test::MoeCase c;
  c.t = t;
  c.k = 2;
  c.e = 8;
  c.h = 128;
  c.inter = 96;
  c.ids = test::routing_ids(test::Routing::kSkewed, c.t, c.k, c.e, 3);
  return c;
}

MoeCall call_of(const test::MoeData& d) {
  return validate_fused_moe(d.hv, d.w1v, d.w2v, d.tv, d.iv, d.ov, d.c.act, nullptr, "test_fmoe_table");
}

DispatchInfo describe(const test::MoeData& d) {
  return describe_fused_moe(d.hv, d.w1v, d.w2v, d.tv, d.iv, d.ov, d.c.act, nullptr);
}

std::string plan_name(const MoeCutlassPlan& plan) {
  if (plan.up == nullptr) return "tile";
  return std::string("cutlass up ") + plan.up->generated_name + " down " + plan.down->generated_name;
}

TEST(FmoeTable, ARowOfTheKeyIsFollowedInItsBucketOnly) {
  TGEMM_REQUIRE_GPU();
  test::EnvScope backend("TGEMM_GROUPED_BACKEND", nullptr);
  const test::MoeCase c = small_case();
  test::MoeData d = test::make_moe(c, 11);
  const int device = cuda_current_device();
  const MoeCall call = call_of(d);
  const MoeCutlassPlan dflt = fused_moe_default_plan(call, device);
  const std::vector<MoeCutlassPlan> candidates = fused_moe_candidates(call, device);
  ASSERT_FALSE(candidates.empty());
  EXPECT_EQ(candidates[0].up, nullptr);  // the tile path first
  // A candidate other than the default's (the last: a CUTLASS pair where this build has one).
  MoeCutlassPlan chosen = candidates.back();
  if (chosen.up == dflt.up && chosen.down == dflt.down) chosen = candidates.front();
  const DeviceInfo& dev = cuda_device_info(device);
  FmoeRow row;
  row.key = fused_moe_key(call.problem, dev.arch, dev.sm_count);
  row.t = c.t;
  row.solution = fmoe_solution_name(chosen);
  if (chosen.up != nullptr) {
    row.up = chosen.up->generated_name;
    row.down = chosen.down->generated_name;
  }
  row.default_solution = fmoe_solution_name(dflt);
  EXPECT_EQ(row.key.tokens, 64);
  {
    FmoeTableFile file({row});
    const DispatchInfo info = describe(d);
    EXPECT_EQ(info.level, "table");
    EXPECT_EQ(info.kernel_name, plan_name(chosen));
    EXPECT_EQ(info.file, file.path());
    EXPECT_EQ(info.line, 2);
    EXPECT_EQ(info.matched_m, c.t);
    test::run_moe(d, nullptr);
    device_synchronize();
    test::expect_moe_matches(d, c.ids, d.topk_weights.host());

    // T = 32: bucket 32, which no row serves.
    test::MoeData other = test::make_moe(small_case(32), 12);
    EXPECT_EQ(describe(other).level, "default");
    // T = 33: bucket 64 again.
    test::MoeData same = test::make_moe(small_case(33), 13);
    EXPECT_EQ(describe(same).level, "table");

    // TGEMM_GROUPED_BACKEND overrides the row.
    test::GroupedBackendScope forced("tile");
    const DispatchInfo f = describe(d);
    EXPECT_EQ(f.level, "forced");
    EXPECT_EQ(f.kernel_name, "tile");
  }
}

TEST(FmoeTable, ARowThisBuildCannotRunIsOneWarningAndTheDefaultServes) {
  TGEMM_REQUIRE_GPU();
  test::EnvScope backend("TGEMM_GROUPED_BACKEND", nullptr);
  const test::MoeCase c = small_case();
  test::MoeData d = test::make_moe(c, 14);
  const DispatchInfo dflt = describe(d);
  ASSERT_EQ(dflt.level, "default");
  const DeviceInfo& dev = cuda_device_info(cuda_current_device());
  FmoeRow row;
  row.key = fused_moe_key(call_of(d).problem, dev.arch, dev.sm_count);
  row.solution = kFmoeCutlassSolution;
  row.up = "sm90_grouped_bf16_bk_999x128x64_coop";
  row.down = "sm90_grouped_bf16_bk_999x128x64_coop";
  std::vector<std::string> said;
  LogSink previous = set_log_sink([&](LogLevel level, const std::string& m) {
    if (level == LogLevel::kWarning) said.push_back(m);
  });
  {
    FmoeTableFile file({row});
    const DispatchInfo info = describe(d);
    EXPECT_EQ(info.level, "default");
    EXPECT_EQ(info.kernel_name, dflt.kernel_name);
    describe(d);
    ASSERT_EQ(said.size(), 1u);
    EXPECT_NE(said[0].find(file.path() + ":2: "), std::string::npos) << said[0];
    EXPECT_NE(said[0].find("sm90_grouped_bf16_bk_999x128x64_coop"), std::string::npos) << said[0];
    test::run_moe(d, nullptr);
    device_synchronize();
    test::expect_moe_matches(d, c.ids, d.topk_weights.host());
  }
  set_log_sink(previous);
}

// TGEMM_TUNE_GEMM=1: calls no row serves record their key once, at the bucket's top T (64 for 48
// and 40 tokens), which `tgemm tune-fmoe -i` would race.
TEST(FmoeTable, TheCaptureRecordsAKeyNoRowServesOnce) {
  TGEMM_REQUIRE_GPU();
  char dir[] = "/tmp/tgemm_fmoe_capture_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/untuned_fmoe.csv";
  {
    test::EnvScope tune("TGEMM_TUNE_GEMM", "1");
    test::EnvScope untuned("TGEMM_UNTUNED_FMOE", path.c_str());
    test::EnvScope tables("TGEMM_CONFIG_FMOE", "/nonexistent/tuned_fmoe.csv");
    test::EnvScope backend("TGEMM_GROUPED_BACKEND", nullptr);
    for (std::int64_t t : {48, 40}) {
      const test::MoeCase c = small_case(t);
      test::MoeData d = test::make_moe(c, 15);
      test::run_moe(d, nullptr);
      device_synchronize();
      test::expect_moe_matches(d, c.ids, d.topk_weights.host());
    }
  }
  reload_config();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "T,E,topk,H,I,dtype,quant,activation\n64,8,2,128,96,torch.bfloat16,none,silu\n");
  std::remove(path.c_str());
  std::remove((path + ".lock").c_str());
  ::rmdir(dir);
}

// small_case's key as a tune problem (T = 64, the bucket's top, as the capture writes it).
FmoeTuneProblem tiny_problem() {
  FmoeTuneProblem p;
  p.name = "tiny";
  p.tokens = 64;
  p.experts = 8;
  p.topk = 2;
  p.hidden = 128;
  p.inter = 96;
  return p;
}

TEST(FmoeTable, TunedKeyDispatchesToItsRow) {
  TGEMM_REQUIRE_GPU();
  test::EnvScope backend("TGEMM_GROUPED_BACKEND", nullptr);
  reload_config();
  const FmoeTuneProblem p = tiny_problem();
  FmoeRaceOptions o;
  o.rounds = 3;
  o.replays = 3;
  const FmoeRaceResult res = race_fmoe(p, o);
  ASSERT_GE(res.default_index, 0);
  ASSERT_FALSE(res.candidates.empty());
  EXPECT_EQ(res.candidates[0].solution, kFmoeTileSolution);
  for (const FmoeCandidateTiming& c : res.candidates) {
    EXPECT_TRUE(c.error.empty()) << c.solution << ": " << c.error;
    EXPECT_GT(c.us[0], 0) << c.solution;
    EXPECT_GT(c.us[1], 0) << c.solution;
  }
  EXPECT_EQ(res.key.tokens, 64);
  const int device = cuda_current_device();
  const test::MoeCase c = small_case();
  test::MoeData d = test::make_moe(c, 16);
  const std::vector<MoeCutlassPlan> plans = fused_moe_candidates(call_of(d), device);
  ASSERT_EQ(plans.size(), res.candidates.size());
  FmoeRow row;
  std::size_t chosen = 0;
  if (res.row) {
    // The rule: beyond the tie band on both routings.
    EXPECT_GT(res.row->speedup, 1 + o.tie_band);
    EXPECT_GT(res.row->speedup_skewed, 1 + o.tie_band);
    EXPECT_EQ(res.row->t, p.tokens);
    row = *res.row;
    chosen = static_cast<std::size_t>(res.winner);
  } else {
    // The default kept the key: a row naming another candidate (or tile where tile is all this
    // build runs) still shows that fused_moe follows what the tuner writes.
    chosen = plans.size() > 1 && res.default_index == 0 ? 1 : 0;
    row.key = res.key;
    row.t = p.tokens;
    row.solution = fmoe_solution_name(plans[chosen]);
    if (plans[chosen].up != nullptr) {
      row.up = plans[chosen].up->generated_name;
      row.down = plans[chosen].down->generated_name;
    }
  }
  EXPECT_EQ(res.candidates[chosen].solution, fmoe_plan_label(plans[chosen]));
  const std::string merged = merged_fmoe_table({}, {res.key}, {row});
  std::istringstream in(merged);
  const ParsedFmoeTable parsed = parse_fmoe_table(in, "merged");
  ASSERT_EQ(parsed.rows.size(), 1u);
  FmoeTableFile file(parsed.rows);
  const DispatchInfo info = describe(d);
  EXPECT_EQ(info.level, "table");
  EXPECT_EQ(info.kernel_name, plan_name(plans[chosen]));
  EXPECT_EQ(info.file, file.path());
  // The race's own check, now through the table row.
  FmoeRaceData data(p, 3);
  data.compute_reference(FmoeRaceData::kSkewed);
  EXPECT_EQ(data.check([&](Stream s) { data.run_dispatch(FmoeRaceData::kSkewed, 0, s); }), "");
  test::run_moe(d, nullptr);
  device_synchronize();
  test::expect_moe_matches(d, c.ids, d.topk_weights.host());
}

// The race's reference on a rank of expert parallelism (16 global experts, the first 8 here):
// fused_moe's output passes on both routings, tokens with no local slot included; an output
// perturbed in one element, or overwritten, fails.
TEST(FmoeTable, TheRaceCheckPassesFusedMoeAndFailsAWrongOutput) {
  TGEMM_REQUIRE_GPU();
  FmoeTuneProblem p = tiny_problem();
  p.tokens = 40;
  p.global_experts = 16;
  p.activation = MoeActivation::kGelu;
  FmoeRaceData data(p, 5);
  for (int r : {FmoeRaceData::kUniform, FmoeRaceData::kSkewed}) {
    data.compute_reference(r);
    EXPECT_EQ(data.check([&](Stream s) { data.run_dispatch(r, 0, s); }), "") << r;
  }
  const std::string garbage = data.check([&](Stream s) {
    data.run_dispatch(FmoeRaceData::kSkewed, 0, s);
    const MoeCall& call = data.call(FmoeRaceData::kSkewed, 0);
    fill_uniform(call.args.out, DType::kBFloat16, p.tokens * p.hidden, 99, -1.0f, 1.0f, s);
  });
  EXPECT_NE(garbage.find("elements outside tolerance"), std::string::npos) << garbage;
  // One element moved by 0.5: the outputs are of unit variance, the tolerance about a tenth.
  const std::string one = data.check([&](Stream s) {
    data.run_dispatch(FmoeRaceData::kSkewed, 0, s);
    device_synchronize();
    const MoeCall& call = data.call(FmoeRaceData::kSkewed, 0);
    std::uint16_t bits = 0;
    auto* at = static_cast<char*>(call.args.out) + 2 * (7 * p.hidden + 5);
    copy_to_host(&bits, at, 2);
    std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
    float v = 0;
    std::memcpy(&v, &wide, 4);
    v += 0.5f;
    std::memcpy(&wide, &v, 4);
    bits = static_cast<std::uint16_t>(wide >> 16);
    copy_to_device(at, &bits, 2);
  });
  EXPECT_NE(one.find("1 of " + std::to_string(p.tokens * p.hidden) + " elements outside tolerance (first at [7, 5]"),
            std::string::npos)
      << one;
}

}  // namespace
}  // namespace tgemm
