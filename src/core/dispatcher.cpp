#include "core/dispatcher.h"

#include <fstream>
#include <mutex>

#include "core/check.h"
#include "core/log.h"

namespace tgemm {

std::string arch_name(int cc_major, int cc_minor) {
  // Compute capability 9.0 parts all carry the sm_90a feature set (wgmma, setmaxnreg) that the
  // Hopper kernels are built for, so tables name it that way.
  if (cc_major == 9 && cc_minor == 0) return "sm_90a";
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

Dispatcher::Dispatcher(const Registry& registry, const Platform& platform, Settings settings)
    : registry_(registry), platform_(platform), settings_(std::move(settings)) {
  for (const auto& w : settings_.warnings) log_warning(w);
  for (OpFamily f : kAllOpFamilies) {
    const FamilySettings& fs = settings_.family(f);
    // An env list is every device's table, so its warnings belong to the load; the shipped shared
    // table waits for a device that uses it (no card table of its own).
    if (fs.card_table_dir.empty()) table(f);
    if (settings_.capture) captures_[static_cast<int>(f)] = std::make_unique<Capture>(fs.untuned_file, f);
  }
}

const Table& Dispatcher::table(OpFamily f) {
  const auto i = static_cast<std::size_t>(f);
  std::call_once(tables_loaded_.at(i), [&] {
    std::vector<std::string> warnings;
    for (const auto& file : settings_.family(f).table_files) tables_[i].load_file(file, warnings);
    for (const auto& w : warnings) log_warning(w);
  });
  return tables_[i];
}

const Table* Dispatcher::card_table(OpFamily f, const DeviceInfo& dev, std::string* card_file) {
  return card_tables_.find(settings_.family(f).card_table_dir, dev.name, family_info(f).tuned_file, card_file);
}

const Table& Dispatcher::table_for(OpFamily f, const DeviceInfo& dev) {
  const Table* own = card_table(f, dev, nullptr);
  return own ? *own : table(f);
}

std::vector<std::string> Dispatcher::table_files_for(OpFamily f, const DeviceInfo& dev) {
  std::string card_file;
  if (card_table(f, dev, &card_file)) return {card_file};
  return settings_.family(f).table_files;
}

const Resolution& Dispatcher::resolve(const GemmProblem& p) {
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = cache_.find(p);
    if (it != cache_.end()) return it->second;
  }
  const Resolution* res = nullptr;
  {
    std::lock_guard<std::mutex> resolving(resolve_mutex_);
    {
      std::shared_lock<std::shared_mutex> lock(mutex_);
      auto it = cache_.find(p);
      if (it != cache_.end()) return it->second;
    }
    Resolution r = walk_and_validate(p);
    std::unique_lock<std::shared_mutex> lock(mutex_);
    // resolve_mutex_ is held and p was not cached, so this inserts; unordered_map nodes do not
    // move, so the reference outlives the lock.
    res = &cache_.emplace(p, std::move(r)).first->second;
  }
  // After every lock is released: the log sink and the capture file (flock, fsync) can block for
  // as long as another thread or process holds them, and no other resolve may wait on that.
  announce_first_resolution(p, *res);
  return *res;
}

void Dispatcher::announce_first_resolution(const GemmProblem& p, const Resolution& res) {
  if (settings_.log_tuned_config) {
    std::string msg = detail::concat(family_info(p.family).op, " ", p.describe(), ": ");
    if (res.level == WalkLevel::kDefault) {
      msg += "no tuned row, default";
    } else {
      msg += detail::concat("level ", walk_level_name(res.level), " tuned_M=", res.matched_m, " in ", res.file, ":",
                            res.line);
    }
    msg += detail::concat(", libtype ", res.solution->libtype(), ", kernelName ", res.solution->name());
    log_info(msg);
  }
  // Only shapes no measured row serves: a tune of the capture adds their rows.
  const auto& capture = captures_.at(static_cast<std::size_t>(p.family));
  if (capture && res.level == WalkLevel::kDefault) capture->record(p);
}

void Dispatcher::warn_sm_count_once(const DeviceInfo& dev, OpFamily f) {
  // The card is part of the key: devices of two cards with one arch and SM count read two tables.
  std::string key = dev.arch + "/" + std::to_string(dev.sm_count) + "/" + card_slug(dev.name) + "/" +
                    std::string(family_info(f).table);
  {
    std::lock_guard<std::mutex> lock(warn_mutex_);
    if (!sm_warned_.insert(key).second) return;
  }
  for (const auto& [file, counts] : table_for(f, dev).files_for_other_sm_counts(dev.arch, dev.sm_count)) {
    std::string msg = detail::concat(file, ": rows for ", dev.arch, " exist only for sm_count");
    for (int c : counts) msg += detail::concat(" ", c);
    msg += detail::concat("; this device (", dev.name, ") has ", dev.sm_count,
                          " SMs, so none of this file's rows are used: tune for this GPU");
    log_warning(msg);
  }
}

SolutionPtr Dispatcher::solution_for_row(const TableRow& row, const GemmProblem& p) const {
  const std::string where = row.file + ":" + std::to_string(row.line);
  const Backend* backend = registry_.find(row.libtype);
  if (backend == nullptr) {
    log_warning_once("row:" + where, where + ": libtype '" + row.libtype + "' is not in this build, row skipped");
    return nullptr;
  }
  std::string why;
  SolutionPtr s;
  try {
    s = backend->from_row(row, p, why);
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!s) {
    log_warning_once("row:" + where, where + ": " + why + ", row skipped");
    return nullptr;
  }
  if (!s->can_implement(p)) {
    log_warning_once("row:" + where, where + ": " + s->name() + " cannot implement " + p.describe() + ", row skipped");
    return nullptr;
  }
  return s;
}

Resolution Dispatcher::walk_and_validate(const GemmProblem& p) {
  const DeviceInfo& dev = platform_.device_info(p.device);
  warn_sm_count_once(dev, p.family);
  TableKey key = table_key(p, dev.arch, dev.sm_count);
  const Table::RowsByM* rows = table_for(p.family, dev).rows_for(key);
  if (const TableRow* row = find_row(rows, p.m)) {
    if (SolutionPtr s = solution_for_row(*row, p)) {
      const WalkLevel level = row->m == p.m ? WalkLevel::kExact : WalkLevel::kRange;
      return Resolution{std::move(s), level, row->m, row->file, row->line};
    }
  }
  SolutionPtr s = registry_.default_solution(p);
  TGEMM_CHECK(s != nullptr, family_info(p.family).op, "no solution in this build can implement ",
              p.describe());
  return Resolution{std::move(s), WalkLevel::kDefault, -1, "", 0};
}

}  // namespace tgemm
