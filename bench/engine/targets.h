// The engine's performance targets, checked against the peers measured in the same run.
// Ratios rather than absolute numbers, because the machine is shared and noisy: a burst of load
// slows every system of a round alike, so the ratio survives it.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "records.h"

namespace tandem::bench {

struct TargetResult {
  std::string name;        // e.g. "chains_1000: tandem / starpu"
  std::string limit_text;  // e.g. "<= 1/15"
  double value = 0.0;      // the measured ratio (or ns, for absolute targets)
  double limit = 0.0;
  bool measured = false;  // false when a system or workload it needs was not run
  bool met = false;
};

std::vector<TargetResult> evaluate_targets(const Records& records);

// One line per target: met, or missed by how much (value / limit).
void print_targets(const std::vector<TargetResult>& targets, std::ostream& out);

// Adds one {"workload": "targets", ...} record per target.
void record_targets(const std::vector<TargetResult>& targets, Records& records);

}  // namespace tandem::bench
