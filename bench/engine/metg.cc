#include "metg.h"

#include <algorithm>
#include <cmath>

namespace tandem::bench {

std::size_t MetgPlan::steps_for(double granularity_ns, int cores) const {
  // Ideal wall time of one step: `width` tasks of g spread over the cores.
  const double step_ns = granularity_ns * static_cast<double>(width) / cores;
  const auto affordable = static_cast<std::size_t>(target_wall_ns / step_ns);
  return std::clamp(affordable, min_steps, max_steps);
}

MetgPlan make_metg_plan(bool quick, int cores) {
  MetgPlan plan;
  plan.width = 2 * static_cast<std::size_t>(cores);
  if (quick) {
    for (int k = 0; k <= 8; ++k) plan.granularities_ns.push_back(100.0 * std::pow(10.0, k / 2.0));
    plan.max_steps = 250;
    plan.min_steps = 10;
    plan.target_wall_ns = 20e6;
  } else {
    for (double decade = 100.0; decade < 1e6; decade *= 10) {
      for (double mantissa : {1.0, 2.0, 5.0}) plan.granularities_ns.push_back(decade * mantissa);
    }
    plan.granularities_ns.push_back(1e6);
    plan.max_steps = 1000;
    plan.min_steps = 20;
    plan.target_wall_ns = 100e6;
  }
  return plan;
}

double efficiency(double granularity_ns, std::size_t tasks, double wall_ns, double cores) {
  return granularity_ns * static_cast<double>(tasks) / (wall_ns * cores);
}

std::optional<Metg> min_effective_granularity(const std::vector<EfficiencyPoint>& curve,
                                              double threshold, double EfficiencyPoint::*measure) {
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const EfficiencyPoint& above = curve[i];
    if (above.*measure < threshold) continue;
    if (i == 0) return Metg{above.granularity_ns, /*at_most=*/true};
    const EfficiencyPoint& below = curve[i - 1];
    // Efficiency grows roughly linearly in log(g) between neighbouring sweep points.
    const double fraction = (threshold - below.*measure) / (above.*measure - below.*measure);
    const double log_g =
        std::log(below.granularity_ns) +
        fraction * (std::log(above.granularity_ns) - std::log(below.granularity_ns));
    return Metg{std::exp(log_g), false};
  }
  return std::nullopt;
}

std::vector<EfficiencyDip> dips_beyond_noise(const std::vector<EfficiencyPoint>& curve) {
  std::vector<EfficiencyDip> dips;
  const EfficiencyPoint* highest_floor = nullptr;  // the finer point with the highest low
  for (const EfficiencyPoint& point : curve) {
    if (highest_floor != nullptr && point.efficiency_high < highest_floor->efficiency_low) {
      dips.push_back({highest_floor->granularity_ns, point.granularity_ns,
                      highest_floor->efficiency_low - point.efficiency_high});
    }
    if (highest_floor == nullptr || point.efficiency_low > highest_floor->efficiency_low) {
      highest_floor = &point;
    }
  }
  return dips;
}

}  // namespace tandem::bench
