#include "core/registry.h"

#include "core/check.h"

namespace tgemm {

void Registry::add(std::unique_ptr<Backend> backend) {
  TGEMM_CHECK(backend != nullptr, "Registry::add", "backend must not be null");
  TGEMM_CHECK(find(backend->libtype()) == nullptr, "Registry::add", "libtype '",
              backend->libtype(), "' is already registered");
  backends_.push_back(std::move(backend));
}

const Backend* Registry::find(std::string_view libtype) const {
  for (const auto& b : backends_) {
    if (b->libtype() == libtype) return b.get();
  }
  return nullptr;
}

SolutionPtr Registry::default_solution(const GemmProblem& p) const {
  for (const auto& b : backends_) {
    SolutionPtr s = b->default_solution(p);
    if (s && s->can_implement(p)) return s;
  }
  return nullptr;
}

}  // namespace tgemm
