# The engine's CUDA backend (gpu(i) accelerators), included by engine/CMakeLists.txt when the
# build has CUDA. Plain C++ against the CUDA runtime and cuBLAS: nothing here needs nvcc.
find_package(CUDAToolkit REQUIRED)
target_sources(tandem_engine PRIVATE
  src/accel/cuda/cuda_accelerator.cc
  src/accel/cuda/cuda_check.cc
  src/accel/cuda/cuda_device_graph.cc
  src/accel/cuda/cuda_event.cc
  src/accel/cuda/cuda_memory.cc
  src/accel/cuda/cuda_stream.cc
  src/accel/cuda/stream_segment.cc
)
target_include_directories(tandem_engine PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
# PUBLIC: tandem/accel/cuda.h hands out cudaStream_t and cublasHandle_t, and TANDEM_HAVE_CUDA
# tells the registry (and the tests) that the backend is compiled in.
target_link_libraries(tandem_engine PUBLIC CUDA::cudart CUDA::cublas)
target_compile_definitions(tandem_engine PUBLIC TANDEM_HAVE_CUDA)
