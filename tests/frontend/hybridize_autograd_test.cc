// Hybridize under autograd::record(): the forward and the backward are recorded once per
// signature and replayed; gradients, trained parameters, dropout masks and batch-norm
// statistics equal the eager path's, bit for bit on the same op order.
#include <memory>

#include "frontend_test_util.h"
#include "tandem/profiler.h"

namespace tandem::testing {

namespace ag = tandem::autograd;

namespace {

std::vector<float> values(const NDArray& x) {
  return x.to_vector<float>();
}

// An MLP with fixed shapes (no deferred parameters), optionally with batch norm.
std::unique_ptr<nn::Sequential> make_mlp(Device device, bool batch_norm) {
  auto net = std::make_unique<nn::Sequential>();
  net->add(nn::Dense(16, nn::relu, {.in_units = 8}));
  if (batch_norm) net->add(nn::BatchNorm({.in_channels = 16}));
  net->add(nn::Dense(12, nn::tanh, {.in_units = 16}))
      .add(nn::Dense(4, nn::ActivationType::none, {.in_units = 12}));
  net->initialize(nn::Uniform(), {device});
  return net;
}

// Gives `to` the parameter values of `from` (same structure).
void copy_parameters(const nn::Block& from, const nn::Block& to) {
  const nn::ParameterDict source = from.collect_params();
  for (const auto& [name, parameter] : to.collect_params())
    parameter->set_data(source[name].data());
}

void check_same_parameters(const nn::Block& a, const nn::Block& b) {
  const nn::ParameterDict other = b.collect_params();
  for (const auto& [name, parameter] : a.collect_params()) {
    INFO("parameter " << name);
    CHECK(values(parameter->data()) == values(other[name].data()));
    if (parameter->grad_req() != ag::GradReq::null)
      CHECK(values(parameter->data().grad()) == values(other[name].data().grad()));
  }
}

// `steps` SGD steps of an eager and a hybridized copy of one network on the same batches;
// their losses, gradients, parameters and running statistics must agree bit for bit.
// `options`: how the hybridized copy records (CaptureOptions::fail_as_one_unit changes only
// how a failure spreads, never a value).
void check_training_equals_eager(Device device, bool batch_norm, int steps,
                                 CaptureOptions options = {}) {
  auto eager = make_mlp(device, batch_norm);
  auto hybrid = make_mlp(device, batch_norm);
  copy_parameters(*eager, *hybrid);
  hybrid->hybridize(true, options);
  nn::Trainer eager_trainer(eager->collect_params(), nn::SGD(0.1, 0.9));
  nn::Trainer hybrid_trainer(hybrid->collect_params(), nn::SGD(0.1, 0.9));
  for (int step = 0; step < steps; ++step) {
    INFO("step " << step << " on " << to_string(device));
    const NDArray x = nd::random::uniform({5, 8}, device);
    const NDArray target = nd::random::uniform({5, 4}, device);
    NDArray eager_loss, hybrid_loss;
    {
      auto recording = ag::record();
      eager_loss = nd::sum(nd::square((*eager)(x)-target));
      hybrid_loss = nd::sum(nd::square((*hybrid)(x)-target));
    }
    CHECK(hybrid->hybrid_cache()->last_call_replayed());
    CHECK(hybrid->hybrid_cache()->num_recorded_backward_ops() > 0);
    eager_loss.backward();
    hybrid_loss.backward();
    CHECK(values(eager_loss) == values(hybrid_loss));
    check_same_parameters(*eager, *hybrid);  // gradients before the step
    eager_trainer.step(5);
    hybrid_trainer.step(5);
  }
  CHECK(hybrid->hybrid_cache()->num_entries() == 1);
  check_same_parameters(*eager, *hybrid);
}

}  // namespace

TEST_SUITE("frontend.hybridize_autograd") {
  TEST_CASE("training a hybridized MLP gives the eager gradients and parameters, cpu and sim") {
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
    for (Device device : devices) check_training_equals_eager(device, false, 4);
  }

  TEST_CASE("batch norm in training mode: statistics and gradients equal the eager ones") {
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
    for (Device device : devices) check_training_equals_eager(device, true, 3);
  }

  TEST_CASE("a network hybridized to fail as one unit trains to the eager values, cpu and sim") {
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
    for (Device device : devices) {
      check_training_equals_eager(device, true, 3, {.fail_as_one_unit = true});
      check_training_equals_eager(device, false, 3, {.fail_as_one_unit = true});
    }
  }

  TEST_CASE("hybridized to fail as one unit, a sim forward and its backward are a graph each") {
    if (device_count(DeviceKind::sim) == 0) return;
    // Under the eager error rule a device graph run ends at every intermediate the backward
    // saves (a var written by an op other than the run's last); failing as one unit, each half
    // is one run of sim(0) compute ops. Counted: device graphs, and ops entered outside them.
    struct Units {
      int graphs = 0;
      int others = 0;
    };
    const auto units_per_step = [](CaptureOptions options) {
      auto net = make_mlp(sim(0), true);
      net->hybridize(true, options);
      const NDArray x = nd::random::uniform({5, 8}, sim(0));
      const auto step = [&] {
        NDArray loss;
        {
          auto recording = ag::record();
          loss = nd::sum((*net)(x));
        }
        loss.backward();
        nd::waitall();
      };
      for (int i = 0; i < 3; ++i) step();
      profiler::clear();
      profiler::start();
      step();
      profiler::stop();
      Units units;
      for (const profiler::OpEvent& e : profiler::events()) {
        if (e.name == "device graph") {
          ++units.graphs;
        } else if (e.name != "delete_var") {
          ++units.others;
        }
      }
      return units;
    };
    const Units eager_rule = units_per_step({});
    const Units one_unit = units_per_step({.fail_as_one_unit = true});
    CAPTURE(eager_rule.graphs);
    CAPTURE(eager_rule.others);
    CAPTURE(one_unit.others);
    CHECK(one_unit.graphs == 2);
    // Outside the graphs: the copy of x into the static input, the loss's sum and its head
    // gradient (ones_like), the copy of that gradient into the static head gradient.
    CHECK(one_unit.others == 4);
    CHECK(eager_rule.graphs + eager_rule.others > one_unit.graphs + one_unit.others);
    MESSAGE("per step, eager error rule: " << eager_rule.graphs << " device graphs + "
                                           << eager_rule.others << " other ops");
  }

  TEST_CASE("the naive engine trains the hybridized MLP to the same parameters") {
    auto engine = Engine::create({.kind = EngineKind::naive});
    nd::EngineScope scope(*engine);
    check_training_equals_eager(cpu(), true, 3);
  }

  TEST_CASE("a function's input and outside attached arrays get the eager gradients") {
    NDArray w = nd::random::uniform({3, 4});
    w.attach_grad();
    NDArray x = nd::random::uniform({2, 3});
    x.attach_grad();
    const auto fn = [w](const std::vector<NDArray>& in) {
      NDArray h = nd::tanh(nd::dot(in[0], w));
      return std::vector<NDArray>{h * h, nd::sum(h, 1)};
    };
    nd::Hybridized hybrid = nd::hybridize(fn);
    std::vector<float> eager_dx, eager_dw;
    {
      {
        auto recording = ag::record();
        const std::vector<NDArray> out = fn({x});
        ag::backward({nd::sum(out[0]), nd::sum(out[1] * 3)});
      }
      eager_dx = values(x.grad());
      eager_dw = values(w.grad());
    }
    for (int call = 0; call < 3; ++call) {
      {
        auto recording = ag::record();
        const std::vector<NDArray> out = hybrid({x});
        ag::backward({nd::sum(out[0]), nd::sum(out[1] * 3)});
      }
      CHECK(hybrid.cache().last_call_replayed());
      CHECK(values(x.grad()) == eager_dx);
      CHECK(values(w.grad()) == eager_dw);
    }
    CHECK(hybrid.cache().num_entries() == 1);
    // Outside recording the same function replays another entry (no backward).
    hybrid({x});
    CHECK(hybrid.cache().num_entries() == 2);
    CHECK(hybrid.cache().num_recorded_backward_ops() == 0);
  }

  TEST_CASE("GradReq::add accumulates the replayed gradients") {
    auto eager = make_mlp(cpu(), false);
    auto hybrid = make_mlp(cpu(), false);
    copy_parameters(*eager, *hybrid);
    eager->collect_params().set_grad_req(ag::GradReq::add);
    hybrid->collect_params().set_grad_req(ag::GradReq::add);
    hybrid->hybridize();
    for (int i = 0; i < 3; ++i) {
      const NDArray x = nd::random::uniform({5, 8});
      for (nn::Sequential* net : {eager.get(), hybrid.get()}) {
        NDArray loss;
        {
          auto recording = ag::record();
          loss = nd::sum((*net)(x));
        }
        loss.backward();
      }
      CHECK(hybrid->hybrid_cache()->last_call_replayed());
    }
    check_same_parameters(*eager, *hybrid);
  }

  TEST_CASE("a replayed call forms the weights' gradients in their buffers: none is copied") {
    // The captured backward writes each weight's gradient into the weight's buffer (a gemm), as
    // the eager backward does; the biases' gradients (sums: no rule that writes a buffer) are
    // copied in, one assign each, in both. Before, the replayed call copied every parameter's
    // gradient out of a static array: three assigns more than eager.
    auto eager = make_mlp(cpu(), false);
    auto hybrid = make_mlp(cpu(), false);
    copy_parameters(*eager, *hybrid);
    hybrid->hybridize();
    for (int step = 0; step < 3; ++step) {
      const NDArray x = nd::random::uniform({5, 8});
      NDArray eager_loss, hybrid_loss;
      {
        auto recording = ag::record();
        eager_loss = nd::sum(nd::square((*eager)(x)));
        hybrid_loss = nd::sum(nd::square((*hybrid)(x)));
      }
      const auto copies_of = [](const NDArray& loss) {
        nd::waitall();
        profiler::start();
        loss.backward();
        nd::waitall();
        profiler::stop();
        std::size_t copies = 0;
        for (const profiler::OpEvent& event : profiler::events()) copies += event.name == "assign";
        return copies;
      };
      const std::size_t eager_copies = copies_of(eager_loss);
      const std::size_t hybrid_copies = copies_of(hybrid_loss);
      CHECK(hybrid->hybrid_cache()->last_call_replayed());
      CHECK(hybrid_copies == eager_copies);
      check_same_parameters(*eager, *hybrid);
    }
  }

  TEST_CASE(
      "set_grad_req after hybridize: the block records again, gradients go to the new handles") {
    // set_grad_req gives the parameters new handles (new autograd leaves); a recording naming
    // the old leaves would deliver the gradients there and leave the new handles' at zero.
    auto eager = make_mlp(cpu(), false);
    auto hybrid = make_mlp(cpu(), false);
    copy_parameters(*eager, *hybrid);
    hybrid->hybridize();
    const auto step = [&] {
      const NDArray x = nd::random::uniform({5, 8});
      for (nn::Sequential* net : {eager.get(), hybrid.get()}) {
        NDArray loss;
        {
          auto recording = ag::record();
          loss = nd::sum(nd::square((*net)(x)));
        }
        loss.backward();
      }
    };
    step();
    step();
    CHECK(hybrid->hybrid_cache()->last_call_replayed());
    check_same_parameters(*eager, *hybrid);
    eager->collect_params().set_grad_req(ag::GradReq::add);
    hybrid->collect_params().set_grad_req(ag::GradReq::add);
    step();
    step();
    CHECK(hybrid->hybrid_cache()->last_call_replayed());
    check_same_parameters(*eager, *hybrid);  // two accumulated steps, the same bits
  }

  TEST_CASE("gradient-ready hooks are called once per backward through a replayed call") {
    auto net = make_mlp(cpu(), false);
    net->hybridize();
    const nn::ParameterDict params = net->collect_params();
    int calls = 0;
    std::vector<float> seen;
    ag::add_gradient_ready_hook(params["0.weight"].data(), [&](const NDArray& gradient) {
      ++calls;
      seen = values(gradient.copy());
    });
    for (int step = 0; step < 3; ++step) {
      NDArray loss;
      {
        auto recording = ag::record();
        loss = nd::sum(nd::square((*net)(nd::random::uniform({5, 8}))));
      }
      loss.backward();
      CHECK(net->hybrid_cache()->last_call_replayed());
      CHECK(calls == step + 1);
      CHECK(seen == values(params["0.weight"].data().grad()));
    }
  }

  TEST_CASE("two signatures record two entries, each with its backward") {
    auto eager = make_mlp(cpu(), false);
    auto hybrid = make_mlp(cpu(), false);
    copy_parameters(*eager, *hybrid);
    hybrid->hybridize();
    for (int i = 0; i < 4; ++i) {
      const NDArray x = nd::random::uniform({i % 2 == 0 ? 5 : 2, 8});
      for (nn::Sequential* net : {eager.get(), hybrid.get()}) {
        NDArray loss;
        {
          auto recording = ag::record();
          loss = nd::sum(nd::square((*net)(x)));
        }
        loss.backward();
      }
      check_same_parameters(*eager, *hybrid);
    }
    CHECK(hybrid->hybrid_cache()->num_entries() == 2);
    {
      auto predicting = ag::record(false);  // is_training() is part of the signature
      NDArray loss = nd::sum((*hybrid)(nd::random::uniform({5, 8})));
    }
    CHECK(hybrid->hybrid_cache()->num_entries() == 3);
  }

  TEST_CASE("a second call before the first's backward runs eagerly: no gradient is lost") {
    auto eager = make_mlp(cpu(), false);
    auto hybrid = make_mlp(cpu(), false);
    copy_parameters(*eager, *hybrid);
    hybrid->hybridize();
    const NDArray a = nd::random::uniform({5, 8});
    const NDArray b = nd::random::uniform({5, 8});
    for (int round = 0; round < 2; ++round) {
      NDArray hybrid_loss;
      for (nn::Sequential* net : {eager.get(), hybrid.get()}) {
        NDArray loss;
        {
          auto recording = ag::record();
          NDArray first = (*net)(a);
          NDArray second = (*net)(b);  // the first call's node still needs the intermediates
          loss = nd::sum(first * second);
        }
        loss.backward(NDArray(), true);  // retained: its nodes could run again
        if (net == hybrid.get()) {
          CHECK_FALSE(hybrid->hybrid_cache()->last_call_replayed());
          hybrid_loss = loss;
        }
      }
      check_same_parameters(*eager, *hybrid);
      // The retained graph keeps the first node's claim: calls still run eagerly, correctly.
      NDArray again;
      {
        auto recording = ag::record();
        again = nd::sum((*hybrid)(a));
      }
      CHECK_FALSE(hybrid->hybrid_cache()->last_call_replayed());
      again.backward();
    }
    // Once those graphs are gone, calls replay again.
    NDArray loss;
    {
      auto recording = ag::record();
      loss = nd::sum((*hybrid)(a));
    }
    CHECK(hybrid->hybrid_cache()->last_call_replayed());
  }

  TEST_CASE("retain_graph: a replayed call's backward runs twice with the same result") {
    auto net = make_mlp(cpu(), false);
    net->hybridize();
    const NDArray x = nd::random::uniform({5, 8});
    for (int call = 0; call < 2; ++call) {
      NDArray loss;
      {
        auto recording = ag::record();
        loss = nd::sum(nd::square((*net)(x)));
      }
      loss.backward(NDArray(), true);
      const std::vector<float> first = values(net->collect_params()["0.weight"].data().grad());
      loss.backward();
      CHECK(values(net->collect_params()["0.weight"].data().grad()) == first);
    }
  }

  TEST_CASE("dropout draws a new mask at every replay and its gradient uses that mask") {
    const auto fn = [](const std::vector<NDArray>& in) {
      return std::vector<NDArray>{nd::dropout(in[0] * 2, 0.5)};
    };
    nd::Hybridized hybrid = nd::hybridize(fn);
    NDArray x = nd::ones({64});
    x.attach_grad();
    std::vector<float> previous;
    for (int call = 0; call < 3; ++call) {
      // The same default-generator state gives the eager mask.
      nd::random::seed(static_cast<std::uint64_t>(call));
      NDArray eager_y;
      {
        auto recording = ag::record();
        eager_y = fn({x})[0];
        nd::sum(eager_y * eager_y).backward();
      }
      const std::vector<float> eager_grad = values(x.grad());
      nd::random::seed(static_cast<std::uint64_t>(call));
      NDArray y;
      {
        auto recording = ag::record();
        y = hybrid({x})[0];
        nd::sum(y * y).backward();
      }
      CHECK(hybrid.cache().last_call_replayed());
      CHECK(values(y) == values(eager_y));
      CHECK(values(x.grad()) == eager_grad);
      CHECK(values(y) != previous);
      previous = values(y);
    }
  }

  TEST_CASE("nn::Dropout in a hybridized block: each replay's gradient uses its own mask") {
    nn::Sequential net;
    net.add(nn::Dropout(0.5, 3));
    net.hybridize();
    NDArray x = nd::ones({64});
    x.attach_grad();
    std::vector<float> previous;
    for (int call = 0; call < 3; ++call) {
      NDArray y;
      {
        auto recording = ag::record();
        y = net(x);
        nd::sum(y).backward();
      }
      CHECK(net.hybrid_cache()->last_call_replayed());
      CHECK(values(x.grad()) == values(y));  // x = 1: dy/dx is the mask, which is y
      CHECK(values(y) != previous);
      previous = values(y);
    }
  }

  TEST_CASE("writing a parameter in place between the call and its backward is an error") {
    auto net = make_mlp(cpu(), false);
    net->hybridize();
    NDArray loss;
    {
      auto recording = ag::record();
      loss = nd::sum((*net)(nd::random::uniform({5, 8})));
    }
    net->collect_params()["1.weight"].data() *= 2;  // read by the gradient of layer 1's input
    const std::string message = error_of([&] { loss.backward(); });
    INFO(message);
    CHECK(contains(message, "written in place"));
  }

  TEST_CASE("a function reading a recorded array from outside runs eagerly, correctly") {
    NDArray w = nd::from_vector(std::vector<float>{1, 2, 3}, {3});
    w.attach_grad();
    NDArray scaled;
    std::vector<float> expected;
    for (int call = 0; call < 2; ++call) {
      {
        auto recording = ag::record();
        scaled = w * 2;  // not a leaf: the hybridized function cannot capture its gradient
      }
      nd::Hybridized hybrid = nd::hybridize([&scaled](const std::vector<NDArray>& in) {
        return std::vector<NDArray>{in[0] * scaled};
      });
      NDArray loss;
      {
        auto recording = ag::record();
        loss = nd::sum(hybrid({nd::full({3}, 5)})[0]);
      }
      CHECK_FALSE(hybrid.cache().last_call_replayed());
      loss.backward();
      CHECK(values(w.grad()) == std::vector<float>{10, 10, 10});
    }
  }

  TEST_CASE("under autograd, an output that needs no gradient is returned without a node") {
    nd::Hybridized hybrid = nd::hybridize([](const std::vector<NDArray>& in) {
      return std::vector<NDArray>{in[0] * 2, nd::argmax(in[0], 0)};
    });
    NDArray x = nd::from_vector(std::vector<float>{1, 3, 2}, {3});
    x.attach_grad();
    for (int call = 0; call < 2; ++call) {
      std::vector<NDArray> out;
      NDArray loss;
      {
        auto recording = ag::record();
        out = hybrid({x});
        loss = nd::sum(out[0]);
      }
      CHECK_FALSE(out[1].needs_grad());
      loss.backward();
      CHECK(values(x.grad()) == std::vector<float>{2, 2, 2});
    }
    // Inputs that need no gradient under record: the entry has no backward.
    {
      auto recording = ag::record();
      const std::vector<NDArray> out = hybrid({nd::ones({3})});
      CHECK_FALSE(out[0].needs_grad());
    }
    CHECK(hybrid.cache().num_recorded_backward_ops() == 0);
  }
}

}  // namespace tandem::testing
