// bench_engine: tandem's engine against StarPU, oneTBB flow graph and a plain queue, every
// workload side by side in one process (see docs/benchmarks.md for what each workload means).
//
//   bench_engine [--quick] [--out bench/results/engine.json] [--repetitions N]
//                [--workloads independent,one_chain] [--systems tandem,starpu]
//
// bench/run.sh engine builds it, runs it and regenerates docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "busy_work.h"
#include "engine_suite.h"
#include "targets.h"
#include "watchdog.h"

namespace {

using tandem::bench::SuiteOptions;

std::set<std::string> parse_names(const std::string& list, const std::vector<std::string>& known,
                                  const char* what) {
  std::set<std::string> names;
  std::stringstream stream(list);
  for (std::string name; std::getline(stream, name, ',');) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string choices;
      for (const auto& k : known) choices += " " + k;
      throw std::invalid_argument(std::string("unknown ") + what + " '" + name +
                                  "'; choose from:" + choices);
    }
    names.insert(name);
  }
  return names;
}

constexpr const char* kUsage =
    "usage: bench_engine [--quick] [--out FILE.json] [--repetitions N] [--workloads a,b] "
    "[--systems a,b]";

struct CommandLine {
  SuiteOptions suite;
  std::string out_path;
  bool help = false;
};

CommandLine parse(int argc, char** argv) {
  CommandLine command;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      command.help = true;
    } else if (arg == "--quick") {
      command.suite.quick = true;
    } else if (arg == "--out") {
      command.out_path = value();
    } else if (arg == "--repetitions") {
      command.suite.repetitions = std::stoi(value());
    } else if (arg == "--workloads") {
      command.suite.workloads = parse_names(value(), tandem::bench::all_workloads(), "workload");
    } else if (arg == "--systems") {
      command.suite.systems = parse_names(value(), tandem::bench::all_systems(), "system");
    } else {
      throw std::invalid_argument("unknown argument '" + arg + "'; " + kUsage);
    }
  }
  return command;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const CommandLine command = parse(argc, argv);
    if (command.help) {
      std::cout << kUsage << "\nworkloads:";
      for (const auto& name : tandem::bench::all_workloads()) std::cout << ' ' << name;
      std::cout << "\nsystems:";
      for (const auto& name : tandem::bench::all_systems()) std::cout << ' ' << name;
      std::cout << '\n';
      return 0;
    }
    std::cout << std::fixed;
    // Before any system starts a thread, so nothing competes with the measurement.
    tandem::bench::calibrate_busy_work();
    std::cout << "bench_engine: " << std::thread::hardware_concurrency() << " cores, "
              << (command.suite.quick ? "quick" : "full") << " run; busy loop "
              << std::setprecision(3) << tandem::bench::nanoseconds_per_spin_iteration()
              << " ns per iteration\n";

    tandem::bench::start_watchdog(std::chrono::seconds(60));
    tandem::bench::EngineSuite suite(command.suite);
    suite.run();
    const auto targets = tandem::bench::evaluate_targets(suite.records());
    tandem::bench::print_targets(targets, std::cout);
    tandem::bench::record_targets(targets, suite.records());
    if (!command.out_path.empty()) {
      suite.records().write(command.out_path);
      std::cout << "\nwrote " << command.out_path << '\n';
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_engine: " << e.what() << '\n';
    return 1;
  }
}
