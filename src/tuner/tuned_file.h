// Writing a tuned table (configs/*_tuned_gemm.csv format, core/table.h) the way the tuner and the
// `tgemm merge` command do, and appending to the tune's profile.
//
// Every write of a table holds an exclusive flock on "<path>.lock" (a file beside the table, kept:
// removing it would let a second writer lock a new inode while the first still holds the old one)
// and replaces the table atomically (temp file beside it + fsync + rename), so a reader never sees
// a torn table and two tunes into the same file serialise their read-merge-write steps.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/table.h"

namespace tgemm {

// Replaces the table at `path` with `rows`, sorted by key and M. Throws tgemm::Error naming the
// file and the failing call when `path` is not a regular file (a directory, a device) or any
// write, fsync or rename fails; no temporary file is left behind then.
void write_tuned_table(const std::string& path, const std::vector<TableRow>& rows);

// The table at `path` as it is now (another process may have written it since this one read it),
// with each of `rows` replacing the row of the same key and M or added, written back as
// write_tuned_table does. Lines the parser does not turn into rows (comments, rows it warns about)
// are copied through verbatim, so nothing a person wrote is lost. A file whose header is not a
// tuned table's is refused (tgemm::Error), not overwritten. An added row without an M range whose M
// lies in another row's range of its key narrows that range to the side holding its row's M (a
// range never overlaps an exact row). Returns the merged rows.
std::vector<TableRow> update_tuned_table(const std::string& path, const std::vector<TableRow>& rows);

// The range rows of `key` in the table at `path` replaced (`tgemm tune --m-grid`'s range pass):
// under the table's lock, the key's rows with an M range are removed, make_rows is called with the
// M values of the key's exact rows (those without a range) as they are in the file now, and the
// rows it returns are added; written back as update_tuned_table does. Returns the merged rows.
std::vector<TableRow> replace_range_rows(
    const std::string& path, const TableKey& key,
    const std::function<std::vector<TableRow>(const std::set<std::int64_t>& exact_ms)>& make_rows);

// `text` written to `path` atomically (temporary file beside it, fsync, rename) under an flock on
// "<path>.lock", as the tables are. Throws tgemm::Error naming the file on any failure.
void write_file_atomically(const std::string& path, const std::string& text);

// Appends `text` to `path` under an exclusive flock on the file itself (appends never replace the
// file, so its own inode is the lock); an empty or new file gets `header` first. Throws
// tgemm::Error naming the file when it cannot be opened or written.
void append_locked(const std::string& path, const std::string& header, const std::string& text);

}  // namespace tgemm
