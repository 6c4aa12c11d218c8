// A tuned table of one row per exact key (gmm's and fused_moe's: their keys hold buckets, not a
// GEMM's M, so no M ranges), and the tables of one configuration: the env list or shipped file
// merged in order, each device's card file used alone where the shipped directory has one, the
// TGEMM_TUNE_GEMM capture of untuned keys and the TGEMM_LOG_TUNED_CONFIG log. Host-only.
//
// Traits names the table's types and text:
//   Key (arch, sm_count and ==), Row (key, us, file, line), Hash (of Key, e.g. through hash_key),
//   Parsed parse(std::istream&, const std::string& file): rows and warnings of one file,
//   std::string untuned_row(const Key&): the capture's row of a key,
//   const std::vector<std::string>& untuned_columns(), const FamilyInfo& family(),
//   auto order(const Key&): a tuple that orders all_rows(),
//   kName ("gmm"), kTuneCommand ("tgemm tune-gmm") for the warning that rows are another card's.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <istream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/capture.h"
#include "core/card_tables.h"
#include "core/log.h"
#include "core/platform.h"
#include "core/settings.h"
#include "core/table_rows.h"

namespace tgemm {

// A key's hash: its arch's, combined with each of `fields` in turn (boost's hash_combine step).
inline std::size_t hash_key(const std::string& arch, std::initializer_list<std::size_t> fields) {
  std::size_t h = std::hash<std::string>()(arch);
  for (std::size_t v : fields) h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

// The rows of one file of a keyed table, and one warning per line skipped.
template <typename Row>
struct ParsedRows {
  std::vector<Row> rows;
  std::vector<std::string> warnings;  // "file:line: reason, row skipped", one per skipped line
};

// Parses one file of a keyed table (read_table_rows: a header lacking one of `required` or naming a
// column twice skips the file with one warning): each data line becomes a Row, its file and line
// set, through Reader(columns, fields).read(&row), which returns an empty string for a kept row or
// the reason it is skipped.
template <typename Row, typename Reader>
ParsedRows<Row> parse_keyed_rows(std::istream& in, const std::string& file, const csv::ReadLimits& limits,
                                 const std::vector<const char*>& required) {
  ParsedRows<Row> out;
  TableScan scan = read_table_rows(in, file, limits, required,
                                   [&](const TableColumns& cols, const std::vector<std::string>& fields, int line) {
                                     Row row;
                                     row.file = file;
                                     row.line = line;
                                     std::string bad = Reader(cols, fields).read(&row);
                                     if (bad.empty()) out.rows.push_back(std::move(row));
                                     return bad;
                                   });
  out.warnings = std::move(scan.warnings);
  return out;
}

template <typename Traits>
class KeyedTable {
 public:
  using Key = typename Traits::Key;
  using Row = typename Traits::Row;

  // Reads `path`; a missing or unreadable file is a warning, not an error.
  void load_file(const std::string& path, std::vector<std::string>& warnings) {
    std::ifstream in;
    if (!open_table_file(path, &in, warnings)) return;
    auto parsed = Traits::parse(in, path);
    warnings.insert(warnings.end(), parsed.warnings.begin(), parsed.warnings.end());
    add_rows(parsed.rows);
  }
  // The rows of one file: within it a repeated key keeps the lowest us; they replace earlier
  // files' rows of their keys.
  void add_rows(const std::vector<Row>& rows_of_one_file) {
    std::unordered_map<Key, Row, typename Traits::Hash> file_rows;
    for (const Row& r : rows_of_one_file) {
      arch_sms_[r.key.arch].insert(r.key.sm_count);
      auto it = file_rows.find(r.key);
      if (it == file_rows.end() || r.us < it->second.us) file_rows[r.key] = r;
    }
    for (auto& [key, row] : file_rows) rows_[key] = std::move(row);
  }
  // The row of this key; nullptr if none.
  const Row* find(const Key& key) const {
    auto it = rows_.find(key);
    return it == rows_.end() ? nullptr : &it->second;
  }
  std::size_t size() const { return rows_.size(); }
  // SM counts of `arch` with rows in some file, where none has `sm_count`: a table of another GPU
  // of the same architecture, none of whose rows apply here (one warning says so).
  std::vector<int> other_sm_counts(const std::string& arch, int sm_count) const {
    auto it = arch_sms_.find(arch);
    if (it == arch_sms_.end() || it->second.count(sm_count) != 0) return {};
    return {it->second.begin(), it->second.end()};
  }
  // Every row, ordered by key (Traits::order).
  std::vector<const Row*> all_rows() const {
    std::vector<const Row*> out;
    out.reserve(rows_.size());
    for (const auto& [key, row] : rows_) out.push_back(&row);
    std::sort(out.begin(), out.end(),
              [](const Row* a, const Row* b) { return Traits::order(a->key) < Traits::order(b->key); });
    return out;
  }

 private:
  std::unordered_map<Key, Row, typename Traits::Hash> rows_;
  std::map<std::string, std::set<int>> arch_sms_;
};

// The tables of one configuration (one reload_config). Thread-safe.
template <typename Traits>
class KeyedTables {
 public:
  using Table = KeyedTable<Traits>;
  using Key = typename Traits::Key;

  KeyedTables(FamilySettings settings, bool capture, bool log_choices)
      : settings_(std::move(settings)), log_choices_(log_choices) {
    if (capture) capture_ = std::make_unique<Capture>(settings_.untuned_file, Traits::untuned_columns());
  }

  // The table of dev's card where one exists, else the shared table (env list or shipped file);
  // each loaded once, its warnings logged, with one warning where its rows are for another SM
  // count of dev's arch. Remembered per device ordinal, so later calls take no lock and allocate
  // nothing (the op consults it on every call, CUDA-graph capture included).
  const Table& table_for(const DeviceInfo& dev) {
    if (dev.ordinal < 0 || dev.ordinal >= kMaxDevices) return load_for(dev);
    auto& slot = by_device_[static_cast<std::size_t>(dev.ordinal)];
    const Table* t = slot.load(std::memory_order_acquire);
    if (t == nullptr) {
      t = &load_for(dev);
      slot.store(t, std::memory_order_release);
    }
    return *t;
  }
  // The files behind table_for(dev), in merge order.
  std::vector<std::string> files_for(const DeviceInfo& dev) {
    std::string file;
    if (card_table(dev, &file)) return {file};
    return settings_.table_files;
  }
  // Records a key no row serves (TGEMM_TUNE_GEMM), once per key.
  void record_untuned(const Key& key) {
    if (capture_) capture_->record_row(Traits::untuned_row(key));
  }
  // Whether TGEMM_LOG_TUNED_CONFIG asked for the log, and whether `line` (a key's choice) is said
  // for the first time.
  bool log_choices() const { return log_choices_; }
  bool first_time(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    return said_.insert(line).second;
  }
  const FamilySettings& settings() const { return settings_; }

 private:
  static void warn_other_sm_counts(const Table& table, const DeviceInfo& dev, const std::string& files) {
    const std::vector<int> counts = table.other_sm_counts(dev.arch, dev.sm_count);
    if (counts.empty()) return;
    std::string msg = files + ": " + Traits::kName + " rows for " + dev.arch + " exist only for sm_count";
    for (int c : counts) msg += " " + std::to_string(c);
    msg += "; this device (" + dev.name + ") has " + std::to_string(dev.sm_count) +
           " SMs, so none of them are used: tune for this GPU (" + Traits::kTuneCommand + ")";
    log_warning_once(std::string(Traits::kName) + "-sm:" + files + "/" + dev.arch + "/" + std::to_string(dev.sm_count),
                     msg);
  }

  const Table* card_table(const DeviceInfo& dev, std::string* file) {
    return card_tables_.find(settings_.card_table_dir, dev.name, Traits::family().tuned_file, file);
  }

  const Table& load_for(const DeviceInfo& dev) {
    std::string file;
    if (const Table* own = card_table(dev, &file)) {
      warn_other_sm_counts(*own, dev, file);
      return *own;
    }
    std::call_once(shared_loaded_, [&] {
      std::vector<std::string> warnings;
      for (const auto& f : settings_.table_files) shared_.load_file(f, warnings);
      for (const auto& w : warnings) log_warning(w);
    });
    std::string files;
    for (const auto& f : settings_.table_files) files += (files.empty() ? "" : ":") + f;
    warn_other_sm_counts(shared_, dev, files);
    return shared_;
  }

  static constexpr int kMaxDevices = 64;

  FamilySettings settings_;
  bool log_choices_;
  std::unique_ptr<Capture> capture_;
  std::once_flag shared_loaded_;
  Table shared_;
  CardTables<Table> card_tables_;
  std::mutex mutex_;  // said_
  std::set<std::string> said_;
  std::array<std::atomic<const Table*>, kMaxDevices> by_device_{};
};

}  // namespace tgemm
