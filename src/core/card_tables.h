// The per-card tuned tables of one family: a device whose card has <dir>/<card_slug>/<tuned_file>
// (core/settings.h) reads that file alone, loaded once per path, its warnings logged. A shared row
// was measured on another card, and a row serves only where it was measured to win. Used by the
// GEMM dispatcher and by the keyed tables (gmm, fused_moe). Thread-safe; host-only. Entries are
// never removed, so the pointers it returns stay valid.
#pragma once

#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/log.h"
#include "core/settings.h"

namespace tgemm {

// Table: default-constructible, with load_file(path, std::vector<std::string>& warnings).
template <class Table>
class CardTables {
 public:
  // The card table of `device_name` under `dir` (empty: none), or nullptr where the card has no
  // file; `file` (optional) gets its path.
  const Table* find(const std::string& dir, const std::string& device_name, std::string_view tuned_file,
                    std::string* file) {
    if (dir.empty()) return nullptr;
    const std::string card = card_slug(device_name);
    if (card.empty()) return nullptr;
    const std::string path = card_table_file(dir, card, tuned_file);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = tables_.find(path);
    if (it == tables_.end()) {
      std::unique_ptr<Table> own;
      if (std::ifstream(path).good()) {
        std::vector<std::string> warnings;
        own = std::make_unique<Table>();
        own->load_file(path, warnings);
        for (const auto& w : warnings) log_warning(w);
      }
      it = tables_.emplace(path, std::move(own)).first;
    }
    if (!it->second) return nullptr;
    if (file != nullptr) *file = path;
    return it->second.get();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Table>> tables_;  // by path; null: no file
};

}  // namespace tgemm
