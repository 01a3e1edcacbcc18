// tandem/ops/collectives.h without a GPU: which device lists NCCL refuses and why, and, in a
// build with NCCL's header, that libnccl.so.2 loads and reports its version (no device needed).
#include <doctest/doctest.h>

#include <tandem/device.h>
#include <tandem/errors.h>
#include <tandem/ops/collectives.h>

#include <iostream>
#include <regex>
#include <string>

namespace ops = tandem::ops;
using tandem::cuda;
using tandem::sim;

TEST_SUITE("ops.collectives") {
  TEST_CASE("a sum through NCCL refuses what it cannot sum, saying why") {
    const auto why = [](const std::vector<tandem::Device>& devices) {
      return ops::collective_sum_unavailable(devices);
    };
#ifdef TANDEM_HAVE_NCCL
    CHECK(why({cuda(0)}).find("at least two devices") != std::string::npos);
    CHECK(why({cuda(0), sim(0)}).find("gpu(i) arrays only") != std::string::npos);
    CHECK(why({cuda(0), sim(0)}).find("sim(0)") != std::string::npos);
    CHECK(why({cuda(1), cuda(1)}).find("two are on gpu(1)") != std::string::npos);
    // Two gpu devices: usable exactly when the library loads (a device is only needed to sum).
    CHECK(why({cuda(0), cuda(1)}).empty() == !ops::collective_library_version().empty());
#else
    CHECK(why({cuda(0), cuda(1)}).find("no NCCL") != std::string::npos);
    CHECK(ops::collective_library_version().empty());
#endif
  }

  TEST_CASE("the NCCL library of this build loads and names its version") {
#ifdef TANDEM_HAVE_NCCL
    const std::string version = ops::collective_library_version();
    if (version.empty()) {
      std::cout << "SKIPPED: built with nccl.h but libnccl.so.2 is not loadable here\n";
      MESSAGE("SKIPPED: libnccl.so.2 not loadable: "
              << ops::collective_sum_unavailable({cuda(0), cuda(1)}));
      return;
    }
    MESSAGE("NCCL " << version);
    CHECK(std::regex_match(version, std::regex(R"(\d+\.\d+\.\d+)")));
#else
    std::cout << "SKIPPED: this build has no NCCL\n";
    MESSAGE("SKIPPED: this build has no NCCL");
#endif
  }
}
