// METG, the minimum effective task granularity (Slaughter et al., "Task Bench", SC'20): the
// smallest task duration at which a system still keeps the cores at least 50% busy with the
// tasks' own work. Below it, scheduling overhead dominates.
//
//   efficiency(g) = (tasks * g) / (wall * cores)
//
// measured on a sweep of granularities g; METG(50%) is where the curve crosses 0.5. `cores` is
// the machine's measured peak (available_cores.h) for `efficiency`, and the core count for
// `nominal_efficiency`; the two agree on an otherwise idle machine.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace tandem::bench {

struct MetgPlan {
  std::size_t width = 0;                 // stencil columns: 2 x cores, Task Bench's convention
  std::vector<double> granularities_ns;  // ascending
  std::size_t max_steps = 0;
  std::size_t min_steps = 0;
  // At coarse granularities a run is cut to about this much wall time (ideal, at 100%
  // efficiency) rather than max_steps, so the sweep's slow end stays affordable.
  double target_wall_ns = 0.0;

  // Steps of the stencil for one run at granularity `g` on `cores` cores.
  std::size_t steps_for(double granularity_ns, int cores) const;
};

// Quick: 100 ns to 1 ms in half decades. Full: the 1-2-5 series over the same range, more steps.
MetgPlan make_metg_plan(bool quick, int cores);

struct EfficiencyPoint {
  double granularity_ns = 0.0;  // the busy loop's calibrated duration per task
  std::size_t tasks = 0;
  double wall_ns = 0.0;             // median over repetitions
  double available_cores = 0.0;     // the peak probe's median in the same rounds
  double efficiency = 0.0;          // against available_cores
  double nominal_efficiency = 0.0;  // against the core count
  // The lowest and highest of the rounds' efficiencies (against each round's own probe): the
  // noise band of `efficiency`.
  double efficiency_low = 0.0;
  double efficiency_high = 0.0;
  // The median of the rounds run with the cores near (core_state.h), and how many there were
  // (0: none, and efficiency_near means nothing).
  double efficiency_near = 0.0;
  std::size_t near_rounds = 0;
};

double efficiency(double granularity_ns, std::size_t tasks, double wall_ns, double cores);

struct Metg {
  double granularity_ns = 0.0;
  // The curve was already above the threshold at the finest granularity measured, so the true
  // METG is at most `granularity_ns`.
  bool at_most = false;
};

// The smallest granularity whose efficiency reaches `threshold`: the first sweep point at or
// above it, interpolated linearly in log(granularity) with the point before. Empty when no
// point reaches it. `measure` picks which efficiency to use.
std::optional<Metg> min_effective_granularity(
    const std::vector<EfficiencyPoint>& curve, double threshold = 0.5,
    double EfficiencyPoint::*measure = &EfficiencyPoint::efficiency);

// A dip of an efficiency curve beyond its noise: a coarser granularity `to_ns` whose best round
// is below the worst round of a finer one, `from_ns`. Efficiency can only grow with task size
// for a scheduler whose per-task cost does not depend on it, so such a dip points at a
// pathology (a wake-up or hand-off that costs more at some granularities), or at a burst of
// load from another process in that point's rounds.
struct EfficiencyDip {
  double from_ns = 0.0;
  double to_ns = 0.0;
  double drop = 0.0;  // from's efficiency_low - to's efficiency_high, > 0
};

// Every point that dips beyond noise below an earlier (finer) one, each against the finer
// point whose worst round is highest; empty for a curve monotonic within noise.
std::vector<EfficiencyDip> dips_beyond_noise(const std::vector<EfficiencyPoint>& curve);

}  // namespace tandem::bench
