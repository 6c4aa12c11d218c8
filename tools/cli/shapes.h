#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgemm::cli {

struct ShapesOptions {
  std::string model_dir;  // directory holding config.json (or the file itself)
  std::string suite;      // or a shape suite CSV (model,layer,N,K)
  int tp = 1;
  std::string nsets = "1,16,64,128,512,2048,8192";
  // Instead of nsets: each (N, K) over the M grid (core/m_grid.h) up to the M it sees at
  // m_grid_max tokens (x batch_size, x its share of the tokens), so a tune covers M, not points.
  bool m_grid = false;
  std::int64_t m_grid_max = 16384;  // kMGridMax
  int batch_size = 1;
  bool lm_head = false;
  bool bias = false;
  std::string dtype;      // default: the model's torch_dtype, else bf16
  std::string out_dtype;  // default: dtype
  std::string output = "bf16_untuned_gemm.csv";
};

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output;
  // The M ranges of a key stay disjoint (docs/design-choices.md, "Lookup walk"). With
  // later_wins, as the runtime layers TGEMM_CONFIG_GEMM_BF16=a.csv:b.csv: a later file's row
  // removes the earlier files' rows whose ranges it overlaps, whatever their `us` (within one
  // file, rows of the same M keep the lowest `us`, then a row overlapping a lower-M row is
  // skipped). Without it the inputs are one table: rows of the same key and M keep the lowest `us`
  // across files too (which compares times taken by different tunes, e.g. cold accurate-stage and
  // sustained-finals scales), then a row overlapping a lower-M row is skipped with a warning.
  bool later_wins = false;
};

struct CompareOptions {
  std::string a, b;
  double tie_band = 0.01;  // the tuner's SelectOptions::tie_band
  // Time each differing row's two solutions against each other on this GPU (paired, `rounds`
  // interleaved rounds) and judge the tie band on those times instead of the recorded ones,
  // which come from two runs and possibly two GPUs.
  bool measure = false;
  int rounds = 10;
  // --measure on this many placements of the operands (as the tuner's confirmation), median
  // ratio judged; some configurations are bimodal over placements (3-15% slower on one in five).
  int placements = 4;
  // --measure in short slots (RaceOptions::short_slots: ~6 ms graphs, more rounds), as `tgemm
  // bench` and the tuner time; off: ~20 ms graphs, whose long slots bias big problems by 2-5%.
  bool short_slots = true;
  int min_rotation_sets = 1;  // --measure: operand sets at least (DataOptions::min_rotation_sets)
  // Also write every common row's verdict (and with --measure its paired ratio) to this JSON file
  // ("" none): several runs of --measure, each a fresh process, combine with
  // bench/compare_runs.py.
  std::string json;
};

int run_shapes(const ShapesOptions& options);

// `tgemm tune --model_dir`: the model's (N, K) keys (config.json at tensor-parallel degree tp) at
// one token each, written to `path` as an untuned CSV for `tgemm tune --m-grid` to race over the
// tuning grid. Returns path.
std::string write_model_keys(const std::string& model_dir, int tp, const std::string& path);
int run_merge(const MergeOptions& options);
// Two tuned tables of the same problems (e.g. two independent tunes): rows per (key, M) that are
// identical (same kernelName), that differ with both rows' times within the tie band, that differ
// beyond it, and rows only one table has.
int run_compare(const CompareOptions& options);

}  // namespace tgemm::cli
