#include "targets.h"

#include <iomanip>
#include <optional>

namespace tandem::bench {

namespace {

// value <= limit, where value is `numerator / denominator` (or `numerator` alone when the
// target is absolute).
TargetResult check(std::string name, std::string limit_text, double limit,
                   std::optional<double> numerator, std::optional<double> denominator = 1.0) {
  TargetResult result{std::move(name), std::move(limit_text), 0.0, limit, false, false};
  if (!numerator || !denominator || *denominator <= 0.0) return result;
  result.measured = true;
  result.value = *numerator / *denominator;
  result.met = result.value <= limit;
  return result;
}

}  // namespace

std::vector<TargetResult> evaluate_targets(const Records& records) {
  std::vector<TargetResult> targets;
  auto ns_per_op = [&](const char* workload, const char* system) {
    return records.number(workload, system, "ns_per_op");
  };
  for (const char* workload : {"independent", "chains_1000", "one_chain"}) {
    const std::string prefix = std::string(workload) + ": tandem / ";
    targets.push_back(check(prefix + "starpu", "<= 1/15", 1.0 / 15, ns_per_op(workload, "tandem"),
                            ns_per_op(workload, "starpu")));
    targets.push_back(check(prefix + "tbb_flow", "<= 0.5", 0.5, ns_per_op(workload, "tandem"),
                            ns_per_op(workload, "tbb_flow")));
  }
  targets.push_back(check("independent: tandem / plain_queue", "<= 1.5", 1.5,
                          ns_per_op("independent", "tandem"),
                          ns_per_op("independent", "plain_queue")));
  targets.push_back(
      check("push_cost: tandem ns per push", "<= 80 ns", 80.0, ns_per_op("push_cost", "tandem")));
  const auto metg = [&](const char* system) {
    return records.number("metg_stencil_1d", system, "metg_ns");
  };
  targets.push_back(
      check("metg_stencil_1d: tandem METG(50%) ns", "<= 500 ns", 500.0, metg("tandem")));
  targets.push_back(check("metg_stencil_1d: tandem / starpu METG", "<= 1/10", 0.1, metg("tandem"),
                          metg("starpu")));
  // Issue 12's fine-grained targets: twice Taskflow's speed, stated against flow graph (Taskflow
  // measured 0.29 x flow graph's METG and 0.38 x its fan_out and chains_1000).
  for (const char* workload : {"chains_1000", "fan_out"}) {
    targets.push_back(check(std::string(workload) + ": tandem / tbb_flow (issue 12)", "<= 0.2", 0.2,
                            ns_per_op(workload, "tandem"), ns_per_op(workload, "tbb_flow")));
    // The same ops from a captured block (replay_workloads.h): below the cost of one push.
    targets.push_back(check(std::string(workload) + ": tandem_replay / tbb_flow", "<= 0.2", 0.2,
                            ns_per_op(workload, "tandem_replay"), ns_per_op(workload, "tbb_flow")));
  }
  targets.push_back(check("metg_stencil_1d: tandem / tbb_flow METG", "<= 0.15", 0.15,
                          metg("tandem"), metg("tbb_flow")));
  // Issue 24: against Taskflow (an optional peer, TASKFLOW_DIR), the median ratio of every
  // fine-grained workload and METG.
  for (const char* workload : {"independent", "chains_1000", "one_chain", "fan_out", "push_cost"}) {
    targets.push_back(check(std::string(workload) + ": tandem / taskflow", "<= 0.8", 0.8,
                            ns_per_op(workload, "tandem"), ns_per_op(workload, "taskflow")));
  }
  targets.push_back(check("metg_stencil_1d: tandem / taskflow METG", "<= 1.0", 1.0, metg("tandem"),
                          metg("taskflow")));
  // Issue 12: the efficiency curve must not dip beyond the spread of its rounds (metg.h).
  targets.push_back(check("metg_stencil_1d: tandem dips beyond noise", "<= 0", 0.0,
                          records.number("metg_stencil_1d", "tandem", "dips_beyond_noise_count")));
  targets.push_back(check("chain_plus_independent: tandem / ideal", "<= 1.1", 1.1,
                          records.number("chain_plus_independent", "tandem", "over_ideal")));
  // Capture and replay (replay_workloads.h).
  targets.push_back(check("replay_ns_per_op: replay ns per op", "<= 25 ns", 25.0,
                          ns_per_op("replay_ns_per_op", "replay")));
  targets.push_back(check("metg_stencil_1d: tandem_replay METG(50%) ns", "<= 250 ns", 250.0,
                          metg("tandem_replay")));
  return targets;
}

void print_targets(const std::vector<TargetResult>& targets, std::ostream& out) {
  out << "\nTargets (ratios measured side by side in this run)\n";
  for (const TargetResult& target : targets) {
    out << "  " << std::left << std::setw(44) << target.name << std::setw(10) << target.limit_text;
    if (!target.measured) {
      out << "not measured\n";
      continue;
    }
    out << std::right << std::setw(10) << std::setprecision(4) << target.value << "  ";
    if (target.met) {
      out << "met\n";
    } else {
      out << "MISSED";
      if (target.limit > 0.0)
        out << " by " << std::setprecision(3) << target.value / target.limit << "x";
      out << "\n";
    }
  }
}

void record_targets(const std::vector<TargetResult>& targets, Records& records) {
  for (const TargetResult& target : targets) {
    nlohmann::json record = {{"workload", "targets"},           {"system", "tandem"},
                             {"target", target.name},           {"limit", target.limit},
                             {"limit_text", target.limit_text}, {"measured", target.measured}};
    if (target.measured) {
      record["value"] = target.value;
      record["met"] = target.met;
    }
    records.add(std::move(record));
  }
}

}  // namespace tandem::bench
