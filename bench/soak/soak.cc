// tandem_soak: a long mixed workload that checks nothing leaks and nothing slows down with time.
//
//   tandem_soak --ops 100000000 --json bench/results/soak.json   # the report (bench/run.sh soak)
//   tandem_soak --ops 1000000 --check                            # what CI runs (ctest soak)
//
// Each round mixes what an application does to the engine over its life:
// - raw engine ops on a set of vars made and deleted every round, some of which fail (their
//   error poisons what they write; the round's wait reports it and the round goes on);
// - NDArray ops on cpu, sim(0) and sim(1): element-wise, dot, reductions, views, copies between
//   the devices, in-place writes; arrays dropped while ops on them are still queued;
// - an eager training step of a small MLP on the cpu (SGD with momentum), one replayed
//   nn::TrainingStep on sim(0), and a forward/backward of a hybridized MLP on sim(1) (a replay).
// Every `samples`-th of the ops (EngineStats::ops_pushed of the process engine) it waits for
// everything and samples the vars alive, the resident set (RSS) and the throughput. The report
// fits a line through the second half of the samples (the first half warms pools and caches):
// RSS bytes and vars alive per million ops, and the last window's throughput over the first
// measured window's.
//
// --check (CI): the vars alive over the second half stay within a few of each other (everything
// a round makes it also drops; only the storages parked for reuse come and go), the RSS grew by at
// most --rss-slack-mib over the second half, and every failure seen was one of the injected ones.
// Timing is reported, never checked.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tandem/engine.h"
#include "tandem/nd/autograd.h"
#include "tandem/tandem.h"

namespace {

using tandem::Device;
using tandem::Engine;
using tandem::nd::NDArray;
namespace nd = tandem::nd;
namespace nn = tandem::nn;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// How far the vars alive may move between samples without a leak: the storages parked for reuse
// (at most 8, each with its var) and their replacements.
constexpr std::uint64_t kParkedVarsSlack = 16;

struct Options {
  std::uint64_t ops = 1'000'000;
  int samples = 20;
  bool check = false;
  double rss_slack_mib = 32;
  std::string json;
  std::uint64_t seed = 20261128;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "tandem_soak: %s\nusage: tandem_soak [--ops N] [--samples K] [--check] "
               "[--rss-slack-mib M] [--json PATH] [--seed S]\n",
               message);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      return argv[++i];
    };
    if (arg == "--ops") {
      options.ops = std::stoull(value());
    } else if (arg == "--samples") {
      options.samples = std::stoi(value());
    } else if (arg == "--check") {
      options.check = true;
    } else if (arg == "--rss-slack-mib") {
      options.rss_slack_mib = std::stod(value());
    } else if (arg == "--json") {
      options.json = value();
    } else if (arg == "--seed") {
      options.seed = std::stoull(value());
    } else {
      usage(("unknown argument " + arg).c_str());
    }
  }
  if (options.samples < 4) usage("--samples must be at least 4");
  if (options.ops < 10'000) usage("--ops must be at least 10000");
  return options;
}

double rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

struct Sample {
  std::uint64_t ops;  // EngineStats::ops_pushed
  double seconds;     // since the start
  std::uint64_t vars_alive;
  double rss;
  double ops_per_second;  // over the window that ends here
};

// The raw-engine part of a round: vars made, ops on them (a few throw), vars deleted.
class EngineOps {
 public:
  explicit EngineOps(std::uint64_t seed) : random_(seed) {}

  void round(Engine& engine) {
    std::vector<tandem::Var> vars;
    for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
    std::uniform_int_distribution<int> pick(0, 7);
    std::uniform_int_distribution<int> percent(0, 99);
    for (int i = 0; i < 400; ++i) {
      const tandem::Var read = vars[pick(random_)];
      const tandem::Var write = vars[pick(random_)];
      const bool fail = percent(random_) == 0;
      engine.push(
          [this, fail] {
            sink_.fetch_add(1, std::memory_order_relaxed);
            if (fail) throw std::runtime_error("soak: injected failure");
          },
          tandem::cpu(), {read}, {write});
    }
    for (tandem::Var var : vars) engine.delete_var(var);
  }

 private:
  std::mt19937_64 random_;
  std::atomic<std::uint64_t> sink_{0};
};

// The NDArray part: the same small program on three devices, with copies between them.
class ArrayOps {
 public:
  explicit ArrayOps(std::uint64_t seed) : random_(seed) {}

  void round() {
    const std::vector<Device> devices = {tandem::cpu(), tandem::sim(0), tandem::sim(1)};
    std::uniform_int_distribution<int> size(8, 48);
    std::vector<NDArray> keep;
    const std::int64_t n = size(random_);  // one size per round: the results are added up
    for (const Device device : devices) {
      NDArray a = nd::random::uniform(-1, 1, {n, n}, device);
      NDArray b = nd::random::normal(0, 1, {n, n}, device);
      NDArray c = nd::dot(a, b) + 1;
      c *= 0.5;
      NDArray d = nd::transpose(nd::relu(c - b));
      NDArray e = nd::sum(d, 1) + nd::mean(a, 0);
      NDArray f = d.slice(0, n / 2).copy();
      f += 2;
      keep.push_back(e.copyto(devices[(index_++) % devices.size()]));
      keep.push_back(f);
      // a..d are dropped here with their ops still queued.
    }
    NDArray total = keep[0];
    for (std::size_t i = 2; i < keep.size(); i += 2) total = total + keep[i].copyto(total.device());
    checksum_ = total;  // the previous round's result is dropped
  }

 private:
  std::mt19937_64 random_;
  std::size_t index_ = 0;
  NDArray checksum_;
};

std::unique_ptr<nn::Sequential> mlp(const Device device) {
  auto net = std::make_unique<nn::Sequential>();
  net->add(nn::Dense(32, nn::ActivationType::relu, {.in_units = 16}));
  net->add(nn::Dense(10, nn::ActivationType::none, {.in_units = 32}));
  net->initialize(nn::Xavier(), {device});
  return net;
}

NDArray loss_of(const NDArray& output, const NDArray& label) {
  return nd::mean(nd::softmax_cross_entropy(output, label));
}

// The training part: an eager step on the cpu, a replayed whole step on sim(0), a hybridized
// forward and backward on sim(1).
class Training {
 public:
  Training()
      : eager_net_(mlp(tandem::cpu())),
        eager_trainer_(eager_net_->collect_params(), nn::SGD(0.05, 0.9)),
        replay_net_(mlp(tandem::sim(0))),
        replay_trainer_(replay_net_->collect_params(), nn::SGD(0.05, 0.9)),
        replayed_step_(*replay_net_, replay_trainer_, loss_of),
        hybrid_net_(mlp(tandem::sim(1))) {
    hybrid_net_->hybridize();
  }

  void round() {
    const auto batch = [](Device device) {
      NDArray data = nd::random::uniform(-1, 1, {8, 16}, device);
      NDArray label = nd::from_vector(std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}, device);
      return std::pair{data, label};
    };
    {
      auto [data, label] = batch(tandem::cpu());
      NDArray loss;
      {
        auto recording = tandem::autograd::record();
        loss = loss_of((*eager_net_)(data), label);
      }
      loss.backward();
      eager_trainer_.step(8);
    }
    {
      auto [data, label] = batch(tandem::sim(0));
      replayed_step_(data, label, 8);
    }
    {
      auto [data, label] = batch(tandem::sim(1));
      NDArray loss;
      {
        auto recording = tandem::autograd::record();
        loss = loss_of((*hybrid_net_)(data), label);
      }
      loss.backward();
    }
  }

 private:
  std::unique_ptr<nn::Sequential> eager_net_;
  nn::Trainer eager_trainer_;
  std::unique_ptr<nn::Sequential> replay_net_;
  nn::Trainer replay_trainer_;
  nn::TrainingStep replayed_step_;
  std::unique_ptr<nn::Sequential> hybrid_net_;
};

// Least-squares slope of y over x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double denominator = n * sxx - sx * sx;
  return denominator == 0 ? 0 : (n * sxy - sx * sy) / denominator;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  Engine& engine = Engine::get();
  EngineOps engine_ops(options.seed);
  ArrayOps array_ops(options.seed + 1);
  Training training;
  nd::random::seed(options.seed);

  const std::uint64_t start_ops = engine.stats().ops_pushed;
  const std::uint64_t window = options.ops / static_cast<std::uint64_t>(options.samples);
  std::vector<Sample> samples;
  std::uint64_t injected_failures_seen = 0;
  std::uint64_t other_failures = 0;
  std::string first_other_failure;
  const auto begin = std::chrono::steady_clock::now();
  auto window_begin = begin;
  std::uint64_t window_begin_ops = 0;
  std::uint64_t next_sample = window;
  std::uint64_t rounds = 0;
  while (true) {
    engine_ops.round(engine);
    array_ops.round();
    training.round();
    ++rounds;
    const std::uint64_t done = engine.stats().ops_pushed - start_ops;
    if (done < next_sample) continue;
    // Every error surfaces here (one per call): the injected ones are expected.
    while (true) {
      try {
        engine.wait_all();
        break;
      } catch (const std::exception& error) {
        const std::string message = error.what();
        if (message.find("soak: injected failure") != std::string::npos) {
          ++injected_failures_seen;
        } else {
          if (other_failures++ == 0) first_other_failure = message;
        }
      }
    }
    const auto now = std::chrono::steady_clock::now();
    const double window_seconds = std::chrono::duration<double>(now - window_begin).count();
    const tandem::EngineStats stats = engine.stats();
    samples.push_back(Sample{done, std::chrono::duration<double>(now - begin).count(),
                             stats.vars_alive, rss_bytes(),
                             static_cast<double>(done - window_begin_ops) / window_seconds});
    const Sample& s = samples.back();
    std::printf("ops %12llu  %8.1f s  vars alive %6llu  rss %8.1f MiB  %10.0f ops/s\n",
                static_cast<unsigned long long>(s.ops), s.seconds,
                static_cast<unsigned long long>(s.vars_alive), s.rss / (1024.0 * 1024.0),
                s.ops_per_second);
    std::fflush(stdout);
    window_begin = std::chrono::steady_clock::now();  // the sampling is not in the window
    window_begin_ops = engine.stats().ops_pushed - start_ops;
    next_sample += window;
    if (samples.size() >= static_cast<std::size_t>(options.samples)) break;
  }

  // The second half of the samples: pools and caches are warm.
  const std::size_t half = samples.size() / 2;
  std::vector<double> x, rss, vars;
  for (std::size_t i = half; i < samples.size(); ++i) {
    x.push_back(static_cast<double>(samples[i].ops) / 1e6);
    rss.push_back(samples[i].rss);
    vars.push_back(static_cast<double>(samples[i].vars_alive));
  }
  const double rss_slope = slope(x, rss);    // bytes per million ops
  const double vars_slope = slope(x, vars);  // vars per million ops
  const double rss_growth = samples.back().rss - samples[half].rss;
  const std::uint64_t vars_low = *std::min_element(vars.begin(), vars.end());
  const std::uint64_t vars_high = *std::max_element(vars.begin(), vars.end());
  const double throughput_ratio = samples.back().ops_per_second / samples[1].ops_per_second;
  const double seconds = samples.back().seconds;
  std::printf(
      "\nsoak: %llu ops (%llu rounds) in %.1f s, %.0f ops/s\n"
      "  second half: rss slope %.1f KiB per million ops (growth %.2f MiB), vars alive %llu..%llu "
      "(slope %.3f per million ops)\n"
      "  throughput: last window / second window %.3f\n"
      "  failures: %llu injected ones reported, %llu others\n",
      static_cast<unsigned long long>(samples.back().ops), static_cast<unsigned long long>(rounds),
      seconds, static_cast<double>(samples.back().ops) / seconds, rss_slope / 1024.0,
      rss_growth / (1024.0 * 1024.0), static_cast<unsigned long long>(vars_low),
      static_cast<unsigned long long>(vars_high), vars_slope, throughput_ratio,
      static_cast<unsigned long long>(injected_failures_seen),
      static_cast<unsigned long long>(other_failures));

  if (!options.json.empty()) {
    std::ofstream out(options.json);
    out << "{\n  \"ops\": " << samples.back().ops << ",\n  \"rounds\": " << rounds
        << ",\n  \"seconds\": " << seconds
        << ",\n  \"rss_slope_bytes_per_million_ops\": " << rss_slope
        << ",\n  \"rss_growth_second_half_bytes\": " << rss_growth
        << ",\n  \"vars_alive_min\": " << vars_low << ",\n  \"vars_alive_max\": " << vars_high
        << ",\n  \"vars_slope_per_million_ops\": " << vars_slope
        << ",\n  \"throughput_last_over_second_window\": " << throughput_ratio
        << ",\n  \"injected_failures_reported\": " << injected_failures_seen
        << ",\n  \"other_failures\": " << other_failures << ",\n  \"samples\": [\n";
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      out << "    {\"ops\": " << s.ops << ", \"seconds\": " << s.seconds
          << ", \"vars_alive\": " << s.vars_alive << ", \"rss_bytes\": " << s.rss
          << ", \"ops_per_second\": " << s.ops_per_second << "}"
          << (i + 1 < samples.size() ? ",\n" : "\n");
    }
    out << "  ]\n}\n";
  }

  if (!options.check) return 0;
  bool ok = true;
  // Up to 8 dropped arrays keep their storage and var parked for reuse (storage_reuse.h), so
  // the count may move by that much; a leak grows with the ops.
  if (vars_high - vars_low > kParkedVarsSlack) {
    std::printf(
        "FAILED: the vars alive moved by %llu over the second half (%llu..%llu, allowed "
        "%llu): a leak\n",
        static_cast<unsigned long long>(vars_high - vars_low),
        static_cast<unsigned long long>(vars_low), static_cast<unsigned long long>(vars_high),
        static_cast<unsigned long long>(kParkedVarsSlack));
    ok = false;
  }
  if (kAddressSanitizer) {
    // ASan keeps freed memory in its quarantine (256 MiB by default) before reusing it, so the
    // RSS grows by design while the quarantine fills.
    std::printf("rss check skipped: AddressSanitizer's quarantine holds freed memory\n");
  } else if (rss_growth > options.rss_slack_mib * 1024 * 1024) {
    std::printf("FAILED: the RSS grew by %.1f MiB over the second half (allowed %.1f)\n",
                rss_growth / (1024.0 * 1024.0), options.rss_slack_mib);
    ok = false;
  }
  if (other_failures != 0) {
    std::printf("FAILED: %llu errors that were not injected, the first: %s\n",
                static_cast<unsigned long long>(other_failures), first_other_failure.c_str());
    ok = false;
  }
  if (injected_failures_seen == 0) {
    std::printf("FAILED: no injected failure was reported by wait_all\n");
    ok = false;
  }
  std::printf("%s\n", ok ? "soak check: OK" : "soak check: FAILED");
  return ok ? 0 : 1;
}
