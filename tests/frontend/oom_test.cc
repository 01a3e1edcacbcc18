// Out of device memory on sim, in its own process: the sim devices are configured with 16 MB
// before first use. An array that does not fit fails the op that needed its memory; the error
// (OutOfMemoryError naming the device and the size, nested in the op's error) comes out at the
// next sync point, and the engine and the device keep working.
#include <doctest/doctest.h>

#include <tandem/tandem.h>

#include <string>

#include "tandem/accel/accelerator.h"

namespace nd = tandem::nd;

namespace {

// Configures the sim devices with 16 MB (once, before their first use); false when there are
// none.
bool small_sim_devices() {
  static const bool configured = [] {
    tandem::AcceleratorConfig config = tandem::EngineConfig::from_env().accel;
    config.sim_memory_mb = 16;
    tandem::configure_accelerators(config);
    return true;
  }();
  (void)configured;
  if (tandem::device_count(tandem::DeviceKind::sim) > 0) return true;
  MESSAGE("SKIPPED: no sim device configured");
  return false;
}

}  // namespace

TEST_SUITE("frontend.oom") {
  TEST_CASE("an array that does not fit in sim memory fails at the next sync point") {
    if (!small_sim_devices()) return;
    const tandem::Device device = tandem::sim(0);
    constexpr std::int64_t kElements = 1536 * 1024;  // 6 MiB of float32
    const std::size_t bytes = kElements * sizeof(float);
    nd::NDArray a = nd::ones({kElements}, device);
    nd::NDArray b = nd::ones({kElements}, device);
    nd::NDArray c = nd::ones({kElements}, device);  // 18 MiB in all: the third does not fit
    bool thrown = false;
    try {
      c.wait_to_read();
    } catch (const tandem::Error& e) {
      thrown = true;
      const std::string message = e.what();
      INFO(message);
      CHECK(message.find("sim(0)") != std::string::npos);
      CHECK(message.find(std::to_string(bytes)) != std::string::npos);
      CHECK(message.find("in use by live arrays") != std::string::npos);
      // The pool's own error is nested in the op's.
      bool nested_oom = false;
      try {
        std::rethrow_if_nested(e);
      } catch (const tandem::OutOfMemoryError& oom) {
        nested_oom = oom.device() == device && oom.bytes() == bytes;
      } catch (...) {
      }
      CHECK(nested_oom);
    }
    CHECK(thrown);
    try {
      nd::waitall();  // may report the error once more; it must not hang or crash
    } catch (const tandem::Error&) {
    }
    CHECK(a.sum().scalar() == static_cast<double>(kElements));
    // Memory comes back with the arrays, and the device works again.
    a = nd::NDArray();
    c = nd::NDArray();
    nd::waitall();  // the deleters are ops too: after this, a's block is back in the pool
    nd::NDArray d = nd::full({kElements}, 2.0, device);
    CHECK(d.sum().scalar() == 2.0 * kElements);
    CHECK(b.max().scalar() + d.max().scalar() == 3.0);
    nd::waitall();
  }

  TEST_CASE("arrays freed just before an allocation never make it fail for lack of memory") {
    // Each round fills 12 of the 16 MiB, drops every handle and at once allocates 12 MiB again:
    // the new arrays fit only once the frees queued behind the old arrays' ops have run.
    if (!small_sim_devices()) return;
    const tandem::Device device = tandem::sim(0);
    nd::waitall();
    constexpr std::int64_t kElements = 1536 * 1024;  // 6 MiB of float32
    int failures = 0;
    for (int round = 0; round < 20; ++round) {
      {
        const nd::NDArray a = nd::ones({kElements}, device);
        const nd::NDArray b = a * 2.0;
      }
      const nd::NDArray c = nd::full({kElements}, 3.0, device);
      const nd::NDArray d = c + 1.0;
      try {
        CHECK(d.max().scalar() == 4.0);
      } catch (const tandem::Error& e) {
        ++failures;
        MESSAGE("round " << round << ": " << e.what());
        try {
          nd::waitall();
        } catch (const tandem::Error&) {
        }
      }
    }
    CHECK(failures == 0);
    nd::waitall();
  }
}
