// gpu_probe: the device check of scripts/gpu-check.sh. Asks the CUDA runtime (the libcudart the
// bundle carries, so the same one the tests use) how many devices it sees, and prints the driver
// and runtime versions and each device's name and compute capability.
//
//   gpu_probe        exit 0: at least one device; 3: none (the reason is printed); 1: a device
//                    was counted but could not be queried
//
// Built by `scripts/gpu-check.sh --bundle` with g++ against the CUDA toolkit's headers; it is
// not part of the CMake build.
#include <cuda_runtime_api.h>

#include <cstdio>

namespace {

constexpr int kNoDevice = 3;

void print_versions() {
  int driver = 0;
  int runtime = 0;
  const cudaError_t driver_status = cudaDriverGetVersion(&driver);
  const cudaError_t runtime_status = cudaRuntimeGetVersion(&runtime);
  // Versions are encoded as 1000 * major + 10 * minor; 0 means no driver is installed.
  std::printf("gpu_probe: CUDA driver %d.%d%s, runtime %d.%d%s\n", driver / 1000,
              (driver % 1000) / 10, driver_status == cudaSuccess ? "" : " (query failed)",
              runtime / 1000, (runtime % 1000) / 10,
              runtime_status == cudaSuccess ? "" : " (query failed)");
}

}  // namespace

int main() {
  print_versions();
  // cudaGetDeviceCount leaves its output untouched on failure (docs/toolchain.md): start at 0.
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    std::printf(
        "gpu_probe: NO CUDA DEVICE: cudaGetDeviceCount answered %d (%s: %s), %d device(s). "
        "35 means no NVIDIA driver, 100 a driver with no device, 34 the toolkit's stub "
        "libcuda.so on the library path.\n",
        static_cast<int>(status), cudaGetErrorName(status), cudaGetErrorString(status), count);
    return kNoDevice;
  }
  for (int device = 0; device < count; ++device) {
    cudaDeviceProp properties{};
    const cudaError_t query = cudaGetDeviceProperties(&properties, device);
    if (query != cudaSuccess) {
      std::printf("gpu_probe: gpu(%d): cudaGetDeviceProperties failed: %s\n", device,
                  cudaGetErrorString(query));
      return 1;
    }
    std::printf("gpu_probe: gpu(%d): %s, compute capability %d.%d, %.1f GiB, %d SMs\n", device,
                properties.name, properties.major, properties.minor,
                static_cast<double>(properties.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0),
                properties.multiProcessorCount);
  }
  return 0;
}
