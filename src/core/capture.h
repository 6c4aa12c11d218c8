// TGEMM_TUNE_GEMM=1 capture: each distinct untuned problem becomes one row of an untuned CSV
// (M,N,K,bias,dtype,outdtype,scaleAB,bpreshuffle,epilogue; scales for the a8w8 families,
// B,transpose_a,transpose_b for batched), which
// `tgemm tune` takes as input. One file per op family.
// Safe with several processes: rows are appended under an exclusive flock on "<file>.lock" after
// re-reading the file, one write() per row, so no row is lost or duplicated and a crash loses
// nothing already recorded.
#pragma once

#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/problem.h"

namespace tgemm {

std::string format_untuned_row(const GemmProblem& p);

class Capture {
 public:
  explicit Capture(std::string path, OpFamily family = OpFamily::kA16W16)
      : path_(std::move(path)), columns_(untuned_table_columns_of(family)) {}
  // A capture of another table's rows (gmm's untuned keys): `columns` is its header.
  Capture(std::string path, std::vector<std::string> columns) : path_(std::move(path)), columns_(std::move(columns)) {}
  // Records p unless this process or the file already has its row. Failures to write are
  // warnings (once), never errors: capture must not break the GEMM.
  void record(const GemmProblem& p) { record_row(format_untuned_row(p)); }
  // The same for a row already formatted in the columns' order.
  void record_row(const std::string& row);
  const std::string& path() const { return path_; }

 private:
  static std::vector<std::string> untuned_table_columns_of(OpFamily family);

  std::string path_;
  std::vector<std::string> columns_;
  std::mutex mutex_;
  std::unordered_set<std::string> recorded_;
};

}  // namespace tgemm
