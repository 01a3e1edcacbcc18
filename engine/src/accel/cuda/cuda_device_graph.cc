#include "cuda_device_graph.h"

#include <string>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "tandem/errors.h"

namespace tandem::detail {

CudaDeviceGraph::CudaDeviceGraph(int device, cudaGraph_t graph) : device_(device), graph_(graph) {
  try {
    DeviceGuard guard(device_);
    TANDEM_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0), device_);
    TANDEM_CUDA_CHECK(cudaEventCreateWithFlags(&last_launch_, cudaEventDisableTiming), device_);
  } catch (...) {
    if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
    (void)cudaGetLastError();
    throw;
  }
}

CudaDeviceGraph::~CudaDeviceGraph() {
  // Also runs at exit, possibly while the runtime unloads: failures are dropped quietly.
  try {
    DeviceGuard guard(device_);
    (void)cudaEventSynchronize(last_launch_);  // the last launch may still run
  } catch (...) {
  }
  (void)cudaEventDestroy(last_launch_);
  (void)cudaGraphExecDestroy(exec_);
  (void)cudaGraphDestroy(graph_);
  (void)cudaGetLastError();
}

Device CudaDeviceGraph::device() const {
  return tandem::cuda(device_);
}

std::size_t CudaDeviceGraph::num_items() const {
  std::size_t nodes = 0;
  TANDEM_CUDA_CHECK(cudaGraphGetNodes(graph_, nullptr, &nodes), device_);
  return nodes;
}

void CudaDeviceGraph::launch(Stream& stream) {
  auto* cuda_stream = dynamic_cast<CudaStream*>(&stream);
  if (cuda_stream == nullptr || stream.device() != device()) {
    throw Error("tandem: a device graph of " + to_string(device()) + " cannot be launched on " +
                stream.name() + ": launch it on a stream of the device it was captured on");
  }
  DeviceGuard guard(device_);
  TANDEM_CUDA_CHECK(cudaGraphLaunch(exec_, cuda_stream->handle()), device_);
  TANDEM_CUDA_CHECK(cudaEventRecord(last_launch_, cuda_stream->handle()), device_);
}

}  // namespace tandem::detail
