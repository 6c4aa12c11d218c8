// Run-time configuration: tuned tables, caches, the shipped-table location.
#pragma once

#include <string>
#include <vector>

namespace tgemm {

// Re-reads the tables named by the TGEMM_CONFIG_* variables (or the shipped ones) and the other
// TGEMM_* variables, and forgets every cached dispatch decision. Safe while other threads call
// GEMMs: a call already resolved finishes on the previous tables, later calls use the new ones.
// Each reload keeps the previous dispatcher alive until exit (its tables and caches, typically well
// under 1 MB): reload when the configuration changes, not per call.
void reload_config();

// Directory that holds the shipped tables (configs/). Order: TGEMM_CONFIG_DIR, the value set
// below, the install directory, the source tree the library was built from.
std::string shipped_config_dir();
void set_shipped_config_dir(const std::string& dir);

// The table files in use for the a16w16 family on the current device, in merge order: the
// shipped table (or TGEMM_CONFIG_GEMM_BF16's list) and, with the shipped table, the overlay of
// the device's card where one exists (configs/<card>/bf16_tuned_gemm.csv). Without a GPU, the
// settings' files.
std::vector<std::string> a16w16_table_files();

// Frees the workspaces tgemm owns (per device and stream). Call only when no GEMM is in flight.
void release_workspaces();

}  // namespace tgemm
