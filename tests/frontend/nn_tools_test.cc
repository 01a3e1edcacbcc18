// tandem::nn's training tools: learning-rate schedules (alone and driving a Trainer), losses
// (values against hand computation, gradients against finite differences), metrics and
// gradient clipping (values, and no wait before the value is read), and Trainer checkpoints
// (resuming gives the bits of uninterrupted training; a writer killed mid-write leaves the
// last checkpoint loadable).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <numbers>
#include <string>
#include <thread>
#include <vector>

#include "frontend_test_util.h"
#include "scratch_dir.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"

extern char** environ;

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

using LossFn = std::function<NDArray(const NDArray&, const NDArray&)>;

double loss_sum(const LossFn& loss, const std::vector<double>& pred, const NDArray& label,
                const Shape& shape) {
  return loss(nd::from_vector(pred, shape), label).sum().scalar<double>();
}

// The largest relative difference between autograd's gradient of loss(pred, label).sum() and
// central differences, in float64.
double worst_gradient_error(const LossFn& loss, const std::vector<double>& pred_values,
                            const NDArray& label, const Shape& shape) {
  NDArray pred = nd::from_vector(pred_values, shape);
  pred.attach_grad();
  {
    auto recording = autograd::record();
    loss(pred, label).sum().backward();
  }
  const std::vector<double> analytic = pred.grad().to_vector<double>();
  double worst = 0;
  constexpr double kStep = 1e-6;
  for (std::size_t i = 0; i < pred_values.size(); ++i) {
    std::vector<double> moved = pred_values;
    moved[i] += kStep;
    const double plus = loss_sum(loss, moved, label, shape);
    moved[i] -= 2 * kStep;
    const double minus = loss_sum(loss, moved, label, shape);
    const double numeric = (plus - minus) / (2 * kStep);
    worst = std::max(worst, std::abs(analytic[i] - numeric) / std::max(1.0, std::abs(numeric)));
  }
  return worst;
}

void check_values(const NDArray& actual, const std::vector<double>& expected) {
  const std::vector<double> values = actual.to_vector<double>();
  REQUIRE(values.size() == expected.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    CHECK(values[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  }
}

// A network and trainer whose optimizer has state: a checkpoint's subject.
struct Subject {
  std::shared_ptr<nn::Sequential> net = std::make_shared<nn::Sequential>();
  std::unique_ptr<nn::Trainer> trainer;

  explicit Subject(std::int64_t width, std::uint64_t init_seed) {
    net->add(nn::Dense(width, nn::relu, {.in_units = 8, .dtype = nd::float64}))
        .add(nn::Dense(3, nn::ActivationType::none, {.in_units = width, .dtype = nd::float64}));
    net->initialize(nn::Uniform(0.3, init_seed));
    trainer = std::make_unique<nn::Trainer>(net->collect_params(), nn::Adam(0.01));
  }

  // One step on x plus noise from the default generator (what the checkpoint's RNG restores).
  void step(const NDArray& x, const NDArray& labels) {
    const NDArray noisy = x + nd::random::normal(x.shape(), {.stddev = 0.1, .dtype = nd::float64});
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::softmax_cross_entropy((*net)(noisy), labels).sum();
    }
    loss.backward();
    trainer->step(x.shape()[0]);
  }

  std::vector<double> weights() const {
    std::vector<double> all;
    for (const auto& [name, parameter] : net->collect_params()) {
      const std::vector<double> values = parameter->data().to_vector<double>();
      all.insert(all.end(), values.begin(), values.end());
    }
    return all;
  }
};

constexpr const char* kWriterEnv = "TANDEM_TEST_CHECKPOINT_WRITER";

// Whether a write of `path` is under way or was cut short: its temporary ("<path>.tmp.<pid>.<n>")
// exists.
bool has_temporary(const std::string& path) {
  const std::string prefix = std::filesystem::path(path).filename().string() + ".tmp.";
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path(), error)) {
    if (entry.path().filename().string().starts_with(prefix)) return true;
  }
  return false;
}
// 12 * 32768 + 3 doubles per Adam moment, two moments: a 6 MB file, a few ms to write.
constexpr std::int64_t kWriterWidth = 32768;

}  // namespace

TEST_SUITE("frontend.nn_tools") {
  TEST_CASE("step, multi-step, cosine and warm-up schedules give the rates computed by hand") {
    const nn::FactorScheduler factor(1.0, 10, 0.5, 0.2);
    CHECK(factor.learning_rate(0) == 1.0);
    CHECK(factor.learning_rate(9) == 1.0);
    CHECK(factor.learning_rate(10) == 0.5);
    CHECK(factor.learning_rate(25) == 0.25);
    CHECK(factor.learning_rate(1000) == 0.2);  // the floor
    const nn::MultiFactorScheduler multi(0.1, {3, 7}, 0.1);
    CHECK(multi.learning_rate(2) == 0.1);
    CHECK(multi.learning_rate(3) == doctest::Approx(0.01));
    CHECK(multi.learning_rate(7) == doctest::Approx(0.001));
    auto cosine = std::make_shared<nn::CosineScheduler>(0.1, 100, 0.001);
    CHECK(cosine->learning_rate(0) == doctest::Approx(0.1));
    CHECK(cosine->learning_rate(50) == doctest::Approx(0.001 + 0.099 / 2));
    CHECK(cosine->learning_rate(25) ==
          doctest::Approx(0.001 + 0.099 * (1 + std::cos(std::numbers::pi / 4)) / 2));
    CHECK(cosine->learning_rate(100) == 0.001);
    CHECK(cosine->learning_rate(500) == 0.001);
    const nn::WarmUp warm(cosine, 10, 0.0);
    CHECK(warm.learning_rate(0) == 0.0);
    CHECK(warm.learning_rate(5) == doctest::Approx(0.05));
    CHECK(warm.learning_rate(10) == doctest::Approx(0.1));       // the cosine's start
    CHECK(warm.learning_rate(60) == cosine->learning_rate(50));  // counted after warm-up
    // Warm-up composes with any schedule, itself included.
    const nn::WarmUp twice(std::make_shared<nn::WarmUp>(cosine, 4, 0.02), 2, 0.0);
    CHECK(twice.learning_rate(1) == doctest::Approx(0.01));
    CHECK(twice.learning_rate(2) == doctest::Approx(0.02));
    CHECK(twice.learning_rate(6) == doctest::Approx(0.1));
  }

  TEST_CASE("a schedule drives the Trainer's learning rate at each update") {
    nn::ParameterDict params;
    auto shared =
        std::make_shared<nn::Parameter>("w", Shape{1}, nn::ParameterOptions{.dtype = nd::float64});
    shared->initialize(nn::Ones());
    params.add(shared);
    nn::Trainer trainer(params, nn::SGD(1.0));
    trainer.set_lr_scheduler(
        std::make_shared<nn::MultiFactorScheduler>(0.5, std::vector<long>{2}, 0.1));
    std::vector<double> rates;
    for (int step = 0; step < 4; ++step) {
      // A gradient of 1 from a backward (one written by hand would be stale to the Trainer).
      nd::NDArray loss;
      {
        auto recording = autograd::record();
        loss = nd::sum(shared->data());
      }
      loss.backward();
      trainer.step(1);
      rates.push_back(trainer.learning_rate());
    }
    CHECK(rates[0] == 0.5);
    CHECK(rates[1] == 0.5);
    CHECK(rates[2] == doctest::Approx(0.05));
    CHECK(rates[3] == doctest::Approx(0.05));
    // w = 1 - 0.5 - 0.5 - 0.05 - 0.05
    CHECK(shared->data().scalar<double>() == doctest::Approx(-0.1));
  }

  TEST_CASE("schedules reject meaningless settings, naming the schedule and the value") {
    check_error([] { nn::FactorScheduler(0.1, 0, 0.5); }, {"FactorScheduler", "step_size", "0"});
    check_error([] { nn::FactorScheduler(0.1, 5, 1.5); }, {"FactorScheduler", "factor", "1.5"});
    check_error(
        [] {
          nn::MultiFactorScheduler(0.1, {5, 5}, 0.1);
        },
        {"MultiFactorScheduler", "strictly increase"});
    check_error([] { nn::CosineScheduler(-0.1, 10); }, {"CosineScheduler", "base_lr", "-0.1"});
    check_error([] { nn::CosineScheduler(0.1, 0); }, {"CosineScheduler", "max_steps"});
    check_error([] { nn::WarmUp(nullptr, 5); }, {"WarmUp", "null"});
    check_error([] { nn::CosineScheduler(0.1, 10).learning_rate(-1); },
                {"CosineScheduler", "step", "-1"});
  }

  TEST_CASE("L2, L1, Huber and sigmoid-BCE equal the per-sample means computed by hand") {
    const std::vector<double> p{0.5, -2.0, 3.0, 0.0, 1.5, -0.25};
    const std::vector<double> y{1.0, 0.0, 1.0, 1.0, 0.0, 0.0};
    const NDArray pred = nd::from_vector(p, Shape{2, 3});
    const NDArray label = nd::from_vector(y, Shape{2, 3});
    std::vector<double> l2(2), l1(2), huber(2), bce(2);
    for (std::size_t i = 0; i < 6; ++i) {
      const double d = p[i] - y[i];
      const double rho = 1.0;
      l2[i / 3] += 0.5 * d * d / 3;
      l1[i / 3] += std::abs(d) / 3;
      huber[i / 3] += (std::abs(d) <= rho ? 0.5 / rho * d * d : std::abs(d) - 0.5 * rho) / 3;
      const double s = 1 / (1 + std::exp(-p[i]));
      bce[i / 3] += -(y[i] * std::log(s) + (1 - y[i]) * std::log(1 - s)) / 3;
    }
    check_values(nn::l2_loss(pred, label), l2);
    check_values(nn::l1_loss(pred, label), l1);
    check_values(nn::huber_loss(pred, label), huber);
    check_values(nn::sigmoid_bce_loss(pred, label), bce);
    // Huber with another threshold: 0.5 / rho * d^2 inside, |d| - rho / 2 outside.
    const NDArray h2 =
        nn::huber_loss(nd::from_vector(std::vector<double>{0.0, 0.0}, Shape{2}),
                       nd::from_vector(std::vector<double>{1.0, 3.0}, Shape{2}), 2.0);
    check_values(h2, {0.25, 2.0});
    // BCE stays finite for large logits.
    const NDArray big =
        nn::sigmoid_bce_loss(nd::from_vector(std::vector<double>{800.0, -800.0}, Shape{2}),
                             nd::from_vector(std::vector<double>{0.0, 0.0}, Shape{2}));
    check_values(big, {800.0, 0.0});
  }

  TEST_CASE("softmax cross entropy with label smoothing mixes CE and the uniform target") {
    const std::vector<double> z{1.0, 2.0, 0.5, -1.0, 0.0, 3.0};
    const NDArray logits = nd::from_vector(z, Shape{2, 3});
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{1, 0});
    std::vector<double> expected(2);
    const double eps = 0.2;
    for (int n = 0; n < 2; ++n) {
      double total = 0;
      for (int c = 0; c < 3; ++c) total += std::exp(z[3 * n + c]);
      const int label = n == 0 ? 1 : 0;
      for (int c = 0; c < 3; ++c) {
        const double target = (c == label ? 1 - eps : 0.0) + eps / 3;
        expected[n] -= target * (z[3 * n + c] - std::log(total));
      }
    }
    check_values(nn::softmax_ce_loss(logits, labels, {.label_smoothing = eps}), expected);
    check_values(nn::softmax_ce_loss(logits, labels),
                 nd::softmax_cross_entropy(logits, labels).to_vector<double>());
  }

  TEST_CASE("every loss's gradient matches finite differences") {
    const Shape shape{3, 2};
    const std::vector<double> pred{0.3, -1.7, 2.2, 0.05, -0.6, 1.1};
    const NDArray target =
        nd::from_vector(std::vector<double>{1.0, 0.0, 0.5, 0.2, 0.0, 1.0}, shape);
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{1, 0, 1});
    const std::vector<std::pair<std::string, LossFn>> losses = {
        {"l2", [](const NDArray& p, const NDArray& l) { return nn::l2_loss(p, l); }},
        {"l1", [](const NDArray& p, const NDArray& l) { return nn::l1_loss(p, l); }},
        {"huber", [](const NDArray& p, const NDArray& l) { return nn::huber_loss(p, l, 0.5); }},
        {"sigmoid_bce",
         [](const NDArray& p, const NDArray& l) { return nn::sigmoid_bce_loss(p, l); }},
        {"softmax_ce_smoothed",
         [&labels](const NDArray& p, const NDArray&) {
           return nn::softmax_ce_loss(p, labels, {.label_smoothing = 0.1});
         }},
    };
    for (const auto& [name, loss] : losses) {
      const double worst = worst_gradient_error(loss, pred, target, shape);
      INFO(name);
      MESSAGE(name << ": largest gradient error " << worst);
      CHECK(worst < 1e-6);
    }
  }

  TEST_CASE("losses reject mismatched shapes, dtypes and settings with both sides named") {
    const NDArray a = nd::zeros({2, 3}, nd::float32);
    check_error([&] { nn::l2_loss(a, nd::zeros({3, 2}, nd::float32)); }, {"l2_loss", "2x3", "3x2"});
    check_error(
        [&] {
          nn::l1_loss(a, nd::zeros({2, 3}, nd::float64));
        },
        {"l1_loss", "float32", "float64"});
    check_error([&] { nn::huber_loss(a, a, 0.0); }, {"huber_loss", "rho"});
    check_error([&] { nn::sigmoid_bce_loss(nd::zeros({2}, nd::int32), nd::zeros({2}, nd::int32)); },
                {"sigmoid_bce_loss", "int32"});
    check_error(
        [&] { nn::softmax_ce_loss(a, nd::zeros({2}, nd::int32), {.label_smoothing = 1.0}); },
        {"softmax_ce_loss", "label_smoothing"});
  }

  TEST_CASE("accuracy, top-k and the mean loss count what they should across updates") {
    // Row maxima at 2, 0, 1, 1; labels 2, 1, 1, 0.
    const NDArray logits = nd::from_vector(
        std::vector<double>{0.1, 0.2, 0.7, 0.5, 0.3, 0.2, 0.1, 0.8, 0.1, 0.3, 0.4, 0.3},
        Shape{4, 3});
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{2, 1, 1, 0});
    nn::Accuracy accuracy;
    nn::TopKAccuracy top2(2);
    nn::MeanLoss mean_loss;
    accuracy.update(labels, logits);
    top2.update(labels, logits);
    CHECK(accuracy.get() == 0.5);
    // Label 1 in row 1 is second; label 0 in row 3 ties for second (0.3, 0.3): counted.
    CHECK(top2.get() == 1.0);
    accuracy.update(labels.slice(0, 1), logits.slice(0, 1));
    CHECK(accuracy.get() == doctest::Approx(3.0 / 5.0));
    CHECK(accuracy.count() == 5);
    mean_loss.update(nd::from_vector(std::vector<double>{1.0, 2.0}));
    mean_loss.update(nd::from_vector(std::vector<float>{6.0f}));
    CHECK(mean_loss.get() == 3.0);
    mean_loss.reset();
    check_error([&] { mean_loss.get(); }, {"loss", "no sample"});
    check_error([&] { accuracy.update(labels, logits.reshape({12})); },
                {"accuracy", "logits 12 float64"});
    check_error([&] { accuracy.update(labels.slice(0, 3), logits); },
                {"accuracy", "labels 3 int32", "logits 4x3"});
    check_error([] { nn::TopKAccuracy(0); }, {"TopKAccuracy", "k"});
  }

  TEST_CASE("metrics per device: updates on sim(0) and sim(1) add up") {
    if (device_count(DeviceKind::sim) < 2) return;
    const NDArray logits = nd::from_vector(std::vector<double>{1, 0, 0, 1}, Shape{2, 2});
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 0});
    nn::Accuracy accuracy;
    accuracy.update(labels.copyto(sim(0)), logits.copyto(sim(0)));
    accuracy.update(labels.copyto(sim(1)), logits.copyto(sim(1)));
    CHECK(accuracy.get() == 0.5);
    check_error([&] { accuracy.update(labels.copyto(sim(0)), logits); },
                {"accuracy", "sim(0)", "cpu(0)"});
  }

  TEST_CASE("metric updates and gradient clipping queue their work: nothing waits before get()") {
    auto engine = Engine::create(EngineConfig{.kind = EngineKind::threaded});
    {
      nd::EngineScope engine_scope(*engine);
      const NDArray logits =
          nd::from_vector(std::vector<float>{0.1f, 0.9f, 0.8f, 0.2f}, Shape{2, 2});
      const NDArray labels = nd::from_vector(std::vector<std::int32_t>{1, 1});
      NDArray a = nd::from_vector(std::vector<double>{3.0, 0.0});
      NDArray b = nd::from_vector(std::vector<double>{4.0});
      engine->wait_all();
      // The gate holds every input: an update or clip that waited would never get past it.
      Gate gate(*engine, {logits.var(), labels.var(), a.var(), b.var()});
      nn::Accuracy accuracy;
      nn::TopKAccuracy top1(1);
      nn::MeanLoss mean_loss;
      for (int i = 0; i < 3; ++i) {
        accuracy.update(labels, logits);
        top1.update(labels, logits);
        mean_loss.update(nd::softmax_cross_entropy(logits, labels));
      }
      const NDArray norm = nn::clip_global_norm({a, b}, 1.0);
      CHECK(engine->stats().ops_in_flight >= 20);
      gate.open();
      CHECK(accuracy.get() == 0.5);
      CHECK(top1.get() == 0.5);
      CHECK(std::isfinite(mean_loss.get()));
      CHECK(norm.scalar<double>() == 5.0);
      check_values(a, {0.6, 0.0});
      check_values(b, {0.8});
    }
    engine->wait_all();
  }

  TEST_CASE("clip_global_norm leaves small gradients alone and clips every copy of a parameter") {
    NDArray small = nd::from_vector(std::vector<float>{0.3f, 0.4f});
    CHECK(nn::clip_global_norm({small}, 1.0).scalar<double>() == doctest::Approx(0.5));
    check_values(small, {0.3f, 0.4f});
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) >= 2) devices = {sim(0), sim(1)};
    auto weight =
        std::make_shared<nn::Parameter>("w", Shape{2}, nn::ParameterOptions{.dtype = nd::float64});
    weight->initialize(nn::Zeros(), devices);
    nn::ParameterDict params;
    params.add(weight);
    for (const Device device : devices)
      weight->grad(device).assign(nd::from_vector(std::vector<double>{6.0, 8.0}, device));
    CHECK(nn::clip_global_norm(params, 2.0).scalar<double>() == 10.0);
    for (const Device device : devices) check_values(weight->grad(device), {1.2, 1.6});
    check_error([] { nn::clip_global_norm(std::vector<NDArray>{}, 1.0); },
                {"clip_global_norm", "no arrays"});
    check_error([&] { nn::clip_global_norm({small}, 0.0); }, {"clip_global_norm", "max_norm"});
    check_error([] { nn::clip_global_norm({nd::zeros({2}, nd::int32)}, 1.0); },
                {"clip_global_norm", "int32"});
    if (device_count(DeviceKind::sim) >= 1) {
      check_error(
          [&] {
            nn::clip_global_norm({small, small.copyto(sim(0))}, 1.0);
          },
          {"clip_global_norm", "cpu(0)", "sim(0)"});
    }
  }

  TEST_CASE("training resumed from save_states gives the bits of uninterrupted training") {
    ScratchDir dir;
    const NDArray x = nd::random::uniform({6, 8}, {.dtype = nd::float64, .generator = nullptr});
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 0, 1, 2});
    nd::random::seed(42);
    Subject straight(16, 7);
    for (int step = 0; step < 6; ++step) straight.step(x, labels);
    const std::vector<double> expected = straight.weights();

    nd::random::seed(42);
    std::vector<double> resumed;
    {
      Subject first(16, 7);
      for (int step = 0; step < 3; ++step) first.step(x, labels);
      first.net->save_parameters(dir.file("ckpt.params"));
      first.trainer->save_states(dir.file("ckpt.states"));
    }
    nd::random::seed(999);       // the fresh process's state differs
    nd::random::uniform({100});  // and has drawn other numbers
    Subject second(16, 1234);    // and other initial weights
    second.net->load_parameters(dir.file("ckpt.params"));
    second.trainer->load_states(dir.file("ckpt.states"));
    CHECK(second.trainer->steps() == 3);
    for (int step = 0; step < 3; ++step) second.step(x, labels);
    resumed = second.weights();
    CHECK(second.trainer->steps() == 6);
    REQUIRE(resumed.size() == expected.size());
    CHECK(resumed == expected);
  }

  TEST_CASE("loading a checkpoint saved before any update drops the optimizer state") {
    ScratchDir dir;
    const NDArray x = nd::ones({2, 8}, nd::float64);
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 1});
    Subject fresh(4, 1);
    fresh.net->save_parameters(dir.file("p"));
    fresh.trainer->save_states(dir.file("s"));  // no update yet: no Adam moments
    nd::random::seed(3);
    fresh.step(x, labels);
    const std::vector<double> expected = fresh.weights();
    Subject trained(4, 1);
    for (int step = 0; step < 3; ++step) trained.step(x, labels);  // moments of its own
    trained.net->load_parameters(dir.file("p"));
    trained.trainer->load_states(dir.file("s"));
    CHECK(trained.trainer->steps() == 0);
    nd::random::seed(3);
    trained.step(x, labels);
    CHECK(trained.weights() == expected);
  }

  TEST_CASE("load_states rejects another optimizer, another network and missing files") {
    ScratchDir dir;
    Subject subject(4, 1);
    subject.step(nd::ones({2, 8}, nd::float64), nd::from_vector(std::vector<std::int32_t>{0, 1}));
    subject.trainer->save_states(dir.file("s"));
    nn::Trainer sgd(subject.net->collect_params(), nn::SGD(0.1, 0.9));
    check_error([&] { sgd.load_states(dir.file("s")); }, {"load_states", "adam", "sgd"});
    Subject wider(5, 1);
    check_error([&] { wider.trainer->load_states(dir.file("s")); }, {"load_states", "5x8", "4x8"});
    check_error([&] { subject.trainer->load_states(dir.file("missing")); }, {"missing"});
  }

  // Not a test on its own: the checkpoint writer the next test starts as a child process (this
  // binary again, with kWriterEnv set) and kills while it writes.
  TEST_CASE("checkpoint writer (a child process of the kill-while-writing test)") {
    const char* path = std::getenv(kWriterEnv);
    if (path == nullptr) return;
    Subject subject(kWriterWidth, 3);
    const NDArray x = nd::ones({4, 8}, nd::float64);
    const NDArray labels = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 0});
    for (;;) {
      subject.step(x, labels);
      subject.trainer->save_states(path);
    }
  }

  TEST_CASE("a checkpoint writer killed while writing leaves the last checkpoint loadable") {
    ScratchDir dir;
    const std::string path = dir.file("ckpt.states");
    std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    int interrupted = 0;
    for (int round = 0; round < 4; ++round) {
      std::vector<std::string> env_strings;
      for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
      env_strings.push_back(std::string(kWriterEnv) + "=" + path);
      std::vector<char*> envp;
      for (std::string& s : env_strings) envp.push_back(s.data());
      envp.push_back(nullptr);
      std::string filter = "--test-case=checkpoint writer*";
      std::vector<char*> argv{self.data(), filter.data(), nullptr};
      pid_t child = 0;
      REQUIRE(posix_spawn(&child, self.c_str(), nullptr, nullptr, argv.data(), envp.data()) == 0);
      // Wait for a first complete checkpoint, then for the next one to be under way (its
      // temporary file exists between its creation and the rename), and kill the writer then.
      const auto start = std::chrono::steady_clock::now();
      const auto waited = [&] {
        return std::chrono::steady_clock::now() - start > std::chrono::seconds(60);
      };
      while (!std::filesystem::exists(path) && !waited()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      while (!has_temporary(path) && !waited()) {
      }
      ::kill(child, SIGKILL);
      int status = 0;
      ::waitpid(child, &status, 0);
      REQUIRE(std::filesystem::exists(path));
      if (has_temporary(path)) ++interrupted;
      Subject reader(kWriterWidth, 5);
      // A checkpoint has states only after an update: make them, then load over them.
      reader.step(nd::ones({4, 8}, nd::float64),
                  nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 0}));
      reader.trainer->load_states(path);
      CHECK(reader.trainer->steps() >= 1);
      std::filesystem::remove_all(std::filesystem::path(path).parent_path());
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    }
    MESSAGE(interrupted << " of 4 kills left a partial temporary file behind");
    CHECK(interrupted >= 1);  // at least one kill landed in the middle of a write
  }
}

}  // namespace tandem::testing
