// Fault injection (issue 27, item 2; tandem/detail/fault_injection.h): each of tandem's failure
// points made to fail, one event at a time, in a small training program on cpu and sim(0). Every
// injected failure must come out as a tandem::Error naming what failed, the engine must go on
// (the same program then gives the clean result), no var may leak and no waiter may hang (a
// watchdog ends the process). And a training loop that checkpoints and restores on failure ends
// with the weights of a run without failures, bit for bit.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "frontend_test_util.h"
#include "scratch_dir.h"
#include "tandem/detail/fault_injection.h"
#include "tandem/nd/autograd.h"
#include "tandem/nd/network.h"
#include "tandem/nd/reduce.h"
#include "tandem/nn/nn.h"

namespace tandem::testing {
namespace {

namespace nn = tandem::nn;

// Ends the process when a test case takes longer than `limit`: a waiter that hangs after an
// injected failure fails the test instead of stalling CI until ctest's timeout.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          std::unique_lock lock(mutex_);
          if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "fault injection test: still running after %llds: a hang\n",
                         static_cast<long long>(limit.count()));
            std::_Exit(3);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

bool have_sim() {
  if (device_count(DeviceKind::sim) > 0) return true;
  MESSAGE("SKIPPED on sim: no sim device configured");
  return false;
}

std::shared_ptr<nn::Sequential> make_mlp(Device device) {
  nd::random::seed(21);
  auto net = std::make_shared<nn::Sequential>();
  net->add(nn::Dense(32, nn::ActivationType::relu, {.in_units = 16}))
      .add(nn::Dense(4, nn::ActivationType::none, {.in_units = 32}));
  net->initialize(nn::Xavier(), {device});
  return net;
}

struct Batch {
  nd::NDArray data, label;
};

// The same batch for a step number, whatever ran before.
Batch batch_for(Device device, long step) {
  nd::random::Generator generator(static_cast<std::uint64_t>(100 + step));
  return {nd::random::uniform({8, 16}, {.device = device, .generator = &generator}),
          nd::random::uniform({8}, {.high = 4, .device = device, .generator = &generator})
              .astype(nd::int32)};
}

// One training step; waits for it, so that its failures are reported here.
void train_step(nn::Sequential& net, nn::Trainer& trainer, Device device) {
  const Batch batch = batch_for(device, trainer.steps());
  nd::NDArray loss;
  {
    auto recording = autograd::record();
    loss = nd::mean(nd::softmax_cross_entropy(net(batch.data), batch.label));
  }
  loss.backward();
  trainer.step(8);
  nd::waitall();
}

std::vector<double> weights_of(const nn::Sequential& net) {
  std::vector<double> weights;
  for (const auto& [name, parameter] : net.collect_params()) {
    for (const double v : parameter->data().to_vector<double>()) weights.push_back(v);
  }
  return weights;
}

struct Outcome {
  std::vector<double> weights;
  std::string error;  // empty when it ran through
};

// A small program: an MLP made, two training steps, its weights read.
Outcome run_program(Device device) {
  Outcome outcome;
  try {
    auto net = make_mlp(device);
    nn::Trainer trainer(net->collect_params(), nn::SGD(0.1, 0.9));
    for (int step = 0; step < 2; ++step) train_step(*net, trainer, device);
    outcome.weights = weights_of(*net);
  } catch (const Error& e) {
    outcome.error = e.what();
  }
  try {
    nd::waitall();  // an error not seen yet (an op whose output nothing read) comes out here
  } catch (const Error& e) {
    if (outcome.error.empty()) outcome.error = e.what();
  }
  return outcome;
}

// What a failure of each kind must say besides "injected fault".
std::vector<std::string> expected_in_message(FaultKind kind, Device device) {
  switch (kind) {
    case FaultKind::host_allocation:
      return {"out of memory on cpu(0)", "bytes"};
    case FaultKind::device_allocation:
      return {"out of memory on " + to_string(device), "bytes"};
    case FaultKind::sim_launch:
    case FaultKind::sim_kernel:
    case FaultKind::cuda_call:
      return {to_string(device)};
    default:
      return {};
  }
}

// Fails the kind's k-th event for every k the program reaches, each time on a fresh engine:
// the failure is an error naming it, the same engine then runs the program cleanly, and as many
// vars are alive at the end as after two clean runs.
void sweep(FaultKind kind, Device device) {
  const std::string kind_name = fault_kind_name(kind);
  CAPTURE(kind_name);
  CAPTURE(to_string(device));

  // The clean program, counting the kind's events.
  std::vector<double> reference;
  std::uint64_t events = 0;
  std::uint64_t reference_vars = 0;
  {
    auto engine = Engine::create(EngineConfig{});
    {
      nd::EngineScope scope(*engine);
      {
        FaultScope counting({{.kind = kind}});
        const Outcome clean = run_program(device);
        REQUIRE_MESSAGE(clean.error.empty(), clean.error);
        reference = clean.weights;
        events = fault_events(kind);
      }
      CHECK(run_program(device).weights == reference);
    }
    engine->wait_all();
    reference_vars = engine->stats().vars_alive;
  }
  MESSAGE(kind_name << " on " << to_string(device) << ": " << events << " events in the program");
  REQUIRE(events > 0);

  std::string first_message;
  int errors = 0;
  for (std::uint64_t nth = 1; nth <= events; ++nth) {
    CAPTURE(nth);
    auto engine = Engine::create(EngineConfig{});
    {
      nd::EngineScope scope(*engine);
      Outcome faulted;
      std::uint64_t injected = 0;
      {
        FaultScope faults({{.kind = kind, .nth = nth}});
        faulted = run_program(device);
        injected = faults_injected(kind);
      }
      if (injected > 0 && !faulted.error.empty() && first_message.empty()) {
        first_message = faulted.error;
        MESSAGE("e.g. " << first_message);
      }
      if (injected > 0) {
        // A failure of a free-standing allocation may be recovered (a device block that
        // creation could not get is allocated again by the op): then the result is right.
        if (faulted.error.empty()) {
          CHECK(faulted.weights == reference);
        } else {
          ++errors;
          INFO(faulted.error);
          CHECK(contains(faulted.error, "injected fault: " + std::string(fault_kind_name(kind))));
          for (const std::string& part : expected_in_message(kind, device)) {
            CHECK_MESSAGE(contains(faulted.error, part), "missing \"" << part << "\"");
          }
        }
      } else {
        CHECK_MESSAGE(faulted.error.empty(), faulted.error);
        CHECK(faulted.weights == reference);
      }
      // The engine goes on: the same program on the same engine gives the clean result.
      const Outcome after = run_program(device);
      CHECK_MESSAGE(after.error.empty(), after.error);
      CHECK(after.weights == reference);
    }
    engine->wait_all();
    CHECK(engine->stats().vars_alive == reference_vars);  // nothing leaked
  }
  MESSAGE(errors << " of the " << events << " failures came out as errors, the others were "
                 << "recovered from (the right result)");
  CHECK(errors > 0);
}

// Training that checkpoints every 3 steps and, when a step, a checkpoint or a restore fails,
// restores the last whole checkpoint (both files written) and goes on from there. Stops with a
// tandem::Error after `max_failures` failures in a row.
std::vector<double> train_with_checkpoints(Device device, const std::string& directory, long steps,
                                           int max_failures, int* failures_seen) {
  const auto parameters = [&](long step) {
    return directory + "/" + std::to_string(step) + ".params";
  };
  const auto states = [&](long step) { return directory + "/" + std::to_string(step) + ".states"; };
  std::shared_ptr<nn::Sequential> net;
  std::unique_ptr<nn::Trainer> trainer;
  const auto start_over = [&] {
    net = make_mlp(device);
    trainer = std::make_unique<nn::Trainer>(net->collect_params(), nn::SGD(0.1, 0.9));
  };
  long checkpoint = -1;  // the step of the last whole checkpoint
  bool restore = false;
  int in_a_row = 0;
  start_over();
  std::vector<double> weights;
  for (;;) {
    try {
      if (restore) {
        if (checkpoint < 0) {
          start_over();
        } else {
          net->load_parameters(parameters(checkpoint), {device});
          trainer->load_states(states(checkpoint));
        }
        nd::waitall();
        restore = false;
      }
      if (trainer->steps() >= steps) {
        // Reading the weights is a sync point: a failure of the last steps, or of the read
        // itself (a staging buffer), shows here and is recovered from like any other.
        weights = weights_of(*net);
        break;
      }
      const long step = trainer->steps();
      if (step % 3 == 0 && step != checkpoint) {
        net->save_parameters(parameters(step));
        trainer->save_states(states(step));
        checkpoint = step;
      }
      train_step(*net, *trainer, device);
      in_a_row = 0;
    } catch (const Error& e) {
      ++*failures_seen;
      if (++in_a_row >= max_failures) {
        throw Error("training stopped after " + std::to_string(in_a_row) +
                    " failures in a row; the last: " + e.what());
      }
      try {
        nd::waitall();  // errors of the failed step not reported yet
      } catch (const Error&) {
      }
      restore = true;
    }
  }
  return weights;
}

}  // namespace

TEST_SUITE("frontend.fault_injection") {
  TEST_CASE("fault plans parse, and bad ones are refused with the syntax") {
    const FaultPlan plan = parse_fault_plan("host_alloc:7;sim_kernel:p=0.25,seed=3;file:2");
    REQUIRE(plan.size() == 3);
    CHECK(plan[0].kind == FaultKind::host_allocation);
    CHECK(plan[0].nth == 7);
    CHECK(plan[1].kind == FaultKind::sim_kernel);
    CHECK(plan[1].probability == 0.25);
    CHECK(plan[1].seed == 3);
    CHECK(plan[2].kind == FaultKind::file_write);
    check_error([] { parse_fault_plan("heap:1"); }, {"unknown kind 'heap'", "host_alloc"});
    check_error([] { parse_fault_plan("file:p=2"); }, {"not a number in [0, 1]"});
    check_error([] { parse_fault_plan("file:-1"); }, {"not a non-negative integer"});
    check_error([] { parse_fault_plan("file"); }, {"has no ':'"});
  }

  TEST_CASE("TANDEM_FAULTS is read with the configuration and a bad plan names the variable") {
    const auto getenv_with = [](const char* name) -> const char* {
      return std::string(name) == "TANDEM_FAULTS" ? " device_alloc:3 " : nullptr;
    };
    CHECK(EngineConfig::from_env(getenv_with).faults == "device_alloc:3");
    const auto bad = [](const char* name) -> const char* {
      return std::string(name) == "TANDEM_FAULTS" ? "alloc:x" : nullptr;
    };
    check_error([&] { (void)EngineConfig::from_env(bad); },
                {"TANDEM_FAULTS='alloc:x'", "unknown kind"});
  }

  TEST_CASE("a plan in the configuration is armed when it makes the process-wide engine") {
    EngineConfig config = EngineConfig::from_env();
    config.faults = "file:1";
    nd::set_default_engine(config);
    CHECK(tandem::detail::faults_armed());
    ScratchDir dir;
    check_error([&] { nd::save(dir.file("x.tnd"), nd::ones({2})); },
                {"cannot write", "injected fault: file #1"});
    disarm_faults();
    config.faults.clear();
    nd::set_default_engine(config);
    CHECK_FALSE(tandem::detail::faults_armed());
    nd::save(dir.file("x.tnd"), nd::ones({2}));
  }

  TEST_CASE("a probability rule fails the same events for the same seed, and none when off") {
    const auto failures = [](std::uint64_t seed) {
      FaultScope faults({{.kind = FaultKind::file_write, .probability = 0.3, .seed = seed}});
      std::vector<int> failed;
      for (int i = 0; i < 200; ++i)
        failed.push_back(tandem::detail::inject_fault(FaultKind::file_write));
      return failed;
    };
    const std::vector<int> first = failures(9);
    CHECK(first == failures(9));
    CHECK(first != failures(10));
    const auto count = static_cast<double>(std::count(first.begin(), first.end(), 1));
    CHECK(count > 30);
    CHECK(count < 90);
    CHECK_FALSE(tandem::detail::faults_armed());
  }

  TEST_CASE("every step of a file write may fail: an error naming the file, the old file stays") {
    Watchdog watchdog(std::chrono::seconds(120));
    ScratchDir dir;
    const std::string path = dir.file("a.tnd");
    nd::save(path, nd::full({4}, 1.0));
    std::uint64_t steps = 0;
    {
      FaultScope counting({{.kind = FaultKind::file_write}});
      nd::save(path, nd::full({4}, 2.0));
      steps = fault_events(FaultKind::file_write);
    }
    CHECK(steps == 5);  // create, write, fsync, rename, fsync of the directory
    for (std::uint64_t nth = 1; nth <= steps; ++nth) {
      CAPTURE(nth);
      nd::save(path, nd::full({4}, 1.0));
      {
        FaultScope faults({{.kind = FaultKind::file_write, .nth = nth}});
        check_error([&] { nd::save(path, nd::full({4}, 2.0)); },
                    {"save: cannot write '" + path + "'", "injected fault: file #"});
      }
      // The old contents until the rename, the new ones after it (a failed directory fsync).
      const double value = nd::load(path).front().second.to_vector<double>()[0];
      CHECK(value == (nth == steps ? 2.0 : 1.0));
      // No temporary left behind.
      int files = 0;
      for (const auto& entry :
           std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
        (void)entry;
        ++files;
      }
      CHECK(files == 1);
    }
  }

  TEST_CASE("training under random failures, restored from checkpoints, ends bit for bit") {
    Watchdog watchdog(std::chrono::seconds(600));
    const long steps = scaled(24, 8);
    std::vector<Device> devices{cpu()};
    if (device_count(DeviceKind::sim) > 0) devices.push_back(sim(0));
    for (const Device device : devices) {
      CAPTURE(to_string(device));
      ScratchDir clean_dir, faulty_dir;
      int clean_failures = 0;
      const std::vector<double> clean =
          train_with_checkpoints(device, clean_dir.file(""), steps, 1, &clean_failures);
      CHECK(clean_failures == 0);
      int failures = 0;
      std::vector<double> recovered;
      {
        FaultScope faults({{.kind = FaultKind::host_allocation, .probability = 0.01, .seed = 1},
                           {.kind = FaultKind::device_allocation, .probability = 0.01, .seed = 2},
                           {.kind = FaultKind::sim_launch, .probability = 0.005, .seed = 3},
                           {.kind = FaultKind::sim_kernel, .probability = 0.005, .seed = 4},
                           {.kind = FaultKind::file_write, .probability = 0.05, .seed = 5}});
        recovered = train_with_checkpoints(device, faulty_dir.file(""), steps, 50, &failures);
      }
      MESSAGE(to_string(device) << ": " << failures << " injected failures recovered from in "
                                << steps << " steps");
      CHECK(failures > 0);
      CHECK(recovered == clean);
    }
  }

  TEST_CASE("training whose every allocation fails stops with a clear error, without a hang") {
    Watchdog watchdog(std::chrono::seconds(120));
    ScratchDir dir;
    auto engine = Engine::create(EngineConfig{});
    nd::EngineScope scope(*engine);
    int failures = 0;
    std::string message;
    {
      FaultScope faults({{.kind = FaultKind::host_allocation, .probability = 1.0}});
      message = error_of([&] { train_with_checkpoints(cpu(), dir.file(""), 6, 5, &failures); });
    }
    CHECK(contains(message, "training stopped"));
    CHECK(contains(message, "out of memory on cpu(0)"));
    CHECK(contains(message, "injected fault: host_alloc"));
    CHECK(failures >= 5);
    // The engine goes on.
    CHECK((nd::full({100}, 2.0) + 1).sum().scalar() == 300.0);
  }
}

// Each kind's sweep over every event of the program, in its own ctest entry.
TEST_SUITE("frontend.fault_sweeps") {
  TEST_CASE("every host allocation of a training program may fail: an error, then it goes on") {
    Watchdog watchdog(std::chrono::seconds(600));
    sweep(FaultKind::host_allocation, cpu());
    if (have_sim()) sweep(FaultKind::host_allocation, sim(0));
  }

  TEST_CASE("every device allocation on sim may fail: an error, then it goes on") {
    if (!have_sim()) return;
    Watchdog watchdog(std::chrono::seconds(600));
    sweep(FaultKind::device_allocation, sim(0));
  }

  TEST_CASE("every sim launch may fail: an error, then it goes on") {
    if (!have_sim()) return;
    Watchdog watchdog(std::chrono::seconds(600));
    sweep(FaultKind::sim_launch, sim(0));
  }

  TEST_CASE("every sim kernel may fail on its stream: an error, then it goes on") {
    if (!have_sim()) return;
    Watchdog watchdog(std::chrono::seconds(600));
    sweep(FaultKind::sim_kernel, sim(0));
  }

  // Unmeasured here (no GPU on the build machine): runs where a CUDA device is present.
  TEST_CASE("every CUDA call may report a failure: an error, then it goes on") {
    if (device_count(DeviceKind::cuda) == 0) {
      MESSAGE("SKIPPED: no CUDA device");
      return;
    }
    Watchdog watchdog(std::chrono::seconds(600));
    sweep(FaultKind::cuda_call, cuda(0));
  }
}

}  // namespace tandem::testing
