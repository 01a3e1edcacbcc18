// What one LeNet-BN training step costs on sim(0), pinned (issue 22, item 8): the ops it
// queues, the kernel launches and library calls they make (sim counts what the CUDA kernels
// would launch), the device graphs a replayed nn::TrainingStep enters, and no device allocation
// in a steady step. A change that adds an op, a launch or an allocation to the step fails here,
// on a machine without a GPU; one that removes some updates the numbers (and
// docs/measuring-overlap.md, "One training epoch on a GPU", which explains them).
#include <map>
#include <string>

#include "frontend_test_util.h"
#include "models.h"
#include "tandem/accel/accelerator.h"
#include "tandem/nn/nn.h"
#include "tandem/profiler.h"

namespace tandem::testing {

namespace {

namespace nn = tandem::nn;

// bench_gpu's lenet_bn (examples/train_lenet's default model) on 8x8 images with one channel:
// two (conv 3x3 + batch norm + relu + 2x2 max pool) blocks of 16 and 32 channels, a dense head.
std::shared_ptr<nn::Block> lenet_bn() {
  nd::random::seed(3);
  std::shared_ptr<nn::Block> net = examples::make_model("lenet_bn");
  net->initialize(nn::Xavier(), {sim(0)});
  return net;
}

nd::NDArray summed_cross_entropy(const nd::NDArray& output, const nd::NDArray& label) {
  return nd::sum(nd::softmax_cross_entropy(output, label));
}

struct StepCounts {
  double ops = 0;                     // ops run per step (frees of arrays, delete_var, not counted)
  double launches = 0;                // kernel launches + library calls per step
  double device_graphs = 0;           // device graph units per step (replayed steps)
  std::uint64_t allocations = 0;      // device allocations in all the profiled steps
  std::map<std::string, int> per_op;  // ops of each name in all the profiled steps
};

constexpr int kProfiledSteps = 3;

// How the profiled steps run: eager (record, backward, Trainer::step), the same with the
// network hybridized (with the eager error rule, or failing as one unit), or as one replayed
// TrainingStep.
enum class StepMode { eager, hybridized, hybridized_one_unit, replayed };

// Profiles kProfiledSteps steps of batch 64 (after warm-up steps), each waited for.
StepCounts profile_steps(StepMode mode) {
  const bool replayed = mode == StepMode::replayed;
  auto net = lenet_bn();
  if (mode == StepMode::hybridized) net->hybridize();
  if (mode == StepMode::hybridized_one_unit) net->hybridize(true, {.fail_as_one_unit = true});
  nn::Trainer trainer(net->collect_params(), nn::SGD(0.1));
  nn::TrainingStep whole(*net, trainer, summed_cross_entropy);
  const NDArray x = nd::random::uniform({64, 1, 8, 8}, sim(0));
  const NDArray labels = nd::random::uniform(0, 10, {64}, sim(0)).astype(nd::int32);
  const auto step = [&] {
    if (replayed) {
      (void)whole(x, labels, 64);
      return;
    }
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = summed_cross_entropy((*net)(x), labels);
    }
    loss.backward();
    trainer.step(64);
  };
  for (int i = 0; i < 8; ++i) {  // shapes, optimizer state, the recording, the pools
    step();
    nd::waitall();
  }
  MemoryPool& pool = accelerator(sim(0)).device_pool();
  const std::uint64_t before = pool.stats().raw_allocations;
  profiler::clear();
  profiler::start();
  for (int i = 0; i < kProfiledSteps; ++i) {
    step();
    nd::waitall();
  }
  profiler::stop();
  if (replayed) CHECK(whole.last_call_replayed());
  if (net->hybridized()) CHECK(net->hybrid_cache()->last_call_replayed());
  StepCounts counts;
  counts.allocations = pool.stats().raw_allocations - before;
  for (const profiler::OpEvent& e : profiler::events()) {
    counts.allocations += e.counts.allocations;
    if (e.name == "delete_var") continue;
    ++counts.per_op[e.name];
    counts.ops += 1.0 / kProfiledSteps;
    counts.launches += double(e.counts.kernels + e.counts.library_calls) / kProfiledSteps;
    if (e.name == "device graph") counts.device_graphs += 1.0 / kProfiledSteps;
  }
  return counts;
}

std::string describe(const StepCounts& counts) {
  std::string text;
  for (const auto& [name, count] : counts.per_op) text += name + " " + std::to_string(count) + ", ";
  return text;
}

}  // namespace

TEST_SUITE("frontend.step_counts") {
  TEST_CASE("an eager LeNet-BN step on sim(0): 26 ops, 44 launches, no allocation") {
    if (device_count(DeviceKind::sim) == 0) return;
    const StepCounts counts = profile_steps(StepMode::eager);
    CAPTURE(describe(counts));
    // Forward 11 (2 x conv2d, batch_norm, relu, max_pool2d; linear (the dense layer's product
    // and bias), softmax_cross_entropy, sum), backward 14 (the head's ones_like,
    // softmax_cross_entropy_backward, the dense layer's two dots and bias sum, 2 x
    // max_pool2d_backward, relu_backward, batch_norm_backward, conv2d_backward_weight_bias (the
    // weight's and the bias's gradients in one op), one conv2d_backward_data), one multi_sgd_update
    // for the 10 parameters (one launch: they fit one table of ops/src/common/update_group_plan.h).
    // No assign into a gradient buffer: every parameter's gradient is formed in its buffer.
    CHECK(counts.ops == doctest::Approx(26));
    CHECK(counts.per_op.at("linear") == kProfiledSteps);
    CHECK(counts.per_op.count("add") == 0);
    CHECK(counts.per_op.count("assign") == 0);
    CHECK(counts.per_op.at("multi_sgd_update") == kProfiledSteps);
    CHECK(counts.per_op.count("sgd_update") == 0);
    CHECK(counts.per_op.at("conv2d_backward_weight_bias") == 2 * kProfiledSteps);
    CHECK(counts.per_op.at("sum") == 2 * kProfiledSteps);  // the loss, the dense bias
    CHECK(counts.launches == doctest::Approx(44));
    CHECK(counts.allocations == 0);
  }

  TEST_CASE("a replayed LeNet-BN TrainingStep on sim(0): 1 device graph, 3 units, no allocation") {
    if (device_count(DeviceKind::sim) == 0) return;
    const StepCounts counts = profile_steps(StepMode::replayed);
    CAPTURE(describe(counts));
    // A TrainingStep's window fails as one unit (CaptureOptions::fail_as_one_unit), so its
    // device graph may join any consecutive sim(0) compute ops: the step has no host op and no
    // async or no_skip op, so forward, loss, backward and the multi_sgd_update are one device
    // graph (docs/measuring-overlap.md). The 3 units: that graph and the copies of x and the
    // labels into the step's static inputs, pushed by the call before the replay.
    CHECK(counts.device_graphs == doctest::Approx(1));
    CHECK(counts.ops == doctest::Approx(3));
    CHECK(counts.per_op.at("copyto") == 2 * kProfiledSteps);
    // Launches counted by the ops' launch wrappers: the two copies' kernels. The graph's launch
    // functions ran once, when it was recorded; had the capture failed (a launch function
    // that waits or records), they would run at every replay and count the step's 42 here.
    CHECK(counts.launches == doctest::Approx(2));
    CHECK(counts.allocations == 0);
  }

  TEST_CASE("a hybridized LeNet-BN step on sim(0): 2 device graphs among 24 units") {
    if (device_count(DeviceKind::sim) == 0) return;
    const StepCounts counts = profile_steps(StepMode::hybridized);
    CAPTURE(describe(counts));
    // The eager error rule lets a device graph hold only a chain whose intermediates nothing
    // else reads; the forward saves its intermediates for the backward, so most of the net's
    // ops are entered one by one (conv2d, batch_norm, relu, max_pool2d, linear, the backward's
    // convolution and dense gradients): 2 short graphs and 22 other ops, 38 launches outside
    // the graphs.
    CHECK(counts.device_graphs == doctest::Approx(2));
    CHECK(counts.ops == doctest::Approx(24));
    CHECK(counts.launches == doctest::Approx(38));
    CHECK(counts.allocations == 0);
  }

  TEST_CASE("a LeNet-BN step hybridized to fail as one unit on sim(0): 2 device graphs, 9 units") {
    if (device_count(DeviceKind::sim) == 0) return;
    const StepCounts counts = profile_steps(StepMode::hybridized_one_unit);
    CAPTURE(describe(counts));
    // The net's forward and its backward are a device graph each; outside them: the copy of x
    // into the static input, the loss (softmax_cross_entropy, sum) and its head gradient
    // (ones_like, softmax_cross_entropy_backward), the copy of that gradient into the static
    // head gradient, the multi_sgd_update.
    CHECK(counts.device_graphs == doctest::Approx(2));
    CHECK(counts.ops == doctest::Approx(9));
    // Launches outside the graphs: one per op but the sum's two (a kernel and a CUB call).
    CHECK(counts.launches == doctest::Approx(8));
    CHECK(counts.allocations == 0);
  }
}

}  // namespace tandem::testing
