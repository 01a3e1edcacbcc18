// cuDNN's convolutions, loaded with dlopen (cudnn_convolution.h says when they are used).
#include "cudnn_convolution.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>

#include "launch.cuh"
#include "tandem/accel/accelerator.h"
#include "tandem/ops/cuda/convolution.h"

#ifdef TANDEM_HAVE_CUDNN_HEADER
#include <cudnn.h>
#include <dlfcn.h>
#endif

namespace tandem::ops::cuda {

#ifndef TANDEM_HAVE_CUDNN_HEADER

std::string cudnn_library() {
  return "unavailable: built without cudnn.h";
}
bool cudnn_conv2d(const ArrayView&, const ArrayView&, const ArrayView&, const ArrayView&,
                  const Conv2dGeometry&, tandem::Stream&) {
  return false;
}
bool cudnn_conv2d_backward_data(const ArrayView&, const ArrayView&, const ArrayView&,
                                const Conv2dGeometry&, tandem::Stream&) {
  return false;
}
bool cudnn_conv2d_backward_weight(const ArrayView&, const ArrayView&, const ArrayView&,
                                  const Conv2dGeometry&, tandem::Stream&) {
  return false;
}

#else

namespace {

constexpr const char* kLibraryName = "libcudnn.so.9";

// The entry points tandem calls, resolved once. libcudnn.so.9 exports the whole API and loads
// its sub-libraries (cnn, ops, engines) itself, from its own folder or the library path.
class CudnnLibrary {
 public:
  static const CudnnLibrary& get() {
    static const CudnnLibrary library;
    return library;
  }

  // "" when every entry point was found, else why not.
  const std::string& unavailable() const { return unavailable_; }

  decltype(&cudnnGetVersion) get_version = nullptr;
  decltype(&cudnnGetErrorString) error_string = nullptr;
  decltype(&cudnnCreate) create = nullptr;
  decltype(&cudnnSetStream) set_stream = nullptr;
  decltype(&cudnnCreateTensorDescriptor) create_tensor = nullptr;
  decltype(&cudnnSetTensor4dDescriptor) set_tensor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) create_filter = nullptr;
  decltype(&cudnnSetFilter4dDescriptor) set_filter = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) create_convolution = nullptr;
  decltype(&cudnnSetConvolution2dDescriptor) set_convolution = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) set_group_count = nullptr;
  decltype(&cudnnSetConvolutionMathType) set_math_type = nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) forward_algorithms = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) backward_data_algorithms = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) backward_filter_algorithms = nullptr;
  decltype(&cudnnConvolutionForward) forward = nullptr;
  decltype(&cudnnConvolutionBackwardData) backward_data = nullptr;
  decltype(&cudnnConvolutionBackwardFilter) backward_filter = nullptr;
  decltype(&cudnnAddTensor) add_tensor = nullptr;

 private:
  CudnnLibrary() {
    void* handle = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      unavailable_ = std::string(kLibraryName) + " could not be loaded (" +
                     (why != nullptr ? why : "no reason given") + ")";
      return;
    }
    const auto resolve = [&](auto& entry, const char* name) {
      entry = reinterpret_cast<std::remove_reference_t<decltype(entry)> >(dlsym(handle, name));
      if (entry == nullptr && unavailable_.empty()) {
        unavailable_ = std::string(kLibraryName) + " has no " + name;
      }
    };
    resolve(get_version, "cudnnGetVersion");
    resolve(error_string, "cudnnGetErrorString");
    resolve(create, "cudnnCreate");
    resolve(set_stream, "cudnnSetStream");
    resolve(create_tensor, "cudnnCreateTensorDescriptor");
    resolve(set_tensor, "cudnnSetTensor4dDescriptor");
    resolve(create_filter, "cudnnCreateFilterDescriptor");
    resolve(set_filter, "cudnnSetFilter4dDescriptor");
    resolve(create_convolution, "cudnnCreateConvolutionDescriptor");
    resolve(set_convolution, "cudnnSetConvolution2dDescriptor");
    resolve(set_group_count, "cudnnSetConvolutionGroupCount");
    resolve(set_math_type, "cudnnSetConvolutionMathType");
    resolve(forward_algorithms, "cudnnGetConvolutionForwardAlgorithm_v7");
    resolve(backward_data_algorithms, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    resolve(backward_filter_algorithms, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    resolve(forward, "cudnnConvolutionForward");
    resolve(backward_data, "cudnnConvolutionBackwardData");
    resolve(backward_filter, "cudnnConvolutionBackwardFilter");
    resolve(add_tensor, "cudnnAddTensor");
    // The legacy convolution API tandem calls exists from cuDNN 8 on; 9 is the soname asked for.
    if (unavailable_.empty() && get_version() < 90000) {
      unavailable_ = std::string(kLibraryName) + " reports version " +
                     std::to_string(get_version()) + ", older than 9.0";
    }
  }

  std::string unavailable_;
};

void check_cudnn(cudnnStatus_t status, const Launch& launch, const char* call) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  (void)cudaGetLastError();
  throw Error(std::string("tandem: ") + launch.op() + ": " + call + " on gpu(" +
              std::to_string(launch.device()) +
              ") failed: " + CudnnLibrary::get().error_string(status));
}

// One cuDNN handle per CUDA stream, bound to it once, kept for the process's life (destroying
// handles at exit would race the driver's own teardown). The engine enqueues on a stream from
// one thread at a time, so a handle is never used by two threads at once.
cudnnHandle_t handle_of(const Launch& launch) {
  static std::mutex mutex;
  static std::map<cudaStream_t, cudnnHandle_t> handles;
  const std::lock_guard lock(mutex);
  const auto found = handles.find(launch.stream());
  if (found != handles.end()) return found->second;
  // cudnnCreate allocates device memory, which a stream capture does not allow: the first
  // convolution of a stream met inside a capture runs the im2col kernels instead.
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check_cuda(cudaStreamIsCapturing(launch.stream(), &capture), "cudaStreamIsCapturing",
             launch.device());
  if (capture != cudaStreamCaptureStatusNone) return nullptr;
  const CudnnLibrary& library = CudnnLibrary::get();
  cudnnHandle_t handle = nullptr;
  check_cudnn(library.create(&handle), launch, "cudnnCreate");
  check_cudnn(library.set_stream(handle, launch.stream()), launch, "cudnnSetStream");
  handles.emplace(launch.stream(), handle);
  return handle;
}

enum class Pass { forward, backward_data, backward_weight };

// What an algorithm choice depends on.
using PlanKey =
    std::tuple<int, int, int, bool, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
               std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
               std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

// The descriptors of one geometry and the algorithm chosen for one pass; shared read-only by
// every call with that key (cuDNN descriptors are plain host structures).
struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t convolution = nullptr;
  int algorithm = -1;  // -1: no algorithm fits; the call takes the im2col path
  std::size_t workspace = 0;
};

bool fits_int(std::int64_t v) {
  return v >= 0 && v <= std::numeric_limits<int>::max();
}

bool fits_descriptors(const Conv2dGeometry& g) {
  for (std::int64_t v :
       {g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel_h, g.kernel_w, g.out_h,
        g.out_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w, g.groups}) {
    if (!fits_int(v)) return false;
  }
  // cuDNN indexes a tensor with int: every array must stay under 2^31 elements.
  return fits_int(g.batch * g.in_channels * g.in_h * g.in_w) &&
         fits_int(g.batch * g.out_channels * g.out_h * g.out_w);
}

// Picks from cuDNN's heuristic ranking the first algorithm that succeeded, is allowed the math
// mode, fits the scratch bound, and is deterministic when any such one is.
template <class Perf>
void choose(const Launch& launch, const Perf* ranked, int count, bool strict_fp32, Plan& plan) {
  const Perf* chosen = nullptr;
  for (int pass = 0; pass < 2 && chosen == nullptr; ++pass) {
    for (int i = 0; i < count; ++i) {
      const Perf& p = ranked[i];
      if (p.status != CUDNN_STATUS_SUCCESS) continue;
      if (p.memory > static_cast<std::size_t>(std::int64_t{256} << 20)) continue;
      // CUDNN_DEFAULT_MATH permits TF32 on Ampere and later: strict fp32 is CUDNN_FMA_MATH only.
      if (strict_fp32 && p.mathType != CUDNN_FMA_MATH) continue;
      if (pass == 0 && p.determinism != CUDNN_DETERMINISTIC) continue;
      chosen = &p;
      break;
    }
  }
  if (chosen == nullptr) return;
  plan.algorithm = static_cast<int>(chosen->algo);
  plan.workspace = chosen->memory;
  // The math mode the ranking chose this algorithm with; strict fp32 admitted only FMA above.
  check_cudnn(CudnnLibrary::get().set_math_type(plan.convolution, chosen->mathType), launch,
              "cudnnSetConvolutionMathType");
}

// The plan for (device, dtype, geometry, pass), made on first use. Null when cuDNN cannot run
// this call (the caller then takes the im2col path).
const Plan* plan_for(const Launch& launch, cudnnHandle_t handle, const Conv2dGeometry& g,
                     DType dtype, bool allow_tf32, Pass pass, bool has_bias) {
  static std::mutex mutex;
  static std::map<PlanKey, Plan> plans;
  const PlanKey key{launch.device(),
                    static_cast<int>(dtype),
                    static_cast<int>(pass),
                    allow_tf32,
                    g.batch,
                    g.in_channels,
                    g.in_h,
                    g.in_w,
                    g.out_channels,
                    g.kernel_h,
                    g.kernel_w,
                    g.stride_h,
                    g.stride_w,
                    g.pad_h,
                    g.pad_w,
                    g.dilation_h,
                    g.dilation_w,
                    g.groups,
                    has_bias ? 1 : 0};
  const std::lock_guard lock(mutex);
  const auto found = plans.find(key);
  if (found != plans.end()) return found->second.algorithm >= 0 ? &found->second : nullptr;
  const CudnnLibrary& library = CudnnLibrary::get();
  Plan& plan = plans[key];
  const cudnnDataType_t type = dtype == DType::float32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
  const auto n = static_cast<int>(g.batch);
  check_cudnn(library.create_tensor(&plan.x), launch, "cudnnCreateTensorDescriptor");
  check_cudnn(
      library.set_tensor(plan.x, CUDNN_TENSOR_NCHW, type, n, static_cast<int>(g.in_channels),
                         static_cast<int>(g.in_h), static_cast<int>(g.in_w)),
      launch, "cudnnSetTensor4dDescriptor");
  check_cudnn(library.create_tensor(&plan.y), launch, "cudnnCreateTensorDescriptor");
  check_cudnn(
      library.set_tensor(plan.y, CUDNN_TENSOR_NCHW, type, n, static_cast<int>(g.out_channels),
                         static_cast<int>(g.out_h), static_cast<int>(g.out_w)),
      launch, "cudnnSetTensor4dDescriptor");
  check_cudnn(library.create_tensor(&plan.bias), launch, "cudnnCreateTensorDescriptor");
  check_cudnn(library.set_tensor(plan.bias, CUDNN_TENSOR_NCHW, type, 1,
                                 static_cast<int>(g.out_channels), 1, 1),
              launch, "cudnnSetTensor4dDescriptor");
  check_cudnn(library.create_filter(&plan.w), launch, "cudnnCreateFilterDescriptor");
  check_cudnn(library.set_filter(plan.w, type, CUDNN_TENSOR_NCHW, static_cast<int>(g.out_channels),
                                 static_cast<int>(g.in_channels_per_group()),
                                 static_cast<int>(g.kernel_h), static_cast<int>(g.kernel_w)),
              launch, "cudnnSetFilter4dDescriptor");
  check_cudnn(library.create_convolution(&plan.convolution), launch,
              "cudnnCreateConvolutionDescriptor");
  // CUDNN_CROSS_CORRELATION: the kernel is not flipped, as tandem's (and every framework's)
  // conv2d computes it.
  check_cudnn(
      library.set_convolution(plan.convolution, static_cast<int>(g.pad_h),
                              static_cast<int>(g.pad_w), static_cast<int>(g.stride_h),
                              static_cast<int>(g.stride_w), static_cast<int>(g.dilation_h),
                              static_cast<int>(g.dilation_w), CUDNN_CROSS_CORRELATION, type),
      launch, "cudnnSetConvolution2dDescriptor");
  check_cudnn(library.set_group_count(plan.convolution, static_cast<int>(g.groups)), launch,
              "cudnnSetConvolutionGroupCount");
  const bool strict_fp32 = dtype == DType::float32 && !allow_tf32;
  const cudnnMathType_t math = strict_fp32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
  check_cudnn(library.set_math_type(plan.convolution, math), launch, "cudnnSetConvolutionMathType");
  int returned = 0;
  switch (pass) {
    case Pass::forward: {
      cudnnConvolutionFwdAlgoPerf_t ranked[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check_cudnn(library.forward_algorithms(handle, plan.x, plan.w, plan.convolution, plan.y,
                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, ranked),
                  launch, "cudnnGetConvolutionForwardAlgorithm_v7");
      choose(launch, ranked, returned, strict_fp32, plan);
      break;
    }
    case Pass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t ranked[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check_cudnn(library.backward_data_algorithms(handle, plan.w, plan.y, plan.convolution, plan.x,
                                                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned,
                                                   ranked),
                  launch, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      choose(launch, ranked, returned, strict_fp32, plan);
      break;
    }
    case Pass::backward_weight: {
      cudnnConvolutionBwdFilterAlgoPerf_t ranked[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      check_cudnn(library.backward_filter_algorithms(
                      handle, plan.x, plan.y, plan.convolution, plan.w,
                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, ranked),
                  launch, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      choose(launch, ranked, returned, strict_fp32, plan);
      break;
    }
  }
  return plan.algorithm >= 0 ? &plan : nullptr;
}

// The handle and plan for a call, or nulls when the call takes the im2col path.
struct Prepared {
  cudnnHandle_t handle = nullptr;
  const Plan* plan = nullptr;
};

Prepared prepare(const Launch& launch, tandem::Stream& stream, const Conv2dGeometry& g, DType dtype,
                 Pass pass, bool has_bias, std::initializer_list<const ArrayView*> views) {
  const tandem::detail::CudaLibraryOptions options = tandem::detail::library_options(stream);
  if (!options.use_cudnn || !CudnnLibrary::get().unavailable().empty()) return {};
  if (dtype != DType::float32 && dtype != DType::float64) return {};
  if (!fits_descriptors(g)) return {};
  for (const ArrayView* view : views) {
    if (!view->is_contiguous()) return {};
  }
  Prepared prepared;
  prepared.handle = handle_of(launch);
  if (prepared.handle == nullptr) return {};
  prepared.plan = plan_for(launch, prepared.handle, g, dtype, options.allow_tf32, pass, has_bias);
  return prepared.plan != nullptr ? prepared : Prepared{};
}

// cuDNN takes alpha and beta as float for float data and double for double data.
struct Scaling {
  float f0 = 0, f1 = 1;
  double d0 = 0, d1 = 1;
  const void* zero(DType t) const {
    return t == DType::float32 ? static_cast<const void*>(&f0) : static_cast<const void*>(&d0);
  }
  const void* one(DType t) const {
    return t == DType::float32 ? static_cast<const void*>(&f1) : static_cast<const void*>(&d1);
  }
};

}  // namespace

std::string cudnn_library() {
  const CudnnLibrary& library = CudnnLibrary::get();
  if (!library.unavailable().empty()) return "unavailable: " + library.unavailable();
  const std::size_t v = library.get_version();
  return std::string(kLibraryName) + " " + std::to_string(v / 10000) + "." +
         std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

bool cudnn_conv2d(const ArrayView& x, const ArrayView& weight, const ArrayView& bias,
                  const ArrayView& y, const Conv2dGeometry& g, tandem::Stream& stream) {
  Launch launch(stream, "conv2d");
  const bool has_bias = bias.data != nullptr;
  const Prepared p =
      prepare(launch, stream, g, y.dtype, Pass::forward, has_bias, {&x, &weight, &y});
  if (p.plan == nullptr) return false;
  const Scaling s;
  Scratch workspace(launch, p.plan->workspace);
  launch.library_call();
  check_cudnn(CudnnLibrary::get().forward(
                  p.handle, s.one(y.dtype), p.plan->x, x.data, p.plan->w, weight.data,
                  p.plan->convolution, static_cast<cudnnConvolutionFwdAlgo_t>(p.plan->algorithm),
                  workspace.data(), p.plan->workspace, s.zero(y.dtype), p.plan->y, y.data),
              launch, "cudnnConvolutionForward");
  if (has_bias) {
    launch.library_call();
    check_cudnn(CudnnLibrary::get().add_tensor(p.handle, s.one(y.dtype), p.plan->bias, bias.data,
                                               s.one(y.dtype), p.plan->y, y.data),
                launch, "cudnnAddTensor");
  }
  return true;
}

bool cudnn_conv2d_backward_data(const ArrayView& dy, const ArrayView& weight, const ArrayView& dx,
                                const Conv2dGeometry& g, tandem::Stream& stream) {
  Launch launch(stream, "conv2d_backward_data");
  const Prepared p =
      prepare(launch, stream, g, dx.dtype, Pass::backward_data, false, {&dy, &weight, &dx});
  if (p.plan == nullptr) return false;
  const Scaling s;
  Scratch workspace(launch, p.plan->workspace);
  launch.library_call();
  check_cudnn(
      CudnnLibrary::get().backward_data(
          p.handle, s.one(dx.dtype), p.plan->w, weight.data, p.plan->y, dy.data,
          p.plan->convolution, static_cast<cudnnConvolutionBwdDataAlgo_t>(p.plan->algorithm),
          workspace.data(), p.plan->workspace, s.zero(dx.dtype), p.plan->x, dx.data),
      launch, "cudnnConvolutionBackwardData");
  return true;
}

bool cudnn_conv2d_backward_weight(const ArrayView& x, const ArrayView& dy, const ArrayView& dweight,
                                  const Conv2dGeometry& g, tandem::Stream& stream) {
  if (g.batch == 0) return false;  // the im2col path zeroes dW with one memset
  Launch launch(stream, "conv2d_backward_weight");
  const Prepared p =
      prepare(launch, stream, g, dweight.dtype, Pass::backward_weight, false, {&x, &dy, &dweight});
  if (p.plan == nullptr) return false;
  const Scaling s;
  Scratch workspace(launch, p.plan->workspace);
  launch.library_call();
  check_cudnn(
      CudnnLibrary::get().backward_filter(
          p.handle, s.one(dweight.dtype), p.plan->x, x.data, p.plan->y, dy.data,
          p.plan->convolution, static_cast<cudnnConvolutionBwdFilterAlgo_t>(p.plan->algorithm),
          workspace.data(), p.plan->workspace, s.zero(dweight.dtype), p.plan->w, dweight.data),
      launch, "cudnnConvolutionBackwardFilter");
  return true;
}

#endif  // TANDEM_HAVE_CUDNN_HEADER

}  // namespace tandem::ops::cuda
