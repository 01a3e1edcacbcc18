// devices: the seeds' "GPU computation" chapter (d2l 4.6) on the devices this build has.
//
//   build/examples/devices/devices [--quick]
//
// Arrays live on a device and ops run where their inputs are. copyto(device) always makes a new
// array; as_in_context(device) returns the very same array when it is already there. An op's
// inputs must all be on one device: mixing them is an error at the call that names both. On a
// machine without an accelerator backend, asking for gpu(0) is a clear error, never a crash.
#include <tandem/tandem.h>

#include <iostream>

namespace nd = tandem::nd;

int main() {
  std::cout << "devices: " << tandem::device_count(tandem::DeviceKind::cpu) << " cpu, "
            << tandem::device_count(tandem::DeviceKind::cuda) << " gpu, "
            << tandem::device_count(tandem::DeviceKind::sim) << " sim\n";
  std::cout << tandem::cpu() << " " << tandem::cuda() << " " << tandem::cuda(1) << "\n";
  std::cout << tandem::device_name(tandem::cpu()) << "\n\n";

  const nd::NDArray x = nd::array({1, 2, 3});
  std::cout << "x =\n" << x << "\nx.context() = " << x.context() << "\n\n";

  const nd::NDArray y = x.copyto(tandem::cpu());
  const nd::NDArray z = x.as_in_context(tandem::cpu());
  std::cout << "copyto makes a new array:          " << !y.shares_storage_with(x) << "\n";
  std::cout << "as_in_context returns x itself:    " << z.shares_storage_with(x) << "\n";
  std::cout << "(z + 2).exp() * y =\n" << (z + 2).exp() * y << "\n\n";

  // The device with the most to show: the first accelerator, if any, else a missing gpu(0).
  const tandem::Device accelerator = tandem::cuda(0);
  try {
    const nd::NDArray a = nd::array({1, 2, 3}, accelerator);
    std::cout << "a on " << accelerator << ":\n" << a << "\n";
    std::cout << x + a << "\n";  // inputs on two devices: throws
  } catch (const tandem::Error& e) {
    std::cout << "error: " << e.what() << "\n";
  }
  return 0;
}
