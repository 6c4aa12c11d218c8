// Writing a tuned table (configs/*_tuned_gemm.csv format, core/table.h) the way the tuner and the
// `tgemm merge` command do.
#pragma once

#include <string>
#include <vector>

#include "core/table.h"

namespace tgemm {

// Writes rows sorted by key and M, atomically (temp file + fsync + rename): an interrupted writer
// never leaves a torn table, and every batch written before an interruption is kept.
void write_tuned_table(const std::string& path, const std::vector<TableRow>& rows);

}  // namespace tgemm
