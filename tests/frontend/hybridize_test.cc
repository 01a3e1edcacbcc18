// nd::hybridize and Block::hybridize: a recorded-then-replayed function gives the eager results
// and errors, records once per signature, allocates nothing in a replay, and refuses syncs
// while it records.
#include <tandem/nd/detail/host_allocation_count.h>

#include <memory>
#include <random>
#include <sstream>

#include "frontend_test_util.h"
#include "test_devices.h"

namespace tandem::testing {

namespace {

constexpr std::int64_t kSide = 6;

// A random program over three kSide x kSide float64 inputs: each step combines two earlier
// values with an elementwise op, a dot or a reduction broadcast back; returns the last two.
nd::ArrayFunction random_program(unsigned seed) {
  std::mt19937 rng(seed);
  struct Step {
    int op;
    std::size_t a, b;
  };
  std::vector<Step> steps;
  for (std::size_t produced = 3; produced < 3 + 12; ++produced) {
    std::uniform_int_distribution<std::size_t> pick(0, produced - 1);
    steps.push_back({std::uniform_int_distribution<int>(0, 6)(rng), pick(rng), pick(rng)});
  }
  return [steps](const std::vector<NDArray>& inputs) {
    std::vector<NDArray> values = inputs;
    for (const Step& step : steps) {
      const NDArray& a = values[step.a];
      const NDArray& b = values[step.b];
      switch (step.op) {
        case 0:
          values.push_back(a + b);
          break;
        case 1:
          values.push_back(a * b - 0.5);
          break;
        case 2:
          values.push_back(nd::tanh(nd::dot(a, b)));
          break;
        case 3:
          values.push_back(nd::relu(a - b));
          break;
        case 4:
          values.push_back(a + nd::sum(b, 1, true));
          break;
        case 5:
          values.push_back(nd::sigmoid(a.T()) * 2);
          break;
        default:
          values.push_back(a / (nd::sum(b) * b * b + 1));
          break;
      }
    }
    return std::vector<NDArray>{values[values.size() - 2], values.back()};
  };
}

std::vector<NDArray> random_inputs(std::mt19937& rng, Device device) {
  std::vector<NDArray> inputs;
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (int i = 0; i < 3; ++i) {
    std::vector<double> values(static_cast<std::size_t>(kSide * kSide));
    for (double& v : values) v = value(rng);
    inputs.push_back(nd::from_vector(values, {kSide, kSide}, device));
  }
  return inputs;
}

void check_hybridized_equals_eager(Device device) {
  std::mt19937 rng(7);
  for (unsigned program = 0; program < 8; ++program) {
    const nd::ArrayFunction eager = random_program(program);
    nd::Hybridized hybrid = nd::hybridize(eager);
    for (int call = 0; call < 3; ++call) {
      const std::vector<NDArray> inputs = random_inputs(rng, device);
      const std::vector<NDArray> expected = eager(inputs);
      const std::vector<NDArray> got = hybrid(inputs);
      CHECK(hybrid.cache().last_call_replayed());
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        INFO("program " << program << ", call " << call << ", output " << i << ", "
                        << to_string(device));
        CHECK(got[i].device() == device);
        CHECK(got[i].to_vector<double>() == expected[i].to_vector<double>());
      }
    }
    CHECK(hybrid.cache().num_entries() == 1);
    CHECK(hybrid.cache().num_recorded_ops() > 0);
  }
}

}  // namespace

TEST_SUITE("frontend.hybridize") {
  TEST_CASE("random programs give the eager results on every device, threaded engine") {
    for (Device device : test_devices()) check_hybridized_equals_eager(device);
  }

  TEST_CASE("random programs give the eager results on every device, naive engine") {
    auto engine = Engine::create({.kind = EngineKind::naive});
    nd::EngineScope scope(*engine);
    for (Device device : test_devices()) check_hybridized_equals_eager(device);
  }

  TEST_CASE("a new signature records a new entry; a known one replays") {
    nd::Hybridized twice =
        nd::hybridize([](const std::vector<NDArray>& in) { return std::vector{in[0] * 2}; });
    CHECK(twice({nd::ones({2, 3})})[0].to_vector<float>() == std::vector<float>(6, 2.0f));
    CHECK(twice.cache().num_entries() == 1);
    CHECK(twice({nd::full({2, 3}, 4)})[0].to_vector<float>() == std::vector<float>(6, 8.0f));
    CHECK(twice.cache().num_entries() == 1);
    CHECK(twice({nd::ones({3, 2})})[0].shape() == Shape{3, 2});  // shape
    CHECK(twice.cache().num_entries() == 2);
    CHECK(twice({nd::ones({2, 3}, nd::float64)})[0].dtype() == nd::float64);  // dtype
    CHECK(twice.cache().num_entries() == 3);
    const Device other = test_devices().back();
    if (other != cpu()) {
      CHECK(twice({nd::ones({2, 3}, other)})[0].device() == other);  // device
      CHECK(twice.cache().num_entries() == 4);
    }
    twice.clear();
    CHECK(twice.cache().num_entries() == 0);
  }

  TEST_CASE("a call overwrites the outputs of the previous call with that signature") {
    nd::Hybridized add_one =
        nd::hybridize([](const std::vector<NDArray>& in) { return std::vector{in[0] + 1}; });
    const NDArray first = add_one({nd::zeros({4})})[0];
    const NDArray kept = first.copy();
    const NDArray second = add_one({nd::full({4}, 5)})[0];
    CHECK(first.shares_storage_with(second));
    CHECK(first.to_vector<float>() == std::vector<float>(4, 6.0f));
    CHECK(kept.to_vector<float>() == std::vector<float>(4, 1.0f));
    // An output passed back in as an input works (it is copied in before the replay).
    CHECK(add_one({second})[0].to_vector<float>() == std::vector<float>(4, 7.0f));
  }

  TEST_CASE("calls keep push order with eager ops on their inputs and outputs") {
    nd::Hybridized twice =
        nd::hybridize([](const std::vector<NDArray>& in) { return std::vector{in[0] * 2}; });
    NDArray x = nd::ones({3});
    const NDArray y = twice({x})[0];
    x += 1;                        // after the call: its copy of x has read x already
    const NDArray before = y + 0;  // reads y before the next call overwrites it
    const NDArray again = twice({x})[0];
    y.wait_to_read();
    CHECK(before.to_vector<float>() == std::vector<float>(3, 2.0f));
    CHECK(again.to_vector<float>() == std::vector<float>(3, 4.0f));
  }

  TEST_CASE("an array from before the recording, dropped inside it, is deleted after it") {
    auto held = std::make_shared<NDArray>(nd::ones({64}));
    nd::Hybridized drops = nd::hybridize([held](const std::vector<NDArray>& in) {
      *held = NDArray();  // its last handle: the engine cannot delete it inside a capture
      return std::vector{in[0] + 1};
    });
    CHECK(drops({nd::zeros({4})})[0].to_vector<float>() == std::vector<float>(4, 1.0f));
    CHECK(drops({nd::ones({4})})[0].to_vector<float>() == std::vector<float>(4, 2.0f));
    nd::waitall();
  }

  TEST_CASE("hybridized children inside a hybridized block are recorded by the outer call") {
    nn::Sequential net;
    net.add(nn::Dense(4, nn::relu, {.in_units = 3}))
        .add(nn::Dense(2, nn::ActivationType::none, {.in_units = 4}));
    net.initialize();
    const NDArray x = nd::random::uniform({2, 3});
    const std::vector<float> eager = net(x).to_vector<float>();
    for (const auto& [name, child] : net.children()) child->hybridize();
    net.hybridize();
    CHECK(net(x).to_vector<float>() == eager);
    CHECK(net(x).to_vector<float>() == eager);
    CHECK(net.hybrid_cache()->last_call_replayed());
    for (const auto& [name, child] : net.children()) {
      CHECK(child->hybrid_cache()->num_entries() == 0);  // ran inside the outer recording
    }
  }

  TEST_CASE("a random draw on the default generator draws the eager numbers at each replay") {
    const auto noisy = [](const std::vector<NDArray>& in) {
      return std::vector{in[0] + nd::random::uniform({8})};
    };
    nd::Hybridized hybrid = nd::hybridize(noisy);
    std::vector<float> previous;
    for (int call = 0; call < 3; ++call) {
      nd::random::seed(static_cast<std::uint64_t>(call) + 1);
      const std::vector<float> eager = noisy({nd::ones({8})})[0].to_vector<float>();
      nd::random::seed(static_cast<std::uint64_t>(call) + 1);
      const std::vector<float> replayed = hybrid({nd::ones({8})})[0].to_vector<float>();
      CHECK(hybrid.cache().last_call_replayed());
      CHECK(replayed == eager);
      CHECK(replayed != previous);
      previous = replayed;
    }
  }

  TEST_CASE("replays take no host memory: the intermediates keep theirs") {
    // 32x32 float32 (4 KiB) and 128x128 float64 (128 KiB, past the early-free size) arrays.
    for (const Shape& shape : {Shape{32, 32}, Shape{128, 128}}) {
      const DType dtype = shape[0] == 32 ? nd::float32 : nd::float64;
      nd::Hybridized program = nd::hybridize([](const std::vector<NDArray>& in) {
        NDArray hidden = nd::relu(nd::dot(in[0], in[1]) - 1);
        return std::vector{nd::tanh(hidden * hidden + in[0])};
      });
      const NDArray x = nd::full(shape, 0.5, dtype, cpu());
      const NDArray w = nd::full(shape, 0.25, dtype, cpu());
      const std::vector<double> expected =
          nd::tanh(nd::relu(nd::dot(x, w) - 1) * nd::relu(nd::dot(x, w) - 1) + x)
              .to_vector<double>();
      program({x, w});
      program({x, w})[0].wait_to_read();
      const std::uint64_t before = nd::detail::host_allocation_count();
      for (int i = 0; i < 20; ++i) program({x, w});
      const NDArray out = program({x, w})[0];
      out.wait_to_read();
      CHECK(nd::detail::host_allocation_count() == before);
      CHECK(out.to_vector<double>() == expected);
    }
  }

  TEST_CASE("an error inside a replay is rethrown at the sync points of the eager call") {
    const auto divide = [](const std::vector<NDArray>& in) {
      NDArray quotient = in[0] / in[1];
      return std::vector{quotient + 1, in[0] * 2};
    };
    nd::Hybridized hybrid = nd::hybridize(divide);
    const NDArray six = nd::full({3}, 6, nd::int32);
    const NDArray good = nd::from_vector(std::vector<std::int32_t>{1, 2, 3});
    const NDArray bad = nd::from_vector(std::vector<std::int32_t>{1, 0, 2});
    CHECK(hybrid({six, good})[0].to_vector<int>() == std::vector<int>{7, 4, 3});

    const std::vector<NDArray> eager = divide({six, bad});
    check_error([&] { eager[0].wait_to_read(); }, {"integer division by zero"});
    CHECK(eager[1].to_vector<int>() == std::vector<int>{12, 12, 12});
    const std::vector<NDArray> replayed = hybrid({six, bad});
    check_error([&] { replayed[0].wait_to_read(); }, {"integer division by zero"});
    CHECK(replayed[1].to_vector<int>() == std::vector<int>{12, 12, 12});
    try {
      nd::waitall();
    } catch (const Error&) {
    }
    nd::waitall();
    // The next replay writes the outputs again: the poison is gone.
    CHECK(hybrid({six, good})[0].to_vector<int>() == std::vector<int>{7, 4, 3});
  }

  TEST_CASE("failing as one unit, an error on an accelerator poisons every output of the call") {
    if (device_count(DeviceKind::sim) == 0) return;
    const auto divide = [](const std::vector<NDArray>& in) {
      NDArray quotient = in[0] / in[1];
      return std::vector{quotient + 1, in[0] * 2};
    };
    const NDArray six = nd::full({3}, 6, nd::int32, sim(0));
    const NDArray good = nd::from_vector(std::vector<std::int32_t>{1, 2, 3}).copyto(sim(0));
    const NDArray bad = nd::from_vector(std::vector<std::int32_t>{1, 0, 2}).copyto(sim(0));
    const auto drain = [] {
      try {
        nd::waitall();
      } catch (const Error&) {
      }
      nd::waitall();
    };
    // The eager rule: only what depends on the failing division is poisoned.
    nd::Hybridized apart = nd::hybridize(divide);
    CHECK(apart({six, good})[0].to_vector<int>() == std::vector<int>{7, 4, 3});
    const std::vector<NDArray> first = apart({six, bad});
    check_error([&] { first[0].wait_to_read(); }, {"integer division by zero"});
    CHECK(first[1].to_vector<int>() == std::vector<int>{12, 12, 12});
    drain();
    // One unit: the three ops are one device graph, and its failure is every output's.
    nd::Hybridized whole = nd::hybridize(divide, {.fail_as_one_unit = true});
    CHECK(whole({six, good})[0].to_vector<int>() == std::vector<int>{7, 4, 3});
    const std::vector<NDArray> second = whole({six, bad});
    check_error([&] { second[0].wait_to_read(); }, {"integer division by zero"});
    check_error([&] { second[1].wait_to_read(); }, {"integer division by zero"});
    drain();
    // The next call that succeeds clears both.
    const std::vector<NDArray> third = whole({six, good});
    CHECK(third[0].to_vector<int>() == std::vector<int>{7, 4, 3});
    CHECK(third[1].to_vector<int>() == std::vector<int>{12, 12, 12});
  }

  TEST_CASE("a sync inside the function while it records is a tandem::Error; nothing is kept") {
    const std::vector<std::pair<const char*, nd::ArrayFunction>> syncing = {
        {"scalar",
         [](const std::vector<NDArray>& in) { return std::vector{in[0] * in[0].sum().scalar()}; }},
        {"wait_to_read",
         [](const std::vector<NDArray>& in) {
           NDArray y = in[0] + 1;
           y.wait_to_read();
           return std::vector{y};
         }},
        {"to_vector",
         [](const std::vector<NDArray>& in) {
           (void)in[0].to_vector<float>();
           return in;
         }},
        {"printing",
         [](const std::vector<NDArray>& in) {
           std::ostringstream text;
           text << in[0];
           return in;
         }},
        {"waitall",
         [](const std::vector<NDArray>& in) {
           nd::waitall();
           return in;
         }},
    };
    for (const auto& [name, fn] : syncing) {
      INFO(name);
      nd::Hybridized hybrid = nd::hybridize(fn);
      check_error([&] { hybrid({nd::ones({2, 2})}); }, {name, "hybridize"});
      CHECK(hybrid.cache().num_entries() == 0);
    }
    // The engine and the front end carry on.
    CHECK((nd::ones({2}) + 1).to_vector<float>() == std::vector<float>(2, 2.0f));
  }

  TEST_CASE("bad input is refused at the call") {
    check_error([] { nd::hybridize(nd::ArrayFunction{}); }, {"hybridize", "empty"});
    nd::Hybridized identity = nd::hybridize([](const std::vector<NDArray>& in) { return in; });
    check_error([&] { identity({NDArray()}); }, {"hybridize", "input 0", "null"});
    auto engine = Engine::create({.kind = EngineKind::naive});
    NDArray elsewhere;
    {
      nd::EngineScope scope(*engine);
      elsewhere = nd::ones({2});
    }
    check_error([&] { identity({nd::ones({2}), elsewhere}); }, {"hybridize", "input 1", "engine"});
    nd::Hybridized null_output =
        nd::hybridize([](const std::vector<NDArray>&) { return std::vector{NDArray()}; });
    check_error([&] { null_output({nd::ones({2})}); }, {"hybridize", "null", "output 0"});
    elsewhere = NDArray();
  }

  TEST_CASE("a hybridized block gives the eager outputs and sees parameter updates") {
    for (Device device : test_devices()) {
      INFO(to_string(device));
      nn::Sequential net;
      net.add(nn::Dense(16, nn::relu)).add(nn::Dense(8, nn::tanh)).add(nn::Dense(3));
      net.initialize(nn::Uniform(), {device});
      const NDArray x = nd::random::uniform({2, 5}, device);
      const std::vector<float> eager = net(x).to_vector<float>();  // creates the parameters
      net.hybridize();
      CHECK(net(x).to_vector<float>() == eager);
      CHECK(net.hybrid_cache()->last_call_replayed());
      CHECK(net(x).to_vector<float>() == eager);
      CHECK(net.hybrid_cache()->num_entries() == 1);

      // An in-place update of a parameter (what an optimizer step does) is seen by the replay.
      for (const auto& [name, parameter] : net.collect_params()) parameter->data() *= 0.5;
      const NDArray replayed = net(x);
      CHECK(net.hybrid_cache()->last_call_replayed());
      net.hybridize(false);
      CHECK(replayed.to_vector<float>() == net(x).to_vector<float>());
    }
  }

  TEST_CASE("a block with deferred shapes runs its first call eagerly, then records") {
    nn::Sequential net;
    net.add(nn::Dense(4, nn::relu)).add(nn::Dense(2));
    net.initialize();
    net.hybridize();
    const NDArray x = nd::random::uniform({3, 7});
    const std::vector<float> first = net(x).to_vector<float>();
    CHECK_FALSE(net.hybrid_cache()->last_call_replayed());
    CHECK(net(x).to_vector<float>() == first);
    CHECK(net.hybrid_cache()->last_call_replayed());
    CHECK(net(nd::random::uniform({1, 7})).shape() == Shape{1, 2});
    CHECK(net.hybrid_cache()->num_entries() == 2);
  }

  TEST_CASE("under autograd::record a hybridized block replays, and a step is seen after") {
    nn::Sequential net;
    net.add(nn::Dense(4, nn::relu, {.in_units = 3}))
        .add(nn::Dense(1, nn::ActivationType::none, {.in_units = 4}));
    net.initialize();
    net.hybridize();
    const NDArray x = nd::random::uniform({2, 3});
    const std::vector<float> predicted = net(x).to_vector<float>();
    CHECK(net.hybrid_cache()->last_call_replayed());
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.1));
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = net(x).sum();
    }
    CHECK(net.hybrid_cache()->last_call_replayed());
    CHECK(net.hybrid_cache()->num_recorded_backward_ops() > 0);
    CHECK(loss.scalar<float>() == doctest::Approx(predicted[0] + predicted[1]));
    loss.backward();
    trainer.step(1);
    // The replay reads the updated parameters: it equals the eager forward after the step.
    const std::vector<float> after = net(x).to_vector<float>();
    CHECK(net.hybrid_cache()->last_call_replayed());
    net.hybridize(false);
    CHECK(after == net(x).to_vector<float>());
  }
}

}  // namespace tandem::testing
