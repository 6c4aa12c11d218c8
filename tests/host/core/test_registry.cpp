#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/registry.h"
#include "tests/common/host_fakes.h"
#include "tgemm/error.h"

namespace tgemm {
namespace {

using test::a16w16_problem;
using test::FakeBackend;

TEST(Registry, FindsBackendsByLibtype) {
  Registry r;
  auto a = std::make_unique<FakeBackend>("cublaslt", std::vector<std::string>{"x"});
  auto b = std::make_unique<FakeBackend>("skinny", std::vector<std::string>{"y"});
  const Backend* pa = a.get();
  const Backend* pb = b.get();
  r.add(std::move(a));
  r.add(std::move(b));
  EXPECT_EQ(r.find("cublaslt"), pa);
  EXPECT_EQ(r.find("skinny"), pb);
  EXPECT_EQ(r.find("cutlass"), nullptr);
  EXPECT_EQ(r.find(""), nullptr);
  EXPECT_EQ(r.find("cublas"), nullptr);  // no prefix matching
  ASSERT_EQ(r.backends().size(), 2u);
  EXPECT_EQ(r.backends()[0].get(), pa);  // registration order
  EXPECT_EQ(r.backends()[1].get(), pb);
}

TEST(Registry, RejectsNullAndDuplicateBackends) {
  Registry r;
  EXPECT_THROW(r.add(nullptr), Error);
  r.add(std::make_unique<FakeBackend>("fake", std::vector<std::string>{}));
  try {
    r.add(std::make_unique<FakeBackend>("fake", std::vector<std::string>{}));
    FAIL() << "duplicate libtype accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fake'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.backends().size(), 1u);
}

TEST(Registry, DefaultIsTheFirstBackendDefaultThatCanImplement) {
  Registry r;
  auto skinny = std::make_unique<FakeBackend>("skinny", std::vector<std::string>{}, "gemv");
  skinny->set_accepts("skinny:gemv", [](const GemmProblem& p) { return p.m <= 8; });
  auto none = std::make_unique<FakeBackend>("none", std::vector<std::string>{"t"});
  auto lt = std::make_unique<FakeBackend>("lt", std::vector<std::string>{}, "heuristic");
  lt->set_accepts("lt:heuristic", [](const GemmProblem& p) { return p.k != 7; });
  r.add(std::move(skinny));
  r.add(std::move(none));
  r.add(std::move(lt));
  SolutionPtr small = r.default_solution(a16w16_problem(8, 64, 64));
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->name(), "skinny:gemv");
  SolutionPtr big = r.default_solution(a16w16_problem(9, 64, 64));
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->name(), "lt:heuristic");
  EXPECT_EQ(r.default_solution(a16w16_problem(9, 64, 7)), nullptr);
}

TEST(Registry, EmptyRegistryHasNoDefault) {
  Registry r;
  EXPECT_EQ(r.default_solution(a16w16_problem(1, 1, 1)), nullptr);
  EXPECT_EQ(r.find("fake"), nullptr);
}

}  // namespace
}  // namespace tgemm
