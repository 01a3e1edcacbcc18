// TANDEM_HOST_DEVICE marks a function that runs on the host and on an accelerator.
//
//   struct Add {
//     template <class T> TANDEM_HOST_DEVICE T operator()(T a, T b) const { return a + b; }
//   };
//
// Under nvcc it expands to `__host__ __device__`; in plain C++ builds to nothing, so the same
// functor body is compiled (and tested) by the CPU backend and, later, by the CUDA backend.
#pragma once

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif
