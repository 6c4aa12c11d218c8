#include "grouped/gmm_table.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <tuple>

#include "core/log.h"
#include "core/table_rows.h"

namespace tgemm {

std::int64_t gmm_rows_bucket(std::int64_t m, std::int64_t groups) {
  if (m <= 0 || groups <= 0) return 0;
  const std::int64_t per_group = m / groups + (m % groups != 0 ? 1 : 0);
  std::int64_t b = 1;
  while (b < per_group) b *= 2;
  return b;
}

bool GmmKey::operator==(const GmmKey& o) const {
  return arch == o.arch && sm_count == o.sm_count && groups == o.groups && rows_per_group == o.rows_per_group &&
         n == o.n && k == o.k && rhs_nk == o.rhs_nk && dtype == o.dtype && out_dtype == o.out_dtype && bias == o.bias;
}

std::string GmmKey::describe() const {
  return "G=" + std::to_string(groups) + " rows_per_group=" + std::to_string(rows_per_group) +
         " N=" + std::to_string(n) + " K=" + std::to_string(k) + " rhs=" + gmm_rhs_name(rhs_nk) +
         " dtype=" + std::string(dtype_name(dtype)) + " outdtype=" + std::string(dtype_name(out_dtype)) +
         " bias=" + (bias ? "True" : "False");
}

std::size_t GmmKeyHash::operator()(const GmmKey& k) const noexcept {
  std::size_t h = std::hash<std::string>()(k.arch);
  auto mix = [&h](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  mix(static_cast<std::size_t>(k.sm_count));
  mix(static_cast<std::size_t>(k.groups));
  mix(static_cast<std::size_t>(k.rows_per_group));
  mix(static_cast<std::size_t>(k.n));
  mix(static_cast<std::size_t>(k.k));
  mix(static_cast<std::size_t>(k.rhs_nk) | static_cast<std::size_t>(k.bias) << 1 |
      static_cast<std::size_t>(k.dtype) << 2 | static_cast<std::size_t>(k.out_dtype) << 10);
  return h;
}

GmmKey gmm_key(std::int64_t m, std::int64_t groups, std::int64_t n, std::int64_t k, bool rhs_nk, DType dtype,
               DType out_dtype, bool bias, const std::string& arch, int sm_count) {
  GmmKey key;
  key.arch = arch;
  key.sm_count = sm_count;
  key.groups = groups;
  key.rows_per_group = gmm_rows_bucket(m, groups);
  key.n = n;
  key.k = k;
  key.rhs_nk = rhs_nk;
  key.dtype = dtype;
  key.out_dtype = out_dtype;
  key.bias = bias;
  return key;
}

const char* gmm_rhs_name(bool rhs_nk) { return rhs_nk ? "gnk" : "gkn"; }

const std::vector<std::string>& gmm_tuned_columns() {
  static const std::vector<std::string> kColumns = {
      "arch", "sm_count",  "G",       "rows_per_group", "M",      "N",
      "K",    "rhs",       "dtype",   "outdtype",       "bias",   "solution",
      "us",   "us_skewed", "speedup", "speedup_skewed", "default"};
  return kColumns;
}

const std::vector<std::string>& gmm_untuned_columns() {
  static const std::vector<std::string> kColumns = {"G", "M", "N", "K", "rhs", "dtype", "outdtype", "bias"};
  return kColumns;
}

namespace {

// Dimensions within int32: the bound validate_gmm puts on a call's (the kernels index with int32).
constexpr long long kMaxDim = std::numeric_limits<std::int32_t>::max();

bool is_power_of_two(long long v) { return v > 0 && (v & (v - 1)) == 0; }

// One data line's fields as a row: an empty return means the row is good, else the first reason
// it is not.
class GmmRowReader : public RowFields {
 public:
  using RowFields::RowFields;
  std::string read(GmmRow* row);

 private:
  std::optional<DType> get_optional_dtype(const char* name) {
    const std::string* f = field(name);
    if (f == nullptr || f->empty()) return std::nullopt;
    auto dt = dtype_from_name(*f);
    if (!dt) fail(std::string("unknown ") + name + " '" + *f + "'");
    return dt;
  }
};

std::string GmmRowReader::read(GmmRow* row) {
  GmmKey& key = row->key;
  key.arch = *field("arch");
  if (key.arch.empty()) fail("empty arch");
  key.sm_count = static_cast<int>(get_int("sm_count", -1, 1, kMaxDim));
  key.groups = get_int("G", -1, 1, kMaxDim);
  key.rows_per_group = get_int("rows_per_group", -1, 1, kMaxDim);
  if (bad().empty() && !is_power_of_two(key.rows_per_group)) {
    fail("rows_per_group must be a power of two (a bucket of gmm_rows_bucket), got " +
         std::to_string(key.rows_per_group));
  }
  const std::string* m = field("M");
  row->m = m != nullptr && !m->empty() ? get_int("M", 0, 1, kMaxDim) : 0;
  if (bad().empty() && row->m > 0 && gmm_rows_bucket(row->m, key.groups) != key.rows_per_group) {
    fail("M=" + std::to_string(row->m) + " with G=" + std::to_string(key.groups) + " is in bucket " +
         std::to_string(gmm_rows_bucket(row->m, key.groups)) + ", not rows_per_group " +
         std::to_string(key.rows_per_group));
  }
  key.n = get_int("N", -1, 1, kMaxDim);
  key.k = get_int("K", -1, 1, kMaxDim);
  const std::string& rhs = *field("rhs");
  if (rhs == "gnk" || rhs == "gkn") {
    key.rhs_nk = rhs == "gnk";
  } else {
    fail("rhs must be gkn ([G, K, N]) or gnk ([G, N, K]), got '" + rhs + "'");
  }
  const auto dtype = get_optional_dtype("dtype");
  if (!dtype) {
    fail("missing dtype");
  } else if (*dtype != DType::kBFloat16 && *dtype != DType::kFloat16) {
    fail("dtype must be torch.bfloat16 or torch.float16 (gmm's inputs), got " + std::string(dtype_name(*dtype)));
  }
  key.dtype = dtype.value_or(DType::kBFloat16);
  const auto out = get_optional_dtype("outdtype");
  key.out_dtype = out.value_or(key.dtype);
  if (out && *out != key.dtype && *out != DType::kFloat32) {
    fail("outdtype must be dtype or torch.float32, got " + std::string(dtype_name(*out)));
  }
  const std::string* bias = field("bias");
  if (bias != nullptr && !bias->empty()) {
    const auto b = csv::parse_bool(*bias);
    if (!b) fail("bad bias '" + *bias + "' (expected True or False)");
    key.bias = b.value_or(false);
  }
  row->solution = *field("solution");
  if (row->solution.empty()) fail("empty solution");
  row->us = get_measure("us");
  row->us_skewed = get_measure("us_skewed");
  row->speedup = get_measure("speedup");
  row->speedup_skewed = get_measure("speedup_skewed");
  if (const std::string* d = field("default")) row->default_solution = *d;
  return bad();
}

}  // namespace

ParsedGmmTable parse_gmm_table(std::istream& in, const std::string& file, const csv::ReadLimits& limits) {
  ParsedGmmTable out;
  TableScan scan = read_table_rows(in, file, limits,
                                   {"arch", "sm_count", "G", "rows_per_group", "N", "K", "rhs", "dtype", "solution"},
                                   [&](const TableColumns& cols, const std::vector<std::string>& fields, int line) {
                                     GmmRow row;
                                     row.file = file;
                                     row.line = line;
                                     std::string bad = GmmRowReader(cols, fields).read(&row);
                                     if (bad.empty()) out.rows.push_back(std::move(row));
                                     return bad;
                                   });
  out.warnings = std::move(scan.warnings);
  return out;
}

std::string format_gmm_row(const GmmRow& r) {
  return csv::join({r.key.arch, std::to_string(r.key.sm_count), std::to_string(r.key.groups),
                    std::to_string(r.key.rows_per_group), r.m > 0 ? std::to_string(r.m) : "", std::to_string(r.key.n),
                    std::to_string(r.key.k), gmm_rhs_name(r.key.rhs_nk), std::string(dtype_name(r.key.dtype)),
                    std::string(dtype_name(r.key.out_dtype)), py_bool(r.key.bias), r.solution, format_measure(r.us),
                    format_measure(r.us_skewed), format_measure(r.speedup), format_measure(r.speedup_skewed),
                    r.default_solution});
}

std::string format_gmm_untuned_row(const GmmKey& key) {
  return csv::join({std::to_string(key.groups), std::to_string(key.groups * key.rows_per_group), std::to_string(key.n),
                    std::to_string(key.k), gmm_rhs_name(key.rhs_nk), std::string(dtype_name(key.dtype)),
                    std::string(dtype_name(key.out_dtype)), py_bool(key.bias)});
}

void GmmTable::load_file(const std::string& path, std::vector<std::string>& warnings) {
  std::ifstream in;
  if (!open_table_file(path, &in, warnings)) return;
  ParsedGmmTable parsed = parse_gmm_table(in, path);
  warnings.insert(warnings.end(), parsed.warnings.begin(), parsed.warnings.end());
  add_rows(parsed.rows);
}

void GmmTable::add_rows(const std::vector<GmmRow>& rows) {
  std::unordered_map<GmmKey, GmmRow, GmmKeyHash> file_rows;
  for (const GmmRow& r : rows) {
    arch_sms_[r.key.arch].insert(r.key.sm_count);
    auto it = file_rows.find(r.key);
    if (it == file_rows.end() || r.us < it->second.us) file_rows[r.key] = r;
  }
  for (auto& [key, row] : file_rows) rows_[key] = std::move(row);
}

const GmmRow* GmmTable::find(const GmmKey& key) const {
  auto it = rows_.find(key);
  return it == rows_.end() ? nullptr : &it->second;
}

std::vector<int> GmmTable::other_sm_counts(const std::string& arch, int sm_count) const {
  auto it = arch_sms_.find(arch);
  if (it == arch_sms_.end() || it->second.count(sm_count) != 0) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<const GmmRow*> GmmTable::all_rows() const {
  std::vector<const GmmRow*> out;
  out.reserve(rows_.size());
  for (const auto& [key, row] : rows_) out.push_back(&row);
  std::sort(out.begin(), out.end(), [](const GmmRow* a, const GmmRow* b) {
    const GmmKey &x = a->key, &y = b->key;
    return std::make_tuple(x.arch, x.sm_count, x.groups, x.n, x.k, x.rhs_nk, static_cast<int>(x.dtype),
                           static_cast<int>(x.out_dtype), x.bias, x.rows_per_group) <
           std::make_tuple(y.arch, y.sm_count, y.groups, y.n, y.k, y.rhs_nk, static_cast<int>(y.dtype),
                           static_cast<int>(y.out_dtype), y.bias, y.rows_per_group);
  });
  return out;
}

GmmTables::GmmTables(FamilySettings settings, bool capture, bool log_choices)
    : settings_(std::move(settings)), log_choices_(log_choices) {
  if (capture) capture_ = std::make_unique<Capture>(settings_.untuned_file, gmm_untuned_columns());
}

namespace {

void warn_other_sm_counts(const GmmTable& table, const DeviceInfo& dev, const std::string& files) {
  const std::vector<int> counts = table.other_sm_counts(dev.arch, dev.sm_count);
  if (counts.empty()) return;
  std::string msg = files + ": gmm rows for " + dev.arch + " exist only for sm_count";
  for (int c : counts) msg += " " + std::to_string(c);
  msg += "; this device (" + dev.name + ") has " + std::to_string(dev.sm_count) +
         " SMs, so none of them are used: tune for this GPU (tgemm tune-gmm)";
  log_warning_once("gmm-sm:" + files + "/" + dev.arch + "/" + std::to_string(dev.sm_count), msg);
}

}  // namespace

const GmmTable* GmmTables::card_table(const DeviceInfo& dev, std::string* file) {
  if (settings_.card_table_dir.empty()) return nullptr;
  const std::string card = card_slug(dev.name);
  if (card.empty()) return nullptr;
  const std::string path = card_table_file(settings_.card_table_dir, card, gmm_family_info().tuned_file);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = card_tables_.find(path);
  if (it == card_tables_.end()) {
    std::unique_ptr<GmmTable> own;
    if (std::ifstream(path).good()) {
      // The card's rows alone: a shared row was measured on another card.
      std::vector<std::string> warnings;
      own = std::make_unique<GmmTable>();
      own->load_file(path, warnings);
      for (const auto& w : warnings) log_warning(w);
    }
    it = card_tables_.emplace(path, std::move(own)).first;
  }
  if (!it->second) return nullptr;
  if (file != nullptr) *file = path;
  return it->second.get();
}

const GmmTable& GmmTables::table_for(const DeviceInfo& dev) {
  if (dev.ordinal < 0 || dev.ordinal >= kMaxDevices) return load_for(dev);
  auto& slot = by_device_[static_cast<std::size_t>(dev.ordinal)];
  const GmmTable* t = slot.load(std::memory_order_acquire);
  if (t == nullptr) {
    t = &load_for(dev);
    slot.store(t, std::memory_order_release);
  }
  return *t;
}

const GmmTable& GmmTables::load_for(const DeviceInfo& dev) {
  std::string file;
  if (const GmmTable* own = card_table(dev, &file)) {
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

std::vector<std::string> GmmTables::files_for(const DeviceInfo& dev) {
  std::string file;
  if (card_table(dev, &file)) return {file};
  return settings_.table_files;
}

void GmmTables::record_untuned(const GmmKey& key) {
  if (capture_) capture_->record_row(format_gmm_untuned_row(key));
}

bool GmmTables::first_time(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex_);
  return said_.insert(line).second;
}

}  // namespace tgemm
