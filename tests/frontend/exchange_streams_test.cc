// Where the gradient exchange during backward puts its work on 4 sim devices: what kept
// ResNet-18's devices out of step (docs/benchmarks.md, "ResNet-18"). Streams run their items in
// queue order, so an op that waits for another device's data must not sit in a queue in front of
// work that does not: the tests read the order from the profiler's lanes and dependencies, not
// from timings.
#include <map>
#include <string>
#include <vector>

#include "data_parallel_support.h"
#include "frontend_test_util.h"
#include "tandem/nd/multi_device.h"
#include "tandem/nn/nn.h"
#include "tandem/profiler.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

// A float64 MLP 64 -> 512 (tanh) -> 10: its first weight's gradient (64 x 512 x 8 bytes) is
// one nd::allreduce would send around the ring on 3 devices or more.
std::shared_ptr<nn::Sequential> wide_mlp(const std::vector<Device>& devices) {
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Dense(512, nn::tanh, {.dtype = nd::float64}))
      .add(nn::Dense(10, nn::ActivationType::none, {.dtype = nd::float64}));
  net->initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0, 4),
                  devices);
  return net;
}

// Trains wide_mlp for 3 steps of a global batch of 32 on `devices`; with `events`, the
// profiler's events of the last step (planned buckets) are stored there.
ParameterValues train_wide(const std::vector<Device>& devices, nn::GradientExchangeMode mode,
                           std::vector<profiler::OpEvent>* events = nullptr) {
  nd::random::seed(11);
  const NDArray images = nd::random::uniform({3, 32, 64}).astype(nd::float64);
  const NDArray labels = nd::random::uniform(0, 10, {3, 32}).astype(nd::int32);
  auto net = wide_mlp(devices);
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1), {.exchange = mode});
  for (std::int64_t step = 0; step < 3; ++step) {
    const bool profiled = events != nullptr && step == 2;
    if (profiled) profiler::start();
    forward_backward(*net, images[step], labels[step], devices);
    trainer.step(32);
    if (profiled) {
      nd::waitall();
      profiler::stop();
      *events = profiler::events();
    }
  }
  return parameter_values(*net);
}

}  // namespace

TEST_SUITE("frontend.data_parallel") {
  TEST_CASE("4 devices: a gradient the ring would carry is summed by a bucket, not the ring") {
    if (device_count(DeviceKind::sim) < 4) {
      MESSAGE("SKIPPED: fewer than 4 sim devices (ctest sets TANDEM_SIM_DEVICES=5)");
      return;
    }
    const std::vector<Device> devices{sim(0), sim(1), sim(2), sim(3)};
    REQUIRE(64 * 512 * sizeof(double) >= nd::kRingMinimumBytes);
    std::vector<profiler::OpEvent> events;
    const ParameterValues overlapped =
        train_wide(devices, nn::GradientExchangeMode::during_backward, &events);
    REQUIRE(!events.empty());
    std::map<std::uint64_t, const profiler::OpEvent*> by_id;
    for (const profiler::OpEvent& event : events) by_id[event.id] = &event;
    const auto is_exchange_copy = [](const profiler::OpEvent& event) {
      return event.name == "allreduce" && event.queue == Queue::copy_d2d;
    };
    std::size_t copies = 0, sums = 0;
    for (const profiler::OpEvent& event : events) {
      CAPTURE(event.name);
      CAPTURE(event.lane);
      if (is_exchange_copy(event)) {
        ++copies;
        // A send: on the peer-copy stream of the device that made what it copies, so that it
        // waits in no other device's queue.
        for (const std::uint64_t id : event.depends_on) {
          const auto producer = by_id.find(id);
          if (producer == by_id.end() || !producer->second->device.is_accelerator()) continue;
          CHECK(producer->second->device == event.device);
        }
        continue;
      }
      if (event.queue != Queue::compute || !event.device.is_accelerator()) continue;
      // On a compute stream, only a bucket's sum reads what came from another device (the
      // ring's adds did, queued in the middle of the device's backward).
      for (const std::uint64_t id : event.depends_on) {
        const auto producer = by_id.find(id);
        if (producer != by_id.end() && is_exchange_copy(*producer->second)) {
          CHECK(event.name == "allreduce_bucket_sum");
        }
      }
      sums += event.name == "allreduce_bucket_sum" ? 1 : 0;
    }
    // Every bucket crosses from every device to every other, and is summed on every device.
    CHECK(copies > 0);
    CHECK(copies % (4 * 3) == 0);
    CHECK(sums * 3 == copies);
    // The exchange sums in device order (the gather's), the Trainer's sum at the step sends
    // this gradient around the ring: the same values up to float64 rounding.
    const ParameterValues at_step = train_wide(devices, nn::GradientExchangeMode::at_step);
    CHECK(largest_difference(at_step, overlapped) <= 1e-12);
  }
}

}  // namespace tandem::testing
