#include "tuner/tuned_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <tuple>

#include "core/check.h"
#include "core/csv.h"

namespace tgemm {

void write_tuned_table(const std::string& path, const std::vector<TableRow>& rows) {
  std::vector<const TableRow*> sorted;
  for (const auto& r : rows) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [](const TableRow* a, const TableRow* b) {
    return std::make_tuple(a->key.arch, a->key.sm_count, static_cast<int>(a->key.dtype), static_cast<int>(a->key.out_dtype),
                           a->key.bias, a->key.n, a->key.k, a->m) <
           std::make_tuple(b->key.arch, b->key.sm_count, static_cast<int>(b->key.dtype), static_cast<int>(b->key.out_dtype),
                           b->key.bias, b->key.n, b->key.k, b->m);
  });
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp);
    TGEMM_CHECK(static_cast<bool>(out), "tgemm", "cannot write '", tmp, "'");
    out << csv::join(tuned_table_columns()) << "\n";
    for (const TableRow* r : sorted) out << format_tuned_row(*r) << "\n";
    out.flush();
    TGEMM_CHECK(static_cast<bool>(out), "tgemm", "write to '", tmp, "' failed");
  }
  int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  TGEMM_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "tgemm", "rename to '", path, "' failed");
}

}  // namespace tgemm
