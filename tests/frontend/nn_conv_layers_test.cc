// tandem::nn's convolution and pooling layers: deferred in_channels, the same results as the
// nd ops with the layer's parameters, the parameters' copy on the input's device, gradients
// through a Trainer-free record/backward, and the errors of each; and the launch counters of a
// steady training step on sim (tandem/launch_counters.h): no device allocation, and as many
// launches per convolution whatever the batch.
#include <algorithm>

#include "frontend_test_util.h"
#include "tandem/accel/accelerator.h"
#include "tandem/nn/nn.h"
#include "tandem/profiler.h"

namespace tandem::testing {

namespace {

namespace nn = tandem::nn;

void check_same(const NDArray& a, const NDArray& b) {
  REQUIRE(a.shape() == b.shape());
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (std::size_t i = 0; i < va.size(); ++i) CHECK(va[i] == vb[i]);
}

// LeNet's shape, small: conv, pool, conv, pool, dense.
nn::Sequential small_lenet() {
  nn::Sequential net;
  net.add(nn::Conv2D(4, 3, {.padding = 1, .activation = nn::relu}))
      .add(nn::MaxPool2D(2))
      .add(nn::Conv2D(8, 3, {.padding = 1, .activation = nn::relu}))
      .add(nn::MaxPool2D(2))
      .add(nn::Flatten())
      .add(nn::Dense(10));
  return net;
}

struct ProfiledSteps {
  std::vector<profiler::OpEvent> events;
  std::uint64_t device_allocations = 0;  // sim(0)'s pool misses during the profiled steps
};

// Profiles `steps` training steps of `net` on a batch of `batch` 8x8 images on sim(0), after
// three steps of warm-up.
ProfiledSteps profiled_steps(nn::Sequential& net, nn::Trainer& trainer, std::int64_t batch,
                             int steps) {
  const NDArray x = nd::random::normal({batch, 1, 8, 8}, sim(0));
  const NDArray labels = nd::from_vector(std::vector<std::int32_t>(batch, 3)).copyto(sim(0));
  const auto step = [&] {
    NDArray loss;
    {
      auto scope = autograd::record();
      loss = nd::softmax_cross_entropy(net(x), labels).sum();
    }
    loss.backward();
    trainer.step(batch);
  };
  // A loop that waits for each step (and for the frees of its temporaries). One that never
  // waits allocates as far as it runs ahead: a block comes back to the pool only once the
  // device is done with it, and is not yet handed to a later op of the same stream before that
  // (stream-ordered reuse in flight).
  // Warm-up: shapes, optimizer state, pools. Which dead array's block the next array of its
  // size takes in flight depends on the interleaving, so the pool's peak need is reached only
  // over a few steps: under ASan's timing three steps of warm-up left one block short in about
  // 1 run of 10 (the first profiled step then allocated it).
  for (int i = 0; i < 8; ++i) {
    step();
    nd::waitall();
  }
  MemoryPool& pool = accelerator(sim(0)).device_pool();
  const std::uint64_t before = pool.stats().raw_allocations;
  profiler::start();
  for (int i = 0; i < steps; ++i) {
    step();
    nd::waitall();
  }
  profiler::stop();
  return {profiler::events(), pool.stats().raw_allocations - before};
}

}  // namespace

TEST_SUITE("frontend.nn_conv_layers") {
  TEST_CASE("a steady training step on sim allocates no device memory") {
    if (device_count(DeviceKind::sim) == 0) return;
    nn::Sequential net = small_lenet();
    net.initialize(nn::Xavier(), {sim(0)});
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.05, 0.9));
    const ProfiledSteps run = profiled_steps(net, trainer, 16, 4);
    std::uint64_t allocations = 0, launches = 0;
    for (const auto& e : run.events) {
      allocations += e.counts.allocations;
      launches += e.counts.kernels + e.counts.library_calls;
    }
    CHECK(launches > 0);      // the counters did count the steps' work
    CHECK(allocations == 0);  // no op allocated device memory while it ran
    // Nor did creating the steps' arrays: every block came from the pool's cache.
    CHECK(run.device_allocations == 0);
  }

  TEST_CASE("a training step's convolutions launch as much at batch 64 as at batch 2") {
    if (device_count(DeviceKind::sim) == 0) return;
    // Launches per call of each convolution pass, summed over the net's two convolutions.
    const auto per_call = [](std::int64_t batch) {
      nn::Sequential net = small_lenet();
      net.initialize(nn::Xavier(), {sim(0)});
      nn::Trainer trainer(net.collect_params(), nn::SGD(0.05));
      const auto stats = profiler::op_stats(profiled_steps(net, trainer, batch, 2).events);
      std::vector<std::string> rows;
      for (const auto& s : stats) {
        if (s.name.rfind("conv2d", 0) != 0) continue;
        rows.push_back(s.name + " " + std::to_string(s.count) + " " + std::to_string(s.kernels) +
                       " " + std::to_string(s.library_calls) + " " + std::to_string(s.allocations));
      }
      std::sort(rows.begin(), rows.end());
      return rows;
    };
    const auto small = per_call(2);
    CHECK(small.size() >= 2);  // conv2d and its backward passes were profiled
    CHECK(per_call(64) == small);
  }

  TEST_CASE("Conv2D infers in_channels at the first forward and computes relu(conv2d + bias)") {
    nn::Conv2D layer(4, 3, {.stride = 2, .padding = 1, .groups = 2, .activation = nn::relu});
    CHECK_FALSE(layer.weight().shape_known());
    layer.initialize(nn::Xavier());
    const NDArray x = nd::random::normal({2, 6, 7, 7});
    const NDArray y = layer(x);
    CHECK(layer.weight().shape() == Shape{4, 3, 3, 3});
    CHECK(layer.bias().shape() == Shape{4});
    const NDArray expected = nd::relu(nd::conv2d(x, layer.weight().data(), layer.bias().data(),
                                                 {.stride = 2, .padding = 1, .groups = 2}));
    check_same(y, expected);
    CHECK(y.shape() == Shape{2, 4, 4, 4});
    const std::string message = error_of([&] { layer(nd::zeros({2, 4, 7, 7})); });
    CHECK(message.find("weight") != std::string::npos);
    CHECK(message.find("4 channels") != std::string::npos);
    CHECK(message.find("4x3x3x3") != std::string::npos);
  }

  TEST_CASE("Conv2D without bias, with in_channels given, dilation; pooling layers") {
    nn::Conv2D layer(3, {2, 3}, {.dilation = 2, .use_bias = false, .in_channels = 2});
    CHECK(layer.weight().shape() == Shape{3, 2, 2, 3});
    CHECK(error_of([&] { layer.bias(); }).find("use_bias = false") != std::string::npos);
    layer.initialize(nn::Xavier());
    const NDArray x = nd::random::normal({1, 2, 9, 9});
    check_same(layer(x), nd::conv2d(x, layer.weight().data(), {.dilation = 2}));
    check_same(nn::MaxPool2D(3, 2, 1)(x),
               nd::max_pool2d(x, {.kernel = 3, .stride = 2, .padding = 1}));
    check_same(nn::AvgPool2D(2)(x), nd::avg_pool2d(x, {.kernel = 2}));
    check_same(
        nn::AvgPool2D(3, 1, 1, false)(x),
        nd::avg_pool2d(x, {.kernel = 3, .stride = 1, .padding = 1, .count_include_pad = false}));
    check_same(nn::GlobalAvgPool2D()(x), nd::global_avg_pool2d(x));
    CHECK(error_of([] { nn::Conv2D(4, 3, {.groups = 3}); }).find("groups 3") != std::string::npos);
    CHECK(error_of([&] { layer(nd::zeros({2, 9, 9})); }).find("NCHW") != std::string::npos);
  }

  TEST_CASE("a conv net trains its parameters' copy on the input's device (sim(0))") {
    if (device_count(DeviceKind::sim) == 0) return;
    nn::Sequential net;
    net.add(nn::Conv2D(3, 3, {.padding = 1, .activation = nn::relu}))
        .add(nn::MaxPool2D(2))
        .add(nn::GlobalAvgPool2D())
        .add(nn::Flatten())
        .add(nn::Dense(2));
    net.initialize(nn::Xavier(), {cpu(), sim(0)});
    const NDArray x = nd::random::normal({4, 2, 6, 6}, sim(0));
    NDArray loss;
    {
      auto scope = autograd::record();
      loss = nd::sum(net(x));
    }
    loss.backward();
    auto& conv = dynamic_cast<nn::Conv2D&>(net[0]);
    const NDArray grad = conv.weight().grad(sim(0));
    CHECK(grad.device() == sim(0));
    CHECK(grad.shape() == Shape{3, 2, 3, 3});
    CHECK(nd::norm(grad).scalar<double>() > 0);
    // The same network on the cpu copy gives the same gradient.
    NDArray cpu_loss;
    {
      auto scope = autograd::record();
      cpu_loss = nd::sum(net(x.copyto(cpu())));
    }
    cpu_loss.backward();
    const auto a = grad.to_vector<double>(), b = conv.weight().grad(cpu()).to_vector<double>();
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-5));
  }
}

}  // namespace tandem::testing
