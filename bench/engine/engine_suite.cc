#include "engine_suite.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "available_cores.h"
#include "busy_work.h"
#include "core_state.h"
#include "idle_cpu.h"
#include "metg.h"
#include "replay_workloads.h"
#include "scheduling_trace.h"
#include "tandem/profiler.h"
#include "taskflow_workloads.h"
#include "tbb_flow_workloads.h"
#include "watchdog.h"
#include "workloads.h"

namespace tandem::bench {

namespace {

// Ops per run of the ns/op workloads. Quick keeps StarPU (~5 us per task here) to ~0.1 s a run.
constexpr std::size_t kQuickOps = 20'000;
constexpr std::size_t kFullOps = 200'000;
constexpr std::size_t kFanOutReads = 1000;
// chain_plus_independent: the grain of examples/engine_demo's part 2 (copy = 3/5 of compute),
// 1000x finer, so that a worker's wake-up or a misplaced op shows against the ideal.
constexpr std::size_t kQuickChainBatches = 200;
constexpr std::size_t kFullChainBatches = 1000;
constexpr int kChainComputeNs = 50'000;
constexpr int kChainCopyNs = 30'000;
constexpr std::size_t kIdleBurstOps = 10'000;
constexpr std::chrono::milliseconds kIdleWindow{1000};
// Backpressure bound for the push_cost engine: above any run's op count, so push never blocks
// and the number is the cost of push itself.
constexpr std::size_t kUnboundedInFlight = std::size_t{1} << 24;
// Pause before every run of a METG sweep point (see measure_metg_point).
constexpr std::chrono::milliseconds kSettleBeforeMetgRun{2};

EngineConfig config_of(EngineKind kind) {
  // From the environment, so TANDEM_SPIN_US and friends can be tried without rebuilding; every
  // record states the values it ran with.
  EngineConfig config = EngineConfig::from_env();
  config.kind = kind;
  return config;
}

// One system's entrant: its own `num_vars` vars (created now, untimed), and `run(system, vars)`
// per repetition.
template <PushSystem S, class Run>
Entrant make_entrant(const std::string& name, S& system, std::size_t num_vars, Run run) {
  auto vars = std::make_shared<typename S::VarSet>(system.make_vars(num_vars));
  return Entrant{name, [&system, vars, run] { return run(system, vars->handles()); }};
}

void print_heading(const std::string& workload, const std::string& detail) {
  std::cout << "\n== " << workload << "  (" << detail << ")\n" << std::flush;
}

}  // namespace

EngineSuite::EngineSuite(SuiteOptions options)
    : options_(std::move(options)),
      cores_(static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
      repetitions_(options_.repetitions > 0 ? options_.repetitions : (options_.quick ? 3 : 5)),
      ops_(options_.quick ? kQuickOps : kFullOps),
      tandem_(config_of(EngineKind::threaded)),
      tandem_naive_(config_of(EngineKind::naive)),
      plain_queue_(cores_) {}

EngineSuite::~EngineSuite() = default;

bool EngineSuite::enabled(const std::string& system) const {
  if (system == "taskflow" && !taskflow_available()) return false;
  return options_.systems.empty() || options_.systems.contains(system);
}

SchedulingRounds EngineSuite::new_rounds() {
  rounds_ = std::make_shared<std::vector<nlohmann::json>>();
  return rounds_;
}

bool EngineSuite::taskflow_enabled() {
  if (!enabled("taskflow")) return false;
  taskflow_start(cores_);
  return true;
}

StarpuSystem& EngineSuite::starpu() {
  if (!starpu_) starpu_ = std::make_unique<StarpuSystem>(cores_);
  return *starpu_;
}

void EngineSuite::run() {
  for (const std::string& workload : all_workloads()) {
    if (!options_.workloads.empty() && !options_.workloads.contains(workload)) continue;
    if (workload == "idle_cpu") measure_idle_cpu();
    if (workload == "independent") measure_writes_round_robin(workload, ops_);
    if (workload == "chains_1000") measure_writes_round_robin(workload, 1000);
    if (workload == "one_chain") measure_writes_round_robin(workload, 1);
    if (workload == "fan_out") measure_fan_out();
    if (workload == "push_cost") measure_push_cost();
    if (workload == "replay_ns_per_op") measure_replay_ns_per_op();
    if (workload == "chain_plus_independent") measure_chain_plus_independent();
    for (const TaskBenchPattern& pattern : task_bench_patterns()) {
      if (workload == pattern.workload()) measure_metg(pattern);
    }
  }
}

template <class Run>
std::vector<Entrant> EngineSuite::push_entrants(const std::vector<std::string>& systems,
                                                std::size_t num_vars, Run run) {
  std::vector<Entrant> entrants;
  for (const std::string& name : systems) {
    if (!enabled(name)) continue;
    if (name == "tandem") {
      entrants.push_back(
          traced(make_entrant(name, tandem_, num_vars, run), tandem_.engine(), new_rounds()));
    }
    if (name == "tandem_profiled") {
      // The same engine with the profiler recording every op: the profiler's cost per op.
      auto vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(num_vars));
      entrants.push_back(Entrant{name, [this, vars, run] {
                                   tandem::profiler::start();
                                   const Nanoseconds time = run(tandem_, vars->handles());
                                   tandem::profiler::stop();
                                   tandem::profiler::clear();
                                   return time;
                                 }});
    }
    if (name == "tandem_naive")
      entrants.push_back(make_entrant(name, tandem_naive_, num_vars, run));
    if (name == "starpu") entrants.push_back(make_entrant(name, starpu(), num_vars, run));
    if (name == "plain_queue") entrants.push_back(make_entrant(name, plain_queue_, num_vars, run));
  }
  return entrants;
}

void EngineSuite::record_ns_per_op(const std::string& workload, const std::vector<Timing>& timings,
                                   std::size_t ops, const std::string& unit,
                                   const std::map<std::string, nlohmann::json>& extra) {
  double tandem_ns = 0.0;
  const Timing* tandem = nullptr;
  for (const Timing& timing : timings) {
    if (timing.system == "tandem") {
      tandem_ns = timing.median_ns / static_cast<double>(ops);
      tandem = &timing;
    }
  }
  for (const Timing& timing : timings) {
    const double ns_per_op = timing.median_ns / static_cast<double>(ops);
    std::vector<double> samples;
    for (double sample : timing.samples_ns) samples.push_back(sample / static_cast<double>(ops));
    nlohmann::json core_to_core = nlohmann::json::array();
    for (double latency : timing.core_to_core_ns) {
      core_to_core.push_back(std::isnan(latency) ? nlohmann::json() : nlohmann::json(latency));
    }
    nlohmann::json record = {{"workload", workload},
                             {"system", timing.system},
                             {"ns_per_op", ns_per_op},
                             {"unit", unit},
                             {"ops", ops},
                             {"repetitions", timing.samples_ns.size()},
                             {"samples_ns_per_op", samples},
                             {"samples_core_to_core_ns", core_to_core},
                             {"cores", cores_}};
    // tandem / this system over the rounds in which both ran with the cores near, and far
    // (core_state.h).
    std::optional<StateRatio> near;
    std::optional<StateRatio> far;
    if (tandem != nullptr && &timing != tandem) {
      near = ratio_in_state(*tandem, timing, CoreState::near);
      far = ratio_in_state(*tandem, timing, CoreState::far);
      auto to_json = [](const std::optional<double>& ratio) {
        return ratio ? nlohmann::json(*ratio) : nlohmann::json();
      };
      record["tandem_ratio_cores_near"] = to_json(near->ratio);
      record["rounds_cores_near"] = near->rounds;
      record["tandem_ratio_cores_far"] = to_json(far->ratio);
      record["rounds_cores_far"] = far->rounds;
    }
    if (timing.system == "starpu") record["scheduler"] = starpu().scheduler();
    if (timing.system == "taskflow") record["version"] = taskflow_version();
    if (timing.system == "tandem") {
      record["max_ops_in_flight"] = tandem_.engine().config().max_ops_in_flight;
      record["spin_before_park_us"] = tandem_.engine().config().spin_before_park.count();
      if (rounds_) record["scheduling_per_round"] = *rounds_;
    }
    if (auto it = extra.find(timing.system); it != extra.end()) record.update(it->second);
    records_.add(std::move(record));

    std::cout << "  " << std::left << std::setw(14) << timing.system << std::right << std::fixed
              << std::setprecision(1) << std::setw(10) << ns_per_op << " " << unit;
    if (tandem_ns > 0.0 && timing.system != "tandem") {
      std::cout << "   tandem/" << timing.system << " = " << std::setprecision(3)
                << tandem_ns / ns_per_op;
      auto print_state = [](const char* label, const std::optional<StateRatio>& state) {
        if (!state || !state->ratio) return;
        std::cout << "; cores " << label << ": " << std::setprecision(3) << *state->ratio << " ("
                  << state->rounds << (state->rounds == 1 ? " round)" : " rounds)");
      };
      print_state("near", near);
      print_state("far", far);
    }
    std::cout << '\n' << std::flush;
  }
}

void EngineSuite::measure_writes_round_robin(const std::string& workload, std::size_t num_vars) {
  const std::size_t ops = ops_;
  print_heading(workload, std::to_string(ops) + " empty ops, op i writes var i % " +
                              std::to_string(num_vars));
  std::vector<std::string> systems = {"tandem", "tandem_profiled", "tandem_naive", "starpu"};
  // The plain queue ignores dependencies, so it is a valid peer only where there are none.
  if (num_vars >= ops) systems.push_back("plain_queue");
  auto run = [ops](auto& system, auto vars) { return run_writes_round_robin(system, vars, ops); };
  std::vector<Entrant> entrants = push_entrants(systems, num_vars, run);
  if (enabled("tbb_flow")) {
    entrants.push_back({"tbb_flow", [=] { return tbb_flow_writes_round_robin(ops, num_vars); }});
  }
  if (taskflow_enabled()) {
    entrants.push_back({"taskflow", [=] { return taskflow_writes_round_robin(ops, num_vars); }});
  }
  // Replayed in blocks of one op per var: whole blocks only, so only where ops divide evenly,
  // and blocks of many ops (one op per replay would measure the replay call, not the ops).
  if (enabled("tandem_replay") && num_vars >= kReplayVars && num_vars < ops &&
      ops % num_vars == 0) {
    auto vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(num_vars));
    entrants.push_back({"tandem_replay", [this, vars, ops] {
                          return run_writes_round_robin_replayed(tandem_.engine(), vars->handles(),
                                                                 ops);
                        }});
  }
  record_ns_per_op(workload, run_side_by_side(workload, entrants, repetitions_), ops);
}

void EngineSuite::measure_fan_out() {
  const std::size_t reads = kFanOutReads;
  const std::size_t rounds = std::max<std::size_t>(1, ops_ / (1 + reads));
  const std::size_t ops = rounds * (1 + reads);
  print_heading("fan_out", std::to_string(rounds) + " rounds of 1 write + " +
                               std::to_string(reads) + " reads of one var");
  auto run = [=](auto& system, auto vars) { return run_fan_out(system, vars, rounds, reads); };
  std::vector<Entrant> entrants =
      push_entrants({"tandem", "tandem_profiled", "tandem_naive", "starpu"}, 1, run);
  if (enabled("tbb_flow")) {
    entrants.push_back({"tbb_flow", [=] { return tbb_flow_fan_out(rounds, reads); }});
  }
  if (taskflow_enabled()) {
    entrants.push_back({"taskflow", [=] { return taskflow_fan_out(rounds, reads); }});
  }
  if (enabled("tandem_replay")) {
    auto vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(1));
    entrants.push_back({"tandem_replay", [this, vars, rounds, reads] {
                          return run_fan_out_replayed(tandem_.engine(), vars->handles(), rounds,
                                                      reads);
                        }});
  }
  record_ns_per_op("fan_out", run_side_by_side("fan_out", entrants, repetitions_), ops);
}

void EngineSuite::measure_push_cost() {
  const std::size_t ops = ops_;
  print_heading("push_cost", "pushing thread's time per push of " + std::to_string(ops) +
                                 " independent ops; tandem with max_ops_in_flight = " +
                                 std::to_string(kUnboundedInFlight) + ", so push never blocks");
  auto run = [ops](auto& system, auto vars) { return run_push_cost(system, vars, ops); };
  // Its own engine: the default backpressure bound (16384) would block the pusher. Declared
  // before the entrants, which hold vars of it and must be destroyed first.
  std::unique_ptr<TandemSystem> unbounded;
  std::vector<Entrant> entrants;
  if (enabled("tandem")) {
    EngineConfig config = config_of(EngineKind::threaded);
    config.max_ops_in_flight = kUnboundedInFlight;
    unbounded = std::make_unique<TandemSystem>(config);
    entrants.push_back(
        traced(make_entrant("tandem", *unbounded, ops, run), unbounded->engine(), new_rounds()));
  }
  for (Entrant& entrant : push_entrants({"tandem_naive", "starpu", "plain_queue"}, ops, run)) {
    entrants.push_back(std::move(entrant));
  }
  if (enabled("tbb_flow"))
    entrants.push_back({"tbb_flow", [ops] { return tbb_flow_push_cost(ops); }});
  if (taskflow_enabled())
    entrants.push_back({"taskflow", [ops] { return taskflow_push_cost(ops); }});
  const std::vector<Timing> timings = run_side_by_side("push_cost", entrants, repetitions_);
  std::map<std::string, nlohmann::json> extra;
  if (unbounded) {
    const std::uint64_t blocked = unbounded->engine().stats().pushes_blocked;
    extra["tandem"] = {{"max_ops_in_flight", kUnboundedInFlight}, {"pushes_blocked", blocked}};
    if (blocked != 0) std::cout << "  warning: tandem's pushes blocked; push_cost is overstated\n";
  }
  record_ns_per_op("push_cost", timings, ops, "ns/push", extra);
}

void EngineSuite::measure_chain_plus_independent() {
  const std::size_t batches = options_.quick ? kQuickChainBatches : kFullChainBatches;
  const Work compute = busy_work_for(kChainComputeNs);
  const Work copy = busy_work_for(kChainCopyNs);
  const double compute_ns =
      static_cast<double>(compute.spin_iterations) * nanoseconds_per_spin_iteration();
  const double copy_ns =
      static_cast<double>(copy.spin_iterations) * nanoseconds_per_spin_iteration();
  const double ideal_ns = copy_ns + static_cast<double>(batches) * compute_ns;
  print_heading("chain_plus_independent",
                std::to_string(batches) + " batches of a " + std::to_string(kChainCopyNs / 1000) +
                    " us copy (copy queue) and a " + std::to_string(kChainComputeNs / 1000) +
                    " us compute op; ideal " + std::to_string(ideal_ns / 1e6) + " ms");
  // tandem only among the push systems: the others have no copy queue.
  auto run = [=](TandemSystem& system, std::span<const TandemSystem::Var> vars) {
    return run_chain_plus_independent(system, vars, batches, compute, copy);
  };
  std::vector<Entrant> entrants;
  if (enabled("tandem")) {
    entrants.push_back(
        traced(make_entrant("tandem", tandem_, 3, run), tandem_.engine(), new_rounds()));
  }
  if (enabled("tbb_flow")) {
    entrants.push_back(
        {"tbb_flow", [=] { return tbb_flow_chain_plus_independent(batches, compute, copy); }});
  }
  if (taskflow_enabled()) {
    entrants.push_back(
        {"taskflow", [=] { return taskflow_chain_plus_independent(batches, compute, copy); }});
  }
  const std::vector<Timing> timings =
      run_side_by_side("chain_plus_independent", entrants, repetitions_);
  // ns per batch; each record also carries the ideal and its ratio to it.
  std::map<std::string, nlohmann::json> extra;
  for (const Timing& timing : timings) {
    extra[timing.system] = {{"ideal_ns", ideal_ns},
                            {"over_ideal", timing.median_ns / ideal_ns},
                            {"compute_ns", compute_ns},
                            {"copy_ns", copy_ns},
                            {"batches", batches}};
    std::cout << "  " << timing.system << ": " << std::setprecision(3)
              << timing.median_ns / ideal_ns << " x ideal\n";
  }
  record_ns_per_op("chain_plus_independent", timings, batches, "ns/batch", extra);
}

void EngineSuite::measure_metg(const TaskBenchPattern& pattern) {
  const MetgPlan plan = make_metg_plan(options_.quick, cores_);
  print_heading(pattern.workload(),
                "Task Bench " + pattern.name + " (" + std::to_string(pattern.radix) +
                    " dependencies per interior task), " + std::to_string(plan.width) +
                    " columns, up to " + std::to_string(plan.max_steps) +
                    " steps; efficiency per task granularity");
  // The naive engine runs every task on the pushing thread, so its efficiency is capped at
  // 1/cores and its METG is not defined; the plain queue cannot express the dependencies.
  std::map<std::string, std::vector<EfficiencyPoint>> curves;
  for (double granularity_ns : plan.granularities_ns) {
    for (const auto& [system, point] : measure_metg_point(plan, pattern, granularity_ns)) {
      curves[system].push_back(point);
    }
  }
  for (const auto& [system, curve] : curves) record_metg(pattern, system, curve, plan.width);
}

std::map<std::string, EfficiencyPoint> EngineSuite::measure_metg_point(
    const MetgPlan& plan, const TaskBenchPattern& pattern, double wanted_ns) {
  const Work work = busy_work_for(wanted_ns);
  const double granularity_ns =
      static_cast<double>(work.spin_iterations) * nanoseconds_per_spin_iteration();
  const std::size_t width = plan.width;
  const std::size_t steps = plan.steps_for(granularity_ns, cores_);
  const std::size_t tasks = steps * width;

  auto run = [=](auto& system, auto vars) {
    return run_task_bench(system, vars, pattern, width, steps, work);
  };
  std::vector<Entrant> entrants = push_entrants({"tandem", "starpu"}, 2 * width, run);
  if (enabled("tbb_flow")) {
    entrants.push_back(
        {"tbb_flow", [=] { return tbb_flow_task_bench(pattern, width, steps, work); }});
  }
  if (taskflow_enabled()) {
    entrants.push_back(
        {"taskflow", [=] { return taskflow_task_bench(pattern, width, steps, work); }});
  }
  if (enabled("tandem_replay")) {
    auto vars = std::make_shared<TandemSystem::VarSet>(tandem_.make_vars(2 * width));
    entrants.push_back({"tandem_replay", [this, vars, pattern, width, steps, work] {
                          return run_task_bench_replayed(tandem_.engine(), vars->handles(), pattern,
                                                         width, steps, work);
                        }});
  }
  // Last in every round, so timings.back() holds what the machine gave a scheduler-free run
  // in each round. Each system's run is compared with the probe of its own round, so a burst
  // of load from another process affects both sides of the ratio.
  const int cores = cores_;
  const double probe_ns = granularity_ns * static_cast<double>(tasks);  // the run's own work
  entrants.push_back({"peak_probe", [=] { return run_peak_probe(cores, probe_ns); }});
  // Each run starts after a pause in which the threads of the run before have gone idle
  // (tandem's drainers spin 50 us, StarPU's workers and oneTBB's threads longer): otherwise the
  // run, and the probe above all, shares the cores with the previous system's spinning threads.
  for (Entrant& entrant : entrants) {
    entrant.run_once = [run = std::move(entrant.run_once)] {
      std::this_thread::sleep_for(kSettleBeforeMetgRun);
      return run();
    };
  }
  const std::vector<Timing> timings = run_side_by_side(pattern.workload(), entrants, repetitions_);
  std::vector<double> cores_per_round;
  for (double probe_wall_ns : timings.back().samples_ns) {
    cores_per_round.push_back(std::min<double>(cores_, available_cores(probe_ns, probe_wall_ns)));
  }
  const double peak = median(cores_per_round);

  std::cout << "  g = " << std::setw(9) << std::setprecision(0) << granularity_ns << " ns, "
            << std::setw(4) << steps << " steps, " << std::setprecision(2) << peak
            << " cores available:";
  std::map<std::string, EfficiencyPoint> points;
  for (const Timing& timing : timings) {
    if (timing.system == "peak_probe") continue;
    std::vector<double> per_round;
    std::vector<double> near_rounds;  // the rounds run with the cores near (core_state.h)
    for (std::size_t round = 0; round < timing.samples_ns.size(); ++round) {
      per_round.push_back(
          efficiency(granularity_ns, tasks, timing.samples_ns[round], cores_per_round[round]));
      if (round < timing.core_to_core_ns.size() &&
          core_state(timing.core_to_core_ns[round]) == CoreState::near) {
        near_rounds.push_back(per_round.back());
      }
    }
    EfficiencyPoint point{
        granularity_ns, tasks, timing.median_ns, peak, 0.0, 0.0, 0.0, 0.0, 0.0, 0};
    point.efficiency = median(per_round);
    point.efficiency_near = median(near_rounds);
    point.near_rounds = near_rounds.size();
    point.efficiency_low = *std::min_element(per_round.begin(), per_round.end());
    point.efficiency_high = *std::max_element(per_round.begin(), per_round.end());
    point.nominal_efficiency = efficiency(granularity_ns, tasks, timing.median_ns, cores_);
    points[timing.system] = point;
    std::cout << "  " << timing.system << " " << std::setprecision(1) << 100.0 * point.efficiency
              << "%";
  }
  std::cout << '\n' << std::flush;
  return points;
}

void EngineSuite::record_metg(const TaskBenchPattern& pattern, const std::string& system,
                              const std::vector<EfficiencyPoint>& curve, std::size_t width) {
  nlohmann::json points = nlohmann::json::array();
  for (const EfficiencyPoint& point : curve) {
    points.push_back(
        {{"granularity_ns", point.granularity_ns},
         {"tasks", point.tasks},
         {"wall_ns", point.wall_ns},
         {"available_cores", point.available_cores},
         {"efficiency", point.efficiency},
         {"efficiency_low", point.efficiency_low},
         {"efficiency_high", point.efficiency_high},
         {"nominal_efficiency", point.nominal_efficiency},
         {"efficiency_cores_near",
          point.near_rounds > 0 ? nlohmann::json(point.efficiency_near) : nlohmann::json()},
         {"rounds_cores_near", point.near_rounds}});
  }
  nlohmann::json dips = nlohmann::json::array();
  for (const EfficiencyDip& dip : dips_beyond_noise(curve)) {
    dips.push_back({{"from_ns", dip.from_ns}, {"to_ns", dip.to_ns}, {"drop", dip.drop}});
  }
  auto to_json = [](const std::optional<Metg>& metg) {
    return metg ? nlohmann::json(metg->granularity_ns) : nlohmann::json();
  };
  const std::optional<Metg> metg = min_effective_granularity(curve);
  const std::optional<Metg> nominal =
      min_effective_granularity(curve, 0.5, &EfficiencyPoint::nominal_efficiency);
  // From the rounds run with the cores near, where every point of the sweep had some.
  const bool near_everywhere = std::all_of(curve.begin(), curve.end(),
                                           [](const auto& point) { return point.near_rounds > 0; });
  const std::optional<Metg> near =
      min_effective_granularity(near_everywhere ? curve : std::vector<EfficiencyPoint>{}, 0.5,
                                &EfficiencyPoint::efficiency_near);
  records_.add({{"workload", pattern.workload()},
                {"system", system},
                {"pattern", pattern.name},
                {"dependencies_per_task", pattern.radix},
                {"metg_ns", to_json(metg)},
                {"metg_at_most", metg && metg->at_most},
                {"nominal_metg_ns", to_json(nominal)},
                {"metg_cores_near_ns", to_json(near)},
                {"threshold", 0.5},
                {"width", width},
                {"repetitions", repetitions_},
                {"cores", cores_},
                {"monotonic_within_noise", dips.empty()},
                {"dips_beyond_noise_count", dips.size()},
                {"dips_beyond_noise", dips},
                {"efficiency", points}});
  std::cout << "  METG(50%) " << std::left << std::setw(10) << system << std::right;
  if (metg) {
    std::cout << (metg->at_most ? "<= " : "") << std::setprecision(0) << metg->granularity_ns
              << " ns";
  } else {
    std::cout << "not reached (efficiency < 50% at every granularity)";
  }
  if (const nlohmann::json near_ns = to_json(near); !near_ns.is_null()) {
    std::cout << "  (rounds with the cores near: " << std::setprecision(0) << near_ns.get<double>()
              << " ns)";
  }
  std::cout << '\n';
  for (const auto& dip : dips) {
    std::cout << "    dips beyond noise: " << std::setprecision(2) << dip["drop"].get<double>()
              << " from " << std::setprecision(0) << dip["from_ns"].get<double>() << " ns to "
              << dip["to_ns"].get<double>() << " ns\n";
  }
}

void EngineSuite::measure_idle_cpu() {
  print_heading("idle_cpu", "process CPU over " + std::to_string(kIdleWindow.count()) +
                                " ms after a burst of " + std::to_string(kIdleBurstOps) +
                                " ops, % of one core");
  auto record = [&](const std::string& system, double percent, nlohmann::json extra = {}) {
    nlohmann::json entry = {{"workload", "idle_cpu"},     {"system", system},
                            {"cpu_percent", percent},     {"window_ms", kIdleWindow.count()},
                            {"burst_ops", kIdleBurstOps}, {"cores", cores_}};
    if (!extra.is_null()) entry.update(extra);
    records_.add(std::move(entry));
    std::cout << "  " << std::left << std::setw(14) << system << std::right << std::setw(8)
              << std::setprecision(2) << percent << " % of a core";
    if (!extra.is_null()) std::cout << "  " << extra.dump();
    std::cout << '\n' << std::flush;
  };
  // A system's threads must be the only ones that can be awake: StarPU, which cannot be
  // stopped and restarted cheaply, is started last.
  auto burst = [&](const std::string& name, auto& system) {
    auto vars = system.make_vars(kIdleBurstOps);
    watchdog_mark("idle_cpu / " + name);
    run_writes_round_robin(system, vars.handles(), kIdleBurstOps);
    watchdog_clear();
  };
  if (enabled("tandem")) {
    burst("tandem", tandem_);
    record("tandem", process_cpu_percent_while_sleeping(kIdleWindow));
  }
  if (enabled("plain_queue")) {
    burst("plain_queue", plain_queue_);
    record("plain_queue", process_cpu_percent_while_sleeping(kIdleWindow));
  }
  if (enabled("tbb_flow")) {
    watchdog_mark("idle_cpu / tbb_flow");
    tbb_flow_writes_round_robin(kIdleBurstOps, kIdleBurstOps);
    watchdog_clear();
    record("tbb_flow", process_cpu_percent_while_sleeping(kIdleWindow));
  }
  if (taskflow_enabled()) {
    watchdog_mark("idle_cpu / taskflow");
    taskflow_writes_round_robin(kIdleBurstOps, kIdleBurstOps);
    watchdog_clear();
    record("taskflow", process_cpu_percent_while_sleeping(kIdleWindow));
  }
  if (enabled("starpu")) {
    // First as an application that never calls starpu_pause leaves it; then paused, as every
    // other workload keeps it between its own runs (starpu_system.h): that second figure is
    // what the other systems' numbers rely on.
    burst("starpu", starpu());
    starpu().resume_idle_polling();
    const double polling = process_cpu_percent_while_sleeping(kIdleWindow);
    starpu().wait_all();  // pauses it again
    const double paused = process_cpu_percent_while_sleeping(kIdleWindow);
    record("starpu", polling, {{"cpu_percent_paused", paused}});
  }
}

}  // namespace tandem::bench
