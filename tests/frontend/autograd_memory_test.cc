// Device memory of a training step (an MLP of the digits' size: 64 inputs, two hidden layers of
// 256, 10 classes, batches of 128, float32) on sim devices, with autograd and with the same
// gradients written by hand. Its own process: each variant runs on its own sim device, so that
// each device's peak counts one variant only.
//
// On the naive engine every op runs inside the call and an array's memory goes back when its
// last handle does: the peak is exactly what the program keeps alive, and autograd must keep
// no more than the hand-written step does, plus the few arrays the tape saves that the
// hand-written step recomputes or discards earlier (checked: a peak at most 25% higher). On the
// threaded engine the front end runs ahead of the device and the peak also counts arrays queued but
// not yet run; those numbers are printed, not checked.
#include <doctest/doctest.h>

#include <tandem/tandem.h>

#include <cstdio>
#include <random>
#include <vector>

#include "tandem/accel/accelerator.h"

namespace tandem::testing {

namespace nd = tandem::nd;
namespace ag = tandem::autograd;
using nd::NDArray;

namespace {

constexpr std::int64_t kBatch = 128, kInputs = 64, kHidden = 256, kClasses = 10;
constexpr int kSteps = 5;
constexpr double kRate = 0.1;

struct Network {
  std::vector<NDArray> params;  // w1 b1 w2 b2 w3 b3
};

Network make_network(Device device) {
  Network net;
  const std::vector<nd::Shape> shapes = {{kInputs, kHidden},  {kHidden},
                                         {kHidden, kHidden},  {kHidden},
                                         {kHidden, kClasses}, {kClasses}};
  for (const nd::Shape& shape : shapes)
    net.params.push_back(nd::random::normal(shape, {.stddev = 0.05, .device = device}));
  return net;
}

// Live arrays' bytes: the blocks the front end keeps for reuse by the next array of their size
// (nd::reusable_bytes) are a cache, not memory a step holds on to.
std::size_t in_use(Device device) {
  return accelerator(device).device_pool().stats().bytes_in_use - nd::reusable_bytes(device);
}
std::size_t peak(Device device) {
  return accelerator(device).device_pool().stats().peak_bytes_in_use;
}

NDArray forward(const Network& net, const NDArray& x) {
  const auto& p = net.params;
  const NDArray h1 = nd::relu(nd::dot(x, p[0]) + p[1]);
  const NDArray h2 = nd::relu(nd::dot(h1, p[2]) + p[3]);
  return nd::dot(h2, p[4]) + p[5];
}

double autograd_step(Network& net, const NDArray& x, const NDArray& y) {
  NDArray loss;
  {
    auto scope = ag::record();
    loss = nd::mean(nd::softmax_cross_entropy(forward(net, x), y));
    loss.backward();
  }
  for (NDArray& p : net.params) p -= kRate * p.grad();
  return loss.scalar<double>();
}

double handwritten_step(Network& net, const NDArray& x, const NDArray& y) {
  auto& p = net.params;
  const NDArray z1 = nd::dot(x, p[0]) + p[1];
  const NDArray h1 = nd::relu(z1);
  const NDArray z2 = nd::dot(h1, p[2]) + p[3];
  const NDArray h2 = nd::relu(z2);
  const NDArray logits = nd::dot(h2, p[4]) + p[5];
  const NDArray loss = nd::mean(nd::softmax_cross_entropy(logits, y));
  NDArray d = (nd::softmax(logits) - nd::one_hot(y, kClasses)) / static_cast<double>(kBatch);
  const NDArray g5 = nd::sum(d, 0), g4 = nd::dot(h2.T(), d);
  d = nd::dot(d, p[4].T()) * (z2 > 0.0);
  const NDArray g3 = nd::sum(d, 0), g2 = nd::dot(h1.T(), d);
  d = nd::dot(d, p[2].T()) * (z1 > 0.0);
  const NDArray g1 = nd::sum(d, 0), g0 = nd::dot(x.T(), d);
  const std::vector<NDArray> grads = {g0, g1, g2, g3, g4, g5};
  for (std::size_t i = 0; i < p.size(); ++i) p[i] -= kRate * grads[i];
  return loss.scalar<double>();
}

double forward_only(Network& net, const NDArray& x, const NDArray& y) {
  return nd::mean(nd::softmax_cross_entropy(forward(net, x), y)).scalar<double>();
}

struct Measured {
  std::size_t baseline = 0;  // parameters (and gradients), inputs
  std::size_t peak_above = 0;
  std::size_t after_above = 0;
  double last_loss = 0;
};

template <class Step>
Measured measure(Engine& engine, Device device, bool attach, Step step) {
  nd::EngineScope scope(engine);
  nd::random::seed(1);
  Network net = make_network(device);
  if (attach)
    for (NDArray& p : net.params) p.attach_grad();
  const NDArray x = nd::random::uniform({kBatch, kInputs}, device);
  std::vector<std::int32_t> labels(kBatch);
  std::mt19937 rng(3);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng() % kClasses);
  const NDArray y = nd::from_vector(labels, device);
  nd::waitall();
  Measured m;
  m.baseline = in_use(device);
  for (int i = 0; i < kSteps; ++i) m.last_loss = step(net, x, y);
  nd::waitall();
  m.peak_above = peak(device) - m.baseline;
  m.after_above = in_use(device) - m.baseline;
  return m;
}

bool sim_devices(int count) {
  static const bool configured = [] {
    AcceleratorConfig config = EngineConfig::from_env().accel;
    config.sim_devices = 6;
    configure_accelerators(config);
    return true;
  }();
  (void)configured;
  if (device_count(DeviceKind::sim) >= count) return true;
  MESSAGE("SKIPPED: fewer than ", count, " sim devices");
  return false;
}

double kib(std::size_t bytes) {
  return static_cast<double>(bytes) / 1024.0;
}

void report(const char* engine, const char* what, const Measured& m) {
  std::printf(
      "%-8s %-22s peak %7.1f KiB = baseline %6.1f KiB + step %7.1f KiB; left after %.1f KiB\n",
      engine, what, kib(m.baseline + m.peak_above), kib(m.baseline), kib(m.peak_above),
      kib(m.after_above));
}

}  // namespace

TEST_SUITE("frontend.autograd_memory") {
  TEST_CASE("an autograd training step keeps no more device memory alive than a hand-written one") {
    if (!sim_devices(6)) return;
    std::printf("MLP %lldx%lld -> %lld -> %lld -> %lld, float32, %d steps, sim device pool:\n",
                static_cast<long long>(kBatch), static_cast<long long>(kInputs),
                static_cast<long long>(kHidden), static_cast<long long>(kHidden),
                static_cast<long long>(kClasses), kSteps);
    auto naive = Engine::create(EngineConfig{.kind = EngineKind::naive});
    const Measured forward_naive = measure(*naive, sim(0), false, forward_only);
    const Measured hand_naive = measure(*naive, sim(1), false, handwritten_step);
    const Measured auto_naive = measure(*naive, sim(2), true, autograd_step);
    report("naive", "forward only", forward_naive);
    report("naive", "hand-written gradients", hand_naive);
    report("naive", "autograd", auto_naive);
    auto threaded = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    const Measured hand_threaded = measure(*threaded, sim(3), false, handwritten_step);
    const Measured auto_threaded = measure(*threaded, sim(4), true, autograd_step);
    report("threaded", "hand-written gradients", hand_threaded);
    report("threaded", "autograd", auto_threaded);
    // Same math: the same losses.
    CHECK(auto_naive.last_loss == doctest::Approx(hand_naive.last_loss).epsilon(1e-4));
    // Peaks, gradient buffers included (part of autograd's baseline, made by the hand-written
    // step): autograd keeps at most a quarter more alive.
    CHECK(static_cast<double>(auto_naive.baseline + auto_naive.peak_above) <=
          1.25 * static_cast<double>(hand_naive.baseline + hand_naive.peak_above));
    // Nothing of a step outlives it.
    CHECK(auto_naive.after_above == 0);
    CHECK(hand_naive.after_above == 0);
    CHECK(auto_threaded.after_above == 0);
  }
}

}  // namespace tandem::testing
