#include "tests/common/host_fakes.h"

#include <stdexcept>

#include "core/table.h"

namespace tgemm::test {

FakePlatform::FakePlatform(std::string arch, int sm_count, std::string name) {
  info_.ordinal = 0;
  info_.name = std::move(name);
  info_.arch = std::move(arch);
  info_.sm_count = sm_count;
  info_.l2_bytes = 50u << 20;
}

const DeviceInfo& FakePlatform::device_info(int ordinal) const {
  if (ordinal != 0)
    throw std::out_of_range("FakePlatform has one device, asked for " + std::to_string(ordinal));
  return info_;
}

FakeSolution::FakeSolution(std::string name, std::string libtype, Predicate accepts)
    : name_(std::move(name)), libtype_(std::move(libtype)), accepts_(std::move(accepts)) {}

bool FakeSolution::can_implement(const GemmProblem& p) const noexcept {
  return !accepts_ || accepts_(p);
}

FakeBackend::FakeBackend(std::string libtype, const std::vector<std::string>& tiles,
                         const std::string& default_tile)
    : libtype_(std::move(libtype)) {
  for (const auto& tile : tiles) {
    std::string name = libtype_ + ":" + tile;
    solutions_[name] = std::make_shared<FakeSolution>(name, libtype_);
  }
  if (!default_tile.empty()) {
    default_name_ = libtype_ + ":" + default_tile;
    if (!solutions_.count(default_name_)) {
      solutions_[default_name_] = std::make_shared<FakeSolution>(default_name_, libtype_);
    }
  }
}

void FakeBackend::set_accepts(const std::string& name, FakeSolution::Predicate accepts) {
  solutions_.at(name) = std::make_shared<FakeSolution>(name, libtype_, std::move(accepts));
}

SolutionPtr FakeBackend::solution(const std::string& name) const { return solutions_.at(name); }

int FakeBackend::from_row_calls_for_m(std::int64_t m) const {
  std::lock_guard<std::mutex> lock(calls_mutex_);
  auto it = calls_by_m_.find(m);
  return it == calls_by_m_.end() ? 0 : it->second;
}

SolutionPtr FakeBackend::from_row(const TableRow& row, const GemmProblem& p,
                                  std::string& why) const {
  ++total_calls_;
  {
    std::lock_guard<std::mutex> lock(calls_mutex_);
    ++calls_by_m_[p.m];
  }
  if (hook_) hook_(p);
  if (!throws_.empty() && row.kernel_name == throws_) {
    throw std::runtime_error("fake from_row failure for " + row.kernel_name);
  }
  auto it = solutions_.find(row.kernel_name);
  if (it == solutions_.end()) {
    why = "unknown kernelName '" + row.kernel_name + "'";
    return nullptr;
  }
  return it->second;
}

SolutionPtr FakeBackend::default_solution(const GemmProblem&) const {
  if (default_name_.empty()) return nullptr;
  return solutions_.at(default_name_);
}

std::vector<SolutionPtr> FakeBackend::candidates(const GemmProblem&) const {
  std::vector<SolutionPtr> out;
  for (const auto& [name, s] : solutions_) out.push_back(s);
  return out;
}

GemmProblem a16w16_problem(std::int64_t m, std::int64_t n, std::int64_t k, bool bias) {
  GemmProblem p;
  p.family = OpFamily::kA16W16;
  p.m = m;
  p.n = n;
  p.k = k;
  p.epilogue = bias ? Epilogue::kBias : Epilogue::kNone;
  p.lda = k;
  p.ldb = k;
  p.ldo = n;
  return p;
}

}  // namespace tgemm::test
