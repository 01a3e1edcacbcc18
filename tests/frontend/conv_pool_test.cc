// conv2d, max/avg/global pooling against the direct-loop references of conv_reference.h, on
// cpu and sim(0), float32 and float64; and the errors the calls give for bad shapes, options,
// dtypes and devices.
#include <algorithm>
#include <map>

#include "tandem/profiler.h"

#include "conv_reference.h"

namespace tandem::testing {

namespace {

struct ConvCase {
  Shape x, w;
  nd::Conv2dOptions options;
  bool bias;
};

std::string describe(const ConvCase& c) {
  const auto& o = c.options;
  return "x " + c.x.to_string() + " w " + c.w.to_string() + " stride " + o.stride.to_string() +
         " padding " + o.padding.to_string() + " dilation " + o.dilation.to_string() + " groups " +
         std::to_string(o.groups) + (c.bias ? " bias" : "");
}

// Hand-picked: each option alone and together, odd sizes, batch 1, the 1x1 path; then random.
std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cases{
      {{2, 3, 7, 7}, {4, 3, 3, 3}, {}, true},
      {{1, 3, 9, 8}, {5, 3, 3, 3}, {.stride = 2}, false},
      {{2, 2, 6, 7}, {3, 2, 3, 2}, {.padding = 1}, true},
      {{2, 2, 9, 9}, {2, 2, 3, 3}, {.dilation = 2}, true},
      {{3, 4, 5, 6}, {6, 2, 3, 3}, {.padding = {1, 2}, .groups = 2}, true},
      {{1, 4, 11, 9}, {4, 2, 3, 3}, {.stride = 2, .padding = 2, .dilation = 2, .groups = 2}, true},
      {{2, 6, 5, 5}, {6, 1, 3, 3}, {.padding = 1, .groups = 6}, false},  // depthwise
      {{2, 5, 4, 3}, {7, 5, 1, 1}, {}, true},                            // 1x1: no im2col
      {{2, 4, 6, 6}, {2, 4, 1, 1}, {.stride = 2}, false},
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {}, true},
      {{2, 1, 8, 8}, {6, 1, 5, 5}, {.stride = {1, 2}, .padding = {2, 0}}, true},
  };
  std::mt19937_64 rng(1313);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  while (cases.size() < 30) {
    const std::int64_t groups = pick(1, 3);
    ConvCase c{{pick(1, 3), groups * pick(1, 3), pick(3, 12), pick(3, 12)},
               {groups * pick(1, 3), 0, pick(1, 4), pick(1, 4)},
               {.stride = {pick(1, 3), pick(1, 3)},
                .padding = {pick(0, 2), pick(0, 2)},
                .dilation = {pick(1, 2), pick(1, 2)},
                .groups = groups},
               pick(0, 1) == 1};
    c.w[1] = c.x[1] / groups;
    const auto& o = c.options;
    if (c.x[2] + 2 * o.padding.h < o.dilation.h * (c.w[2] - 1) + 1 ||
        c.x[3] + 2 * o.padding.w < o.dilation.w * (c.w[3] - 1) + 1) {
      continue;
    }
    cases.push_back(c);
  }
  return cases;
}

std::vector<Device> test_devices() {
  std::vector<Device> devices{cpu()};
  if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
  return devices;
}

Host rounded(Host h, DType dtype) {
  for (double& v : h.values) v = round_to(v, dtype);
  return h;
}

}  // namespace

TEST_SUITE("frontend.conv_pool") {
  TEST_CASE("conv2d matches the direct loops for stride, padding, dilation, groups and bias") {
    std::mt19937_64 rng(13);
    for (const Device device : test_devices()) {
      for (const ConvCase& c : conv_cases()) {
        for (DType dtype : {nd::float32, nd::float64}) {
          const Host x = rounded(random_host(c.x, rng), dtype);
          const Host w = rounded(random_host(c.w, rng), dtype);
          const Host b = rounded(random_host({c.w[0]}, rng), dtype);
          const NDArray ax = to_array(x, dtype).copyto(device);
          const NDArray aw = to_array(w, dtype).copyto(device);
          const NDArray y = c.bias
                                ? nd::conv2d(ax, aw, to_array(b, dtype).copyto(device), c.options)
                                : nd::conv2d(ax, aw, c.options);
          CHECK(y.device() == device);
          CHECK(y.dtype() == dtype);
          check_reference(y, reference_conv2d(x, w, c.bias ? &b : nullptr, c.options),
                          static_cast<double>(c.w[1] * c.w[2] * c.w[3]),
                          to_string(device) + " " + dtype_name(dtype) + " " + describe(c));
        }
      }
    }
  }

  TEST_CASE("conv2d reads strided views (a transposed input is made dense first)") {
    std::mt19937_64 rng(14);
    const Host x = random_host({2, 3, 6, 5}, rng), w = random_host({4, 3, 3, 3}, rng);
    for (const Device device : test_devices()) {
      // x stored as (N, C, W, H), seen through a transpose as (N, C, H, W).
      Host stored{{2, 3, 5, 6}, std::vector<double>(x.values.size())};
      for (std::int64_t i = 0; i < x.shape.num_elements(); ++i) {
        auto m = unravel(i, x.shape);
        std::swap(m[2], m[3]);
        stored.values[static_cast<std::size_t>(ravel(m, stored.shape))] = x.at(i);
      }
      const NDArray view =
          nd::transpose(to_array(stored, nd::float64).copyto(device), {0, 1, 3, 2});
      REQUIRE(!view.is_contiguous());
      const nd::Conv2dOptions o{.padding = 1};
      check_reference(nd::conv2d(view, to_array(w, nd::float64).copyto(device), o),
                      reference_conv2d(x, w, nullptr, o), 27, to_string(device));
    }
  }

  TEST_CASE("max and average pooling match the direct loops; global average pooling too") {
    std::mt19937_64 rng(15);
    const std::vector<std::pair<Shape, nd::Pool2dOptions>> cases{
        {{2, 3, 8, 8}, {.kernel = 2}},
        {{1, 2, 7, 9}, {.kernel = 3, .stride = 2, .padding = 1}},
        {{2, 2, 7, 9}, {.kernel = 3, .stride = 2, .padding = 1, .count_include_pad = false}},
        {{2, 1, 6, 5}, {.kernel = {3, 2}, .stride = {1, 2}, .padding = {1, 0}}},
        {{1, 3, 5, 5}, {.kernel = 3, .stride = 1, .padding = 1, .count_include_pad = false}},
        {{3, 2, 5, 6}, {.kernel = 5, .stride = 3, .padding = 2}},
        {{1, 1, 1, 1}, {.kernel = 1}},
    };
    for (const Device device : test_devices()) {
      for (const auto& [shape, o] : cases) {
        for (DType dtype : {nd::float32, nd::float64}) {
          const Host x = rounded(random_host(shape, rng), dtype);
          const NDArray ax = to_array(x, dtype).copyto(device);
          const std::string what = to_string(device) + " " + dtype_name(dtype) + " x " +
                                   shape.to_string() + " kernel " + o.kernel.to_string() +
                                   " padding " + o.padding.to_string() +
                                   (o.count_include_pad ? "" : " excluding padding");
          check_reference(nd::max_pool2d(ax, o), reference_pool2d(x, o, true), 1, "max " + what);
          check_reference(nd::avg_pool2d(ax, o), reference_pool2d(x, o, false),
                          static_cast<double>(o.kernel.h * o.kernel.w), "avg " + what);
          const nd::Pool2dOptions global{.kernel = {shape[2], shape[3]}};
          check_reference(nd::global_avg_pool2d(ax), reference_pool2d(x, global, false),
                          static_cast<double>(shape[2] * shape[3]), "global " + what);
        }
      }
    }
  }

  TEST_CASE("max pooling propagates NaN and never picks padding") {
    for (const Device device : test_devices()) {
      const NDArray x =
          nd::from_vector(std::vector<double>{-1, -2, std::nan(""), -4}, Shape{1, 1, 2, 2})
              .copyto(device);
      const auto y =
          nd::max_pool2d(x, {.kernel = 2, .stride = 1, .padding = 1}).to_vector<double>();
      REQUIRE(y.size() == 9);
      CHECK(y[0] == -1);  // the corner window holds one input, -1, and padding: not 0
      CHECK(std::isnan(y[4]));
    }
  }

  TEST_CASE("an empty batch gives empty outputs and zero weight and bias gradients") {
    for (const Device device : test_devices()) {
      const NDArray x = nd::zeros({0, 3, 5, 5}, nd::float64, device);
      const NDArray w = nd::ones({4, 3, 3, 3}, nd::float64, device);
      const NDArray y = nd::conv2d(x, w, nd::ones({4}, nd::float64, device));
      CHECK(y.shape() == Shape{0, 4, 3, 3});
      CHECK(nd::conv2d_backward_data(y, w, x.shape()).shape() == x.shape());
      const auto dw = nd::conv2d_backward_weight(y, x, w.shape()).to_vector<double>();
      CHECK(std::all_of(dw.begin(), dw.end(), [](double v) { return v == 0; }));
      CHECK(nd::conv2d_backward_bias(y).to_vector<double>() == std::vector<double>(4, 0.0));
      CHECK(nd::max_pool2d(x, {.kernel = 2}).shape() == Shape{0, 3, 2, 2});
    }
  }

  TEST_CASE("the bias gradient is one op with the bits of two reductions; with dweight, one op") {
    std::mt19937_64 rng(17);
    for (const Device device : test_devices()) {
      CAPTURE(to_string(device));
      for (const DType dtype : {nd::float32, nd::float64}) {
        CAPTURE(dtype_name(dtype));
        const NDArray dy = to_array(random_host({3, 5, 4, 6}, rng), dtype).copyto(device);
        const NDArray two_sums = nd::sum(nd::sum(dy.reshape({3, 5, 24}), 2), 0);
        CHECK(nd::conv2d_backward_bias(dy).to_vector<double>() == two_sums.to_vector<double>());
        // A strided gradient is made dense first.
        const NDArray strided = nd::transpose(dy, {0, 1, 3, 2});
        CHECK(nd::conv2d_backward_bias(strided).to_vector<double>() ==
              nd::conv2d_backward_bias(strided.copy()).to_vector<double>());
      }
      // Through autograd, a convolution whose weight and bias both need gradients forms them in
      // one op, with the bits of the two separate calls; grad_req add adds into the buffers.
      const NDArray x = to_array(random_host({2, 3, 6, 6}, rng), nd::float64).copyto(device);
      NDArray w = to_array(random_host({4, 3, 3, 3}, rng), nd::float64).copyto(device);
      NDArray b = to_array(random_host({4}, rng), nd::float64).copyto(device);
      const NDArray r = to_array(random_host({2, 4, 4, 4}, rng), nd::float64).copyto(device);
      for (const autograd::GradReq req : {autograd::GradReq::write, autograd::GradReq::add}) {
        w.attach_grad(req);
        b.attach_grad(req);
        for (int pass = 0; pass < 2; ++pass) {
          NDArray loss;
          {
            auto recording = autograd::record();
            loss = nd::sum(nd::conv2d(x, w, b) * r);
          }
          nd::waitall();
          profiler::clear();
          profiler::start();
          loss.backward();
          nd::waitall();
          profiler::stop();
          std::map<std::string, std::uint64_t> calls;
          for (const auto& op : profiler::op_stats(profiler::events())) calls[op.name] += op.count;
          CHECK(calls["conv2d_backward_weight_bias"] == 1);
          CHECK(calls.count("conv2d_backward_bias") == 0);
        }
        const double times = req == autograd::GradReq::add ? 2.0 : 1.0;
        CHECK(w.grad().to_vector<double>() ==
              (nd::conv2d_backward_weight(r, x, w.shape()) * times).to_vector<double>());
        CHECK(b.grad().to_vector<double>() ==
              (nd::conv2d_backward_bias(r) * times).to_vector<double>());
      }
    }
    check_error(
        [] {
          nd::conv2d_backward_bias(nd::zeros({2, 3, 4}));
        },
        {"conv2d_backward_bias", "4-D", "2x3x4"});
    check_error(
        [] {
          nd::conv2d_backward_bias(nd::zeros({2, 3, 4, 4}, nd::int32));
        },
        {"conv2d_backward_bias", "int32"});
  }

  TEST_CASE("bad shapes, options, dtypes and devices are errors at the call naming them") {
    const NDArray x = nd::zeros({2, 4, 8, 8}), w = nd::zeros({6, 4, 3, 3});
    check_error([&] { nd::conv2d(nd::zeros({4, 8, 8}), w); }, {"conv2d", "4-D", "4x8x8"});
    check_error(
        [&] {
          nd::conv2d(x, nd::zeros({6, 3, 3, 3}));
        },
        {"conv2d", "weight dimension 1", "in_channels / groups = 4", "6x3x3x3"});
    check_error(
        [&] {
          nd::conv2d(x, nd::zeros({6, 1, 3, 3}), {.groups = 3});
        },
        {"conv2d", "multiples of groups", "groups 3"});
    check_error(
        [&] {
          nd::conv2d(x, nd::zeros({6, 4, 9, 9}));
        },
        {"conv2d", "dilated kernel (9x9)", "padded input (8x8"});
    check_error([&] { nd::conv2d(x, w, {.dilation = 4}); }, {"conv2d", "dilation 4x4"});
    check_error([&] { nd::conv2d(x, w, {.stride = {1, 0}}); }, {"conv2d", "stride 1x0", ">= 1"});
    check_error([&] { nd::conv2d(x, w, {.padding = -1}); }, {"conv2d", "padding -1x-1"});
    check_error([&] { nd::conv2d(x, w, nd::zeros({5})); }, {"conv2d", "bias", "6", "5"});
    check_error([&] { nd::conv2d(x.astype(nd::int32), w.astype(nd::int32)); }, {"conv2d", "int32"});
    check_error([&] { nd::conv2d(x, w.astype(nd::float64)); }, {"conv2d", "float32", "float64"});
    if (device_count(DeviceKind::sim) > 0) {
      check_error([&] { nd::conv2d(x, w.copyto(sim(0))); }, {"conv2d", "cpu(0)", "sim(0)"});
      check_error(
          [&] {
            nd::max_pool2d_backward(nd::zeros({2, 4, 4, 4}, sim(0)), x, {.kernel = 2});
          },
          {"max_pool2d_backward", "cpu(0)", "sim(0)"});
    }
    check_error(
        [&] {
          nd::conv2d_backward_data(nd::zeros({2, 6, 5, 5}), w, x.shape());
        },
        {"conv2d_backward_data", "grad_out", "2x6x6x6", "2x6x5x5"});
    check_error(
        [&] {
          nd::conv2d_backward_weight(nd::zeros({2, 6, 6, 6}), x, Shape{6, 4, 3});
        },
        {"conv2d_backward_weight", "weight must be 4-D"});
    check_error([&] { nd::max_pool2d(x, {}); }, {"max_pool2d", "kernel 0x0"});
    check_error([&] { nd::avg_pool2d(x, {.kernel = 2, .padding = 2}); },
                {"avg_pool2d", "padding 2x2", "half the kernel 2x2"});
    check_error([&] { nd::max_pool2d(x, {.kernel = 9}); }, {"max_pool2d", "kernel 9x9", "8x8"});
    check_error([&] { nd::max_pool2d(x, {.kernel = 2, .stride = -1}); }, {"stride -1x-1"});
    check_error(
        [&] {
          nd::global_avg_pool2d(nd::zeros({2, 3}));
        },
        {"global_avg_pool2d", "4-D", "2x3"});
    check_error(
        [&] {
          nd::avg_pool2d_backward(nd::zeros({2, 4, 3, 3}), x.shape(), {.kernel = 2});
        },
        {"avg_pool2d_backward", "2x4x4x4", "2x4x3x3"});
  }
}

}  // namespace tandem::testing
