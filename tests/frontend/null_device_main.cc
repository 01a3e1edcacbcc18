// frontend_null_device_tests: the device-parametrized front-end tests (devices_test.cc) on
// null(0), a third accelerator kind that the tests register alone: the engine's row through
// tandem_test::register_null_backend (tests/accel/null_backend.h), and its kernel table, the
// CPU kernels run on its streams' host side (its memory is host memory). Nothing in frontend/,
// ops/ or the engine outside its registry names it: a backend is one folder and one row.
#include <tandem/ops/kernels.h>

#include "null_backend.h"
#include "test_devices.h"

namespace {

// Before main: the tests' device list is read when they run.
[[maybe_unused]] const bool registered = [] {
  const tandem::DeviceKind kind = tandem_test::register_null_backend();
  tandem::ops::register_kernels(kind, tandem::ops::host_stream_kernels());
  tandem::testing::test_accelerators_override() = {tandem_test::null_device(0)};
  return true;
}();

}  // namespace
