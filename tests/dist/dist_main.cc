// The doctest main of the MPI suites: one ProcessGroup for the whole run (MPI is initialised
// once per process), made before the test cases and destroyed after them. Every rank runs the
// same test cases in the same order, so their collectives match.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "dist_test_support.h"

namespace tandem::dist::test {

ProcessGroup* group_for_tests = nullptr;

ProcessGroup& group() {
  return *group_for_tests;
}

}  // namespace tandem::dist::test

int main(int argc, char** argv) {
  int result = 0;
  {
    tandem::dist::ProcessGroupOptions options;
    options.timeout = std::chrono::seconds(20);
    tandem::dist::ProcessGroup group(options);
    tandem::dist::test::group_for_tests = &group;
    doctest::Context context(argc, argv);
    result = context.run();
    tandem::wait_all();
    std::cout << "rank " << group.rank() << " of " << group.size() << ": "
              << (result == 0 ? "ok" : "FAILED") << "\n";
    tandem::dist::test::group_for_tests = nullptr;
  }
  return result;
}
