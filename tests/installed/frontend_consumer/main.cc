// What an application does with tandem's front end, built from the installed headers and
// libraries alone: trains a small network with autograd and a Trainer on cpu and a sim device,
// hybridizes it, exports it and loads the export back, asks autograd::grad for a gradient,
// runs a repeated loop of engine ops under tandem::AutoCapture, sums over a sim device and the
// cpu (and is refused NCCL there, with the reason), trains a hybridized block whose grad
// request changes midway, and replays a whole training step (nn::TrainingStep) beside the new
// array ops and loaders, and this round's fused ops and checks, and captures a window that fails
// as one unit. Every step checks its result; any failure exits non-zero with what went wrong.
#include <tandem/accel/stream.h>
#include <tandem/auto_capture.h>
#include <tandem/detail/fault_injection.h>
#include <tandem/graph.h>
#include <tandem/ops/collectives.h>
#include <tandem/tandem.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace nd = tandem::nd;
namespace nn = tandem::nn;
namespace autograd = tandem::autograd;

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "frontend consumer: FAILED: %s\n", what.c_str());
    std::exit(1);
  }
}

// Two separable classes in 4 features: the label is whether the first feature is positive.
struct Batch {
  nd::NDArray x, y;
};

Batch make_batch(tandem::Device device) {
  std::vector<float> features;
  std::vector<std::int32_t> labels;
  for (int row = 0; row < 64; ++row) {
    for (int column = 0; column < 4; ++column)
      features.push_back(static_cast<float>((row * 7 + column * 13) % 17 - 8) / 8.0f);
    labels.push_back(features[static_cast<std::size_t>(row * 4)] > 0 ? 1 : 0);
  }
  return {nd::from_vector(features, {64, 4}).copyto(device),
          nd::from_vector(labels, {64}).copyto(device)};
}

double train(tandem::Device device) {
  nd::random::seed(7);
  nn::Sequential net;
  net.add(nn::Dense(16, nn::relu)).add(nn::Dense(2));
  net.initialize(nn::Xavier(), {device});
  nn::Trainer trainer(net.collect_params(), nn::SGD(0.5));
  const Batch batch = make_batch(device);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    nd::NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy(net(batch.x), batch.y).mean();
    }
    loss.backward();
    trainer.step(1);
    if (step == 0) first = loss.scalar();
    if (step == 59) last = loss.scalar();
  }
  std::printf("%s: loss %.4f -> %.4f\n", tandem::to_string(device).c_str(), first, last);
  require(last < 0.5 * first, "training on " + tandem::to_string(device) + " did not learn");
  return last;
}

void hybridize_and_export(const std::filesystem::path& dir) {
  nd::random::seed(3);
  nn::Sequential net;
  net.add(nn::Dense(8, nn::relu)).add(nn::Dense(3));
  net.initialize(nn::Xavier());
  const nd::NDArray x = nd::random::uniform({5, 4});
  const std::vector<float> eager = net(x).to_vector<float>();
  net.hybridize();
  for (int call = 0; call < 3; ++call) {
    require(net(x).to_vector<float>() == eager, "a hybridized call differs from the eager one");
  }
  net.hybridize(true, {.fail_as_one_unit = true});
  for (int call = 0; call < 3; ++call) {
    require(net(x).to_vector<float>() == eager,
            "a call hybridized to fail as one unit differs from the eager one");
  }
  const nn::ExportedFiles files = nn::export_block(net, x, (dir / "consumer").string());
  auto imported = nn::ImportedBlock::load(files.graph, files.params);
  require((*imported)(x).to_vector<float>() == eager, "the imported block differs from the net");
  std::printf("hybridize and export: %zu outputs identical\n", eager.size());
}

void gradient_without_buffers() {
  nd::NDArray w = nd::array({1, 2, 3});
  w.attach_grad();
  nd::NDArray loss;
  {
    auto recording = autograd::record();
    loss = (w * w).sum();
  }
  const std::vector<nd::NDArray> grads = autograd::grad({loss}, {w});
  require(grads.at(0).to_vector<double>() == std::vector<double>{2, 4, 6},
          "autograd::grad gave a wrong gradient");
  require(w.grad().to_vector<double>() == std::vector<double>{0, 0, 0},
          "autograd::grad wrote the gradient buffer");
}

void repeated_loop_under_auto_capture() {
  tandem::Engine& engine = tandem::Engine::get();
  tandem::Var counter_var = engine.new_var();
  long counter = 0;
  {
    tandem::AutoCapture capture(engine, {.min_window_ops = 16, .max_window_ops = 64});
    for (int iteration = 0; iteration < 200; ++iteration) {
      for (int op = 0; op < 16; ++op) {
        engine.push([&counter] { ++counter; }, tandem::cpu(), {}, {counter_var}, {.name = "count"});
      }
    }
    engine.wait_for_var(counter_var);
    std::printf("auto capture: %llu windows entered from a plan\n",
                static_cast<unsigned long long>(capture.stats().windows_entered));
  }
  engine.delete_var(counter_var);
  engine.wait_all();
  require(counter == 200 * 16, "AutoCapture lost or repeated ops");
}

void allreduce_and_nccl_refusal() {
  // No waits between the copies, the sum and the reads: the engine orders them.
  const std::vector<nd::NDArray> arrays{nd::array({1, 2}).copyto(tandem::sim(0)),
                                        nd::array({10, 20})};
  nd::allreduce(arrays);
  for (const nd::NDArray& array : arrays) {
    require(array.to_vector<double>() == std::vector<double>{11, 22},
            "allreduce over sim(0) and the cpu gave a wrong sum");
  }
  std::string refusal;
  try {
    nd::allreduce(arrays, nd::AllreduceAlgorithm::nccl);
  } catch (const tandem::Error& error) {
    refusal = error.what();
  }
  require(refusal.find("AllreduceAlgorithm::nccl cannot be used") != std::string::npos,
          "NCCL on sim and cpu arrays was not refused with its reason: '" + refusal + "'");
  const std::string version = tandem::ops::collective_library_version();
  std::printf("allreduce: sum on sim(0) and cpu(0); NCCL %s\n",
              version.empty() ? "not available" : version.c_str());
}

// A hybridized block and an eager copy get the same gradients, also after set_grad_req.
void hybridized_gradients_after_set_grad_req() {
  nd::random::seed(5);
  nn::Sequential eager, hybrid;
  for (nn::Sequential* net : {&eager, &hybrid})
    net->add(nn::Dense(8, nn::relu, {.in_units = 4}))
        .add(nn::Dense(2, nn::ActivationType::none, {.in_units = 8}));
  eager.initialize(nn::Xavier());
  hybrid.initialize(nn::Xavier());
  const nn::ParameterDict source = eager.collect_params();
  for (const auto& [name, parameter] : hybrid.collect_params())
    parameter->set_data(source[name].data());
  hybrid.hybridize();
  const auto step = [&] {
    const nd::NDArray x = nd::random::uniform({5, 4});
    for (nn::Sequential* net : {&eager, &hybrid}) {
      nd::NDArray loss;
      {
        auto recording = autograd::record();
        loss = nd::square((*net)(x)).sum();
      }
      loss.backward();
    }
  };
  step();
  step();
  eager.collect_params().set_grad_req(autograd::GradReq::add);
  hybrid.collect_params().set_grad_req(autograd::GradReq::add);
  step();
  step();
  const nn::ParameterDict trained = hybrid.collect_params();
  for (const auto& [name, parameter] : eager.collect_params()) {
    const std::vector<float> want = parameter->data().grad().to_vector<float>();
    require(trained[name].data().grad().to_vector<float>() == want,
            "hybridized gradient of " + name + " differs from eager after set_grad_req");
  }
  std::printf("hybridized gradients after set_grad_req: identical to eager\n");
}

// A message that `call` throws as tandem::Error, or "" when it throws nothing.
template <class Call>
std::string error_of(Call&& call) {
  try {
    call();
  } catch (const tandem::Error& error) {
    return error.what();
  }
  return "";
}

// The calls added for issues 22 and 25, as an application uses them: a whole training step
// replayed on sim(0) against the eager loop, where/clip/stack/split on sim(0) against the cpu
// with nothing waited for between devices, pinned host arrays, and a bad input at each.
void whole_step_and_new_array_ops() {
  const tandem::Device sim = tandem::sim(0);
  const Batch batch = make_batch(sim);
  std::vector<double> losses[2];
  for (int replayed = 0; replayed < 2; ++replayed) {
    nd::random::seed(3);
    nn::Sequential net;
    net.add(nn::Dense(16, nn::relu, {.in_units = 4}))
        .add(nn::Dense(2, nn::ActivationType::none, {.in_units = 16}));
    net.initialize(nn::Xavier(), {sim});
    nn::Trainer trainer(net.collect_params(), nn::SGD(0.5, 0.9));
    nn::TrainingStep step(net, trainer, [](const nd::NDArray& out, const nd::NDArray& label) {
      return nd::softmax_cross_entropy(out, label).mean();
    });
    for (int i = 0; i < 6; ++i) {
      if (replayed == 1) {
        losses[1].push_back(step(batch.x, batch.y, 1).copy().scalar());
        continue;
      }
      nd::NDArray loss;
      {
        auto recording = autograd::record();
        loss = nd::softmax_cross_entropy(net(batch.x), batch.y).mean();
      }
      loss.backward();
      trainer.step(1);
      losses[0].push_back(loss.scalar());
    }
    if (replayed == 1) require(step.last_call_replayed(), "TrainingStep did not replay");
  }
  require(losses[0] == losses[1], "a replayed TrainingStep differs from the eager steps");
  {
    nn::Sequential net;
    net.add(nn::Dense(2, nn::ActivationType::none, {.in_units = 4}));
    net.initialize(nn::Xavier(), {sim});
    nn::Trainer adam(net.collect_params(), nn::Adam(0.01));
    require(error_of([&] {
              nn::TrainingStep step(
                  net, adam, [](const nd::NDArray& o, const nd::NDArray&) { return o.sum(); });
            }).find("step count") != std::string::npos,
            "TrainingStep with Adam was not refused with the reason");
  }

  // Host data, pinned, copied to sim(0) and computed on there; the cpu twin computed meanwhile.
  const nd::NDArray host = nd::from_vector(std::vector<float>{-2, -1, 0, 1, 2, 3}, {6});
  const nd::NDArray pinned = host.pin_memory();
  require(pinned.is_pinned(), "pin_memory did not give a pinned array");
  const nd::NDArray on_sim = pinned.copyto(sim);
  const nd::NDArray picked_sim = nd::where(on_sim > 0, nd::clip(on_sim, -1, 1), -5.0);
  const nd::NDArray picked_cpu = nd::where(host > 0, nd::clip(host, -1, 1), -5.0);
  const nd::NDArray stacked = nd::stack({picked_sim.copyto(tandem::cpu()), picked_cpu}, 0);
  const std::vector<nd::NDArray> halves = nd::split(stacked, 2, 0);
  require(halves.size() == 2 &&
              halves[0].to_vector<float>() == std::vector<float>{-5, -5, -5, 1, 1, 1} &&
              halves[1].to_vector<float>() == halves[0].to_vector<float>(),
          "where/clip/stack/split on sim(0) and cpu disagree");
  require(error_of([&] { (void)nd::where(on_sim > 0, host, host); }).find("sim(0)") !=
              std::string::npos,
          "where across devices was not refused naming the device");
  require(error_of([&] { (void)nd::split(stacked, 3, 0); }).find("split") != std::string::npos,
          "an uneven split was not refused");
  require(error_of([] {
            (void)tandem::data::load_fashion_mnist("/nonexistent-tandem-dir");
          }).find("/nonexistent-tandem-dir") != std::string::npos,
          "load_fashion_mnist of a missing folder did not name it");
  std::printf("TrainingStep, where/clip/stack/split, pinned arrays, Fashion-MNIST errors: OK\n");
}

// The fused ops of this round from outside: the optimizer updates (single and grouped) against
// their formula on sim(0) and the cpu, batch_norm in training with its gradient on both (they
// agree), take with its out-of-range error, the ignored label's zero gradient, and a refused
// learning rate.
void fused_updates_batch_norm_take() {
  for (const tandem::Device device : {tandem::cpu(), tandem::sim(0)}) {
    nd::NDArray w = nd::from_vector(std::vector<float>{1, 2, 3}, {3}).copyto(device);
    const nd::NDArray g = nd::from_vector(std::vector<float>{0.5f, -1, 2}, {3}).copyto(device);
    nd::NDArray m = nd::zeros({3}, nd::float32, device);
    nd::sgd_mom_update(w, g, m, {.learning_rate = 0.1, .momentum = 0.9});
    nd::sgd_mom_update(w, g, m, {.learning_rate = 0.1, .momentum = 0.9});
    // m1 = -0.1 g, w1 = w + m1; m2 = 0.9 m1 - 0.1 g, w2 = w1 + m2: w - 0.29 g.
    const std::vector<float> got = w.to_vector<float>();
    require(std::abs(got[0] - (1 - 0.29f * 0.5f)) < 1e-6f && std::abs(got[2] - (3 - 0.58f)) < 1e-6f,
            "sgd_mom_update on " + tandem::to_string(device) + " differs from its formula");
    // The grouped form: two weights in one call, the same formula; a bad entry is named and
    // leaves every weight as it was.
    std::vector<nd::NDArray> weights{
        nd::from_vector(std::vector<float>{1, 2, 3}, {3}).copyto(device),
        nd::from_vector(std::vector<float>{4}, {1}).copyto(device)};
    const std::vector<nd::NDArray> grads{
        g, nd::from_vector(std::vector<float>{2}, {1}).copyto(device)};
    std::vector<nd::NDArray> momenta{nd::zeros({3}, nd::float32, device),
                                     nd::zeros({1}, nd::float32, device)};
    nd::multi_sgd_mom_update(weights, grads, momenta, {.learning_rate = 0.1, .momentum = 0.9});
    nd::multi_sgd_mom_update(weights, grads, momenta, {.learning_rate = 0.1, .momentum = 0.9});
    require(weights[0].to_vector<float>() == got &&
                std::abs(weights[1].to_vector<float>()[0] - (4 - 0.58f)) < 1e-6f,
            "multi_sgd_mom_update on " + tandem::to_string(device) + " differs from its formula");
    momenta[1] = nd::zeros({2}, nd::float32, device);
    std::size_t bad_entry = 99;
    try {
      nd::multi_sgd_mom_update(weights, grads, momenta, {.learning_rate = 0.1});
    } catch (const nd::UpdateEntryError& error) {
      bad_entry = error.entry();
    }
    require(bad_entry == 1 && weights[0].to_vector<float>() == got,
            "multi_sgd_mom_update with a bad entry 1 did not name it, or updated a weight");
    // linear: x . w^T + b in one op, the bits of the dot and the add.
    const nd::NDArray x =
        nd::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).copyto(device);
    require(nd::linear(x, weights[0].reshape({1, 3}), weights[1]).to_vector<float>() ==
                (nd::dot(x, weights[0].reshape({1, 3}).T()) + weights[1]).to_vector<float>(),
            "linear on " + tandem::to_string(device) + " differs from dot + add");
    require(error_of([&] {
              (void)nd::linear(x, weights[0].reshape({3, 1}), weights[1]);
            }).find("linear") != std::string::npos,
            "linear with a misshapen weight was not refused naming the op");
  }
  std::vector<double> grads[2];
  for (int i = 0; i < 2; ++i) {
    const tandem::Device device = i == 0 ? tandem::cpu() : tandem::sim(0);
    nd::random::seed(5);
    nd::NDArray x = nd::random::normal({4, 3, 2, 2}).copyto(device);
    nd::NDArray gamma = nd::ones({3}, nd::float32, device),
                beta = nd::zeros({3}, nd::float32, device);
    nd::NDArray mean = nd::zeros({3}, nd::float32, device),
                var = nd::ones({3}, nd::float32, device);
    x.attach_grad();
    {
      auto recording = autograd::record();
      nd::NDArray y = nd::batch_norm(x, gamma, beta, mean, var);
      (y * y).sum().backward();
    }
    grads[i] = x.grad().to_vector<double>();
    // Normalized, so sum(y^2) = N*H*W per channel whatever x: its gradient is ~0.
    for (double v : grads[i]) require(std::abs(v) < 1e-3, "batch_norm's gradient is not ~0");
  }
  for (std::size_t k = 0; k < grads[0].size(); ++k) {
    require(std::abs(grads[0][k] - grads[1][k]) < 1e-6, "batch_norm differs on cpu and sim(0)");
  }
  const nd::NDArray table = nd::from_vector(std::vector<float>{10, 20, 30}, {3});
  const nd::NDArray picked = nd::take(table, nd::from_vector(std::vector<std::int32_t>{2, 0}, {2}));
  require(picked.to_vector<float>() == std::vector<float>{30, 10}, "take picked the wrong rows");
  require(error_of([&] {
            (void)nd::take(table, nd::from_vector(std::vector<std::int32_t>{3}, {1}))
                .to_vector<float>();
          }).find("out of range") != std::string::npos,
          "take with an index out of range was not refused");
  nd::NDArray logits = nd::ones({2, 3});
  logits.attach_grad();
  {
    auto recording = autograd::record();
    nd::softmax_cross_entropy(logits, nd::from_vector(std::vector<std::int32_t>{1, -1}, {2}))
        .sum()
        .backward();
  }
  const std::vector<float> lg = logits.grad().to_vector<float>();
  require(lg[3] == 0 && lg[4] == 0 && lg[5] == 0 && lg[1] != 0,
          "an ignored label (-1) still got a gradient");
  require(error_of([] { nn::SGD sgd(std::nan("")); }).find("learning rate") != std::string::npos,
          "SGD with a NaN learning rate was not refused");
  std::printf("fused updates, batch_norm, take, ignored labels, optimizer checks: OK\n");
}

// The hardening of this round from outside: a Trainer refuses a stale gradient unless told to
// skip it, an array outliving its private engine gives an error instead of a crash, an injected
// allocation failure becomes an op's error and the engine goes on, and a save leaves no
// temporary behind.
void hardening_from_outside(const std::filesystem::path& dir) {
  nn::Dense used(2, nn::ActivationType::none, {.in_units = 3});
  nn::Dense unused(2, nn::ActivationType::none, {.in_units = 3});
  used.initialize(nn::Xavier());
  unused.initialize(nn::Xavier());
  nn::ParameterDict params;
  for (nn::Block* block : {static_cast<nn::Block*>(&used), static_cast<nn::Block*>(&unused)}) {
    for (const auto& entry : block->collect_params()) {
      entry.second->set_name((block == &used ? "used." : "unused.") + entry.first);
      params.add(entry.second);
    }
  }
  nn::Trainer trainer(params, nn::SGD(0.1));
  {
    auto recording = autograd::record();
    nd::sum(used(nd::ones({4, 3}))).backward();
  }
  require(error_of([&] { trainer.step(4); }).find("parameter 'unused.") != std::string::npos,
          "a stale gradient was not refused");
  const std::vector<float> before =
      unused.collect_params().begin()->second->data().to_vector<float>();
  trainer.step(4, {.ignore_stale_grad = true});
  require(unused.collect_params().begin()->second->data().to_vector<float>() == before,
          "ignore_stale_grad updated a parameter backward did not reach");

  std::unique_ptr<tandem::Engine> engine =
      tandem::Engine::create(tandem::EngineConfig{.kind = tandem::EngineKind::threaded});
  nd::NDArray orphan;
  {
    nd::EngineScope scope(*engine);
    orphan = nd::ones({2, 2}) + 1;
  }
  engine.reset();
  require(error_of([&] { (void)(orphan + 1); }).find("destroyed") != std::string::npos,
          "an array used after its engine was destroyed gave no clear error");
  orphan = nd::NDArray();

  const nd::NDArray big = nd::ones({64, 64});
  big.wait_to_read();  // its memory is allocated by its op: before the plan is armed
  nd::NDArray failed;
  {
    tandem::testing::FaultScope faults(
        {{.kind = tandem::testing::FaultKind::host_allocation, .nth = 1}});
    failed = big + 1;
    require(
        error_of([&] { (void)failed.to_vector<float>(); }).find("injected") != std::string::npos,
        "an injected allocation failure did not become the op's error");
  }
  require((big + 1).to_vector<float>()[0] == 2, "the engine did not go on after a failed op");

  const std::string path = (dir / "weights.nd").string();
  nd::save(path, {{"w", big}});
  nd::save(path, {{"w", big + 1}});
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    require(entry.path().filename().string().find(".tmp") == std::string::npos,
            "a save left a temporary file behind");
  }
  require(nd::load(path).at(0).second.to_vector<float>()[0] == 2,
          "the second save did not replace the first");
  std::printf(
      "stale gradients, arrays after their engine, injected faults, crash-safe saves: OK\n");
}

}  // namespace

// relu's one-op gradient (this round's new public call) from outside: dy where x > 0, else 0,
// on the cpu and on sim(0) fed from it without a wait, the two the same; mismatched shapes are
// refused at the call, naming both.
void relu_backward_check() {
  const nd::NDArray x = nd::from_vector(std::vector<float>{-1, 0, 2, 3}, {4});
  const nd::NDArray dy = nd::from_vector(std::vector<float>{5, 6, 7, 8}, {4});
  const nd::NDArray on_cpu = nd::relu_backward(dy, x);
  const nd::NDArray on_sim = nd::relu_backward(dy.copyto(tandem::sim(0)), x.copyto(tandem::sim(0)));
  const std::vector<float> expected{0, 0, 7, 8};
  require(on_cpu.to_vector<float>() == expected,
          "relu_backward on the cpu differs from dy * (x > 0)");
  require(on_sim.to_vector<float>() == expected, "relu_backward on sim(0) differs from the cpu");
  const std::string message =
      error_of([&] { (void)nd::relu_backward(dy, nd::zeros({3}, nd::float32, tandem::cpu())); });
  require(message.find("shapes 4 and 3") != std::string::npos &&
              message.find("broadcast") != std::string::npos,
          "relu_backward of mismatched shapes did not name them: " + message);
  std::printf("relu_backward on cpu and sim, its shape check: OK\n");
}

// This round's new capture option from outside: two independent sim(0) ops and a third reading
// the first are no chain, so a plain window keeps them pushed one by one, and a window that
// fails as one unit joins them into one device graph; both replays give the same values.
void window_that_fails_as_one_unit() {
  tandem::Engine& engine = tandem::Engine::get();
  const tandem::Var x = engine.new_var(), y = engine.new_var(), z = engine.new_var();
  long vx = 0, vy = 0, vz = 0;
  auto record = [&] {
    engine.push([&](tandem::RunContext& ctx) { ctx.stream()->enqueue_host([&] { ++vx; }, {}); },
                tandem::sim(0), {}, {x}, {.name = "x"});
    engine.push([&](tandem::RunContext& ctx) { ctx.stream()->enqueue_host([&] { vy += 2; }, {}); },
                tandem::sim(0), {}, {y}, {.name = "y"});
    engine.push([&](tandem::RunContext& ctx) { ctx.stream()->enqueue_host([&] { vz += vx; }, {}); },
                tandem::sim(0), {x}, {z}, {.name = "z"});
  };
  tandem::CapturedGraph plain = tandem::capture(engine, record);
  tandem::CapturedGraph one_unit = tandem::capture(engine, {.fail_as_one_unit = true}, record);
  require(plain.num_device_graphs() == 0 && plain.num_pushed_ops() == 3,
          "a plain window joined ops that are no chain");
  require(one_unit.num_device_graphs() == 1 && one_unit.num_device_graph_ops() == 3,
          "a window that fails as one unit did not join its three sim ops");
  for (int i = 0; i < 3; ++i) {
    one_unit.replay();
    plain.replay();
  }
  engine.wait_all();
  require(vx == 6 && vy == 12 && vz == 21, "the replays of the two windows gave other values");
  plain = one_unit = tandem::CapturedGraph();
  for (const tandem::Var var : {x, y, z}) engine.delete_var(var);
  engine.wait_all();
  std::printf("a window that fails as one unit: 1 device graph for 3 sim ops: OK\n");
}

// This round's fixes from outside: two engines on one device keep their failures apart (each
// launch holds its stream, tandem::Stream::launch_mutex), and EngineStats counts late drainer
// starts. A failing take on sim(0) in one engine beside healthy sim(0) work in another: the
// healthy engine sees no error and its values, the failing one its own take error.
void engines_sharing_a_device() {
  std::unique_ptr<tandem::Engine> failing =
      tandem::Engine::create(tandem::EngineConfig{.kind = tandem::EngineKind::threaded});
  std::unique_ptr<tandem::Engine> healthy =
      tandem::Engine::create(tandem::EngineConfig{.kind = tandem::EngineKind::threaded});
  for (int round = 0; round < 20; ++round) {
    nd::NDArray bad, good;
    {
      nd::EngineScope scope(*failing);
      const nd::NDArray table = nd::ones({2, 3}, nd::float32, tandem::sim(0));
      bad = nd::take(table, nd::from_vector(std::vector<std::int32_t>{2, 2}, tandem::sim(0)), 0);
    }
    {
      nd::EngineScope scope(*healthy);
      good = nd::arange(0, 4, 1, nd::float32, tandem::sim(0)) * 2;
      require(good.to_vector<float>() == std::vector<float>{0, 2, 4, 6},
              "an engine beside a failing one on sim(0) computed other values");
      healthy->wait_all();
    }
    const std::string error = error_of([&] { bad.wait_to_read(); });
    require(error.find("take") != std::string::npos,
            "the failing engine's array did not carry its own take error: " + error);
    nd::EngineScope scope(*failing);
    bad = nd::NDArray();
    try {
      failing->wait_all();
    } catch (const std::exception&) {
    }
  }
  require(healthy->stats().worker_late_starts <= healthy->stats().worker_wakes,
          "more late drainer starts than wake-ups");
  std::printf("two engines on sim(0), failures kept apart: OK\n");
}

int main() {
  try {
    const double cpu_loss = train(tandem::cpu());
    const double sim_loss = train(tandem::sim(0));
    require(std::abs(cpu_loss - sim_loss) < 1e-4, "cpu and sim(0) trained differently");
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("tandem-consumer-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    hybridize_and_export(dir);
    hardening_from_outside(dir);
    std::filesystem::remove_all(dir);
    gradient_without_buffers();
    repeated_loop_under_auto_capture();
    allreduce_and_nccl_refusal();
    hybridized_gradients_after_set_grad_req();
    whole_step_and_new_array_ops();
    fused_updates_batch_norm_take();
    relu_backward_check();
    window_that_fails_as_one_unit();
    engines_sharing_a_device();
    std::printf("frontend consumer: OK\n");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "frontend consumer: unexpected error: %s\n", error.what());
    return 1;
  }
}
