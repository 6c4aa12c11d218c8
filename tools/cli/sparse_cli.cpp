// `tgemm tune-sparse` and `tgemm bench --family sparse` (tools/cli/sparse_cli.h). Both build, for
// each M and suite shape, a random weight of the asked structure with its dense copy: 2:4 pruned
// by prune_2_4 (FP8: e4m3 codes with 2 of every 4 zeroed, per-token and per-channel scales), CSR
// with exactly floor(density * K) nonzeros a row, block with exactly floor(density * blocks)
// blocks, so the weight's density bucket is the one asked for. Every output is checked against
// tgemm's dense GEMM on the dense copy (fp32 output) before it is timed.
#include "tools/cli/sparse_cli.h"

#include <cuda_runtime.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "core/csv.h"
#include "cuda/cuda_check.h"
#include "runtime/device_utils.h"
#include "runtime/timing.h"
#include "sparse/sparse_backends.h"
#include "sparse/sparse_table.h"
#include "tgemm/a8w8.h"
#include "tgemm/error.h"
#include "tgemm/gemm.h"
#include "tgemm/sparse.h"
#include "tools/cli/bench_family.h"
#include "tools/cli/common.h"
#include "tuner/select.h"

namespace tgemm::cli {

std::vector<double> parse_densities(const std::string& list, const std::string& option) {
  std::vector<double> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const auto v = csv::parse_double(item);
    TGEMM_CHECK(v && *v > 0 && *v <= 1, "tgemm", option, " takes densities in (0, 1], got '", item, "'");
    out.push_back(*v);
  }
  TGEMM_CHECK(!out.empty(), "tgemm", option, " names no density");
  return out;
}

namespace {

using json = nlohmann::json;

struct Spec {
  SparsePattern pattern = SparsePattern::k2of4;
  DType dtype = DType::kBFloat16;
  std::vector<double> densities;
};

Spec parse_spec(const SparseSpec& s, const char* op) {
  Spec out;
  if (s.pattern == "2:4") {
    out.pattern = SparsePattern::k2of4;
  } else if (s.pattern == "csr") {
    out.pattern = SparsePattern::kCsr;
  } else {
    TGEMM_CHECK(s.pattern == "block", op, "--pattern must be 2:4, csr or block, got '", s.pattern, "'");
    out.pattern = SparsePattern::kBlock;
  }
  TGEMM_CHECK(s.dtype == "bf16" || s.dtype == "fp16" || (s.dtype == "fp8" && out.pattern == SparsePattern::k2of4), op,
              "--dtype must be bf16 or fp16 (or fp8 with --pattern 2:4), got '", s.dtype, "'");
  out.dtype = s.dtype == "bf16" ? DType::kBFloat16 : s.dtype == "fp16" ? DType::kFloat16 : DType::kFloat8E4M3;
  if (out.pattern == SparsePattern::k2of4) {
    out.densities = {0.5};
  } else {
    const std::string fallback = out.pattern == SparsePattern::kCsr ? "0.05" : "0.2";
    out.densities = parse_densities(s.densities.empty() ? fallback : s.densities, "--density");
  }
  TGEMM_CHECK(out.pattern != SparsePattern::kBlock || s.block_size > 0, op, "--block-size must be positive, got ",
              s.block_size);
  return out;
}

// One problem: x, the weight in its sparse form and as a dense copy, out (x's dtype; bf16 for
// FP8) and an fp32 reference output; FP8 scales [M, 1] and [N, 1].
struct Problem {
  std::int64_t m = 0, n = 0, k = 0;
  SparsePattern pattern = SparsePattern::k2of4;
  DType dtype = DType::kBFloat16;
  DeviceBuffer x, dense, compressed, offsets, cols, values, out, ref, xs, ws;
  std::optional<SparseWeight> weight;
  TensorView xv, dv, ov, rv, xsv, wsv;
  DType out_type() const { return dtype == DType::kFloat8E4M3 ? DType::kBFloat16 : dtype; }
};

DeviceBuffer upload(const void* host, std::size_t bytes) {
  DeviceBuffer d(std::max<std::size_t>(bytes, 16));
  if (bytes > 0) copy_to_device(d.data(), host, bytes);
  return d;
}

// e4m3 codes with the exponent's top bit cleared: |v| < 2, never NaN.
std::uint8_t fp8_code(std::mt19937_64& rng) { return static_cast<std::uint8_t>(rng() & 0xbf); }

void build_2_4(Problem& p, std::mt19937_64& rng) {
  const std::int64_t nk = p.n * p.k;
  if (p.dtype == DType::kFloat8E4M3) {
    std::vector<std::uint8_t> w(static_cast<std::size_t>(nk));
    for (std::int64_t g = 0; g < nk; g += 4) {
      const int a = static_cast<int>(rng() % 4), b = (a + 1 + static_cast<int>(rng() % 3)) % 4;
      for (int j = 0; j < 4; ++j) w[g + j] = j == a || j == b ? 0 : fp8_code(rng);
    }
    p.dense = upload(w.data(), w.size());
  } else {
    p.dense = DeviceBuffer(static_cast<std::size_t>(nk) * 2);
    fill_uniform(p.dense.data(), p.dtype, nk, rng(), -1.0f, 1.0f, nullptr);
  }
  p.dv = TensorView::contiguous(p.dense.data(), p.dtype, {p.n, p.k});
  if (p.dtype != DType::kFloat8E4M3) prune_2_4(p.dv, p.dv);
  const std::size_t bytes = sparse_compressed_bytes_2_4(p.n, p.k, p.dtype);
  p.compressed = DeviceBuffer(bytes);
  p.weight = SparseWeight::compress_2_4(
      p.dv, TensorView::contiguous(p.compressed.data(), DType::kInt8, {static_cast<std::int64_t>(bytes)}));
}

// CSR (block_size 1, exactly floor(density * K) entries a row) or BSR (exactly floor(density *
// blocks) blocks): a dense random weight with the rest zeroed, and its sparse arrays.
void build_indexed(Problem& p, double density, std::int64_t bs, std::mt19937_64& rng) {
  const std::int64_t rows = p.n / bs, bcols = p.k / bs;
  std::vector<std::uint8_t> keep(static_cast<std::size_t>(rows * bcols), 0);
  if (p.pattern == SparsePattern::kCsr) {
    std::vector<std::int32_t> perm(static_cast<std::size_t>(bcols));
    const auto per_row = static_cast<std::int64_t>(std::floor(density * static_cast<double>(bcols)));
    for (std::int64_t r = 0; r < rows; ++r) {
      std::iota(perm.begin(), perm.end(), 0);
      for (std::int64_t i = 0; i < per_row; ++i) {
        std::swap(perm[i], perm[i + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(bcols - i))]);
        keep[r * bcols + perm[i]] = 1;
      }
    }
  } else {
    std::vector<std::int64_t> all(keep.size());
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), rng);
    const auto count = static_cast<std::size_t>(std::floor(density * static_cast<double>(all.size())));
    for (std::size_t i = 0; i < count; ++i) keep[static_cast<std::size_t>(all[i])] = 1;
  }
  const std::int64_t nk = p.n * p.k;
  DeviceBuffer full(static_cast<std::size_t>(nk) * 2);
  fill_uniform(full.data(), p.dtype, nk, rng(), -1.0f, 1.0f, nullptr);
  std::vector<std::uint16_t> w(static_cast<std::size_t>(nk)), values;
  copy_to_host(w.data(), full.data(), w.size() * 2);
  std::vector<std::int32_t> offsets = {0}, cols;
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < bcols; ++c) {
      const bool kept = keep[r * bcols + c] != 0;
      if (kept) cols.push_back(static_cast<std::int32_t>(c));
      for (std::int64_t i = 0; i < bs; ++i) {
        for (std::int64_t j = 0; j < bs; ++j) {
          std::uint16_t& v = w[(r * bs + i) * p.k + c * bs + j];
          if (!kept) v = 0;
          if (kept) values.push_back(v);
        }
      }
    }
    offsets.push_back(static_cast<std::int32_t>(cols.size()));
  }
  p.dense = upload(w.data(), w.size() * 2);
  p.dv = TensorView::contiguous(p.dense.data(), p.dtype, {p.n, p.k});
  p.offsets = upload(offsets.data(), offsets.size() * 4);
  p.cols = upload(cols.data(), cols.size() * 4);
  p.values = upload(values.data(), values.size() * 2);
  const auto stored = static_cast<std::int64_t>(cols.size());
  const TensorView ov = TensorView::contiguous(p.offsets.data(), DType::kInt32, {rows + 1});
  const TensorView cv = TensorView::contiguous(p.cols.data(), DType::kInt32, {stored});
  if (p.pattern == SparsePattern::kCsr) {
    p.weight = SparseWeight::csr(ov, cv, TensorView::contiguous(p.values.data(), p.dtype, {stored}), p.n, p.k);
  } else {
    p.weight =
        SparseWeight::bsr(ov, cv, TensorView::contiguous(p.values.data(), p.dtype, {stored, bs, bs}), p.n, p.k, bs);
  }
}

Problem make_problem(const Spec& spec, double density, std::int64_t bs, std::int64_t m, std::int64_t n, std::int64_t k,
                     std::uint64_t seed) {
  Problem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.pattern = spec.pattern;
  p.dtype = spec.dtype;
  std::mt19937_64 rng(seed);
  if (p.pattern == SparsePattern::k2of4) {
    build_2_4(p, rng);
  } else {
    build_indexed(p, density, p.pattern == SparsePattern::kCsr ? 1 : bs, rng);
  }
  p.weight->with_dense(p.dv);
  if (p.dtype == DType::kFloat8E4M3) {
    std::vector<std::uint8_t> x(static_cast<std::size_t>(m * k));
    for (auto& v : x) v = fp8_code(rng);
    p.x = upload(x.data(), x.size());
    p.xs = DeviceBuffer(static_cast<std::size_t>(m) * 4);
    p.ws = DeviceBuffer(static_cast<std::size_t>(n) * 4);
    fill_uniform(p.xs.data(), DType::kFloat32, m, rng(), 0.5f, 1.5f, nullptr);
    fill_uniform(p.ws.data(), DType::kFloat32, n, rng(), 0.5f, 1.5f, nullptr);
    p.xsv = TensorView::contiguous(p.xs.data(), DType::kFloat32, {m, 1});
    p.wsv = TensorView::contiguous(p.ws.data(), DType::kFloat32, {n, 1});
  } else {
    p.x = DeviceBuffer(static_cast<std::size_t>(m * k) * 2);
    fill_uniform(p.x.data(), p.dtype, m * k, rng(), -1.0f, 1.0f, nullptr);
  }
  p.xv = TensorView::contiguous(p.x.data(), p.dtype, {m, k});
  p.out = DeviceBuffer(static_cast<std::size_t>(m * n) * 2);
  p.ov = TensorView::contiguous(p.out.data(), p.out_type(), {m, n});
  p.ref = DeviceBuffer(static_cast<std::size_t>(m * n) * 4);
  p.rv = TensorView::contiguous(p.ref.data(), DType::kFloat32, {m, n});
  return p;
}

void run_sparse(const Problem& p, const SparseGemmOptions& o, Stream s) {
  if (p.dtype == DType::kFloat8E4M3) {
    sparse_gemm_a8w8(p.xv, *p.weight, p.xsv, p.wsv, p.ov, o, s);
  } else {
    sparse_gemm(p.xv, *p.weight, p.ov, o, s);
  }
}

// tgemm's dense GEMM on the dense copy: into out (the bench's baseline) or the fp32 reference.
void run_dense(const Problem& p, const TensorView& out, Stream s) {
  if (p.dtype == DType::kFloat8E4M3) {
    gemm_a8w8(p.xv, p.dv, p.xsv, p.wsv, out, nullptr, s);
  } else {
    gemm_a16w16(p.xv, p.dv, out, GemmOptions{}, s);
  }
}

// out against the fp32 reference (the dense GEMM's, run once by the caller): "ok" or "<n> bad".
// Operands are bounded by 1 (16-bit) or 2 with scales below 1.5 (FP8); FP8 tensor cores keep ~14
// bits of the running sum (bench_a8w8's argument), so their term is 2^-11 of sum |x w| bounded.
std::string check_output(const Problem& p) {
  Tolerance tol = gemm_tolerance(p.out_type(), p.k, false);
  if (p.dtype == DType::kFloat8E4M3) {
    tol.atol = tol.atol * 9.0 + 9.0 * static_cast<double>(p.k) * 0x1p-11;
  }
  const CompareResult r = compare_with_reference(p.out.data(), p.out_type(), p.n, p.ref.as<float>(), p.n, p.m, p.n,
                                                 tol.rtol, tol.atol, nullptr);
  return r.bad == 0 ? "ok" : fmt::format("{} bad", r.bad);
}

// The shapes of the suite the options select, at each M.
struct Shape {
  SuiteShape s;
  std::int64_t m;
};
std::vector<Shape> shapes_of(const SparseSpec& spec) {
  std::vector<Shape> out;
  for (std::int64_t m : parse_int_list(spec.ms, "--m")) {
    for (const SuiteShape& s : read_suite(spec.suite)) {
      if (!spec.filter.empty() && (s.model + "/" + s.layer).find(spec.filter) == std::string::npos) continue;
      if (spec.max_problems > 0 && static_cast<int>(out.size()) >= spec.max_problems) return out;
      out.push_back({s, m});
    }
  }
  return out;
}

// Whether the pattern can hold a weight of this shape; why not otherwise.
std::string unsupported(const Spec& spec, std::int64_t bs, std::int64_t n, std::int64_t k) {
  if (spec.pattern == SparsePattern::kBlock && (n % bs != 0 || k % bs != 0)) {
    return fmt::format("block size {} does not divide [{}, {}]", bs, n, k);
  }
  if (spec.pattern == SparsePattern::k2of4) {
    const std::int64_t mult = sparse_2_4_multiple(spec.dtype);
    if (n % mult != 0 || k % mult != 0) return fmt::format("2:4 needs N and K multiples of {}", mult);
  }
  return "";
}

struct Candidate {
  SparseGemmOptions options;
  std::string name;
};

std::vector<Candidate> candidates_for(const Problem& p) {
  std::vector<Candidate> c;
  const auto add = [&](SparseBackend b, int algorithm, int split_k, std::string name) {
    SparseGemmOptions o;
    o.backend = b;
    o.algorithm = algorithm;
    o.split_k = split_k;
    c.push_back({o, std::move(name)});
  };
  if (p.pattern == SparsePattern::k2of4) {
    add(SparseBackend::kCusparselt, -1, 0, "cusparselt default");
    const int count = sparse::cusparselt_algorithm_count(p.m, p.n, p.k, p.dtype);
    for (int a = 0; a < count; ++a) {
      for (int split_k : {1, 2, 4}) {
        add(SparseBackend::kCusparselt, a, split_k, fmt::format("cusparselt {}x{}", a, split_k));
      }
    }
  } else {
    for (int a : sparse::cusparse_algorithms(p.pattern)) {
      add(SparseBackend::kCusparse, a, 0, fmt::format("cusparse {}", a));
    }
  }
  add(SparseBackend::kDense, -1, 0, "dense");
  return c;
}

// The candidates that run and pass the check, each warmed up on the default stream.
std::vector<Candidate> working_candidates(const Problem& p) {
  std::vector<Candidate> ok;
  for (const Candidate& c : candidates_for(p)) {
    try {
      fill_nan(p.out.data(), p.out_type(), p.m * p.n, nullptr);
      run_sparse(p, c.options, nullptr);
      TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "tune-sparse");
      const std::string check = check_output(p);
      if (check == "ok") {
        ok.push_back(c);
      } else {
        fmt::print("  {}: {} (dropped)\n", c.name, check);
      }
    } catch (const Error& e) {
      fmt::print("  {}: {} (dropped)\n", c.name, e.what());
    }
  }
  return ok;
}

std::string csv_header() { return "pattern,density,block_size,M,N,K,dtype,backend,algorithm,split_k,us,dense_us\n"; }

// The rows of an existing output whose key (the first 7 columns) this run did not measure, then
// this run's rows.
std::string merged_output(const std::string& path, const std::map<std::string, std::string>& rows) {
  std::string text = csv_header();
  std::ifstream in(path);
  std::string line;
  bool header = true;
  while (in && std::getline(in, line)) {
    if (header) {
      header = false;
      TGEMM_CHECK(line + "\n" == csv_header(), "tgemm tune-sparse", path, " has another header: '", line, "'");
      continue;
    }
    std::size_t cut = 0;
    for (int i = 0; i < 7 && cut != std::string::npos; ++i) cut = line.find(',', cut + (i > 0 ? 1 : 0));
    if (!line.empty() && rows.count(line.substr(0, cut)) == 0) text += line + "\n";
  }
  for (const auto& [key, row] : rows) text += row;
  return text;
}

}  // namespace

CLI::App* add_tune_sparse_command(CLI::App& app, TuneSparseOptions& o) {
  CLI::App* t = app.add_subcommand(
      "tune-sparse",
      "race sparse_gemm's candidates (cuSPARSELt configurations x split-K, cuSPARSE algorithms, the dense path) on "
      "random weights of a pattern and write the measured rows of the sparse table");
  t->add_option("--pattern", o.spec.pattern, "2:4, csr or block")->capture_default_str();
  t->add_option("--dtype", o.spec.dtype, "bf16, fp16, or fp8 (2:4 only)")->capture_default_str();
  t->add_option("--density", o.spec.densities, "csr/block: comma list of densities (default 0.05 csr, 0.2 block)");
  t->add_option("--block-size", o.spec.block_size, "block: the blocks' side")->capture_default_str();
  t->add_option("--suite", o.spec.suite, "shape suite CSV (model,layer,N,K)")->capture_default_str();
  t->add_option("-m,--m", o.spec.ms, "comma-separated M values")->capture_default_str();
  t->add_option("--filter", o.spec.filter, "only problems whose model/layer contains this");
  t->add_option("--max-problems", o.spec.max_problems, "stop after this many problems (0: all)");
  t->add_option("-o,--output", o.output,
                "the sparse table to write (its rows of other keys are kept; TGEMM_CONFIG_GEMM_SPARSE reads it)")
      ->capture_default_str();
  t->add_option("--rounds", o.rounds, "interleaved timing rounds per problem")->check(CLI::Range(1, 100));
  t->add_option("--replays", o.replays, "timed replays per round")->check(CLI::Range(1, 1000));
  t->add_flag("--dry-run", o.dry_run, "print the measured rows, write nothing");
  return t;
}

int run_tune_sparse(const TuneSparseOptions& o) {
  constexpr const char* op = "tgemm tune-sparse";
  const Spec spec = parse_spec(o.spec, op);
  require_gpu("tune-sparse");
  std::map<std::string, std::string> rows;
  std::uint64_t seed = 1;
  for (double density : spec.densities) {
    for (const Shape& sh : shapes_of(o.spec)) {
      const std::int64_t n = sh.s.n, k = sh.s.k, m = sh.m;
      const std::string why = unsupported(spec, o.spec.block_size, n, k);
      if (!why.empty()) {
        fmt::print("{} {} M={}: skipped, {}\n", sh.s.model, sh.s.layer, m, why);
        continue;
      }
      const Problem p = make_problem(spec, density, o.spec.block_size, m, n, k, seed++);
      run_dense(p, p.rv, nullptr);
      fmt::print("{} {} M={} N={} K={} {} density {:.4g}:\n", sh.s.model, sh.s.layer, m, n, k, o.spec.pattern,
                 p.weight->density());
      const std::vector<Candidate> cands = working_candidates(p);
      TGEMM_CHECK(!cands.empty(), op, "no candidate ran correctly (the dense one included)");
      std::vector<std::function<void(int, Stream)>> launches;
      for (const Candidate& c : cands) launches.push_back([&p, &c](int, Stream s) { run_sparse(p, c.options, s); });
      TimingOptions topt;
      topt.replays = o.replays;
      topt.launches_per_graph = 5;
      const std::vector<TimingStats> stats = time_graphs_interleaved(launches, topt, o.rounds);
      std::size_t best = 0, dense = cands.size() - 1;
      for (std::size_t i = 0; i < stats.size(); ++i) {
        if (stats[i].median_us < stats[best].median_us) best = i;
      }
      const Candidate& win = cands[best];
      const double bucket = sparse_density_bucket(p.weight->density());
      const std::string key =
          fmt::format("{},{},{},{},{},{},{}", o.spec.pattern, bucket,
                      spec.pattern == SparsePattern::kBlock ? o.spec.block_size : 0, m, n, k, dtype_name(spec.dtype));
      rows[key] =
          fmt::format("{},{},{},{},{:.3f},{:.3f}\n", key, sparse_backend_name(win.options.backend),
                      win.options.algorithm, win.options.split_k, stats[best].median_us, stats[dense].median_us);
      fmt::print("  best {} {:.2f} us, dense {:.2f} us ({:.3f}x)\n", win.name, stats[best].median_us,
                 stats[dense].median_us, stats[dense].median_us / stats[best].median_us);
      std::fflush(stdout);
    }
  }
  if (o.dry_run) {
    fmt::print("{}", csv_header());
    for (const auto& [key, row] : rows) fmt::print("{}", row);
    return 0;
  }
  write_text_file(o.output, merged_output(o.output, rows), op, "--output");
  fmt::print("wrote {} measured rows to {}\n", rows.size(), o.output);
  return 0;
}

int run_bench_sparse(const BenchOptions& o, const SparseSpec& s) {
  const Spec spec = parse_spec(s, "tgemm bench --family sparse");
  const FamilyBench fb = start_family_bench();
  fmt::print("device {} ({} SMs), sparse {} {}: sparse_gemm's dispatch vs tgemm's dense GEMM\n", fb.dev->name,
             fb.dev->sm_count, s.pattern, s.dtype);
  json rows = json::array();
  int wrong = 0;
  std::uint64_t seed = 1;
  for (double density : spec.densities) {
    for (const Shape& sh : shapes_of(s)) {
      const std::int64_t n = sh.s.n, k = sh.s.k, m = sh.m;
      if (!unsupported(spec, s.block_size, n, k).empty()) continue;
      const Problem p = make_problem(spec, density, s.block_size, m, n, k, seed++);
      run_dense(p, p.rv, nullptr);
      fill_nan(p.out.data(), p.out_type(), m * n, nullptr);
      run_sparse(p, SparseGemmOptions{}, nullptr);
      TGEMM_CUDA_CHECK(cudaDeviceSynchronize(), "bench");
      const std::string check = o.check ? check_output(p) : "-";
      wrong += check == "ok" || check == "-" ? 0 : 1;
      const SparseChoice choice = sparse::describe_sparse_gemm(*p.weight, m);
      std::vector<TimingStats> both;
      const double est_us = std::max(2.0 * m * n * k / 1.3e9, 1.0);
      const json reading = time_baseline_and_tgemm(
          o, est_us, 1, [&](int, Stream st) { run_dense(p, p.ov, st); },
          [&](int, Stream st) { run_sparse(p, SparseGemmOptions{}, st); }, both);
      const double t_us = reading["tgemm_us"].get<double>();
      json row = {{"family", "sparse"},
                  {"model", sh.s.model},
                  {"layer", sh.s.layer},
                  {"M", m},
                  {"N", n},
                  {"K", k},
                  {"pattern", s.pattern},
                  {"density", p.weight->density()},
                  {"block_size", spec.pattern == SparsePattern::kBlock ? s.block_size : 0},
                  {"dtype", std::string(dtype_name(spec.dtype))},
                  {"baseline", "tgemm_dense"},
                  {"backend", sparse_backend_name(choice.backend)},
                  {"algorithm", choice.algorithm},
                  {"split_k", choice.split_k},
                  {"table_row", choice.where},
                  {"check", check},
                  {"tflops_dense_equivalent", 2.0 * m * n * k / (t_us * 1e-6) / 1e12}};
      row.update(reading);
      rows.push_back(row);
      fmt::print("{:<16} {:<8} {:>5} {:>6} {:>6} d={:.3f} | dense {:>9.2f} sparse {:>9.2f} {:>6.3f}x | {} ({}) {}\n",
                 sh.s.model, sh.s.layer, m, n, k, p.weight->density(), both[0].median_us, t_us,
                 reading["speedup"].get<double>(), sparse_backend_name(choice.backend), choice.where, check);
      std::fflush(stdout);
    }
  }
  const std::string stem = std::filesystem::path(s.suite).stem().string() + "_sparse_" +
                           (s.pattern == "2:4" ? std::string("2of4") : s.pattern) + "_" + s.dtype;
  finish_family_bench(o, *fb.dev, fb.copy_tbps, stem, rows, wrong, "tgemm's dense GEMM");
  return wrong == 0 ? 0 : 1;
}

}  // namespace tgemm::cli
