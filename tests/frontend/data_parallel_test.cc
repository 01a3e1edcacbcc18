// Data parallel training with the gradient exchange started from inside backward
// (nn::GradientExchange, Trainer's during_backward mode), autograd's gradient-ready hooks, and
// allreduce's ring algorithm. ctest runs this with TANDEM_SIM_DEVICES=5; cases that need more
// sim devices than there are skip with a message.
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "data_parallel_support.h"
#include "frontend_test_util.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"
#include "tandem/ops/collectives.h"
#include "tandem/profiler.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;
using namespace std::chrono_literals;

std::vector<Device> sim_devices(int count) {
  std::vector<Device> devices;
  for (int i = 0; i < count; ++i) devices.push_back(sim(i));
  return devices;
}

bool have_sims(int count) {
  if (device_count(DeviceKind::sim) >= count) return true;
  MESSAGE("SKIPPED: fewer than " << count << " sim devices (ctest sets TANDEM_SIM_DEVICES=5)");
  return false;
}

// One array per device with values that sum exactly in float64 (small integers), different on
// every device and every element.
std::vector<NDArray> integer_arrays(const std::vector<Device>& devices, const Shape& shape,
                                    DType dtype) {
  std::vector<NDArray> arrays;
  for (std::size_t d = 0; d < devices.size(); ++d) {
    std::vector<double> values(static_cast<std::size_t>(shape.num_elements()));
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<double>((i * 7 + d * 13) % 23) - 11.0;
    }
    arrays.push_back(nd::from_vector(values, shape).astype(dtype).copyto(devices[d]));
  }
  return arrays;
}

std::vector<double> expected_sum(const std::vector<NDArray>& arrays) {
  std::vector<double> sum(static_cast<std::size_t>(arrays.front().size()), 0.0);
  for (const NDArray& array : arrays) {
    const std::vector<double> values = array.to_vector<double>();
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += values[i];
  }
  return sum;
}

// Trains small_mlp for `steps` steps of a global batch of 60 on `devices` and returns every
// parameter's values (checking that all copies hold the same bits).
// With during_backward, `exchange` sets its buckets and `buckets` (if given) receives how many
// the plan made.
ParameterValues train(const std::vector<Device>& devices, nn::GradientExchangeMode mode,
                      int steps = 3, nn::GradientExchangeOptions exchange = {},
                      std::size_t* buckets = nullptr) {
  nd::random::seed(5);
  const NDArray images = nd::random::uniform({steps, 60, 64}).astype(nd::float64);
  const NDArray labels = nd::random::uniform(0, 10, {steps, 60}).astype(nd::int32);
  auto net = small_mlp(devices);
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.5, 0.9, 1e-3),
                      {.exchange = mode, .exchange_options = exchange});
  for (std::int64_t step = 0; step < steps; ++step) {
    forward_backward(*net, images[step], labels[step], devices);
    if (trainer.exchange() != nullptr) {
      CHECK(trainer.exchange()->summed_during_backward() == net->collect_params().size());
      if (buckets != nullptr) *buckets = trainer.exchange()->buckets();
    }
    trainer.step(60);
  }
  return parameter_values(*net);
}

}  // namespace

TEST_SUITE("frontend.data_parallel") {
  TEST_CASE("ring allreduce leaves the exact sum, bit-identical, on 3, 4 and 5 devices") {
    if (!have_sims(5)) return;
    for (const int count : {3, 4, 5}) {
      const std::vector<Device> devices = sim_devices(count);
      // Fewer elements than devices (empty chunks), sizes that do not divide, 2-d arrays.
      for (const Shape& shape :
           {Shape{1}, Shape{2}, Shape{4}, Shape{7}, Shape{3, 5}, Shape{1001}}) {
        for (const DType dtype : {nd::float64, nd::float32, nd::int32}) {
          CAPTURE(count);
          CAPTURE(shape.to_string());
          CAPTURE(nd::dtype_name(dtype));
          const std::vector<NDArray> arrays = integer_arrays(devices, shape, dtype);
          const std::vector<double> sum = expected_sum(arrays);
          nd::allreduce(arrays, nd::AllreduceAlgorithm::ring);
          for (const NDArray& array : arrays) {
            CHECK(array.device() == devices[&array - arrays.data()]);
            CHECK(array.to_vector<double>() == sum);
          }
        }
      }
    }
  }

  TEST_CASE("ring, gather and automatic allreduce of random floats: every device, same bits") {
    if (!have_sims(4)) return;
    const std::vector<Device> devices = sim_devices(4);
    // Below kRingMinimumBytes automatic gathers; from it on it runs the ring.
    const std::int64_t large = static_cast<std::int64_t>(nd::kRingMinimumBytes / sizeof(float));
    for (const std::int64_t elements : std::vector<std::int64_t>{111, large + 3}) {
      CAPTURE(elements);
      nd::random::seed(3);
      std::vector<NDArray> ring, automatic, gather;
      for (const Device& device : devices) {
        const NDArray values = nd::random::normal({elements});
        ring.push_back(values.copyto(device));
        automatic.push_back(values.copyto(device));
        gather.push_back(values.copyto(device));
      }
      nd::allreduce(ring, nd::AllreduceAlgorithm::ring);
      nd::allreduce(automatic);
      nd::allreduce(gather, nd::AllreduceAlgorithm::gather);
      const std::vector<float> by_ring = ring.front().to_vector<float>();
      const std::vector<float> by_gather = gather.front().to_vector<float>();
      const std::vector<float>& chosen = elements >= large ? by_ring : by_gather;
      for (std::size_t d = 0; d < devices.size(); ++d) {
        CHECK(ring[d].to_vector<float>() == by_ring);
        CHECK(gather[d].to_vector<float>() == by_gather);
        CHECK(automatic[d].to_vector<float>() == chosen);
      }
      // Ring and gather add in other orders: equal to float32 rounding, not to the bit.
      float worst = 0;
      for (std::size_t i = 0; i < by_ring.size(); ++i) {
        worst = std::max(
            worst, std::abs(by_ring[i] - by_gather[i]) / std::max(1.0f, std::abs(by_gather[i])));
      }
      CHECK(worst <= 1e-5f);
    }
  }

  TEST_CASE("two devices: automatic allreduce is the gather, bit for bit") {
    if (!have_sims(2)) return;
    nd::random::seed(4);
    const NDArray a = nd::random::normal({129});
    const NDArray b = nd::random::normal({129});
    const std::vector<NDArray> automatic{a.copyto(sim(0)), b.copyto(sim(1))};
    const std::vector<NDArray> gather{a.copyto(sim(0)), b.copyto(sim(1))};
    nd::allreduce(automatic);
    nd::allreduce(gather, nd::AllreduceAlgorithm::gather);
    CHECK(automatic[0].to_vector<float>() == gather[0].to_vector<float>());
    CHECK(automatic[1].to_vector<float>() == gather[1].to_vector<float>());
    CHECK(automatic[0].to_vector<float>() == (a + b).to_vector<float>());
  }

  TEST_CASE("a forced ring over arrays it cannot chunk is refused at the call") {
    if (!have_sims(3)) return;
    const NDArray x0 = nd::ones({4, 6}, sim(0));
    const NDArray x1 = nd::ones({4, 6}, sim(1));
    const NDArray x2 = nd::ones({4, 6}, sim(2));
    const NDArray twice = nd::ones({4, 6}, sim(1));
    CHECK(error_of([&] {
            nd::allreduce({x0, x1, twice}, nd::AllreduceAlgorithm::ring);
          }).find("both on sim(1)") != std::string::npos);
    const NDArray strided = nd::ones({6, 4}, sim(2)).T();
    CHECK(error_of([&] {
            nd::allreduce({x0, x1, strided}, nd::AllreduceAlgorithm::ring);
          }).find("not contiguous") != std::string::npos);
    // automatic falls back to the gather for them.
    nd::allreduce({x0, x1, twice});
    CHECK(twice.to_vector<float>() == std::vector<float>(24, 3.0f));
    CHECK(error_of([&] {
            nd::allreduce({x0, nd::ones({3}, sim(1)), x2});
          }).find("shapes") != std::string::npos);
    CHECK(error_of([] { nd::allreduce({}, nd::AllreduceAlgorithm::ring); }).find("empty") !=
          std::string::npos);
  }

  TEST_CASE("gradient-ready hooks run last layer first, each after its gradient's last op") {
    NDArray w1 = nd::from_vector(std::vector<double>{1, 2, 3, 4}, Shape{2, 2});
    NDArray w2 = nd::from_vector(std::vector<double>{1, -1, 2}, Shape{1, 3});
    w1.attach_grad();
    w2.attach_grad();
    std::vector<std::string> calls;
    autograd::add_gradient_ready_hook(w1, [&](const NDArray& grad) {
      calls.push_back("w1");
      CHECK(grad.to_vector<double>() == std::vector<double>{7, 7, 3, 3});
    });
    autograd::add_gradient_ready_hook(w2, [&](const NDArray& grad) {
      calls.push_back("w2");
      CHECK(grad.to_vector<double>() == std::vector<double>{3, 7, 23});
    });
    const NDArray x = nd::from_vector(std::vector<double>{1, 0, 0, 1, 3, 2}, Shape{3, 2});
    NDArray loss;
    {
      auto recording = autograd::record();
      // w2 is the first input of the last op, so the depth-first walk reaches it first and a
      // plain reverse post-order would deliver its gradient after w1's.
      loss = nd::sum(nd::dot(w2, nd::dot(x, w1)));
    }
    loss.backward();
    CHECK(calls == std::vector<std::string>{"w2", "w1"});
  }

  TEST_CASE("gradient-ready hooks refuse arrays without a gradient and empty hooks") {
    const NDArray plain = nd::ones({3});
    CHECK(error_of([&] {
            autograd::add_gradient_ready_hook(plain, [](const NDArray&) {});
          }).find("attach_grad") != std::string::npos);
    NDArray frozen = nd::ones({3});
    frozen.attach_grad(autograd::GradReq::null);
    CHECK(error_of([&] {
            autograd::add_gradient_ready_hook(frozen, [](const NDArray&) {});
          }).find("attach_grad") != std::string::npos);
    NDArray attached = nd::ones({3});
    attached.attach_grad();
    CHECK(error_of([&] { autograd::add_gradient_ready_hook(attached, {}); }).find("empty") !=
          std::string::npos);
  }

  TEST_CASE("the exchange of the last layer runs while the first layer's backward is held") {
    if (!have_sims(2)) return;
    const std::vector<Device> devices = sim_devices(2);
    // bucket_bytes 0 (one exchange per parameter) and the default buckets. The first step sums
    // each parameter alone with nd::allreduce: the last layer's sum completes while the first
    // layer's backward is held. From the second step the plan's buckets are packed and sent
    // during backward, and each device's adds are queued behind its own backward: the last
    // layer's gradients cross between the devices while the first layer's backward is held.
    for (const std::size_t bucket_bytes :
         {std::size_t{0}, nn::GradientExchangeOptions{}.bucket_bytes}) {
      CAPTURE(bucket_bytes);
      nd::random::seed(8);
      const NDArray images = nd::random::uniform({2, 8, 64}).astype(nd::float64);
      const NDArray labels = nd::random::uniform(0, 10, {2, 8}).astype(nd::int32);
      auto net = small_mlp(devices, nn::Xavier());
      nn::Trainer trainer(net->collect_params(), nn::SGD(0.1),
                          {.exchange = nn::GradientExchangeMode::during_backward,
                           .exchange_options = {.bucket_bytes = bucket_bytes}});
      const nn::ParameterDict params = net->collect_params();
      for (std::int64_t step = 0; step < 2; ++step) {
        CAPTURE(step);
        const std::vector<NDArray> xs = nd::split_and_load(images[step], devices);
        const std::vector<NDArray> ys = nd::split_and_load(labels[step], devices);
        const std::vector<NDArray> losses = recorded_losses(*net, xs, ys);
        for (const NDArray& loss : losses) loss.wait_to_read();
        // A gate op writes the devices' inputs: the first layer's weight gradient reads the
        // input, so it cannot run until the gate opens; the second layer's gradient reads only
        // the first layer's output and the loss gradient.
        // One op for both inputs: it holds one CPU worker, the others keep running.
        Gate gate(Engine::get(), {xs[0].var(), xs[1].var()});
        profiler::start();
        for (const NDArray& loss : losses) loss.backward();
        // Every parameter's exchange was queued from inside a backward.
        REQUIRE(trainer.exchange() != nullptr);
        CHECK(trainer.exchange()->summed_during_backward() == params.size());
        nn::Parameter& last = params["1.weight"];
        if (step == 0) {
          // The last layer's summed gradient arrives on both devices with the gate closed.
          for (const Device& device : devices) last.grad(device).wait_to_read(30s);
          CHECK(last.grad(sim(1)).to_vector<double>() == last.grad(sim(0)).to_vector<double>());
        } else {
          // Copies named "allreduce" run with the gate closed: the packs of the buckets that do
          // not hold the first layer's weight, one each way.
          const auto deadline = std::chrono::steady_clock::now() + 30s;
          std::size_t copies = 0;
          while (copies < 2 && std::chrono::steady_clock::now() < deadline) {
            copies = 0;
            for (const profiler::OpEvent& event : profiler::events()) {
              copies += event.name == "allreduce" ? 1 : 0;
            }
            std::this_thread::sleep_for(1ms);
          }
          CHECK(copies >= 2);
        }
        // ... while the first layer's gradient is still held behind the gate.
        CHECK_THROWS_AS(params["0.weight"].grad(sim(1)).wait_to_read(50ms), TimeoutError);
        gate.open();
        trainer.step(8);
        profiler::stop();
        for (const auto& [name, parameter] : params) {
          CAPTURE(name);
          CHECK(parameter->grad(sim(0)).to_vector<double>() ==
                parameter->grad(sim(1)).to_vector<double>());
        }
      }
    }
  }

  TEST_CASE("data parallel during backward equals one device with the same global batch") {
    const ParameterValues one = train({sim(0)}, nn::GradientExchangeMode::at_step);
    for (const int count : {2, 3, 4}) {
      if (!have_sims(count)) return;
      CAPTURE(count);
      const std::vector<Device> devices = sim_devices(count);
      const ParameterValues at_step = train(devices, nn::GradientExchangeMode::at_step);
      const ParameterValues overlapped = train(devices, nn::GradientExchangeMode::during_backward);
      // Same sums pushed earlier: the same bits.
      CHECK(largest_difference(at_step, overlapped) == 0.0);
      // Against one device the batch sums are split (and, with the ring, added in another
      // order): float64 rounding only.
      const double worst = largest_difference(one, overlapped);
      MESSAGE(count << " devices: largest difference from one device " << worst);
      CHECK(worst <= 1e-12);
    }
  }

  TEST_CASE("gradient buckets give the same bits as one allreduce per parameter") {
    // small_mlp's gradients: 16x64 and 10x16 weights (8192 and 1280 bytes), 16 and 10 biases.
    // Whatever the plan, the sums are the same bits as summing each parameter at the step.
    for (const int count : {2, 3, 4}) {
      if (!have_sims(count)) return;
      CAPTURE(count);
      const std::vector<Device> devices = sim_devices(count);
      const ParameterValues at_step = train(devices, nn::GradientExchangeMode::at_step);
      for (const std::size_t bucket_bytes :
           {std::size_t{0}, std::size_t{64 << 10}, std::size_t{2000}, std::size_t{1 << 20}}) {
        CAPTURE(bucket_bytes);
        std::size_t buckets = 0;
        const ParameterValues bucketed = train(devices, nn::GradientExchangeMode::during_backward,
                                               3, {.bucket_bytes = bucket_bytes}, &buckets);
        // Planned after the first step; one per parameter when bucket_bytes is 0.
        CHECK(buckets >= 1);
        CHECK(buckets <= 4);
        if (bucket_bytes == 0) CHECK(buckets == 4);
        CHECK(largest_difference(at_step, bucketed) == 0.0);
      }
    }
  }

  TEST_CASE("on two gpu devices with NCCL, allreduce and the bucketed exchange sum through it") {
    const std::vector<Device> gpus{cuda(0), cuda(1)};
    if (device_count(DeviceKind::cuda) < 2 ||
        !tandem::ops::collective_sum_unavailable(gpus).empty()) {
      std::cout << "SKIPPED: needs two gpu devices and NCCL\n";
      MESSAGE("SKIPPED: two gpu devices and NCCL needed: "
              << (device_count(DeviceKind::cuda) < 2
                      ? std::string("fewer than 2 gpu devices")
                      : tandem::ops::collective_sum_unavailable(gpus)));
      return;
    }
    // Small integers sum exactly in any order: NCCL's result is the exact sum on both devices.
    for (const auto algorithm : {nd::AllreduceAlgorithm::nccl, nd::AllreduceAlgorithm::automatic}) {
      const std::vector<NDArray> arrays = integer_arrays(gpus, Shape{1000, 3}, nd::float32);
      const std::vector<double> expected = expected_sum(arrays);
      profiler::start();
      nd::allreduce(arrays, algorithm);
      nd::waitall();
      profiler::stop();
      for (const NDArray& array : arrays) CHECK(array.to_vector<double>() == expected);
      // One op on gpu(0)'s comm queue did it (no copies, no adds).
      int collective_ops = 0;
      for (const profiler::OpEvent& event : profiler::events()) {
        CHECK(event.name == "allreduce");
        collective_ops += event.queue == Queue::comm ? 1 : 0;
      }
      CHECK(collective_ops == 1);
    }
    // Training through NCCL's buckets: both copies hold the same bits, and match the
    // copy-based exchange on sim devices up to float64 rounding (NCCL adds in its own order).
    const ParameterValues through_nccl = train(gpus, nn::GradientExchangeMode::during_backward);
    const ParameterValues copy_based = train({sim(0)}, nn::GradientExchangeMode::at_step);
    CHECK(largest_difference(copy_based, through_nccl) <= 1e-12);
  }

  TEST_CASE("buckets follow the first step's readiness order, the last-ready gradient alone") {
    if (!have_sims(2)) return;
    const std::vector<Device> devices = sim_devices(2);
    // Ten float64 gradients, 80 to 8192 bytes: 64 -> 16 -> 16 -> 16 -> 10.
    auto net = std::make_shared<nn::Sequential>();
    for (const std::int64_t units : {16, 16, 16}) {
      net->add(nn::Dense(units, nn::tanh, {.dtype = nd::float64}));
    }
    net->add(nn::Dense(10, nn::ActivationType::none, {.dtype = nd::float64}));
    net->initialize(nn::Xavier(), devices);
    (*net)(nd::ones({1, 64}, nd::float64, sim(0)));  // the deferred shapes
    const nn::ParameterDict params = net->collect_params();
    const std::size_t bucket_bytes = 16 << 10;
    nn::Trainer trainer(params, nn::SGD(0.1),
                        {.exchange = nn::GradientExchangeMode::during_backward,
                         .exchange_options = {.bucket_bytes = bucket_bytes}});
    // The order in which backward finishes the gradients on the last device (whose backward
    // completes each parameter), seen through hooks of our own.
    std::vector<std::string> ready_order;
    std::map<std::string, std::size_t> bytes;
    for (const auto& [name, parameter] : params) {
      autograd::add_gradient_ready_hook(parameter->list_data().back(),
                                        [&ready_order, name = parameter->name()](const NDArray&) {
                                          ready_order.push_back(name);
                                        });
      bytes[parameter->name()] = static_cast<std::size_t>(parameter->shape().num_elements()) * 8;
    }
    nd::random::seed(3);
    const NDArray images = nd::random::uniform({2, 8, 64}).astype(nd::float64);
    const NDArray labels = nd::random::uniform(0, 10, {2, 8}).astype(nd::int32);
    std::vector<std::vector<std::string>> plan;
    for (std::int64_t step = 0; step < 2; ++step) {
      const std::vector<NDArray> xs = nd::split_and_load(images[step], devices);
      const std::vector<NDArray> ys = nd::split_and_load(labels[step], devices);
      const std::vector<NDArray> losses = recorded_losses(*net, xs, ys);
      if (step == 0) ready_order.clear();
      for (const NDArray& loss : losses) loss.backward();
      // Step 1 records the order and sums each parameter alone; the plan is made at its end.
      CHECK(trainer.exchange()->buckets() == (step == 0 ? 0 : plan.size()));
      CHECK(trainer.exchange()->summed_during_backward() == params.size());
      trainer.step(8);
      if (step == 0) plan = trainer.exchange()->bucket_plan();
    }
    REQUIRE(ready_order.size() == 2 * params.size());  // two steps, every parameter
    ready_order.resize(params.size());
    std::vector<std::string> walked;  // the plan's members, last-ready bucket first
    for (const std::vector<std::string>& bucket : plan) {
      walked.insert(walked.end(), bucket.begin(), bucket.end());
    }
    CHECK(walked == std::vector<std::string>(ready_order.rbegin(), ready_order.rend()));
    std::string shown;
    for (const std::vector<std::string>& bucket : plan) {
      shown += " [";
      for (const std::string& name : bucket) shown += " " + name;
      shown += " ]";
    }
    MESSAGE("plan, last-ready first:" << shown);
    REQUIRE(plan.size() >= 2);
    CHECK(plan.front() == std::vector<std::string>{ready_order.back()});  // the tail alone
    // The caps: 1/128 of bucket_bytes for the bucket before the tail, doubling up to
    // bucket_bytes; a bucket over its cap holds one parameter.
    std::size_t cap = bucket_bytes / 128;
    for (std::size_t b = 1; b < plan.size(); ++b) {
      CAPTURE(b);
      std::size_t total = 0;
      for (const std::string& name : plan[b]) total += bytes[name];
      CHECK((total <= cap || plan[b].size() == 1));
      cap = std::min(bucket_bytes, cap * 2);
    }
    // Fewer exchanges than parameters.
    CHECK(plan.size() < params.size());
    Engine::get().wait_all();
  }

  TEST_CASE("a second backward through one device's copy before step is refused") {
    if (!have_sims(2)) return;
    const std::vector<Device> devices = sim_devices(2);
    auto net = small_mlp(devices, nn::Xavier());
    nn::Trainer trainer(net->collect_params(), nn::SGD(0.1),
                        {.exchange = nn::GradientExchangeMode::during_backward});
    const NDArray x = nd::ones({2, 64}, nd::float64, sim(0));
    const auto forward = [&] {
      auto recording = autograd::record();
      return nd::sum((*net)(x));
    };
    forward().backward();
    CHECK(error_of([&] { forward().backward(); }).find("produced twice") != std::string::npos);
    Engine::get().wait_all();
  }
}

}  // namespace tandem::testing
