// bench_handoff: where the time between two fine-grained ops goes, measured with clock stamps
// taken inside the ops (steady_clock, ~20 ns a read) on the default threaded engine.
//
//   build/bench/bench_handoff [samples]      # default 2000 per measure
//
// Each measure prints the median and the 90th percentile over `samples` repetitions:
// - push:               the pushing thread's time in one push of an op with one var;
// - push -> start, spinning worker: a push stamped before the call, the op stamps its start;
//   the previous op ended just before, so a drainer is still polling the ready queue;
// - push -> start, parked workers: the same 1 ms after the last op, when every drainer has
//   given up polling (spin_before_park) and oneTBB has parked its threads: a wake-up;
// - end -> start of a dependent op: op A stamps its last instant, op B (which waits for A's
//   var) its first; both pushed before A runs, so B is handed to A's worker (run_next_here):
//   the cost of finishing A, releasing its var and starting B;
// - push -> start of a copy, parked lane: a copy-queue op 1 ms after the last one, i.e. the
//   priority lane's futex wake-up.
#include <tandem/engine.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ns_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}

void report(const char* what, std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const double median = samples[samples.size() / 2];
  const double p90 = samples[samples.size() * 9 / 10];
  std::printf("  %-44s median %8.0f ns   p90 %8.0f ns\n", what, median, p90);
}

// Pushes one op on `var` (or a copy-queue op) and waits until it has run; returns push -> start.
double push_to_start(tandem::Engine& engine, tandem::Var var, tandem::Queue queue,
                     double* push_ns) {
  std::atomic<bool> ran{false};
  Clock::time_point started;
  const Clock::time_point before = Clock::now();
  engine.push(
      [&] {
        started = Clock::now();
        ran.store(true, std::memory_order_release);
      },
      tandem::cpu(), {}, {var}, {.name = "probe", .queue = queue});
  const Clock::time_point after = Clock::now();
  if (push_ns != nullptr) *push_ns = ns_between(before, after);
  while (!ran.load(std::memory_order_acquire)) std::this_thread::yield();
  engine.wait_for_var(var);
  return ns_between(before, started);
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::max(10, std::atoi(argv[1])) : 2000;
  tandem::EngineConfig config = tandem::EngineConfig::from_env();
  config.kind = tandem::EngineKind::threaded;
  auto engine = tandem::Engine::create(config);
  tandem::Var var = engine->new_var();
  std::printf(
      "bench_handoff: %d samples per measure, %d CPU workers + %d priority lane(s), "
      "spin_before_park %lld us\n",
      samples, engine->cpu_workers(), engine->priority_workers(),
      static_cast<long long>(config.spin_before_park.count()));

  std::vector<double> push, spinning, parked, dependent, lane;
  for (int i = 0; i < samples; ++i) {
    double push_ns = 0;
    spinning.push_back(push_to_start(*engine, var, tandem::Queue::compute, &push_ns));
    push.push_back(push_ns);
  }
  for (int i = 0; i < std::max(10, samples / 10); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    parked.push_back(push_to_start(*engine, var, tandem::Queue::compute, nullptr));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    lane.push_back(push_to_start(*engine, var, tandem::Queue::copy_h2d, nullptr));
  }
  for (int i = 0; i < samples; ++i) {
    Clock::time_point a_end, b_start;
    std::atomic<bool> go{false};
    engine->push(
        [&] {
          while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
          a_end = Clock::now();
        },
        tandem::cpu(), {}, {var}, {.name = "a"});
    engine->push([&] { b_start = Clock::now(); }, tandem::cpu(), {}, {var}, {.name = "b"});
    go.store(true, std::memory_order_release);
    engine->wait_for_var(var);
    dependent.push_back(ns_between(a_end, b_start));
  }
  report("push (pushing thread)", push);
  report("push -> start, spinning worker", spinning);
  report("push -> start, parked workers (wake-up)", parked);
  report("end -> start of a dependent op (same worker)", dependent);
  report("push -> start of a copy, parked lane", lane);
  engine->delete_var(var);
  engine->wait_all();
  return 0;
}
