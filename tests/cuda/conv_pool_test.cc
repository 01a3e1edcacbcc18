// The gpu(i) convolution and pooling kernels against their CPU twins on the same inputs: conv2d
// forward, input and weight gradients (strides, padding, dilation, groups, bias, the 1x1 path),
// max and average pooling forward and backward; the launches and allocations they make, which
// must be what sim counts for them (common/conv_launches.h). Skipped, visibly, without a device.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/conv_launches.h"  // ops/src: the launch plan sim counts with
#include "cuda_test_util.h"
#include "tandem/accel/cuda.h"
#include "tandem/launch_counters.h"
#include "tandem/ops/cpu/convolution.h"
#include "tandem/ops/cpu/pooling.h"
#include "tandem/ops/cuda/convolution.h"
#include "tandem/ops/cuda/pooling.h"

namespace ops = tandem::ops;
using ops::ArrayView;
using ops::Shape;
using namespace tandem::test;  // have_cuda, DeviceBuffer, compute_stream, sample

namespace {

ArrayView view(double* data, const Shape& shape) {
  return ops::contiguous_view(data, ops::DType::float64, shape);
}

void check_close(const std::vector<double>& gpu, const std::vector<double>& cpu,
                 const std::string& what) {
  INFO(what);
  REQUIRE(gpu.size() == cpu.size());
  double worst = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    worst = std::max(worst, std::fabs(gpu[i] - cpu[i]) / std::max(1.0, std::fabs(cpu[i])));
  }
  CHECK(worst <= 1e-12);
}

ops::Conv2dGeometry conv_geometry(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                                  std::int64_t o, std::int64_t k, std::int64_t stride,
                                  std::int64_t pad, std::int64_t dilation, std::int64_t groups) {
  ops::Conv2dGeometry g{.batch = n,
                        .in_channels = c,
                        .in_h = h,
                        .in_w = w,
                        .out_channels = o,
                        .kernel_h = k,
                        .kernel_w = k,
                        .out_h = 0,
                        .out_w = 0,
                        .stride_h = stride,
                        .stride_w = stride,
                        .pad_h = pad,
                        .pad_w = pad,
                        .dilation_h = dilation,
                        .dilation_w = dilation,
                        .groups = groups};
  g.out_h = (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  g.out_w = (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1;
  return g;
}

}  // namespace

TEST_SUITE("cuda.conv_pool") {
  TEST_CASE("conv2d forward, input and weight gradients match the CPU kernels, on both paths") {
    if (!have_cuda("conv2d")) return;
    MESSAGE("cuDNN: " << ops::cuda::cudnn_library());
    for (const ops::cuda::ConvPath path :
         {ops::cuda::ConvPath::automatic, ops::cuda::ConvPath::im2col})
      for (const ops::Conv2dGeometry& g : {conv_geometry(3, 4, 9, 8, 6, 3, 1, 1, 1, 1),
                                           conv_geometry(2, 4, 11, 10, 4, 3, 2, 2, 2, 2),
                                           conv_geometry(5, 3, 6, 6, 7, 1, 1, 0, 1, 1),
                                           conv_geometry(1, 6, 7, 7, 6, 3, 1, 1, 1, 6)}) {
        const std::string what =
            std::string(path == ops::cuda::ConvPath::im2col ? "im2col"
                                                            : "automatic (cuDNN when loaded)") +
            ", batch " + std::to_string(g.batch) + " groups " + std::to_string(g.groups) +
            " stride " + std::to_string(g.stride_h) + " kernel " + std::to_string(g.kernel_h);
        const Shape xs{g.batch, g.in_channels, g.in_h, g.in_w};
        const Shape ws{g.out_channels, g.in_channels / g.groups, g.kernel_h, g.kernel_w};
        const Shape ys{g.batch, g.out_channels, g.out_h, g.out_w};
        auto x = sample<double>(xs.num_elements(), 1, -2.0, 2.0),
             w = sample<double>(ws.num_elements(), 2, -2.0, 2.0);
        auto b = sample<double>(g.out_channels, 3, -2.0, 2.0),
             dy = sample<double>(ys.num_elements(), 4, -2.0, 2.0);
        std::vector<double> y(static_cast<std::size_t>(ys.num_elements()));
        std::vector<double> dx(x.size()), dw(w.size());
        ops::cpu::conv2d(view(x.data(), xs), view(w.data(), ws), view(b.data(), {g.out_channels}),
                         view(y.data(), ys), g);
        ops::cpu::conv2d_backward_data(view(dy.data(), ys), view(w.data(), ws), view(dx.data(), xs),
                                       g);
        ops::cpu::conv2d_backward_weight(view(x.data(), xs), view(dy.data(), ys),
                                         view(dw.data(), ws), g);
        DeviceBuffer<double> gx(x), gw(w), gb(b), gdy(dy), gy(y.size()), gdx(x.size()),
            gdw(w.size());
        tandem::Stream& stream = compute_stream();
        ops::cuda::conv2d(view(gx.data(), xs), view(gw.data(), ws),
                          view(gb.data(), {g.out_channels}), view(gy.data(), ys), g, stream, path);
        ops::cuda::conv2d_backward_data(view(gdy.data(), ys), view(gw.data(), ws),
                                        view(gdx.data(), xs), g, stream, path);
        ops::cuda::conv2d_backward_weight(view(gx.data(), xs), view(gdy.data(), ys),
                                          view(gdw.data(), ws), g, stream, path);
        check_close(gy.read(), y, "forward " + what);
        check_close(gdx.read(), dx, "input gradient " + what);
        check_close(gdw.read(), dw, "weight gradient " + what);
      }
  }

  TEST_CASE("the im2col path launches what sim counts for it, and a repeat allocates nothing") {
    if (!have_cuda("conv2d launches")) return;
    for (std::int64_t batch : {1, 16, 64}) {
      CAPTURE(batch);
      const ops::Conv2dGeometry g = conv_geometry(batch, 4, 9, 8, 6, 3, 1, 1, 1, 2);
      const Shape xs{g.batch, g.in_channels, g.in_h, g.in_w};
      const Shape ws{g.out_channels, g.in_channels / g.groups, g.kernel_h, g.kernel_w};
      const Shape ys{g.batch, g.out_channels, g.out_h, g.out_w};
      DeviceBuffer<double> gx(static_cast<std::size_t>(xs.num_elements())),
          gw(static_cast<std::size_t>(ws.num_elements())),
          gb(static_cast<std::size_t>(g.out_channels)),
          gy(static_cast<std::size_t>(ys.num_elements()));
      tandem::Stream& stream = compute_stream();
      const auto run_all = [&] {
        ops::cuda::conv2d(view(gx.data(), xs), view(gw.data(), ws),
                          view(gb.data(), {g.out_channels}), view(gy.data(), ys), g, stream,
                          ops::cuda::ConvPath::im2col);
        ops::cuda::conv2d_backward_data(view(gy.data(), ys), view(gw.data(), ws),
                                        view(gx.data(), xs), g, stream,
                                        ops::cuda::ConvPath::im2col);
        ops::cuda::conv2d_backward_weight(view(gx.data(), xs), view(gy.data(), ys),
                                          view(gw.data(), ws), g, stream,
                                          ops::cuda::ConvPath::im2col);
      };
      run_all();  // the stream's scratch grows to what the three passes need
      const tandem::LaunchCounts before = tandem::launch_counts();
      run_all();
      const tandem::LaunchCounts made = tandem::launch_counts() - before;
      const auto expected =
          ops::conv_launches(g, ops::ConvPass::forward, sizeof(double), true, 1) +
          ops::conv_launches(g, ops::ConvPass::backward_data, sizeof(double), false, 1) +
          ops::conv_launches(g, ops::ConvPass::backward_weight, sizeof(double), false, 1);
      CHECK(made.kernels == expected.kernels);
      CHECK(made.library_calls == expected.library_calls);
      CHECK(made.allocations == 0);
      (void)gy.read();  // waits for the stream before the buffers go
    }
  }

  TEST_CASE("cuDNN reports whether it loaded, and loads wherever libcudnn.so.9 does") {
    // Runs without a GPU too: loading the library and reading its version need no device.
    const std::string state = ops::cuda::cudnn_library();
    INFO(state);
    void* library = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      CHECK(state.rfind("unavailable: ", 0) == 0);
      return;
    }
    dlclose(library);
#ifdef TANDEM_HAVE_CUDNN_HEADER
    CHECK(state.rfind("libcudnn.so.9 9.", 0) == 0);
#else
    CHECK(state == "unavailable: built without cudnn.h");
#endif
  }

  TEST_CASE(
      "float32 convolutions stay strict fp32 unless TF32 is allowed, and repeat without "
      "allocating") {
    if (!have_cuda("conv2d float32")) return;
    // 576 products per output: TF32's 10-bit mantissa would leave relative errors near 1e-3,
    // strict fp32 stays near 1e-6.
    const ops::Conv2dGeometry g = conv_geometry(8, 64, 14, 14, 64, 3, 1, 1, 1, 1);
    const Shape xs{g.batch, g.in_channels, g.in_h, g.in_w};
    const Shape ws{g.out_channels, g.in_channels, g.kernel_h, g.kernel_w};
    const Shape ys{g.batch, g.out_channels, g.out_h, g.out_w};
    const auto x = sample<double>(xs.num_elements(), 5, -1.0, 1.0),
               w = sample<double>(ws.num_elements(), 6, -1.0, 1.0),
               dy = sample<double>(ys.num_elements(), 7, -1.0, 1.0);
    std::vector<double> y(static_cast<std::size_t>(ys.num_elements())), dx(x.size()), dw(w.size());
    ops::cpu::conv2d(view(const_cast<double*>(x.data()), xs),
                     view(const_cast<double*>(w.data()), ws), ArrayView{}, view(y.data(), ys), g);
    ops::cpu::conv2d_backward_data(view(const_cast<double*>(dy.data()), ys),
                                   view(const_cast<double*>(w.data()), ws), view(dx.data(), xs), g);
    ops::cpu::conv2d_backward_weight(view(const_cast<double*>(x.data()), xs),
                                     view(const_cast<double*>(dy.data()), ys), view(dw.data(), ws),
                                     g);
    const auto to_float = [](const std::vector<double>& v) {
      return std::vector<float>(v.begin(), v.end());
    };
    DeviceBuffer<float> gx(to_float(x)), gw(to_float(w)), gdy(to_float(dy)), gy(y.size()),
        gdx(x.size()), gdw(w.size());
    const auto f32 = [](float* data, const Shape& shape) {
      return ops::contiguous_view(data, ops::DType::float32, shape);
    };
    tandem::Stream& stream = compute_stream();
    const auto run_all = [&] {
      ops::cuda::conv2d(f32(gx.data(), xs), f32(gw.data(), ws), ArrayView{}, f32(gy.data(), ys), g,
                        stream);
      ops::cuda::conv2d_backward_data(f32(gdy.data(), ys), f32(gw.data(), ws), f32(gdx.data(), xs),
                                      g, stream);
      ops::cuda::conv2d_backward_weight(f32(gx.data(), xs), f32(gdy.data(), ys),
                                        f32(gdw.data(), ws), g, stream);
    };
    run_all();
    const tandem::LaunchCounts before = tandem::launch_counts();
    run_all();
    CHECK((tandem::launch_counts() - before).allocations == 0);
    const bool tf32 = tandem::detail::library_options(stream).allow_tf32;
    const auto check_fp32 = [&](const std::vector<float>& got, const std::vector<double>& want,
                                const char* what) {
      INFO(what << " (cuDNN: " << ops::cuda::cudnn_library() << ", TF32 "
                << (tf32 ? "allowed" : "off") << ")");
      double worst = 0, scale = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
        scale = std::max(scale, std::fabs(want[i]));
      }
      CHECK(worst <= (tf32 ? 1e-2 : 1e-5) * scale);
    };
    check_fp32(gy.read(), y, "forward");
    check_fp32(gdx.read(), dx, "input gradient");
    check_fp32(gdw.read(), dw, "weight gradient");
  }

  TEST_CASE("max and average pooling, forward and backward, match the CPU kernels") {
    if (!have_cuda("pooling")) return;
    for (const bool include_pad : {true, false}) {
      ops::Pool2dGeometry g{.batch = 2,
                            .channels = 3,
                            .in_h = 9,
                            .in_w = 8,
                            .kernel_h = 3,
                            .kernel_w = 2,
                            .out_h = 0,
                            .out_w = 0,
                            .stride_h = 2,
                            .stride_w = 1,
                            .pad_h = 1,
                            .pad_w = 1,
                            .count_include_pad = include_pad};
      g.out_h = (g.in_h + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1;
      g.out_w = (g.in_w + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
      const Shape xs{g.batch, g.channels, g.in_h, g.in_w};
      const Shape ys{g.batch, g.channels, g.out_h, g.out_w};
      auto x = sample<double>(xs.num_elements(), 5, -2.0, 2.0),
           dy = sample<double>(ys.num_elements(), 6, -2.0, 2.0);
      std::vector<double> max_y(dy.size()), avg_y(dy.size()), max_dx(x.size()), avg_dx(x.size());
      ops::cpu::max_pool2d(view(x.data(), xs), view(max_y.data(), ys), g);
      ops::cpu::avg_pool2d(view(x.data(), xs), view(avg_y.data(), ys), g);
      ops::cpu::max_pool2d_backward(view(x.data(), xs), view(dy.data(), ys),
                                    view(max_dx.data(), xs), g);
      ops::cpu::avg_pool2d_backward(view(dy.data(), ys), view(avg_dx.data(), xs), g);
      DeviceBuffer<double> gx(x), gdy(dy), g_max_y(dy.size()), g_avg_y(dy.size()),
          g_max_dx(x.size()), g_avg_dx(x.size());
      tandem::Stream& stream = compute_stream();
      ops::cuda::max_pool2d(view(gx.data(), xs), view(g_max_y.data(), ys), g, stream);
      ops::cuda::avg_pool2d(view(gx.data(), xs), view(g_avg_y.data(), ys), g, stream);
      ops::cuda::max_pool2d_backward(view(gx.data(), xs), view(gdy.data(), ys),
                                     view(g_max_dx.data(), xs), g, stream);
      ops::cuda::avg_pool2d_backward(view(gdy.data(), ys), view(g_avg_dx.data(), xs), g, stream);
      const std::string what = include_pad ? "counting padding" : "excluding padding";
      check_close(g_max_y.read(), max_y, "max forward");
      check_close(g_avg_y.read(), avg_y, "avg forward " + what);
      check_close(g_max_dx.read(), max_dx, "max backward");
      check_close(g_avg_dx.read(), avg_dx, "avg backward " + what);
    }
  }
}
