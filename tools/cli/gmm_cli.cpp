// `tgemm tune-gmm` and `tgemm bench --family gmm` (tools/cli/gmm_cli.h).
#include "tools/cli/gmm_cli.h"

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "grouped/gmm_cutlass.h"
#include "grouped/gmm_dispatch.h"
#include "runtime/runtime.h"
#include "tgemm/gmm.h"
#include "tools/cli/bench_family.h"
#include "tools/cli/common.h"
#include "tools/cli/race_cli.h"
#include "tuner/gmm_race.h"

namespace tgemm::cli {

std::vector<GmmTuneProblem> gmm_problems(const GmmSpec& spec, const std::string& op) {
  std::vector<GmmTuneProblem> all;
  if (!spec.input.empty()) {
    std::ifstream in(spec.input);
    TGEMM_CHECK(in.good(), op, "-i/--input '", spec.input, "' cannot be opened");
    all = parse_gmm_untuned(in, spec.input);
  } else {
    TGEMM_CHECK(spec.rhs == "gnk" || spec.rhs == "gkn", op, "--rhs must be gnk ([G, N, K]) or gkn ([G, K, N]), got '",
                spec.rhs, "'");
    const DType dtype = parse_dtype(spec.dtype, "--dtype");
    TGEMM_CHECK(dtype == DType::kBFloat16 || dtype == DType::kFloat16, op, "--dtype must be bf16 or fp16, got '",
                spec.dtype, "'");
    const DType out = spec.out_dtype.empty() ? dtype : parse_dtype(spec.out_dtype, "--out-dtype");
    TGEMM_CHECK(out == dtype || out == DType::kFloat32, op, "--out-dtype must be --dtype's or fp32, got '",
                spec.out_dtype, "'");
    std::ifstream in(spec.suite);
    TGEMM_CHECK(in.good(), op, "--suite '", spec.suite, "' cannot be opened");
    all = parse_moe_suite(in, spec.suite, spec.rhs == "gnk", dtype, out, spec.bias);
  }
  return selected_problems(all, spec.filter, spec.max_problems);
}

CLI::App* add_tune_gmm_command(CLI::App& app, TuneGmmOptions& o) {
  CLI::App* t = app.add_subcommand(
      "tune-gmm",
      "race gmm's solutions (the tile kernels, every CUTLASS grouped instance of this build) against its default "
      "rule on a uniform and a skewed routing of each key; write a row where one beats the default on both");
  CLI::Option* input = t->add_option("-i,--input", o.spec.input,
                                     "untuned gmm CSV (G,M,N,K,rhs,dtype[,outdtype][,bias]: TGEMM_TUNE_GEMM's "
                                     "untuned_gmm.csv) instead of --suite");
  t->add_option("--suite", o.spec.suite, "MoE shape suite (name,G,tokens_per_expert,N,K)")
      ->capture_default_str()
      ->excludes(input);
  t->add_option("--rhs", o.spec.rhs, "--suite: rhs layout gnk ([G, N, K]) or gkn ([G, K, N])")->capture_default_str();
  t->add_option("--dtype", o.spec.dtype, "--suite: bf16 or fp16")->capture_default_str();
  t->add_option("--out-dtype", o.spec.out_dtype, "--suite: output dtype (default: --dtype; or fp32)");
  t->add_flag("--bias", o.spec.bias, "--suite: with a bias [G, N]");
  add_problem_selection_options(*t, o.spec.filter, o.spec.max_problems);
  t->add_option("-o,--output", o.output,
                "the gmm table to write (its rows of other keys are kept; TGEMM_CONFIG_GMM reads it)")
      ->capture_default_str();
  add_routing_race_options(*t, o.race, o.dry_run, "the skewed routing's seed");
  return t;
}

namespace {

void print_race(const GmmTuneProblem& p, const GmmRaceResult& r) {
  print_routing_race(fmt::format("{} G={} M={} N={} K={} rhs={} (default {}):\n", p.name, p.groups, p.m, p.n, p.k,
                                 gmm_rhs_name(p.rhs_nk), r.default_solution),
                     42, r);
}

}  // namespace

int run_tune_gmm(const TuneGmmOptions& o) {
  constexpr const char* op = "tgemm tune-gmm";
  const std::vector<GmmTuneProblem> problems = gmm_problems(o.spec, op);
  TGEMM_CHECK(!problems.empty(), op, "no problem to tune (check -i/--suite and --filter)");
  const std::vector<GmmRow> existing =
      o.dry_run ? std::vector<GmmRow>{} : existing_table_rows<GmmTableTraits>(o.output);
  require_gpu("tune-gmm");
  std::vector<GmmKey> raced;
  std::vector<GmmRow> rows;
  for (const GmmTuneProblem& p : problems) {
    const GmmRaceResult r = race_gmm(p, o.race);
    print_race(p, r);
    raced.push_back(r.key);
    if (r.row) rows.push_back(*r.row);
  }
  const std::string text = merged_gmm_table(existing, raced, rows);
  if (o.dry_run) {
    fmt::print("{}", text);
    return 0;
  }
  write_text_file(o.output, text, op, "--output");
  fmt::print("raced {} keys, {} rows beat the default; wrote {}\n", raced.size(), rows.size(), o.output);
  return 0;
}

namespace {

using json = nlohmann::json;

json bench_one(const BenchOptions& o, GmmRaceData& data, int routing, int device, int* wrong) {
  const GmmTuneProblem& p = data.problem();
  const GmmCall& call = data.call(routing, 0);
  const auto* dflt = gmm_default_kernel(call, device);
  std::string check = "-";
  if (o.check) {
    data.compute_reference(routing);
    check = data.check([&](Stream s) { data.run_dispatch(routing, 0, s); });
    if (check.empty()) check = "ok";
  }
  *wrong += check == "ok" || check == "-" ? 0 : 1;
  const GmmRoute route = route_gmm(call, device);
  std::vector<TimingStats> both;
  const json reading = time_baseline_and_tgemm(
      o, data.est_us(), static_cast<std::size_t>(data.sets()),
      [&](int i, Stream s) { run_gmm_on(data.call(routing, i % data.sets()), dflt, device, s); },
      [&](int i, Stream s) { data.run_dispatch(routing, i % data.sets(), s); }, both);
  const double t_us = reading["tgemm_us"].get<double>();
  const auto& sizes = data.routing(routing);
  json row = {{"family", "gmm"},
              {"model", p.name},
              {"layer", routing == GmmRaceData::kUniform ? "uniform" : "skewed"},
              {"routing", routing == GmmRaceData::kUniform ? "uniform" : "skewed"},
              {"G", p.groups},
              {"M", p.m},
              {"N", p.n},
              {"K", p.k},
              {"rhs", gmm_rhs_name(p.rhs_nk)},
              {"max_group", *std::max_element(sizes.begin(), sizes.end())},
              {"baseline", "gmm_default_rule"},
              {"baseline_solution", gmm_solution_name(dflt)},
              {"solution", gmm_solution_name(route.kernel)},
              {"level", route.level},
              {"table_row", route.row ? route.row->file + ":" + std::to_string(route.row->line) : ""},
              {"check", check},
              {"tflops", 2.0 * static_cast<double>(p.m * p.n) * static_cast<double>(p.k) / (t_us * 1e-6) / 1e12}};
  row.update(reading);
  fmt::print("{:<30} {:<8} {:>6} {:>6} {:>6} | default {:>9.2f} gmm {:>9.2f} {:>6.3f}x | {} ({}) {}\n", p.name,
             row["routing"].get<std::string>(), p.m, p.n, p.k, both[0].median_us, t_us,
             reading["speedup"].get<double>(), row["solution"].get<std::string>(), route.level, check);
  std::fflush(stdout);
  return row;
}

}  // namespace

int run_bench_gmm(const BenchOptions& o, const GmmSpec& spec) {
  const std::vector<GmmTuneProblem> problems = gmm_problems(spec, "tgemm bench --family gmm");
  const FamilyBench fb = start_family_bench();
  fmt::print("device {} ({} SMs): gmm's dispatch (tuned table, then the default rule) vs its default rule\n",
             fb.dev->name, fb.dev->sm_count);
  json rows = json::array();
  int wrong = 0;
  std::uint64_t seed = 1;
  for (const GmmTuneProblem& p : problems) {
    GmmRaceData data(p, seed++);
    for (int r : {GmmRaceData::kUniform, GmmRaceData::kSkewed})
      rows.push_back(bench_one(o, data, r, fb.device, &wrong));
  }
  const std::string stem = std::filesystem::path(spec.input.empty() ? spec.suite : spec.input).stem().string() + "_gmm";
  finish_family_bench(o, *fb.dev, fb.copy_tbps, stem, rows, wrong, "gmm's default rule");
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
