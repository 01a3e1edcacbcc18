// The null backend: a third accelerator kind, compiled only into the tests and registered from
// them alone, through the engine's public backend registry (tandem/accel/backend.h). It is the
// proof that a backend is one folder and one row: nothing in engine/ or frontend/ names it.
//
//   tandem::DeviceKind kind = tandem_test::register_null_backend();   // idempotent
//   tandem::Device d = tandem_test::null_device(0);                     // prints as null(0)
//   engine.push(fn, d, {in}, {out});                                    // like a sim op
//
// What a null device is: sim without the model. Each device has AcceleratorConfig's
// `compute_streams` compute streams and one stream per other queue (a StreamSet); its device
// and pinned memory is plain host memory (so a test can read it directly), behind the same
// caching MemoryPool as the other backends. Device work runs at once, on the thread that
// enqueues it (the device's launcher thread): enqueue_host runs the item, copy() is a memcpy,
// record() returns an event that is already complete. Work costs nothing, so the engine's own
// overhead is all a null device adds. The stream contract of tandem/accel/stream.h holds: a
// failed item or a waited failed event fails the stream's next event and skips the work up to
// it; synchronize() throws the first failure since the last synchronize().
//
// For the device-parametrized frontend tests: `register_null_backend()` before the first
// engine or accelerator use, then run them on `null_device(0)`. Link `tandem_test_null_backend`.
#pragma once

#include <tandem/device.h>

namespace tandem_test {

// Registers the null backend with `devices` devices the first time it is called (later calls
// return the same kind and ignore `devices`). Thread-safe.
tandem::DeviceKind register_null_backend(int devices = 2);

// null(id), registering the backend first if needed.
tandem::Device null_device(int id = 0);

// The null device that Accelerator::bind_thread last bound to the calling thread; cpu() if
// none. Tests check that launcher threads bind their device.
tandem::Device null_device_bound_to_this_thread();

}  // namespace tandem_test
