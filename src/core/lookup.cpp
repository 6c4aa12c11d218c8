#include "core/lookup.h"

#include <iterator>

namespace tgemm {

std::string_view walk_level_name(WalkLevel level) {
  switch (level) {
    case WalkLevel::kExact:
      return "exact";
    case WalkLevel::kRange:
      return "range";
    case WalkLevel::kDefault:
      return "default";
  }
  return "?";
}

const TableRow* find_row(const Table::RowsByM* rows, std::int64_t m) {
  if (rows == nullptr || rows->empty()) return nullptr;
  // Disjoint ranges, each holding its row's M: only the rows next to M on either side can hold it.
  auto above = rows->lower_bound(m);
  if (above != rows->end() && above->second.serves(m)) return &above->second;
  if (above != rows->begin() && std::prev(above)->second.serves(m)) return &std::prev(above)->second;
  return nullptr;
}

}  // namespace tgemm
