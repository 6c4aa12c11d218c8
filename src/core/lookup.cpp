#include "core/lookup.h"

namespace tgemm {

std::string_view walk_level_name(WalkLevel level) {
  switch (level) {
    case WalkLevel::kExact:
      return "exact";
    case WalkLevel::kDefault:
      return "default";
  }
  return "?";
}

const TableRow* find_row(const Table::RowsByM* rows, std::int64_t m) {
  if (rows == nullptr) return nullptr;
  auto it = rows->find(m);
  return it == rows->end() ? nullptr : &it->second;
}

}  // namespace tgemm
