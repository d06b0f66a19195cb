// The one main() of every test executable: doctest's, plus the skip count
// of tests/common/skip.hpp. An executable all of whose test cases were
// skipped (no OpenCL, no CUDA driver, ...) exits with kSkipExitCode, which
// CTest reports as skipped rather than passed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>

#include "common/skip.hpp"

namespace {

/// The test cases that ran and those that skipped themselves.
struct SkipCount {
  std::mutex mutex;
  std::string running;
  int started = 0;
  std::set<std::string> skipped;
};

SkipCount& skip_count() {
  static SkipCount count;
  return count;
}

/// Counts the test cases doctest starts and names the one running (a
/// listener: doctest's own reporter still prints everything).
struct SkipListener final : doctest::IReporter {
  explicit SkipListener(const doctest::ContextOptions&) {}

  void test_case_start(const doctest::TestCaseData& data) override {
    std::lock_guard lock(skip_count().mutex);
    ++skip_count().started;
    skip_count().running = data.m_name;
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

REGISTER_LISTENER("canopy-skips", 1, SkipListener);

}  // namespace

namespace canopy_test {

bool opencl_required() {
  const char* require = std::getenv("CANOPY_TEST_REQUIRE_OPENCL");
  return require && std::string(require) == "1";
}

void skip(const std::string& reason, Needs needs) {
  if (needs == Needs::OpenCL && opencl_required()) {
    FAIL_CHECK(reason << ", but CANOPY_TEST_REQUIRE_OPENCL=1 says OpenCL must be here");
    return;
  }
  std::string name;
  {
    std::lock_guard lock(skip_count().mutex);
    skip_count().skipped.insert(skip_count().running);
    name = skip_count().running;
  }
  std::cout << "SKIPPED: " << reason << " (test case '" << name << "')" << std::endl;
}

}  // namespace canopy_test

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit() || failed != 0) return failed;
  const SkipCount& count = skip_count();
  const int skipped = static_cast<int>(count.skipped.size());
  if (skipped > 0) std::cout << "SKIPPED: " << skipped << " of " << count.started << " test cases" << std::endl;
  if (count.started > 0 && skipped == count.started) return canopy_test::kSkipExitCode;
  return 0;
}
