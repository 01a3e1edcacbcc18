// Model and pipeline parallelism (tandem/nn/pipeline.h, tandem/nn/pipeline_schedule.h): the
// schedules' orders, training on two devices against one device, and the errors at the call.
//
// The comparisons run in float64. Model parallel performs the very ops of one device, only on
// other devices, whose kernels are the CPU's (sim): the losses and parameters are equal bit for
// bit. Pipeline parallel sums each weight gradient over the micro-batches one after the other
// instead of inside one product, a different order of the same sum: equal up to rounding
// (relative 1e-12 after the steps below), and bit for bit with a single micro-batch.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend_test_util.h"
#include "null_backend.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nn/nn.h"
#include "tandem/ops/kernels.h"
#include "test_devices.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;
using Pass = nn::PipelineTask::Pass;

// null(0), a device of a third accelerator kind with no copy path from sim: registered before
// the first accelerator use, as the null backend asks.
[[maybe_unused]] const bool null_backend_registered = [] {
  const DeviceKind kind = tandem_test::register_null_backend();
  ops::register_kernels(kind, ops::host_stream_kernels());
  return true;
}();

// --- schedules ---------------------------------------------------------------------------------

// Checks that `order` holds every task once, each after the tasks it depends on, and that each
// stage's tasks come in stage_order's sequence.
void check_order(nn::PipelineSchedule schedule, int stages, int micro_batches) {
  CAPTURE(nn::schedule_name(schedule));
  CAPTURE(stages);
  CAPTURE(micro_batches);
  const std::vector<nn::PipelineTask> order = nn::pipeline_order(schedule, stages, micro_batches);
  REQUIRE(order.size() == static_cast<std::size_t>(2 * stages * micro_batches));
  std::map<std::tuple<int, int, int>, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto key =
        std::make_tuple(static_cast<int>(order[i].pass), order[i].stage, order[i].micro_batch);
    CHECK(position.emplace(key, i).second);
  }
  const auto at = [&](Pass pass, int stage, int k) {
    return position.at(std::make_tuple(static_cast<int>(pass), stage, k));
  };
  for (int s = 0; s < stages; ++s) {
    for (int k = 0; k < micro_batches; ++k) {
      if (s > 0) CHECK(at(Pass::forward, s - 1, k) < at(Pass::forward, s, k));
      if (s + 1 < stages) CHECK(at(Pass::backward, s + 1, k) < at(Pass::backward, s, k));
      CHECK(at(Pass::forward, s, k) < at(Pass::backward, s, k));
    }
    std::vector<nn::PipelineTask> own;
    for (const nn::PipelineTask& task : order) {
      if (task.stage == s) own.push_back(task);
    }
    CHECK(own == nn::stage_order(schedule, s, stages, micro_batches));
  }
}

// The most micro-batches whose forward stage `stage` has run but not yet their backward: how
// many micro-batches' activations it holds at once.
int most_in_flight(nn::PipelineSchedule schedule, int stage, int stages, int micro_batches) {
  int in_flight = 0, most = 0;
  for (const nn::PipelineTask& task : nn::stage_order(schedule, stage, stages, micro_batches)) {
    in_flight += task.pass == Pass::forward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

// --- training ----------------------------------------------------------------------------------

constexpr std::int64_t kFeatures = 20;
constexpr std::int64_t kClasses = 5;
constexpr std::int64_t kBatch = 12;
constexpr int kSteps = 4;

nn::DenseOptions float64_from(std::int64_t in_units) {
  return {.in_units = in_units, .dtype = nd::float64};
}

// The two halves of a float64 MLP 20 -> 16 (tanh) -> 12 (relu) -> 5.
std::shared_ptr<nn::Sequential> first_half() {
  auto half = std::make_shared<nn::Sequential>();
  half->add(nn::Dense(16, nn::tanh, float64_from(kFeatures)));
  return half;
}
std::shared_ptr<nn::Sequential> second_half() {
  auto half = std::make_shared<nn::Sequential>();
  half->add(nn::Dense(12, nn::relu, float64_from(16)))
      .add(nn::Dense(kClasses, nn::ActivationType::none, float64_from(12)));
  return half;
}

struct Data {
  NDArray images;  // (steps, batch, features) float64
  NDArray labels;  // (steps, batch) int32
};

Data make_data() {
  nd::random::seed(23);
  return {nd::random::uniform({kSteps, kBatch, kFeatures}).astype(nd::float64),
          nd::random::uniform(0, kClasses, {kSteps, kBatch}).astype(nd::int32)};
}

// The parameters every run starts from, in collect_params order (the same for a Sequential of
// the two halves and a Pipeline of them).
std::vector<NDArray> initial_values() {
  nn::Sequential net;
  net.add(first_half()).add(second_half());
  net.initialize(nn::Xavier(nn::Xavier::Distribution::uniform, nn::Xavier::Factor::avg, 3.0, 5));
  std::vector<NDArray> values;
  for (const auto& entry : net.collect_params()) values.push_back(entry.second->data());
  return values;
}

struct Run {
  std::vector<double> losses;
  std::vector<std::vector<double>> parameters;
};

void load(const nn::ParameterDict& params, const std::vector<NDArray>& values) {
  REQUIRE(params.size() == values.size());
  std::size_t i = 0;
  for (const auto& entry : params) entry.second->set_data(values[i++]);
}

Run result_of(const nn::ParameterDict& params, std::vector<NDArray> losses) {
  Run run;
  for (const NDArray& loss : losses) run.losses.push_back(loss.scalar());
  for (const auto& entry : params) {
    run.parameters.push_back(entry.second->data().to_vector<double>());
  }
  return run;
}

nn::SGD optimizer() {
  return nn::SGD(0.2, 0.9);
}

// One device: the reference.
Run train_one_device(Device device) {
  const Data data = make_data();
  nn::Sequential net;
  net.add(first_half()).add(second_half());
  net.initialize(nn::Zeros(), {device});
  load(net.collect_params(), initial_values());
  nn::Trainer trainer(net.collect_params(), optimizer());
  std::vector<NDArray> losses;
  for (std::int64_t step = 0; step < kSteps; ++step) {
    NDArray loss;
    {
      auto recording = autograd::record();
      const NDArray logits = net(data.images[step].as_in_context(device));
      loss = nd::softmax_cross_entropy(logits, data.labels[step].as_in_context(device)).sum();
    }
    loss.backward();
    trainer.step(kBatch);
    losses.push_back(loss);
  }
  return result_of(net.collect_params(), losses);
}

nn::Pipeline two_stages(Device first, Device second) {
  nn::Pipeline net;
  net.add_stage(first_half(), first).add_stage(second_half(), second);
  net.initialize(nn::Zeros());
  load(net.collect_params(), initial_values());
  return net;
}

// Model parallel: the whole batch through both stages, one backward.
Run train_model_parallel(Device first, Device second) {
  const Data data = make_data();
  nn::Pipeline net = two_stages(first, second);
  nn::Trainer trainer(net.collect_params(), optimizer());
  std::vector<NDArray> losses;
  for (std::int64_t step = 0; step < kSteps; ++step) {
    NDArray loss;
    {
      auto recording = autograd::record();
      const NDArray logits = net(data.images[step]);
      CHECK(logits.device() == second);
      loss = nd::softmax_cross_entropy(logits, data.labels[step].as_in_context(second)).sum();
    }
    loss.backward();
    trainer.step(kBatch);
    losses.push_back(loss);
  }
  return result_of(net.collect_params(), losses);
}

Run train_pipeline(Device first, Device second, std::int64_t split_size,
                   nn::PipelineSchedule schedule) {
  const Data data = make_data();
  nn::Pipeline net = two_stages(first, second);
  nn::Trainer trainer(net.collect_params(), optimizer());
  std::vector<NDArray> losses;
  for (std::int64_t step = 0; step < kSteps; ++step) {
    const NDArray loss =
        net.forward_backward(data.images[step], data.labels[step], nn::softmax_cross_entropy_loss,
                             {.split_size = split_size, .schedule = schedule});
    CHECK(loss.device() == second);
    trainer.step(kBatch);
    losses.push_back(loss);
  }
  return result_of(net.collect_params(), losses);
}

// Equal within `relative` (0: bit for bit).
void check_same(const std::vector<double>& actual, const std::vector<double>& expected,
                double relative) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (relative == 0) {
      CHECK(actual[i] == expected[i]);
    } else {
      CHECK(std::abs(actual[i] - expected[i]) <= relative * std::max(1.0, std::abs(expected[i])));
    }
  }
}

void check_same(const Run& actual, const Run& expected, double relative) {
  check_same(actual.losses, expected.losses, relative);
  REQUIRE(actual.parameters.size() == expected.parameters.size());
  for (std::size_t i = 0; i < actual.parameters.size(); ++i) {
    check_same(actual.parameters[i], expected.parameters[i], relative);
  }
}

// The device pairs whose edges the tests cross: sim/sim, cpu/sim, sim/cpu (and cuda/cuda when
// two GPUs exist).
std::vector<std::pair<Device, Device>> device_pairs() {
  std::vector<std::pair<Device, Device>> pairs;
  const int sims = device_count(DeviceKind::sim);
  if (sims >= 2) pairs.emplace_back(sim(0), sim(1));
  if (sims >= 1) {
    pairs.emplace_back(cpu(), sim(0));
    pairs.emplace_back(sim(0), cpu());
  }
  if (device_count(DeviceKind::cuda) >= 2) {
    pairs.emplace_back(cuda(0), cuda(1));
  } else {
    MESSAGE("SKIPPED cuda(0)/cuda(1): fewer than two CUDA devices");
  }
  return pairs;
}

// Bit for bit where both devices run the CPU's kernels; GPU reductions sum in another order.
double exact_or(Device a, Device b, double relative) {
  return runs_cpu_kernels(a) && runs_cpu_kernels(b) ? 0.0 : relative;
}

}  // namespace

TEST_SUITE("frontend.pipeline_schedule") {
  TEST_CASE("gpipe runs every forward, then the backwards, each stage as soon as it can") {
    const std::vector<nn::PipelineTask> expected{
        {Pass::forward, 0, 0},  {Pass::forward, 0, 1},  {Pass::forward, 1, 0},
        {Pass::forward, 0, 2},  {Pass::forward, 1, 1},  {Pass::forward, 1, 2},
        {Pass::backward, 1, 2}, {Pass::backward, 0, 2}, {Pass::backward, 1, 1},
        {Pass::backward, 0, 1}, {Pass::backward, 1, 0}, {Pass::backward, 0, 0}};
    const std::vector<nn::PipelineTask> order =
        nn::pipeline_order(nn::PipelineSchedule::gpipe, 2, 3);
    REQUIRE(order.size() == expected.size());
    for (std::size_t i = 0; i < order.size(); ++i) {
      CAPTURE(i);
      CHECK(order[i].to_string() == expected[i].to_string());
    }
  }

  TEST_CASE("1F1B alternates forward and backward once the stages after it are full") {
    const auto last = nn::stage_order(nn::PipelineSchedule::one_forward_one_backward, 1, 2, 3);
    const std::vector<nn::PipelineTask> last_expected{
        {Pass::forward, 1, 0},  {Pass::backward, 1, 0}, {Pass::forward, 1, 1},
        {Pass::backward, 1, 1}, {Pass::forward, 1, 2},  {Pass::backward, 1, 2}};
    CHECK(last == last_expected);
    const auto first = nn::stage_order(nn::PipelineSchedule::one_forward_one_backward, 0, 2, 3);
    const std::vector<nn::PipelineTask> first_expected{
        {Pass::forward, 0, 0}, {Pass::forward, 0, 1},  {Pass::backward, 0, 0},
        {Pass::forward, 0, 2}, {Pass::backward, 0, 1}, {Pass::backward, 0, 2}};
    CHECK(first == first_expected);
  }

  TEST_CASE("every order keeps the dependencies and each stage's sequence") {
    for (const auto schedule :
         {nn::PipelineSchedule::gpipe, nn::PipelineSchedule::one_forward_one_backward}) {
      for (int stages = 1; stages <= 4; ++stages) {
        for (int micro_batches = 1; micro_batches <= 7; ++micro_batches) {
          check_order(schedule, stages, micro_batches);
        }
      }
    }
  }

  TEST_CASE("1F1B holds at most (stages - stage) micro-batches per stage, gpipe all of them") {
    for (int stage = 0; stage < 4; ++stage) {
      CHECK(most_in_flight(nn::PipelineSchedule::one_forward_one_backward, stage, 4, 8) ==
            4 - stage);
      CHECK(most_in_flight(nn::PipelineSchedule::gpipe, stage, 4, 8) == 8);
    }
  }

  TEST_CASE("an order of no stages or no micro-batches is an error") {
    CHECK(error_of([] {
            nn::pipeline_order(nn::PipelineSchedule::gpipe, 0, 4);
          }).find("at least one stage and one micro-batch") != std::string::npos);
    CHECK(error_of([] {
            nn::pipeline_order(nn::PipelineSchedule::gpipe, 2, 0);
          }).find("0 micro-batch") != std::string::npos);
    CHECK(error_of([] {
            nn::stage_order(nn::PipelineSchedule::gpipe, 2, 2, 4);
          }).find("stage 2 of a pipeline of 2") != std::string::npos);
  }
}

TEST_SUITE("frontend.model_parallel") {
  TEST_CASE("model parallel gives one device's losses and parameters on every device pair") {
    const Run reference = train_one_device(cpu());
    for (const auto& [first, second] : device_pairs()) {
      CAPTURE(to_string(first));
      CAPTURE(to_string(second));
      check_same(train_model_parallel(first, second), reference, exact_or(first, second, 1e-9));
    }
  }

  TEST_CASE("the stages' outputs and input gradients cross both ways") {
    if (device_count(DeviceKind::sim) < 1) {
      MESSAGE("SKIPPED: no sim device");
      return;
    }
    for (const auto& [first, second] : device_pairs()) {
      CAPTURE(to_string(first));
      CAPTURE(to_string(second));
      nn::Pipeline net = two_stages(first, second);
      NDArray x = make_data().images[0].copyto(first);
      x.attach_grad();
      NDArray out;
      {
        auto recording = autograd::record();
        out = net(x);
      }
      CHECK(out.device() == second);
      out.backward(nd::ones_like(out.detach()));
      // The same gradient on the cpu, with the same parameters.
      nn::Sequential reference;
      reference.add(first_half()).add(second_half());
      reference.initialize(nn::Zeros());
      load(reference.collect_params(), initial_values());
      NDArray x_cpu = x.detach().copyto(cpu());
      x_cpu.attach_grad();
      NDArray out_cpu;
      {
        auto recording = autograd::record();
        out_cpu = reference(x_cpu);
      }
      out_cpu.backward(nd::ones_like(out_cpu.detach()));
      CHECK(x.grad().device() == first);
      check_same(out.to_vector<double>(), out_cpu.to_vector<double>(),
                 exact_or(first, second, 1e-9));
      check_same(x.grad().to_vector<double>(), x_cpu.grad().to_vector<double>(),
                 exact_or(first, second, 1e-9));
    }
  }

  TEST_CASE("a pipeline's stages are named by position and initialized on their devices") {
    if (device_count(DeviceKind::sim) < 2) {
      MESSAGE("SKIPPED: fewer than two sim devices");
      return;
    }
    nn::Pipeline net = two_stages(sim(0), sim(1));
    CHECK(net.stages() == 2);
    CHECK(net.stage_device(1) == sim(1));
    const nn::ParameterDict params = net.collect_params();
    CHECK(params["0.0.weight"].devices() == std::vector<Device>{sim(0)});
    CHECK(params["1.1.bias"].devices() == std::vector<Device>{sim(1)});
    CHECK(error_of([&] { net.stage_device(2); }).find("no stage 2 (it has 2)") !=
          std::string::npos);
  }
}

TEST_SUITE("frontend.pipeline") {
  TEST_CASE("pipeline parallel gives one device's losses and parameters on every device pair") {
    const Run reference = train_one_device(cpu());
    for (const auto& [first, second] : device_pairs()) {
      for (const auto schedule :
           {nn::PipelineSchedule::gpipe, nn::PipelineSchedule::one_forward_one_backward}) {
        // 5 does not divide 12: the last micro-batch has 2 rows.
        for (const std::int64_t split : {1, 4, 5}) {
          CAPTURE(to_string(first));
          CAPTURE(to_string(second));
          CAPTURE(nn::schedule_name(schedule));
          CAPTURE(split);
          check_same(train_pipeline(first, second, split, schedule), reference, 1e-12);
        }
      }
    }
  }

  TEST_CASE("one micro-batch of the whole batch is the model-parallel step bit for bit") {
    for (const auto& [first, second] : device_pairs()) {
      CAPTURE(to_string(first));
      CAPTURE(to_string(second));
      check_same(train_pipeline(first, second, kBatch, nn::PipelineSchedule::gpipe),
                 train_model_parallel(first, second), exact_or(first, second, 1e-9));
    }
  }

  TEST_CASE("both stages may share a device") {
    const Run reference = train_one_device(cpu());
    check_same(train_pipeline(cpu(), cpu(), 3, nn::PipelineSchedule::one_forward_one_backward),
               reference, 1e-12);
  }

  TEST_CASE("bad input is refused at the call, naming what was wrong") {
    const Data data = make_data();
    nn::Pipeline net = two_stages(cpu(), cpu());
    const NDArray x = data.images[0], y = data.labels[0];
    const auto& loss = nn::softmax_cross_entropy_loss;
    CHECK(error_of([&] {
            net.forward_backward(x, y, loss, {.split_size = 0});
          }).find("split_size must be >= 1 (rows per micro-batch), got 0") != std::string::npos);
    CHECK(error_of([&] {
            net.forward_backward(x, y, loss, {.split_size = 13});
          }).find("split_size 13 is larger than the batch (12 rows)") != std::string::npos);
    CHECK(error_of([&] {
            net.forward_backward(x, y.slice(0, 6), loss, {.split_size = 2});
          }).find("the data has 12 rows (shape 12x20) but the labels have 6") != std::string::npos);
    CHECK(error_of([&] {
            net.forward_backward(x, y, nullptr, {.split_size = 2});
          }).find("a null loss function") != std::string::npos);
    CHECK(error_of([&] {
            auto recording = autograd::record();
            net.forward_backward(x, y, loss, {.split_size = 2});
          }).find("call it outside the record scope") != std::string::npos);
    nn::Pipeline empty;
    CHECK(error_of([&] {
            empty.forward_backward(x, y, loss, {.split_size = 2});
          }).find("the pipeline has no stages") != std::string::npos);
    CHECK(error_of([&] { empty.forward(x); }).find("the pipeline has no stages") !=
          std::string::npos);
  }

  TEST_CASE(
      "a stage on a missing device, or on one with no copy path from the previous stage, "
      "is refused") {
    nn::Pipeline net;
    CHECK(error_of([&] {
            net.add_stage(first_half(), sim(63));
          }).find("Pipeline::add_stage (stage 0): device sim(63) is not available") !=
          std::string::npos);
    CHECK(error_of([&] { net.add_stage(nullptr, cpu()); }).find("stage 0 is a null block") !=
          std::string::npos);
    if (device_count(DeviceKind::sim) < 1) {
      MESSAGE("SKIPPED: no sim device");
      return;
    }
    net.add_stage(first_half(), sim(0));
    const std::string message =
        error_of([&] { net.add_stage(second_half(), tandem_test::null_device(0)); });
    CHECK(message.find("Pipeline::add_stage (stage 1 after a stage on sim(0)): no copy path from "
                       "sim(0) to null(0)") != std::string::npos);
    CHECK(net.stages() == 1);  // nothing was added

    const NDArray on_null =
        nd::zeros({kBatch, kFeatures}, nd::float64, tandem_test::null_device(0));
    const NDArray labels = nd::zeros({kBatch}, nd::int32);
    CHECK(error_of([&] {
            net.forward_backward(on_null, labels, nn::softmax_cross_entropy_loss,
                                 {.split_size = 4});
          })
              .find("Pipeline::forward_backward (the data to stage 0): no copy path from null(0) "
                    "to sim(0)") != std::string::npos);
  }
}

}  // namespace tandem::testing
