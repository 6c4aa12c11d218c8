// `tgemm tune-fmoe` and `tgemm bench --family fmoe` (tools/cli/fmoe_cli.h).
#include "tools/cli/fmoe_cli.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/check.h"
#include "moe/fmoe_dispatch.h"
#include "runtime/runtime.h"
#include "tools/cli/bench_family.h"
#include "tools/cli/common.h"
#include "tools/cli/race_cli.h"
#include "tuner/fmoe_race.h"
#include "tuner/tune_processes.h"

namespace tgemm::cli {

std::vector<FmoeTuneProblem> fmoe_problems(const FmoeSpec& spec, const std::string& op) {
  std::vector<FmoeTuneProblem> all;
  if (!spec.input.empty()) {
    std::ifstream in(spec.input);
    TGEMM_CHECK(in.good(), op, "-i/--input '", spec.input, "' cannot be opened");
    all = parse_fmoe_untuned(in, spec.input);
  } else {
    const DType dtype = parse_dtype(spec.dtype, "--dtype");
    TGEMM_CHECK(dtype == DType::kBFloat16 || dtype == DType::kFloat16, op, "--dtype must be bf16 or fp16, got '",
                spec.dtype, "'");
    const auto act = parse_fmoe_activation(spec.activation);
    TGEMM_CHECK(act.has_value(), op, "--activation must be silu or gelu, got '", spec.activation, "'");
    const std::vector<std::int64_t> tokens = parse_int_list(spec.tokens, spec.tokens_option);
    TGEMM_CHECK(!tokens.empty(), op, spec.tokens_option, " names no token count");
    std::ifstream in(spec.suite);
    TGEMM_CHECK(in.good(), op, "--suite '", spec.suite, "' cannot be opened");
    all = parse_fmoe_suite(in, spec.suite, tokens, dtype, *act);
  }
  return selected_problems(all, spec.filter, spec.max_problems);
}

CLI::App* add_tune_fmoe_command(CLI::App& app, TuneFmoeOptions& o) {
  CLI::App* t = app.add_subcommand(
      "tune-fmoe",
      "race fused_moe's paths (the tile kernels, each pair of CUTLASS grouped instances of this build) against its "
      "default rule on a uniform and a skewed routing of each key; write a row where one beats the default on both");
  CLI::Option* input = t->add_option("-i,--input", o.spec.input,
                                     "untuned fmoe CSV (T,E,topk,H,I,dtype[,quant][,activation]: TGEMM_TUNE_GEMM's "
                                     "untuned_fmoe.csv) instead of --suite");
  t->add_option("--suite", o.spec.suite, "MoE layer suite (name,E,topk,H,I[,E_global])")
      ->capture_default_str()
      ->excludes(input);
  t->add_option("--tokens", o.spec.tokens, "--suite: comma list of token counts T")->capture_default_str();
  t->add_option("--dtype", o.spec.dtype, "--suite: bf16 or fp16")->capture_default_str();
  t->add_option("--activation", o.spec.activation, "--suite: silu or gelu")->capture_default_str();
  add_problem_selection_options(*t, o.spec.filter, o.spec.max_problems);
  t->add_option("-o,--output", o.output,
                "the fmoe table to write after each key (its rows of other keys are kept; TGEMM_CONFIG_FMOE reads "
                "it); keys it already has a row for are skipped, so an interrupted tune resumes")
      ->capture_default_str();
  t->add_flag("--all", o.all, "race keys that already have a row in --output too");
  t->add_option("--mp", o.mp,
                "worker processes, one per GPU (GPUs 0..mp-1), the keys dealt among them; --output is written when "
                "all have finished")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  add_routing_race_options(*t, o.race, o.dry_run, "the routings' seed");
  return t;
}

namespace {

void print_race(const FmoeTuneProblem& p, const FmoeRaceResult& r) {
  print_routing_race(fmt::format("{} T={} E={} topk={} H={} I={} (default {}):\n", p.name, p.tokens, p.experts, p.topk,
                                 p.hidden, p.inter, r.default_solution),
                     60, r);
}

}  // namespace

namespace {

// `tgemm tune-fmoe --mp`: the problems dealt round-robin to o.mp children (`tgemm tune-fmoe -i
// <share> -o <share's rows> --all`, child i on GPU i, tune_processes.h), their rows merged into
// o.output once all have exited. A child that failed counts as having raced only the keys it
// wrote rows for (it writes after each key), so the output keeps the other keys' old rows.
int run_tune_fmoe_processes(const TuneFmoeOptions& o, const std::vector<FmoeTuneProblem>& todo,
                            const std::vector<FmoeRow>& existing, const DeviceInfo& dev) {
  constexpr const char* op = "tgemm tune-fmoe";
  std::vector<std::vector<FmoeTuneProblem>> shares(static_cast<std::size_t>(o.mp));
  for (std::size_t i = 0; i < todo.size(); ++i) shares[i % shares.size()].push_back(todo[i]);
  std::vector<std::vector<std::string>> args;
  std::vector<int> devices;
  std::vector<std::string> inputs, outputs;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (shares[i].empty()) continue;
    inputs.push_back(o.output + ".worker" + std::to_string(i) + ".untuned.csv");
    outputs.push_back(o.output + ".worker" + std::to_string(i) + ".csv");
    write_text_file(inputs.back(), fmoe_problems_csv(shares[i]), op, "--output");
    std::remove(outputs.back().c_str());
    args.push_back({"tune-fmoe", "-i", inputs.back(), "-o", outputs.back(), "--all", "--rounds",
                    std::to_string(o.race.rounds), "--replays", std::to_string(o.race.replays), "--tie-band",
                    fmt::format("{}", o.race.tie_band), "--seed", std::to_string(o.race.seed)});
    devices.push_back(static_cast<int>(i));
  }
  const std::vector<int> status = spawn_reconfirms(args, devices);
  std::vector<FmoeKey> raced;
  std::vector<FmoeRow> rows;
  int failed = 0;
  for (std::size_t w = 0, i = 0; i < shares.size(); ++i) {
    if (shares[i].empty()) continue;
    const std::vector<FmoeRow> got = existing_table_rows<FmoeTableTraits>(outputs[w]);
    rows.insert(rows.end(), got.begin(), got.end());
    if (status[w] == 0) {
      for (const FmoeTuneProblem& p : shares[i]) raced.push_back(p.key(dev.arch, dev.sm_count));
    } else {
      ++failed;
      fmt::print(stderr, "{}: the worker on GPU {} exited with status {}; its keys without a row keep their old rows\n",
                 op, devices[w], status[w]);
      for (const FmoeRow& r : got) raced.push_back(r.key);
    }
    std::remove(inputs[w].c_str());
    std::remove(outputs[w].c_str());
    ++w;
  }
  const std::string text = merged_fmoe_table(existing, raced, rows);
  if (o.dry_run) {
    fmt::print("{}", text);
  } else {
    write_text_file(o.output, text, op, "--output");
    fmt::print("raced {} keys on {} GPUs, {} rows beat the default; wrote {}\n", raced.size(), devices.size(),
               rows.size(), o.output);
  }
  return failed == 0 ? 0 : 1;
}

}  // namespace

int run_tune_fmoe(const TuneFmoeOptions& o) {
  constexpr const char* op = "tgemm tune-fmoe";
  std::vector<FmoeTuneProblem> problems = fmoe_problems(o.spec, op);
  // Each key raced at its bucket's top T, where the bucket's calls are largest (the capture
  // writes that T; a suite's or a hand-written T is raised to it), within int32 slots.
  for (FmoeTuneProblem& p : problems) {
    const std::int64_t top = fmoe_tokens_bucket(p.tokens);
    if (top * p.topk <= std::numeric_limits<std::int32_t>::max()) p.tokens = top;
  }
  TGEMM_CHECK(!problems.empty(), op, "no problem to tune (check -i/--suite and --filter)");
  const std::vector<FmoeRow> existing = existing_table_rows<FmoeTableTraits>(o.output);
  require_gpu("tune-fmoe");
  Runtime& rt = Runtime::get();
  const DeviceInfo& dev = rt.platform().device_info(rt.platform().current_device());
  std::unordered_set<FmoeKey, FmoeKeyHash> done;
  if (!o.all) {
    for (const FmoeRow& r : existing) done.insert(r.key);
  }
  // One race per key: the untuned file and the suite may name a bucket more than once.
  std::vector<FmoeTuneProblem> todo;
  for (const FmoeTuneProblem& p : problems) {
    if (done.insert(p.key(dev.arch, dev.sm_count)).second) todo.push_back(p);
  }
  const std::size_t skipped = problems.size() - todo.size();
  if (skipped > 0)
    fmt::print("{} problems skipped: their key has a row in {} (--all races them) or came before\n", skipped, o.output);
  if (o.mp > 1 && todo.size() > 1) return run_tune_fmoe_processes(o, todo, existing, dev);
  std::vector<FmoeKey> raced;
  std::vector<FmoeRow> rows;
  for (const FmoeTuneProblem& p : todo) {
    const FmoeRaceResult r = race_fmoe(p, o.race);
    print_race(p, r);
    raced.push_back(r.key);
    if (r.row) rows.push_back(*r.row);
    // Written after every key, so an interrupted tune keeps what it measured.
    if (!o.dry_run) write_text_file(o.output, merged_fmoe_table(existing, raced, rows), op, "--output");
  }
  if (o.dry_run) {
    fmt::print("{}", merged_fmoe_table(existing, raced, rows));
    return 0;
  }
  fmt::print("raced {} keys, {} rows beat the default{}\n", raced.size(), rows.size(),
             raced.empty() ? "" : "; wrote " + o.output);
  return 0;
}

namespace {

using json = nlohmann::json;

json bench_one(const BenchOptions& o, FmoeRaceData& data, int routing, int device, double copy_tbps, int* wrong) {
  const FmoeTuneProblem& p = data.problem();
  const MoeCall& call = data.call(routing, 0);
  const MoeCutlassPlan dflt = fused_moe_default_plan(call, device);
  std::string check = "-";
  if (o.check) {
    data.compute_reference(routing);
    check = data.check([&](Stream s) { data.run_dispatch(routing, 0, s); });
    if (check.empty()) check = "ok";
  }
  *wrong += check == "ok" || check == "-" ? 0 : 1;
  const FmoeRoute route = route_fused_moe(call, device);
  std::vector<TimingStats> both;
  const json reading = time_baseline_and_tgemm(
      o, data.est_us(routing), static_cast<std::size_t>(data.sets()),
      [&](int i, Stream s) { run_fused_moe_on(data.call(routing, i % data.sets()), dflt, device, s); },
      [&](int i, Stream s) { data.run_dispatch(routing, i % data.sets(), s); }, both);
  const double t_us = reading["tgemm_us"].get<double>();
  // The streaming read of what the call must touch (the routed experts' weights, hidden, out) at
  // the measured copy rate: the decode bound.
  const double floor_us = data.bytes(routing) / (copy_tbps * 1e12) * 1e6;
  const char* name = routing == FmoeRaceData::kUniform ? "uniform" : "skewed";
  json row = {{"family", "fmoe"},
              {"model", p.name},
              {"layer", name},
              {"routing", name},
              {"T", p.tokens},
              {"E", p.experts},
              {"E_global", p.global_experts},
              {"topk", p.topk},
              {"H", p.hidden},
              {"I", p.inter},
              {"activation", fmoe_activation_name(p.activation)},
              {"touched_experts", data.touched_experts(routing)},
              {"max_expert_slots", data.busiest_expert_slots(routing)},
              {"baseline", "fused_moe_default_rule"},
              {"baseline_solution", fmoe_plan_label(dflt)},
              {"solution", fmoe_plan_label(route.plan)},
              {"level", route.level},
              {"table_row", route.row ? route.row->file + ":" + std::to_string(route.row->line) : ""},
              {"check", check},
              {"rotations", data.sets()},
              {"floor_us", floor_us},
              {"floor_ratio", t_us / floor_us},
              {"tbps", data.bytes(routing) / (t_us * 1e-6) / 1e12},
              {"tflops", data.flops(routing) / (t_us * 1e-6) / 1e12}};
  row.update(reading);
  fmt::print("{:<28} {:<8} | default {:>9.2f} fused_moe {:>9.2f} {:>6.3f}x floor {:>5.2f}x | {} ({}) {}\n", p.name,
             name, both[0].median_us, t_us, reading["speedup"].get<double>(), t_us / floor_us,
             row["solution"].get<std::string>(), route.level, check);
  std::fflush(stdout);
  return row;
}

}  // namespace

int run_bench_fmoe(const BenchOptions& o, const FmoeSpec& spec) {
  const std::vector<FmoeTuneProblem> problems = fmoe_problems(spec, "tgemm bench --family fmoe");
  const FamilyBench fb = start_family_bench();
  fmt::print("device {} ({} SMs): fused_moe's dispatch (tuned table, then the default rule) vs its default rule\n",
             fb.dev->name, fb.dev->sm_count);
  json rows = json::array();
  int wrong = 0;
  std::uint64_t seed = 1;
  for (const FmoeTuneProblem& p : problems) {
    FmoeRaceData data(p, seed++);
    for (int r : {FmoeRaceData::kUniform, FmoeRaceData::kSkewed})
      rows.push_back(bench_one(o, data, r, fb.device, fb.copy_tbps, &wrong));
  }
  const std::string stem =
      std::filesystem::path(spec.input.empty() ? spec.suite : spec.input).stem().string() + "_fmoe";
  finish_family_bench(o, *fb.dev, fb.copy_tbps, stem, rows, wrong, "fused_moe's default rule");
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
