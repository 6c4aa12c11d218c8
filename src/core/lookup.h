// The lookup walk for a call with M rows (same key): the row tuned at exactly this M; else the
// row whose measured M range holds M; else the default solution. A row is never used at an M
// where nobody measured it: rows tuned at M = 512 ran 2.6x slower than cuBLASLt's default at
// M = 300 (H200, qwen3-32b gate_up 300x51200x5120), and rows tuned at M = 512 with a GELU
// epilogue ran one token at 0.18-0.78x of the default. Rows without a range (every older table)
// serve their own M only. The row must still pass validation.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/table.h"

namespace tgemm {

enum class WalkLevel { kExact, kRange, kDefault };
std::string_view walk_level_name(WalkLevel level);

// The row that serves M: the one tuned at M, else the one whose range holds M (the ranges of a
// key are disjoint, so there is at most one); nullptr if none.
const TableRow* find_row(const Table::RowsByM* rows, std::int64_t m);

}  // namespace tgemm
