// What CUDA kernels need from a `gpu(i)` stream: the cudaStream_t to launch on and the stream's
// cuBLAS handle. Only for code built with CUDA (the build defines TANDEM_HAVE_CUDA); the engine
// itself and CPU-only users never include it.
//
//   engine.push([=](tandem::RunContext& ctx) {
//     tandem::Stream& stream = *ctx.stream();
//     scale<<<blocks, threads, 0, tandem::cuda_stream(stream)>>>(data, n);
//     cublasSgemm(tandem::detail::cublas_handle(stream), ...);   // compute streams only
//   }, tandem::cuda(0), {in}, {out}, {.name = "scale"});
//
// A launch function of a cuda(i) op runs with gpu(i) current on its thread (the engine calls
// Accelerator::bind_thread), so kernels, cuBLAS calls and cudaMalloc in it go to gpu(i).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "tandem/accel/stream.h"

namespace tandem {

// The CUDA stream behind `stream`. Throws tandem::Error when `stream` is not a gpu(i) stream.
cudaStream_t cuda_stream(Stream& stream);

namespace detail {

// The cuBLAS handle of a gpu(i) compute stream: bound to that stream (cublasSetStream) with
// its own workspace (cublasSetWorkspace), created on first use. Throws tandem::Error for a
// stream that is not a gpu(i) compute stream, or when cuBLAS cannot be initialised.
//
// A cuBLAS handle must not be used by two host threads at once (cuBLAS documentation,
// "Thread Safety"): use it only from the op enqueuing on `stream`. The engine enqueues on one
// stream from one thread at a time (stream order would be meaningless otherwise).
cublasHandle_t cublas_handle(Stream& stream);

// How the libraries behind a gpu(i) stream may compute: its accelerator's
// AcceleratorConfig::allow_tf32 and ::use_cudnn. Throws tandem::Error for a stream that is not
// a gpu(i) stream.
struct CudaLibraryOptions {
  bool allow_tf32 = false;
  bool use_cudnn = true;
};
CudaLibraryOptions library_options(Stream& stream);

}  // namespace detail
}  // namespace tandem
