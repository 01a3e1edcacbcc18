// CudaDeviceGraph: a device graph (tandem/accel/device_graph.h) of a gpu(i) stream, a CUDA Graph.
//
// CudaStream::begin_graph_capture starts a stream capture (cudaStreamBeginCapture, thread-local
// mode: only the capturing thread's unsafe calls, such as cudaMalloc, invalidate it);
// end_graph_capture ends it (cudaStreamEndCapture) and instantiates the graph once
// (cudaGraphInstantiate). Each launch is a cudaGraphLaunch on the stream the engine chose, any
// stream of the same device. An event recorded after each launch lets the destructor wait for
// the last one before it destroys the executable graph and the graph.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "tandem/accel/device_graph.h"
#include "tandem/accel/stream.h"

namespace tandem::detail {

class CudaDeviceGraph final : public DeviceGraph {
 public:
  // Takes `graph`; instantiates it (throws tandem::Error, having destroyed it, if that fails).
  CudaDeviceGraph(int device, cudaGraph_t graph);
  ~CudaDeviceGraph() override;
  CudaDeviceGraph(const CudaDeviceGraph&) = delete;
  CudaDeviceGraph& operator=(const CudaDeviceGraph&) = delete;

  Device device() const override;
  std::size_t num_items() const override;
  void launch(Stream& stream) override;

 private:
  const int device_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
  cudaEvent_t last_launch_ = nullptr;  // recorded after each launch
};

}  // namespace tandem::detail
