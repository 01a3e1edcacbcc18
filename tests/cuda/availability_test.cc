// Runs in every build, with or without CUDA or a GPU: asking for a gpu that is not there is a
// clear tandem::Error, never a crash.
#include <doctest/doctest.h>

#include <string>

#include "tandem/accel/accelerator.h"
#include "tandem/errors.h"

TEST_SUITE("cuda.availability") {
  TEST_CASE("the gpu count is never negative and gpu(count) is an error naming the device") {
    const int count = tandem::accelerator_count(tandem::DeviceKind::cuda);
    CHECK(count >= 0);
    const std::string name = "gpu(" + std::to_string(count) + ")";
    CHECK_THROWS_WITH_AS(tandem::accelerator(tandem::cuda(count)), doctest::Contains(name.c_str()),
                         tandem::Error);
  }

  TEST_CASE("without a CUDA device, gpu(0) is a clear error, not a crash") {
    if (tandem::accelerator_count(tandem::DeviceKind::cuda) > 0) {
      MESSAGE("this machine has a CUDA device: the no-device path is not exercised here");
      return;
    }
    CHECK_THROWS_WITH_AS(tandem::accelerator(tandem::cuda(0)), doctest::Contains("gpu(0)"),
                         tandem::Error);
    // Asking again answers the same (the count is read once and kept).
    CHECK(tandem::accelerator_count(tandem::DeviceKind::cuda) == 0);
    CHECK_THROWS_AS(tandem::accelerator(tandem::cuda(0)), tandem::Error);
  }
}
