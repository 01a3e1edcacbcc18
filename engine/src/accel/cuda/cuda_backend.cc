#include "cuda_backend.h"

#include <memory>
#include <string>

#ifdef TANDEM_HAVE_CUDA
#include "cuda_factory.h"
#endif
#include "tandem/accel/accelerator.h"
#include "tandem/accel/process_transport.h"
#include "tandem/errors.h"

namespace tandem::detail {

Backend cuda_backend() {
  Backend row;
  row.kind = DeviceKind::cuda;
  row.name = "gpu";
#ifdef TANDEM_HAVE_CUDA
  row.device_count = [](const AcceleratorConfig&) { return cuda_device_count(); };
  row.create = [](Device device, const AcceleratorConfig& config) {
    return make_cuda_accelerator(device.id, config);
  };
  row.more_devices_hint =
      "(the CUDA runtime sees no more; check the driver and CUDA_VISIBLE_DEVICES)";
  row.no_devices_reason =
      "the gpu backend is built, but the CUDA runtime found no device or no driver";
  row.no_devices_fix =
      "check the NVIDIA driver and CUDA_VISIBLE_DEVICES, TANDEM_LOG_LEVEL=info logs "
      "cudaGetDeviceCount's answer";
#else
  row.device_count = [](const AcceleratorConfig&) { return 0; };
  row.create = [](Device device, const AcceleratorConfig&) -> std::unique_ptr<Accelerator> {
    std::string text = "tandem: ";
    text += to_string(device);
    text += " does not exist: this build of tandem has no CUDA support";
    throw Error(text);
  };
  row.more_devices_hint = "(this build of tandem has no CUDA support)";
  row.no_devices_reason = "this build has no gpu backend";
  row.no_devices_fix = "configure with -DTANDEM_CUDA=ON";
#endif
  return row;
}

}  // namespace tandem::detail

namespace tandem {

ProcessTransport process_transport(DeviceKind kind) {
  return kind == DeviceKind::cuda ? ProcessTransport::nccl : ProcessTransport::host;
}

}  // namespace tandem
