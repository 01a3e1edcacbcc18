#include "side_by_side.h"

#include <limits>
#include <utility>

#include "watchdog.h"

namespace tandem::bench {

namespace {

// Runs `entrant` once, then probes the cores; returns the run's time and the probe's latency
// (NaN when it could not be measured).
std::pair<Nanoseconds, double> run_watched(const std::string& workload, const Entrant& entrant) {
  watchdog_mark(workload + " / " + entrant.system);
  const Nanoseconds elapsed = entrant.run_once();
  watchdog_clear();
  const std::optional<CoreToCore> line = core_to_core();
  if (entrant.after_probe) entrant.after_probe(line);
  return {elapsed, line ? line->median_ns : std::numeric_limits<double>::quiet_NaN()};
}

}  // namespace

std::vector<Timing> run_side_by_side(const std::string& workload,
                                     const std::vector<Entrant>& entrants, int repetitions) {
  std::vector<Timing> timings;
  for (const Entrant& entrant : entrants) {
    run_watched(workload, entrant);  // warm-up
    timings.push_back(Timing{entrant.system, 0.0, {}, {}});
  }
  for (int round = 0; round < repetitions; ++round) {
    for (std::size_t i = 0; i < entrants.size(); ++i) {
      const auto [elapsed, core_to_core_ns] = run_watched(workload, entrants[i]);
      timings[i].samples_ns.push_back(elapsed.count());
      timings[i].core_to_core_ns.push_back(core_to_core_ns);
    }
  }
  for (Timing& timing : timings) timing.median_ns = median(timing.samples_ns);
  return timings;
}

}  // namespace tandem::bench
