// The dispatcher: looks a problem up in the loaded tables (lookup walk), validates the row
// against the registry (backend present, solution known to this build, configuration valid,
// can_implement), and falls back to the registry's default. Each exact problem is resolved once
// and cached, so the hot path is a hash lookup under a shared lock: no allocation, no
// synchronisation, no heuristic query, hence safe inside CUDA-graph capture once warm. The first
// resolution of a problem logs and records it (TGEMM_TUNE_GEMM) after releasing every lock, so a
// cached resolve never waits on file I/O of another thread or process.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/capture.h"
#include "core/card_tables.h"
#include "core/lookup.h"
#include "core/platform.h"
#include "core/registry.h"
#include "core/settings.h"
#include "core/table.h"

namespace tgemm {

struct Resolution {
  SolutionPtr solution;
  WalkLevel level = WalkLevel::kDefault;
  std::int64_t matched_m = -1;
  std::string file;
  int line = 0;
};

class Dispatcher {
 public:
  // Loads the tables named by `settings`; their warnings go to the log.
  Dispatcher(const Registry& registry, const Platform& platform, Settings settings);

  // Thread-safe. The reference stays valid until the Dispatcher is destroyed. Throws
  // tgemm::Error when not even a default solution can implement p.
  const Resolution& resolve(const GemmProblem& p);

  // The family's table of Settings' table_files: the whole table of an env list, and of a device
  // whose card has no table of its own. Loaded at construction for an env list; with a card table
  // directory at its first use, so a device whose card has its own table never reads it.
  // Thread-safe.
  const Table& table(OpFamily f);
  // The table lookups on `dev` use: where Settings names a card table directory and dev's card
  // has a file there, that file alone (loaded once per card, its warnings logged); else table(f).
  // Thread-safe.
  const Table& table_for(OpFamily f, const DeviceInfo& dev);
  // The files behind table_for(f, dev), in merge order.
  std::vector<std::string> table_files_for(OpFamily f, const DeviceInfo& dev);
  const Settings& settings() const { return settings_; }
  const Registry& registry() const { return registry_; }
  const Platform& platform() const { return platform_; }

 private:
  Resolution walk_and_validate(const GemmProblem& p);
  // The TGEMM_LOG_TUNED_CONFIG line and the capture of a problem resolved for the first time;
  // called with no lock of this class held.
  void announce_first_resolution(const GemmProblem& p, const Resolution& res);
  // The row's solution for p, or nullptr after one warning naming the row's file and line.
  SolutionPtr solution_for_row(const TableRow& row, const GemmProblem& p) const;
  // The table of dev's card for f (loaded once), its file in *card_file; nullptr where no card
  // table applies (no card table directory, no card, no file).
  const Table* card_table(OpFamily f, const DeviceInfo& dev, std::string* card_file);
  void warn_sm_count_once(const DeviceInfo& dev, OpFamily f);

  const Registry& registry_;
  const Platform& platform_;
  Settings settings_;
  // By OpFamily: the tables of table_files, each loaded once (call_once: lookups on several
  // devices may need it at once).
  std::array<Table, kOpFamilies> tables_;
  std::array<std::once_flag, kOpFamilies> tables_loaded_;
  std::array<std::unique_ptr<Capture>, kOpFamilies> captures_;

  std::shared_mutex mutex_;
  // Serialises first resolutions, so concurrent first calls of one shape walk once (each walk may
  // query cuBLASLt and check rows); cached shapes never take it.
  std::mutex resolve_mutex_;
  std::unordered_map<GemmProblem, Resolution, GemmProblemHash> cache_;
  std::mutex warn_mutex_;
  std::unordered_set<std::string> sm_warned_;
  // By card table file (family and card): its table, or nullptr where the file does not exist.
  // Entries are never removed, so pointers stay valid.
  CardTables<Table> card_tables_;
};

}  // namespace tgemm
