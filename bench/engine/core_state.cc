#include "core_state.h"

#include <cmath>
#include <vector>

#include "timing.h"

namespace tandem::bench {

CoreState core_state(double core_to_core_ns) {
  if (std::isnan(core_to_core_ns)) return CoreState::unknown;
  return core_to_core_ns <= kNearCoresMaxNs ? CoreState::near : CoreState::far;
}

StateRatio ratio_in_state(const Timing& a, const Timing& b, CoreState state) {
  std::vector<double> a_samples;
  std::vector<double> b_samples;
  const std::size_t rounds = std::min({a.samples_ns.size(), b.samples_ns.size(),
                                       a.core_to_core_ns.size(), b.core_to_core_ns.size()});
  for (std::size_t i = 0; i < rounds; ++i) {
    if (core_state(a.core_to_core_ns[i]) != state || core_state(b.core_to_core_ns[i]) != state)
      continue;
    a_samples.push_back(a.samples_ns[i]);
    b_samples.push_back(b.samples_ns[i]);
  }
  StateRatio result;
  result.rounds = a_samples.size();
  const double denominator = median(b_samples);
  if (!a_samples.empty() && denominator > 0.0) result.ratio = median(a_samples) / denominator;
  return result;
}

}  // namespace tandem::bench
